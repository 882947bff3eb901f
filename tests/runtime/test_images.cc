// kiln/images.h: decoding (full size and at a DCT scale), the bilinear resize and letterbox, and
// batches where one image is corrupt.
#include <gtest/gtest.h>
#include <stb_image_write.h>
#include <turbojpeg.h>

#include <cmath>
#include <memory>
#include <random>

#include "image/image_internal.h"
#include "kiln/images.h"

namespace kiln {
namespace {

// A smooth RGB pattern with some noise (never flat, so resizing and decoding show).
Image pattern(int w, int h, uint32_t seed) {
  Image im;
  im.width = im.source_width = w;
  im.height = im.source_height = h;
  im.channels = 3;
  im.pixels.resize(static_cast<size_t>(w) * h * 3);
  std::mt19937 gen(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        im.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(
            128 + 90 * std::sin(0.05 * (x + 2 * y) + c) + int(gen() % 17) - 8, 0.0, 255.0));
  return im;
}

std::string jpeg_of(const Image& im, int quality = 92) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj.get(), im.pixels.data(), im.width, 0, im.height, TJPF_RGB, &buf, &size,
                        TJSAMP_420, quality, 0),
            0);
  std::string r(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  return r;
}

std::string png_of(const Image& im) {
  std::string r;
  stbi_write_png_to_func(
      [](void* ctx, void* data, int n) {
        static_cast<std::string*>(ctx)->append(static_cast<char*>(data), n);
      },
      &r, im.width, im.height, 3, im.pixels.data(), im.width * 3);
  return r;
}

TEST(Images, DecodeMatchesLibjpegTurboAndPngExactly) {
  const Image src = pattern(97, 61, 1);
  const std::string jpeg = jpeg_of(src);
  auto im = decode_image(jpeg, "x.jpg");
  ASSERT_TRUE(im.is_ok()) << im.status().message();
  EXPECT_EQ(im->width, 97);
  EXPECT_EQ(im->height, 61);
  EXPECT_EQ(im->source_width, 97);
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  std::vector<uint8_t> direct(97 * 61 * 3);
  ASSERT_EQ(tjDecompress2(tj.get(), reinterpret_cast<const unsigned char*>(jpeg.data()),
                          jpeg.size(), direct.data(), 97, 0, 61, TJPF_RGB, 0),
            0);
  EXPECT_EQ(im->pixels, direct);
  auto png = decode_image(png_of(src), "x.png");
  ASSERT_TRUE(png.is_ok()) << png.status().message();
  EXPECT_EQ(png->pixels, src.pixels);  // lossless
  EXPECT_EQ(sniff_image(jpeg), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image("GIF89a"), ImageFormat::kUnknown);
}

TEST(Images, JpegDecodesAtTheSmallestDctScaleLargeEnough) {
  const std::string jpeg = jpeg_of(pattern(800, 600, 2));
  // Stretched to 100x100 both sides must reach 100: 1/4 (200x150); 1/8 (100x75) is too short.
  auto s = decode_image(jpeg, "a", 100, 100, ResizeMode::kStretch);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->width, 200);
  EXPECT_EQ(s->height, 150);
  EXPECT_EQ(s->source_width, 800);
  EXPECT_EQ(s->source_height, 600);
  // Letterboxed into 100x100 the wide side touches the box: 1/8 (100x75) is enough.
  auto l = decode_image(jpeg, "a", 100, 100, ResizeMode::kLetterbox);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->width, 100);
  EXPECT_EQ(l->height, 75);
  // Larger than the image: full size, never upscaled by the decoder.
  auto f = decode_image(jpeg, "a", 1000, 1000);
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->width, 800);
  // Only the scales with fast inverse DCTs (1/2, 1/4, 1/8): a 500x375 photo for 224x224 is
  // decoded at full size, not at 5/8 (313x235), which libjpeg-turbo decodes slower.
  auto p = decode_image(jpeg_of(pattern(500, 375, 3)), "p", 224, 224);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->width, 500);
  EXPECT_EQ(p->height, 375);
  auto half = decode_image(jpeg_of(pattern(500, 375, 3)), "p", 224, 180);
  ASSERT_TRUE(half.is_ok());
  EXPECT_EQ(half->width, 250);
  EXPECT_EQ(half->height, 188);
}

TEST(Images, BilinearResizeUsesHalfPixelCentres) {
  Image im;
  im.width = 2;
  im.height = 1;
  im.channels = 3;
  im.pixels = {0, 10, 200, 255, 20, 100};
  std::vector<uint8_t> out(4 * 3);
  const ImagePlacement p = resize_into(im, ResizeMode::kStretch, 1, 4, 3, 0, out.data(), 12);
  // Destination x samples the source at (x + 0.5) / 2 - 0.5: -0.25 (clamped 0), 0.25, 0.75, 1.25
  // (clamped 1).
  const std::vector<uint8_t> want = {0, 10, 200, 64, 13, 175, 191, 18, 125, 255, 20, 100};
  EXPECT_EQ(out, want);
  EXPECT_DOUBLE_EQ(p.scale_x, 2.0);
  EXPECT_EQ(p.pad_x, 0);
  // Its own size: a copy. One channel: luminance.
  const Image big = pattern(31, 17, 3);
  std::vector<uint8_t> same(31 * 17 * 3), gray(31 * 17);
  resize_into(big, ResizeMode::kStretch, 17, 31, 3, 0, same.data(), 31 * 3);
  EXPECT_EQ(same, big.pixels);
  resize_into(big, ResizeMode::kStretch, 17, 31, 1, 0, gray.data(), 31);
  for (size_t i = 0; i < gray.size(); ++i) {
    const uint8_t* px = &big.pixels[i * 3];
    EXPECT_NEAR(gray[i], 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2], 0.51) << i;
  }
}

TEST(Images, LetterboxKeepsTheAspectRatioOnPadding) {
  const Image im = pattern(200, 100, 4);
  std::vector<uint8_t> out(64 * 64 * 3, 7);
  const ImagePlacement p =
      resize_into(im, ResizeMode::kLetterbox, 64, 64, 3, 114, out.data(), 64 * 3);
  EXPECT_EQ(p.width, 200);
  EXPECT_EQ(p.height, 100);
  EXPECT_DOUBLE_EQ(p.scale_x, 0.32);
  EXPECT_DOUBLE_EQ(p.scale_y, 0.32);
  EXPECT_EQ(p.pad_x, 0);
  EXPECT_EQ(p.pad_y, 16);  // 32 rows of image, centred
  for (int y = 0; y < 64; ++y) {
    const bool pad = y < 16 || y >= 48;
    int filled = 0;
    for (int i = 0; i < 64 * 3; ++i) filled += out[y * 64 * 3 + i] == 114;
    if (pad)
      EXPECT_EQ(filled, 64 * 3) << "row " << y;
    else
      EXPECT_LT(filled, 64) << "row " << y;  // image pixels, not padding
  }
}

TEST(Images, ACorruptImageFailsAloneInItsBatch) {
  const Image a = pattern(120, 90, 5), b = pattern(64, 80, 6), c = pattern(300, 200, 7);
  const std::string ja = jpeg_of(a), pb = png_of(b), jc = jpeg_of(c);
  const std::string cut = jc.substr(0, jc.size() / 3);  // truncated
  const std::string junk = "this is not an image at all";
  const std::vector<std::string_view> batch = {ja, pb, cut, junk, jc};
  for (int threads : {1, 3}) {
    ImageBatchOptions o;
    o.height = 48;
    o.width = 40;
    o.threads = threads;
    o.fill = 9;
    auto dec = ImageDecoder::create(o);
    ASSERT_TRUE(dec.is_ok());
    auto r = (*dec)->decode(batch);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->pixels.dtype(), DataType::kUInt8);
    EXPECT_EQ(r->pixels.shape(), (Shape{5, 48, 40, 3}));
    EXPECT_EQ(r->failed(), 2);
    EXPECT_TRUE(r->status[0].is_ok());
    EXPECT_TRUE(r->status[1].is_ok());
    EXPECT_NE(r->status[2].message().find("image 2: truncated JPEG"), std::string::npos)
        << r->status[2].message();
    EXPECT_NE(r->status[3].message().find("image 3: not a JPEG or PNG image"), std::string::npos)
        << r->status[3].message();
    EXPECT_TRUE(r->status[4].is_ok());
    const size_t slot = 48 * 40 * 3;
    const uint8_t* px = r->pixels.data<uint8_t>();
    for (size_t i : {2, 3})
      for (size_t k = 0; k < slot; ++k) ASSERT_EQ(px[i * slot + k], 9) << i;
    // Each good slot is what decoding and resizing that image alone gives.
    for (size_t i : {0, 1, 4}) {
      auto one = decode_image(batch[i], "one", 40, 48);
      ASSERT_TRUE(one.is_ok());
      std::vector<uint8_t> want(slot);
      resize_into(*one, ResizeMode::kStretch, 48, 40, 3, 0, want.data(), 40 * 3);
      EXPECT_EQ(std::vector<uint8_t>(px + i * slot, px + (i + 1) * slot), want) << i;
      EXPECT_EQ(r->placement[i].width, i == 0 ? 120 : i == 1 ? 64 : 300);
    }
  }
}

// A JPEG whose header breaks (a bad marker after the start) leaves libjpeg-turbo's decompressor
// unusable: the images after it, in the batch, in later batches and alone, still decode.
TEST(Images, ABadJpegHeaderDoesNotBreakTheImagesAfterIt) {
  const std::string good = jpeg_of(pattern(50, 30, 3));
  const std::string bad = std::string("\xff\xd8\xff", 3) + " not a marker";
  auto alone = decode_image(bad, "bad");
  ASSERT_FALSE(alone.is_ok());
  EXPECT_NE(alone.status().message().find("bad JPEG"), std::string::npos);
  EXPECT_TRUE(decode_image(good, "good").is_ok());
  ImageBatchOptions o;
  o.height = 16;
  o.width = 12;
  o.threads = 1;
  auto dec = ImageDecoder::create(o);
  ASSERT_TRUE(dec.is_ok());
  auto r = (*dec)->decode({bad, good, good});
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->status[0].is_ok());
  EXPECT_TRUE(r->status[1].is_ok()) << r->status[1].message();
  EXPECT_TRUE(r->status[2].is_ok()) << r->status[2].message();
  auto next = (*dec)->decode({good});
  ASSERT_TRUE(next.is_ok());
  EXPECT_TRUE(next->status[0].is_ok()) << next->status[0].message();
}

// Pinned batches are reused once the batch made from one is dropped, never while it is held.
TEST(Images, PinnedBatchesAreReusedOnlyWhenDropped) {
  ImageBatchOptions o;
  o.height = 8;
  o.width = 8;
  o.threads = 1;
  o.pinned = true;
  auto dec = ImageDecoder::create(o);
  ASSERT_TRUE(dec.is_ok());
  const std::string jpeg = jpeg_of(pattern(20, 10, 11));
  auto first = (*dec)->decode({jpeg, jpeg});
  ASSERT_TRUE(first.is_ok());
  const void* held = first->pixels.raw();
  auto second = (*dec)->decode({jpeg, jpeg});
  ASSERT_TRUE(second.is_ok());
  EXPECT_NE(second->pixels.raw(), held);  // the first is still held
  const std::vector<uint8_t> want(first->pixels.data<uint8_t>(),
                                  first->pixels.data<uint8_t>() + first->pixels.nbytes());
  const void* dropped = second->pixels.raw();
  second = ImageBatch{};  // the second batch dropped
  auto third = (*dec)->decode({jpeg, jpeg});
  ASSERT_TRUE(third.is_ok());
  EXPECT_EQ(third->pixels.raw(), dropped);
  EXPECT_EQ(std::vector<uint8_t>(third->pixels.data<uint8_t>(),
                                 third->pixels.data<uint8_t>() + third->pixels.nbytes()),
            want);
  // Another shape takes a buffer of its own.
  auto one = (*dec)->decode({jpeg});
  ASSERT_TRUE(one.is_ok());
  EXPECT_NE(one->pixels.raw(), held);
  EXPECT_NE(one->pixels.raw(), dropped);
}

TEST(Images, BadOptionsAndOversizedImagesAreRefused) {
  for (auto change : std::vector<void (*)(ImageBatchOptions&)>{
           [](ImageBatchOptions& o) { o.channels = 2; }, [](ImageBatchOptions& o) { o.height = 0; },
           [](ImageBatchOptions& o) { o.threads = -1; },
           [](ImageBatchOptions& o) { o.max_pixels = 0; }}) {
    ImageBatchOptions o;
    change(o);
    auto d = ImageDecoder::create(o);
    ASSERT_FALSE(d.is_ok());
    EXPECT_NE(d.status().message().find("ImageDecoder"), std::string::npos);
  }
  ImageBatchOptions o;
  o.threads = 1;
  o.max_image_bytes = 20000;
  o.max_pixels = 5000;
  auto dec = ImageDecoder::create(o);
  ASSERT_TRUE(dec.is_ok());
  EXPECT_FALSE((*dec)->decode({}).is_ok());
  const std::string big = jpeg_of(pattern(400, 300, 8), 98);  // over 20000 bytes
  const std::string wide = jpeg_of(pattern(100, 60, 9), 10);  // 6000 pixels, few bytes
  ASSERT_GT(big.size(), 20000u);
  ASSERT_LT(wide.size(), 20000u);
  auto r = (*dec)->decode({big, wide});
  ASSERT_TRUE(r.is_ok());
  EXPECT_NE(r->status[0].message().find("more than the 20000 allowed"), std::string::npos)
      << r->status[0].message();
  EXPECT_NE(r->status[1].message().find("100x60 pixels is larger than the 5000"), std::string::npos)
      << r->status[1].message();
}

// encode_jpeg round-trips through decode_image (JPEG's loss apart); photo_like_image is the
// same for the same seed and photo-like in size once encoded; bad images are refused by name.
TEST(Images, EncodeJpegRoundTripsAndPhotoLikeImagesAreRepeatable) {
  const Image a = photo_like_image(500, 375, 3), b = photo_like_image(500, 375, 3);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_NE(a.pixels, photo_like_image(500, 375, 4).pixels);
  auto jpg = encode_jpeg(a, 90);
  ASSERT_TRUE(jpg.is_ok()) << jpg.status().to_string();
  EXPECT_GT(jpg->size(), 30u << 10);
  EXPECT_LT(jpg->size(), 120u << 10);
  auto back = decode_image(*jpg, "round trip");
  ASSERT_TRUE(back.is_ok());
  ASSERT_EQ(back->width, 500);
  ASSERT_EQ(back->height, 375);
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(a.pixels[i] - back->pixels[i]);
  EXPECT_LT(sum / a.pixels.size(), 8.0);  // quality 90 on a textured image
  Image grey{8, 4, 1, std::vector<uint8_t>(32, 77)};
  auto g = encode_jpeg(grey, 100);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(sniff_image(*g), ImageFormat::kJpeg);
  EXPECT_NE(encode_jpeg(a, 0).status().message().find("quality must be 1 to 100"),
            std::string::npos);
  Image wrong{8, 4, 3, std::vector<uint8_t>(10)};
  EXPECT_NE(encode_jpeg(wrong).status().message().find("8x4x3 image with 10 bytes"),
            std::string::npos);
}

// The split of a batch's JPEGs between nvJPEG and the host threads: the fewest host images
// that end both parts soonest, in whole images per thread.
TEST(Images, JpegsSplitSoBothPartsEndSoonest) {
  // nvJPEG 64 in 3.2 ms; 3 ms an image on 15 threads: 4 to the threads end both at 3 ms.
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.003, 15), 4);
  // One host image outlasts nvJPEG's whole batch: none.
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.005, 15), 0);
  // nvJPEG far slower: everything to the threads.
  EXPECT_EQ(jpegs_for_threads(8, 100, 0.001, 4), 8);
  // Even speeds, 1 ms an image on 2 threads, nvJPEG 1000 images/s: 12 images end in 4 ms with
  // 4 to nvJPEG and 8 (4 rounds of 2) to the threads.
  EXPECT_EQ(jpegs_for_threads(12, 1000, 0.001, 2), 8);
  // The host images' copy to the GPU counts: at 0.1 ms each, the 4 images of the first case
  // would end the batch at 3.4 ms, against 3.2 ms for nvJPEG alone: none.
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.003, 15, 0.0001), 0);
  // At 0.01 ms each, 4 still pay (3.04 ms).
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.003, 15, 0.00001), 4);
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.003, 15, -1), 0);
  // Nothing measured, nothing to split or no thread: none.
  EXPECT_EQ(jpegs_for_threads(64, 20000, 1e30, 15), 0);
  EXPECT_EQ(jpegs_for_threads(64, 0, 0.001, 15), 0);
  EXPECT_EQ(jpegs_for_threads(0, 20000, 0.001, 15), 0);
  EXPECT_EQ(jpegs_for_threads(64, 20000, 0.001, 0), 0);
}

}  // namespace
}  // namespace kiln
