// ImageDecoder batches made on the GPU (kiln/images.h, backends/cuda/image): the same slots as
// the host decoder's (libjpeg-turbo path: within rounding; nvJPEG: close to libjpeg-turbo's
// decode, the differences printed), a corrupt image failing alone, and the GPU batch taken by a
// CUDA engine without a host copy (a CPU engine and another GPU's engine refuse it).
// clang-format off
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#undef STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic pop
// clang-format on

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/images.h"
#include "onnx/onnx_test_util.h"

namespace kiln {
namespace {

std::vector<uint8_t> pattern(int w, int h, uint32_t seed) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
  std::mt19937 gen(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(
            128 + 90 * std::sin(0.05 * (x + 2 * y) + c) + int(gen() % 17) - 8, 0.0, 255.0));
  return px;
}

std::string jpeg_of(const std::vector<uint8_t>& px, int w, int h) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj.get(), px.data(), w, 0, h, TJPF_RGB, &buf, &size, TJSAMP_420, 90, 0), 0);
  std::string r(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  return r;
}

std::string png_of(const std::vector<uint8_t>& px, int w, int h) {
  std::string r;
  stbi_write_png_to_func(
      [](void* ctx, void* data, int n) {
        static_cast<std::string*>(ctx)->append(static_cast<char*>(data), n);
      },
      &r, w, h, 3, px.data(), w * 3);
  return r;
}

std::vector<uint8_t> to_host(const Tensor& t) {
  std::vector<uint8_t> v(t.nbytes());
  EXPECT_EQ(cudaMemcpy(v.data(), t.raw(), v.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

struct Diff {
  int max = 0;
  double within_one = 1;  // fraction of values within ±1
  double mean = 0;        // mean absolute difference
};
Diff diff(const std::vector<uint8_t>& a, const uint8_t* b, size_t n) {
  Diff d;
  size_t ok = 0;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    d.max = std::max(d.max, e);
    ok += e <= 1;
    sum += e;
  }
  d.within_one = n ? double(ok) / n : 1;
  d.mean = n ? sum / n : 0;
  return d;
}

// libjpeg-turbo's full-size decode of `jpeg`; `fast`: TJFLAG_FASTUPSAMPLE (chroma replicated
// rather than interpolated).
std::vector<uint8_t> turbo_decode(const std::string& jpeg, int w, int h, bool fast) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
  EXPECT_EQ(
      tjDecompress2(tj.get(), reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
                    px.data(), w, 0, h, TJPF_RGB, fast ? TJFLAG_FASTUPSAMPLE : 0),
      0);
  return px;
}

// A GPU batch's slot against the host's: either the host's decode resized on the GPU
// (rounding apart, the same bytes) or nvJPEG's full-size decode, which only differs from the
// host's full-size decode resized the same way by the decoders' differences (chroma upsampling,
// IDCT rounding; see NvjpegAgreesWithLibjpegTurbo).
void expect_slot_close(const std::vector<uint8_t>& got, const uint8_t* host_slot,
                       std::string_view image, ResizeMode mode, int h, int w, uint8_t fill) {
  const size_t slot = static_cast<size_t>(h) * w * 3;
  const Diff d = diff(got, host_slot, slot);
  if (d.max <= 1) return;
  auto full = decode_image(image, "full");
  EXPECT_TRUE(full.is_ok());
  if (!full.is_ok()) return;
  std::vector<uint8_t> ref(slot);
  resize_into(*full, mode, h, w, 3, fill, ref.data(), int64_t{w} * 3);
  const Diff f = diff(got, ref.data(), slot);
  std::printf(
      "[ info ] against the host's DCT-scaled path %.1f%% within ±1 (mean %.2f, max %d); against "
      "its full-size decode %.1f%% (mean %.2f, max %d)\n",
      100 * d.within_one, d.mean, d.max, 100 * f.within_one, f.mean, f.max);
  EXPECT_LE(f.mean, 3.0);
  EXPECT_LE(f.max, 32);
}

TEST(CudaImages, GpuBatchesMatchTheHostDecoderAndACorruptImageFailsAlone) {
  const std::string a = jpeg_of(pattern(120, 90, 1), 120, 90);
  const std::string b = png_of(pattern(64, 80, 2), 64, 80);
  const std::string c = jpeg_of(pattern(300, 200, 3), 300, 200);
  const std::string cut = c.substr(0, c.size() / 3);
  const std::string junk = "not an image";
  const std::vector<std::string_view> batch = {a, b, cut, junk, c, a};
  for (ResizeMode mode : {ResizeMode::kStretch, ResizeMode::kLetterbox}) {
    for (JpegDecoder jpeg : {JpegDecoder::kLibjpegTurbo, JpegDecoder::kAuto}) {
      ImageBatchOptions o;
      o.height = 48;
      o.width = 40;
      o.resize = mode;
      o.threads = 2;
      o.fill = 9;
      auto host = ImageDecoder::create(o);
      ASSERT_TRUE(host.is_ok());
      auto want = (*host)->decode(batch);
      ASSERT_TRUE(want.is_ok());
      o.device = Device::kCuda;
      o.jpeg = jpeg;
      auto gpu = ImageDecoder::create(o);
      ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
      SCOPED_TRACE(mode == ResizeMode::kStretch ? "stretch" : "letterbox");
      for (int round = 0; round < 2; ++round) {  // the second reuses the scratch memory
        auto got = (*gpu)->decode(batch);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        // kAuto: nvJPEG (its JPEGs split with the host threads from the second batch on)
        const bool nv = (*gpu)->jpeg_decoder().rfind("nvJPEG", 0) == 0;
        SCOPED_TRACE((*gpu)->jpeg_decoder());
        EXPECT_EQ(got->pixels.gpu(), 0);
        EXPECT_EQ(got->pixels.shape(), (Shape{6, 48, 40, 3}));
        const std::vector<uint8_t> px = to_host(got->pixels);
        const size_t slot = 48 * 40 * 3;
        EXPECT_EQ(got->failed(), 2);
        EXPECT_NE(got->status[2].message().find("image 2: truncated JPEG"), std::string::npos)
            << got->status[2].message();
        EXPECT_NE(got->status[3].message().find("image 3: not a JPEG or PNG"), std::string::npos);
        for (size_t i = 0; i < 6; ++i) {
          SCOPED_TRACE("image " + std::to_string(i));
          const uint8_t* w = want->pixels.data<uint8_t>() + i * slot;
          const std::vector<uint8_t> g(px.begin() + i * slot, px.begin() + (i + 1) * slot);
          EXPECT_EQ(got->placement[i].width, want->placement[i].width);
          EXPECT_EQ(got->placement[i].pad_y, want->placement[i].pad_y);
          if (!nv || i == 1 || !got->status[i].is_ok()) {
            // The host's decode, resized on the GPU: rounding apart, the same bytes.
            EXPECT_LE(diff(g, w, slot).max, 1);
          } else {
            expect_slot_close(g, w, batch[i], mode, 48, 40, 9);
          }
        }
      }
    }
  }
}

// JpegDecoder::kAuto with nvJPEG present times the first batch holding JPEGs each way, then
// splits every batch's JPEGs between nvJPEG and the host threads by the speeds measured, saying
// so; a batch without JPEGs times nothing. Every slot holds its image whichever part made it.
TEST(CudaImages, AutoSplitsJpegsBetweenNvjpegAndTheThreadsByMeasuredSpeed) {
  const std::string png = png_of(pattern(64, 80, 2), 64, 80);
  const std::string jpg = jpeg_of(pattern(320, 240, 5), 320, 240);
  ImageBatchOptions o;
  o.height = 32;
  o.width = 32;
  o.threads = 3;
  o.fill = 7;
  auto host = ImageDecoder::create(o);
  ASSERT_TRUE(host.is_ok());
  const std::vector<std::string_view> jpegs(16, jpg);
  auto want = (*host)->decode(jpegs);
  ASSERT_TRUE(want.is_ok());
  o.device = Device::kCuda;
  auto gpu = ImageDecoder::create(o);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  if ((*gpu)->jpeg_decoder().rfind("nvJPEG", 0) != 0)
    GTEST_SKIP() << "nvJPEG not loaded: " << (*gpu)->jpeg_decoder();
  auto pngs = (*gpu)->decode({png, png});
  ASSERT_TRUE(pngs.is_ok());
  EXPECT_NE((*gpu)->jpeg_decoder().find("split by the speeds measured on the first batch"),
            std::string::npos)
      << (*gpu)->jpeg_decoder();
  for (int round = 0; round < 4; ++round) {  // the first timed each way, the rest split
    auto got = (*gpu)->decode(jpegs);
    ASSERT_TRUE(got.is_ok());
    const std::string said = (*gpu)->jpeg_decoder();
    std::printf("[ info ] batch %d: %s\n", round, said.c_str());
    EXPECT_NE(said.find("JPEGs split by their measured speeds"), std::string::npos) << said;
    EXPECT_NE(said.find("each alone: nvJPEG"), std::string::npos) << said;
    EXPECT_NE(said.find("for 16 JPEGs"), std::string::npos) << said;
    EXPECT_EQ(got->failed(), 0);
    const std::vector<uint8_t> px = to_host(got->pixels);
    const size_t slot = 32 * 32 * 3;
    for (size_t i = 0; i < 16; ++i) {
      SCOPED_TRACE("batch " + std::to_string(round) + " image " + std::to_string(i));
      const std::vector<uint8_t> g(px.begin() + i * slot, px.begin() + (i + 1) * slot);
      expect_slot_close(g, want->pixels.data<uint8_t>() + i * slot, jpg, ResizeMode::kStretch, 32,
                        32, 7);
    }
  }
}

// nvJPEG's decode itself against libjpeg-turbo's: full-size images into slots of their own size
// (the resize is then a copy).
TEST(CudaImages, NvjpegAgreesWithLibjpegTurbo) {
  ImageBatchOptions o;
  o.height = 90;
  o.width = 120;
  o.device = Device::kCuda;
  o.jpeg = JpegDecoder::kNvjpeg;
  auto gpu = ImageDecoder::create(o);
  if (!gpu.is_ok()) GTEST_SKIP() << gpu.status().to_string();
  std::vector<std::string> jpegs;
  for (uint32_t s = 0; s < 4; ++s) jpegs.push_back(jpeg_of(pattern(120, 90, 10 + s), 120, 90));
  const std::vector<std::string_view> views(jpegs.begin(), jpegs.end());
  auto got = (*gpu)->decode(views);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->failed(), 0);
  const std::vector<uint8_t> px = to_host(got->pixels);
  for (size_t i = 0; i < jpegs.size(); ++i) {
    const size_t n = size_t{120} * 90 * 3;
    const Diff fancy = diff(turbo_decode(jpegs[i], 120, 90, false), px.data() + i * n, n);
    const Diff fast = diff(turbo_decode(jpegs[i], 120, 90, true), px.data() + i * n, n);
    std::printf(
        "[ info ] %s image %zu against libjpeg-turbo: %.2f%% within ±1 (mean %.2f, max "
        "%d); with TJFLAG_FASTUPSAMPLE %.2f%% (mean %.2f, max %d)\n",
        (*gpu)->jpeg_decoder().c_str(), i, 100 * fancy.within_one, fancy.mean, fancy.max,
        100 * fast.within_one, fast.mean, fast.max);
    // Measured on the H200 (nvJPEG 13.0.1, hardware backend): equal to libjpeg-turbo's decode
    // with chroma replicated (TJFLAG_FASTUPSAMPLE); against its default interpolated chroma,
    // 52% within ±1 (mean 1.9, max 12).
    EXPECT_LE(fast.max, 1);
    EXPECT_LE(fancy.mean, 3.0);
  }
}

TEST(CudaImages, AGpuBatchRunsOnACudaEngineOfItsGpuOnly) {
  const std::string path = ::testing::TempDir() + "kiln_gpu_images.onnx";
  {
    test::ModelBuilder b(13);
    b.input("image", test::kFloat, {std::string("batch"), int64_t{3}, int64_t{16}, int64_t{20}});
    b.output("scores", test::kFloat, {std::string("batch"), int64_t{3}});
    b.node("GlobalAveragePool", {"image"}, {"pooled"});
    b.node("Flatten", {"pooled"}, {"scores"});
    std::ofstream(path, std::ios::binary) << b.bytes();
  }
  std::vector<std::string> jpegs;
  for (uint32_t s = 0; s < 5; ++s) jpegs.push_back(jpeg_of(pattern(50, 40, 20 + s), 50, 40));
  const std::vector<std::string_view> views(jpegs.begin(), jpegs.end());
  ImageBatchOptions io;
  io.height = 16;
  io.width = 20;
  io.device = Device::kCuda;
  auto dec = ImageDecoder::create(io);
  ASSERT_TRUE(dec.is_ok());
  auto batch = (*dec)->decode(views);
  ASSERT_TRUE(batch.is_ok());
  EngineOptions o;
  o.device = Device::kCuda;
  o.input_format = InputFormat::kUint8Nhwc;
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  auto on_gpu = ctx->run({{"image", batch->pixels}});
  ASSERT_TRUE(on_gpu.is_ok()) << on_gpu.status().to_string();
  // The same bytes from host memory give the same scores.
  Tensor host(DataType::kUInt8, batch->pixels.shape());
  ASSERT_EQ(cudaMemcpy(host.raw(), batch->pixels.raw(), host.nbytes(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  auto on_host = ctx->run({{"image", host}});
  ASSERT_TRUE(on_host.is_ok());
  const Tensor& x = on_gpu->at("scores");
  const Tensor& y = on_host->at("scores");
  ASSERT_EQ(x.shape(), (Shape{5, 3}));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(x.data<float>()[i], y.data<float>()[i]) << i;
  // A CPU engine, and a tensor said to be another GPU's, are refused with the reason.
  EngineOptions cpu;
  cpu.input_format = InputFormat::kUint8Nhwc;
  auto ce = Engine::load(path, cpu);
  ASSERT_TRUE(ce.is_ok());
  auto refused = (*ce)->create_context()->run({{"image", batch->pixels}});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("a CPU engine takes host tensors"), std::string::npos);
  const Tensor other =
      Tensor::on_gpu(batch->pixels.raw(), DataType::kUInt8, batch->pixels.shape(), 7);
  auto wrong = ctx->run({{"image", other}});
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("this engine runs on GPU 0"), std::string::npos);
  // No such GPU for the decoder.
  io.device_index = 99;
  auto none = ImageDecoder::create(io);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no GPU 99"), std::string::npos);
}

}  // namespace
}  // namespace kiln
