// RGB or grey pixels → JPEG (libjpeg-turbo), and the photo-like test images kiln bench
// synthesizes (kiln/images.h).
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "kiln/images.h"

namespace kiln {

Result<std::string> encode_jpeg(const Image& image, int quality) {
  if (quality < 1 || quality > 100)
    return invalid_argument("encode_jpeg: quality must be 1 to 100, not " +
                            std::to_string(quality));
  if (image.width < 1 || image.height < 1 || (image.channels != 1 && image.channels != 3) ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels)
    return invalid_argument("encode_jpeg: a " + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + "x" + std::to_string(image.channels) +
                            " image with " + std::to_string(image.pixels.size()) +
                            " bytes of pixels");
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  if (!tj) return internal_error("encode_jpeg: tjInitCompress failed");
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const bool grey = image.channels == 1;
  if (tjCompress2(tj.get(), image.pixels.data(), image.width, 0, image.height,
                  grey ? TJPF_GRAY : TJPF_RGB, &buf, &size, grey ? TJSAMP_GRAY : TJSAMP_420,
                  quality, 0) != 0) {
    const std::string why = tjGetErrorStr2(tj.get());
    tjFree(buf);
    return internal_error("encode_jpeg: " + why);
  }
  std::string out(reinterpret_cast<const char*>(buf), size);
  tjFree(buf);
  return out;
}

Image photo_like_image(int width, int height, uint32_t seed) {
  Image im;
  im.width = im.source_width = std::max(1, width);
  im.height = im.source_height = std::max(1, height);
  im.channels = 3;
  const int w = im.width, h = im.height;
  std::mt19937 gen(seed);
  auto uniform = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(gen);
  };
  std::vector<float> img(static_cast<size_t>(w) * h * 3, 128.f);
  // Smooth colour fields: sin(fx·x + fy·y + p), split into a row and a column factor.
  std::vector<float> sx(w), cx(w), sy(h), cy(h);
  for (int f = 0; f < 6; ++f) {
    const float fx = uniform(0.002f, 0.03f), fy = uniform(0.002f, 0.03f), p = uniform(0, 6.3f);
    const float amp[3] = {uniform(10, 40), uniform(10, 40), uniform(10, 40)};
    for (int x = 0; x < w; ++x) sx[x] = std::sin(fx * x + p), cx[x] = std::cos(fx * x + p);
    for (int y = 0; y < h; ++y) sy[y] = std::sin(fy * y), cy[y] = std::cos(fy * y);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const float v = sx[x] * cy[y] + cx[x] * sy[y];
        float* px = &img[(static_cast<size_t>(y) * w + x) * 3];
        for (int c = 0; c < 3; ++c) px[c] += amp[c] * v;
      }
  }
  // Shapes with hard edges.
  for (int d = 0; d < 12; ++d) {
    const float ox = uniform(0, w), oy = uniform(0, h), r = uniform(15, 120);
    const float add[3] = {uniform(-60, 60), uniform(-60, 60), uniform(-60, 60)};
    const int y0 = std::max(0, int(oy - r)), y1 = std::min(h - 1, int(oy + r));
    const int x0 = std::max(0, int(ox - r)), x1 = std::min(w - 1, int(ox + r));
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x)
        if ((x - ox) * (x - ox) + (y - oy) * (y - oy) < r * r)
          for (int c = 0; c < 3; ++c) img[(static_cast<size_t>(y) * w + x) * 3 + c] += add[c];
  }
  // Fine texture: noise, blurred a little (3-tap in each direction).
  std::normal_distribution<float> noise(0, 40);
  std::vector<float> n(img.size()), t(img.size());
  for (float& v : n) v = noise(gen);
  const size_t row = static_cast<size_t>(w) * 3;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const size_t i = y * row + x * 3 + c;
        t[i] = 0.5f * n[i] + 0.25f * (n[x > 0 ? i - 3 : i] + n[x + 1 < w ? i + 3 : i]);
      }
  im.pixels.resize(img.size());
  for (int y = 0; y < h; ++y)
    for (size_t k = 0; k < row; ++k) {
      const size_t i = y * row + k;
      const float tex = 0.5f * t[i] + 0.25f * (t[y > 0 ? i - row : i] + t[y + 1 < h ? i + row : i]);
      im.pixels[i] = static_cast<uint8_t>(std::clamp(img[i] + 0.75f * tex, 0.f, 255.f));
    }
  return im;
}

}  // namespace kiln
