// `kiln run` with JPEG/PNG inputs: decoding, resizing, channel conversion, normalization
// (flags and model metadata) and the top-k printout.
// stb_image_write's implementation lives here; its code is not ours to lint.
// clang-format off
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#undef STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic pop
// clang-format on

#include "kiln/tensor_io.h"
#include "runtime/cli_test_util.h"

#ifdef KILN_CLI_PATH

namespace kiln::test {
namespace {

TEST_F(Cli, PngInputIsScaledAndNormalized) {
  const int h = 4, w = 5;
  auto px = random_pixels(h * w * 3, 3);
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), w, h, 3, px.data(), w * 3));
  // RGB, per-channel mean/std; the image already has the model's size, so no resampling.
  std::string model = identity_model(3, h, w);
  auto r = kiln("run " + model + " -i " + path("img.png").string() +
                " --mean 0.1,0.2,0.3 --std 0.5,0.25,2 -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const float mean[3] = {0.1f, 0.2f, 0.3f}, stdv[3] = {0.5f, 0.25f, 2.f};
  Tensor want(DataType::kFloat32, {1, 3, h, w});
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < h * w; ++i)
      want.data<float>()[c * h * w + i] = (px[3 * i + c] / 255.f - mean[c]) / stdv[c];
  expect_close(read_output("o/out.npy"), want, 1e-5);

  // One channel: luminance, and a single --mean for all channels; default std 1.
  std::string gray = identity_model(1, h, w, "gray.onnx");
  r = kiln("run " + gray + " -i image=" + path("img.png").string() + " --mean 0.5 -o " +
           path("g").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor want_gray(DataType::kFloat32, {1, 1, h, w});
  for (int i = 0; i < h * w; ++i)
    want_gray.data<float>()[i] =
        (0.299f * px[3 * i] + 0.587f * px[3 * i + 1] + 0.114f * px[3 * i + 2]) / 255.f - 0.5f;
  // Luminance is kept in 8 bits, as PIL's "L" conversion keeps it: within half a level.
  expect_close(read_output("g/out.npy"), want_gray, 0.5f / 255 + 1e-5);
}

TEST_F(Cli, JpegInputIsDecodedAndResized) {
  // A flat colour survives JPEG (almost) and any resampling filter.
  const int h = 24, w = 30;
  const uint8_t color[3] = {200, 50, 120};
  std::vector<uint8_t> px(h * w * 3);
  for (int i = 0; i < h * w; ++i)
    for (int c = 0; c < 3; ++c) px[3 * i + c] = color[c];
  ASSERT_TRUE(stbi_write_jpg(path("img.jpg").c_str(), w, h, 3, px.data(), 100));
  std::string model = identity_model(3, 6, 7);
  auto r = kiln("run " + model + " -i " + path("img.jpg").string() + " --mean 0 --std 1 -o " +
                path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor got = read_output("o/out.npy");
  ASSERT_EQ(got.shape(), (Shape{1, 3, 6, 7}));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 42; ++i)
      ASSERT_NEAR(got.data<float>()[c * 42 + i], color[c] / 255.f, 3 / 255.f);
  // --size must agree with a model of fixed size: the engine refuses the wrong shape.
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --size 8x8"), 1,
               "expected shape");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --size 8y8"), 2,
               "--size");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --mean a,b"), 2,
               "--mean");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --std 1,0,1"), 2,
               "--std");
  // Broken images: a PNG signature with garbage after it, a JPEG cut short in its header.
  std::ofstream(path("broken.png")) << "\x89PNG\r\n\x1a\n but then nothing valid";
  std::string jpg = slurp(path("img.jpg"));
  std::ofstream(path("cut.jpg"), std::ios::binary) << jpg.substr(0, 20);
  expect_error(kiln("run " + model + " -i " + path("broken.png").string()), 1,
               "broken.png: bad PNG");
  expect_error(kiln("run " + model + " -i " + path("cut.jpg").string()), 1, "cut.jpg: bad JPEG");
}

// A JPEG cut short after its header decodes with libjpeg's warning only, the missing rows
// grey: it is refused as truncated. A file named .png or .jpg that is not one says so.
TEST_F(Cli, TruncatedAndMisnamedImagesAreRefused) {
  const int h = 64, w = 64;
  auto px = random_pixels(h * w * 3, 5);
  ASSERT_TRUE(stbi_write_jpg(path("img.jpg").c_str(), w, h, 3, px.data(), 90));
  const std::string jpg = slurp(path("img.jpg"));
  ASSERT_GT(jpg.size(), 2000u);
  std::ofstream(path("half.jpg"), std::ios::binary) << jpg.substr(0, jpg.size() / 2);
  std::ofstream(path("padded.jpg"), std::ios::binary) << jpg << std::string(16, '\0');
  std::string model = identity_model(3, h, w);
  expect_error(kiln("run " + model + " -i " + path("half.jpg").string()), 1,
               "half.jpg: truncated JPEG");
  auto r =
      kiln("run " + model + " -i " + path("padded.jpg").string() + " -o " + path("o").string());
  EXPECT_EQ(r.code, 0) << r.err;  // whole, with zero padding after the end marker

  std::ofstream(path("fake.png")) << "GIF89a, not a PNG";
  expect_error(kiln("run " + model + " -i " + path("fake.png").string()), 1,
               "fake.png: not a PNG image: it does not start with the PNG signature");
  std::ofstream(path("empty.JPG")).flush();
  expect_error(kiln("run " + model + " -i " + path("empty.JPG").string()), 1,
               "not a JPEG image: it does not start with the JPEG start marker (ff d8 ff) (the "
               "file is empty)");
}

TEST_F(Cli, ModelMetadataSetsTheNormalization) {
  const int h = 3, w = 3;
  auto px = random_pixels(h * w * 3, 9);
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), w, h, 3, px.data(), w * 3));
  std::vector<std::string> dims = {"1", "1", "3", "3"};
  std::string model = ModelBuilder()
                          .input("image", dims)
                          .output("out", dims)
                          .node("Identity", {"image"}, {"out"})
                          .metadata("kiln.mean", "0.2860")
                          .metadata("kiln.std", "0.3530")
                          .save(path("m.onnx"));
  auto r = kiln("run " + model + " -i " + path("img.png").string() + " -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor want(DataType::kFloat32, {1, 1, h, w});
  for (int i = 0; i < h * w; ++i)
    want.data<float>()[i] =
        ((0.299f * px[3 * i] + 0.587f * px[3 * i + 1] + 0.114f * px[3 * i + 2]) / 255.f - 0.286f) /
        0.353f;
  // Luminance is kept in 8 bits, as PIL's "L" conversion keeps it: within half a level.
  expect_close(read_output("o/out.npy"), want, 0.5f / 255 / 0.353f + 1e-5);
}

TEST_F(Cli, ImageRunPrintsTopKWithLabels) {
  const uint8_t color[3] = {30, 220, 140};
  std::vector<uint8_t> px(8 * 8 * 3);
  for (int i = 0; i < 64; ++i)
    for (int c = 0; c < 3; ++c) px[3 * i + c] = color[c];
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), 8, 8, 3, px.data(), 24));
  std::ofstream(path("labels.txt")) << "red\r\ngreen\nblue\n";
  std::string model = channel_mean_model(path("m.onnx"));
  // The model's H×W is 8×8, but its batch is symbolic: --size is not needed.
  auto r = kiln("run " + model + " -i " + path("img.png").string() + " --labels " +
                path("labels.txt").string() + " --top-k 2");
  ASSERT_EQ(r.code, 0) << r.err;
  // ImageNet normalization (the 3-channel default), then softmax over the three means.
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double z[3], sum = 0;
  for (int c = 0; c < 3; ++c) sum += (z[c] = std::exp((color[c] / 255.0 - mean[c]) / stdv[c]));
  EXPECT_NE(r.out.find("top-2 of 'scores' (softmax)"), std::string::npos) << r.out;
  // Lines "  1.  74.6305%  class 1     green": rank, probability, class, label.
  std::istringstream lines(r.out.substr(r.out.find("(softmax):")));
  std::string line;
  std::getline(lines, line);
  const int want_class[2] = {1, 2};
  const char* want_label[2] = {"green", "blue"};
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    int got_rank = 0, got_class = -1;
    double prob = 0;
    char label[32] = {};
    ASSERT_EQ(
        std::sscanf(line.c_str(), " %d. %lf%% class %d %31s", &got_rank, &prob, &got_class, label),
        4)
        << line;
    EXPECT_EQ(got_rank, rank + 1);
    EXPECT_EQ(got_class, want_class[rank]);
    EXPECT_STREQ(label, want_label[rank]);
    EXPECT_NEAR(prob, 100 * z[want_class[rank]] / sum, 2e-4) << line;
  }
  EXPECT_FALSE(std::getline(lines, line)) << "only the top 2 are printed: " << line;
}

// kiln bench --images: end to end from a directory of images; a truncated JPEG is named once
// and the bench goes on; other files are ignored; bad uses are refused.
// 8-bit input normalized by the engine with the mean and std given on the command line, in
// raw pixel units (--input-scale 255) or [0, 1] ones; refused where they mean nothing.
TEST_F(Cli, InputMeanStdAndScaleNormalizeEightBitInput) {
  const int h = 4, w = 5;
  const std::string model = identity_model(3, h, w);
  Tensor x(DataType::kUInt8, {1, h, w, 3});
  const auto px = random_pixels(h * w * 3, 21);
  std::copy(px.begin(), px.end(), x.data<uint8_t>());
  ASSERT_TRUE(write_npy(path("x.npy").string(), x).is_ok());
  Tensor want(DataType::kFloat32, {1, 3, h, w});
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < h * w; ++i)
      want.data<float>()[c * h * w + i] = (px[3 * i + c] - 127.5f) / 63.75f;
  auto r =
      kiln("run " + model + " --input-format uint8-nhwc --input-mean 127.5 --input-std 63.75 " +
           "--input-scale 255 -i " + path("x.npy").string() + " -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("o/out.npy"), want, 1e-4);
  r = kiln("run " + model + " --input-format uint8-nhwc --input-mean 0.5 --input-std 0.25 -i " +
           path("x.npy").string() + " -o " + path("p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("p/out.npy"), want, 1e-4);  // the same in [0, 1] units
  expect_error(kiln("run " + model + " --input-mean 0.5 -i " + path("x.npy").string()), 2,
               "--input-mean, --input-std and --input-scale are for 8-bit or jpeg input");
  expect_error(kiln("run " + model + " --input-format uint8-nhwc --input-std 1,0,1 -i x"), 1,
               "std of channel 1 is 0");
  expect_error(kiln("run " + model + " --input-format uint8-nhwc --input-scale -1 -i x"), 2,
               "--input-scale must be a positive number");
  expect_error(kiln("run " + model + " --input-format uint8-nhwc --input-mean 1,2 -i " +
                    path("x.npy").string()),
               1, "3 channels, but 2 values of mean were given");
  expect_error(kiln("run " + model + " --input-format jpeg -i " + path("x.npy").string()), 2,
               "--input-format jpeg is kiln bench's");
}

// --input-format jpeg without --images: synthetic photo-like JPEGs, decoded end to end.
TEST_F(Cli, BenchJpegInputRunsOnSyntheticPhotos) {
  const std::string model = identity_model(3, 6, 7);
  auto r = kiln("bench " + model +
                " --input-format jpeg --warmup 0 --duration 0.2 --threads 1 --decode-threads 2");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string said = "128 image files (synthetic photo-like 500x375 JPEGs, quality 90, mean ";
  const size_t at = r.out.find(said);
  ASSERT_NE(at, std::string::npos) << r.out;
  const double kb = std::stod(r.out.substr(at + said.size()));
  EXPECT_GT(kb, 30) << r.out;  // photo-like: ~60 KB, as make_jpegs.py's
  EXPECT_LT(kb, 120) << r.out;
  EXPECT_EQ(r.out.find("failed to decode"), std::string::npos) << r.out;
  expect_error(kiln("bench " + model + " --input-format uint8-nhwc --images " + path("").string()),
               2, "--images decodes into the engine's uint8-nhwc input");
}

TEST_F(Cli, BenchImagesRunsEndToEndFromFiles) {
  const fs::path dir = path("imgs");
  fs::create_directories(dir);
  for (int i = 0; i < 3; ++i) {
    auto px = random_pixels(40 * 50 * 3, 10 + i);
    ASSERT_TRUE(stbi_write_jpg((dir / ("a" + std::to_string(i) + ".jpg")).c_str(), 50, 40, 3,
                               px.data(), 90));
  }
  const std::string whole = slurp(dir / "a0.jpg");
  std::ofstream(dir / "cut.jpg", std::ios::binary) << whole.substr(0, whole.size() / 2);
  std::ofstream(dir / "notes.txt") << "not an image";
  const std::string model = identity_model(3, 6, 7);
  for (const char* extra : {"", " --letterbox --decoders 2"}) {
    auto r = kiln("bench " + model + " --images " + dir.string() +
                  " --warmup 0 --duration 0.2 --threads 1 --decode-threads 2" + extra);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("4 image files"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("decode (host, libjpeg-turbo) and ") +
                         (*extra ? "letterbox" : "resize") + " to 6x7x3, 2 host threads, " +
                         (*extra ? "2" : "1") + " decoders"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("1 of the 4 files failed to decode"), std::string::npos) << r.out;
    const std::string named = "cut.jpg: image ";
    const size_t at = r.err.find(named);
    EXPECT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(named, at + 1), std::string::npos) << "named twice: " << r.err;
    EXPECT_NE(r.err.find("truncated JPEG"), std::string::npos) << r.err;
  }
  expect_error(kiln("bench " + model + " --images " + dir.string() + " --batch 4"), 2,
               "the model's batch is fixed at 1");
  expect_error(kiln("bench " + model + " --letterbox"), 2, "need --images");
  expect_error(kiln("bench " + model + " --decoders 2"), 2, "need --images");
  expect_error(kiln("bench " + model + " --images " + dir.string() + " --image-decoder gpu"), 2,
               "--image-decoder gpu needs --device cuda");
  expect_error(kiln("bench " + model + " --images " + path("none").string()), 1, "not a directory");
  fs::create_directories(path("empty"));
  expect_error(kiln("bench " + model + " --images " + path("empty").string()), 1,
               "no .jpg, .jpeg or .png file");
  expect_error(kiln("bench " + model + " --images " + dir.string() + " --json x.json"), 2,
               "--images and --input-format jpeg run decoding");
}

}  // namespace
}  // namespace kiln::test

#endif  // KILN_CLI_PATH
