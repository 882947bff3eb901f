// Bilinear resize of an RGB image into a batch slot, stretched or letterboxed (kiln/images.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "image/image_internal.h"
#include "kiln/images.h"

namespace kiln {

namespace {

// Source index pair and weight of each destination coordinate, half-pixel centres: the
// destination pixel d samples the source at (d + 0.5) · src / dst − 0.5, clamped to the image.
struct Taps {
  std::vector<int> i0, i1;
  std::vector<float> w1;
};

Taps taps(int src, int dst) {
  Taps t;
  t.i0.resize(dst);
  t.i1.resize(dst);
  t.w1.resize(dst);
  const double ratio = static_cast<double>(src) / dst;
  for (int d = 0; d < dst; ++d) {
    const double s = std::clamp((d + 0.5) * ratio - 0.5, 0.0, static_cast<double>(src - 1));
    const int i = static_cast<int>(s);
    t.i0[d] = i;
    t.i1[d] = std::min(i + 1, src - 1);
    t.w1[d] = static_cast<float>(s - i);
  }
  return t;
}

uint8_t to_u8(float v) { return static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); }

}  // namespace

ImageRegion place_image(int src_w, int src_h, ResizeMode mode, int H, int W) {
  ImageRegion r;
  ImagePlacement& p = r.placement;
  p.width = src_w;
  p.height = src_h;
  r.dw = W;
  r.dh = H;
  if (mode == ResizeMode::kLetterbox) {
    const double s = std::min(static_cast<double>(W) / src_w, static_cast<double>(H) / src_h);
    r.dw = std::clamp(static_cast<int>(std::lround(src_w * s)), 1, W);
    r.dh = std::clamp(static_cast<int>(std::lround(src_h * s)), 1, H);
    p.pad_x = (W - r.dw) / 2;
    p.pad_y = (H - r.dh) / 2;
  }
  p.scale_x = static_cast<double>(r.dw) / src_w;
  p.scale_y = static_cast<double>(r.dh) / src_h;
  return r;
}

ImagePlacement resize_into(const Image& im, ResizeMode mode, int H, int W, int C, uint8_t fill,
                           uint8_t* out, int64_t stride) {
  const ImageRegion region =
      place_image(im.source_width > 0 ? im.source_width : im.width,
                  im.source_height > 0 ? im.source_height : im.height, mode, H, W);
  const ImagePlacement& p = region.placement;
  const int dw = region.dw, dh = region.dh;
  if (mode == ResizeMode::kLetterbox)
    for (int y = 0; y < H; ++y) std::memset(out + y * stride, fill, static_cast<size_t>(W) * C);
  const Taps tx = taps(im.width, dw), ty = taps(im.height, dh);
  const int64_t src_stride = int64_t{im.width} * 3;
  // Each source row a destination row reads is blended across once, into one of two float
  // rows (neighbouring destination rows share source rows); then each destination row blends
  // its two down. The same sums in the same order as blending four pixels per destination
  // pixel: the same bytes, at a third of the work.
  const size_t row_len = static_cast<size_t>(dw) * 3;
  std::vector<float> rows(2 * row_len);
  int held[2] = {-1, -1};  // the source row in each
  auto across = [&](int sy, int keep) -> const float* {
    for (int k = 0; k < 2; ++k)
      if (held[k] == sy) return rows.data() + k * row_len;
    const int k = held[0] == keep ? 1 : 0;  // never the other row in use
    held[k] = sy;
    float* d = rows.data() + k * row_len;
    const uint8_t* r = im.pixels.data() + sy * src_stride;
    for (int x = 0; x < dw; ++x) {
      const int a = tx.i0[x] * 3, b = tx.i1[x] * 3;
      const float fx = tx.w1[x];
      for (int c = 0; c < 3; ++c) d[3 * x + c] = r[a + c] + fx * (r[b + c] - r[a + c]);
    }
    return d;
  };
  for (int y = 0; y < dh; ++y) {
    const float* top = across(ty.i0[y], ty.i1[y]);
    const float* bottom = across(ty.i1[y], ty.i0[y]);
    const float fy = ty.w1[y];
    uint8_t* o = out + (p.pad_y + y) * stride + int64_t{p.pad_x} * C;
    if (C == 3) {
      for (size_t k = 0; k < row_len; ++k) o[k] = to_u8(top[k] + fy * (bottom[k] - top[k]));
    } else {
      for (int x = 0; x < dw; ++x) {
        float rgb[3];
        for (int c = 0; c < 3; ++c)
          rgb[c] = top[3 * x + c] + fy * (bottom[3 * x + c] - top[3 * x + c]);
        o[x] = to_u8(0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]);
      }
    }
  }
  return p;
}

}  // namespace kiln
