// One JPEG (libjpeg-turbo) or PNG (stb_image) → RGB (kiln/images.h).
#include <turbojpeg.h>

#include <algorithm>
#include <memory>

#include "image/image_internal.h"
#include "kiln/images.h"

// stb's implementations live in this one translation unit; its code is not ours to lint.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace kiln {

namespace {

std::string pixels_text(int64_t w, int64_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

// The smallest DCT-scaled size of a w × h JPEG still large enough for min_w × min_h per `fit`,
// among the scales 1/2, 1/4 and 1/8: libjpeg-turbo has SIMD inverse DCTs for those, while the
// others (5/8, 3/4...) take its plain C ones and decode slower than the full size does
// (a 500×375 photo: 5/8 1.4 ms, full size 0.9 ms on one core).
void scaled_size(int w, int h, int min_w, int min_h, ResizeMode fit, int* sw, int* sh) {
  *sw = w;
  *sh = h;
  if (min_w <= 0 && min_h <= 0) return;
  int n = 0;
  const tjscalingfactor* f = tjGetScalingFactors(&n);
  for (int i = 0; f && i < n; ++i) {
    const bool fast = f[i].num == 1 && (f[i].denom == 2 || f[i].denom == 4 || f[i].denom == 8);
    if (!fast) continue;  // and never larger than the image
    const int cw = TJSCALED(w, f[i]), ch = TJSCALED(h, f[i]);
    const bool large_enough =
        fit == ResizeMode::kLetterbox ? (cw >= min_w || ch >= min_h) : (cw >= min_w && ch >= min_h);
    if (large_enough && int64_t{cw} * ch < int64_t{*sw} * *sh) {
      *sw = cw;
      *sh = ch;
    }
  }
}

Result<Image> decode_jpeg(std::string_view bytes, const std::string& what, int min_w, int min_h,
                          ResizeMode fit, int64_t max_pixels) {
  // One decompressor per thread, made on its first JPEG (a batch's threads reuse theirs). A
  // failed decode can leave it unusable (libjpeg-turbo 2.1 then fails every later JPEG with
  // the same error), so an error drops it and the thread's next JPEG makes a fresh one.
  thread_local std::unique_ptr<void, int (*)(tjhandle)> tj(nullptr, tjDestroy);
  if (!tj) tj.reset(tjInitDecompress());
  if (!tj) return internal_error(what + ": cannot initialize the JPEG decoder");
  auto failed = [&](const std::string& why) {
    const std::string message = what + ": " + why + tjGetErrorStr2(tj.get());
    tj.reset();
    return invalid_argument(message);
  };
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), data, bytes.size(), &w, &h, &subsamp, &colorspace) != 0)
    return failed("bad JPEG: ");
  if (w <= 0 || h <= 0) return invalid_argument(what + ": bad JPEG: no image size in its header");
  if (int64_t{w} * h > max_pixels)
    return invalid_argument(what + ": JPEG of " + pixels_text(w, h) +
                            " pixels is larger than the " + std::to_string(max_pixels) +
                            " pixels allowed");
  Image img;
  img.source_width = w;
  img.source_height = h;
  scaled_size(w, h, min_w, min_h, fit, &img.width, &img.height);
  img.channels = 3;
  img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
  if (tjDecompress2(tj.get(), data, bytes.size(), img.pixels.data(), img.width, 0, img.height,
                    TJPF_RGB, 0) != 0) {
    // A warning alone (extraneous bytes before a marker, common and harmless) is accepted when
    // the file is whole; a file without its end marker is truncated, its image part grey.
    if (tjGetErrorCode(tj.get()) == TJERR_FATAL) return failed("bad JPEG: ");
    if (!jpeg_has_end_marker(bytes))
      return failed("truncated JPEG (" + std::to_string(bytes.size()) +
                    " bytes, no end-of-image marker): ");
    tj.reset();
  }
  return img;
}

Result<Image> decode_png(std::string_view bytes, const std::string& what, int64_t max_pixels) {
  auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  int len = static_cast<int>(std::min<size_t>(bytes.size(), 0x7fffffff));
  int w = 0, h = 0, n = 0;
  if (!stbi_info_from_memory(data, len, &w, &h, &n))
    return invalid_argument(what + ": bad PNG: " + stbi_failure_reason());
  if (int64_t{w} * h > max_pixels)
    return invalid_argument(what + ": PNG of " + pixels_text(w, h) + " pixels is larger than the " +
                            std::to_string(max_pixels) + " pixels allowed");
  // Asking stb for 3 channels converts gray and drops alpha (PNG alpha is not composited).
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &w, &h, &n, 3),
                                               stbi_image_free);
  if (!px) return invalid_argument(what + ": bad PNG: " + stbi_failure_reason());
  Image img;
  img.width = img.source_width = w;
  img.height = img.source_height = h;
  img.channels = 3;
  img.pixels.assign(px.get(), px.get() + static_cast<size_t>(w) * h * 3);
  return img;
}

}  // namespace

bool jpeg_has_end_marker(std::string_view b) {
  size_t n = b.size();
  while (n > 0 && b[n - 1] == '\0') --n;
  return n >= 2 && static_cast<unsigned char>(b[n - 2]) == 0xFF &&
         static_cast<unsigned char>(b[n - 1]) == 0xD9;
}

Result<Image> decode_for_batch(std::string_view bytes, size_t index, const ImageBatchOptions& o) {
  const std::string what = "image " + std::to_string(index);
  if (bytes.size() > static_cast<size_t>(o.max_image_bytes))
    return invalid_argument(what + ": " + std::to_string(bytes.size()) + " bytes, more than the " +
                            std::to_string(o.max_image_bytes) + " allowed");
  return decode_image(bytes, what, o.width, o.height, o.resize, o.max_pixels);
}

ImageFormat sniff_image(std::string_view b) {
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xFF &&
      static_cast<unsigned char>(b[1]) == 0xD8 && static_cast<unsigned char>(b[2]) == 0xFF)
    return ImageFormat::kJpeg;
  if (b.size() >= 8 && b.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    default: return "unknown";
  }
}

Result<Image> decode_image(std::string_view bytes, const std::string& what, int min_width,
                           int min_height, ResizeMode fit, int64_t max_pixels) {
  switch (sniff_image(bytes)) {
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, what, min_width, min_height, fit, max_pixels);
    case ImageFormat::kPng: return decode_png(bytes, what, max_pixels);
    default:
      return invalid_argument(what + ": not a JPEG or PNG image (" + std::to_string(bytes.size()) +
                              " bytes)");
  }
}

}  // namespace kiln
