// Resize (ONNX opset 13 form): attributes, the output-shape rule and the coordinate math,
// shared by the reference kernel (resize.cc) and backend kernels.
//
// Inputs are (X, roi, scales, sizes); roi/scales/sizes may be omitted or empty, meaning
// "not given". Exactly one of scales/sizes is given. For every resized axis the output
// coordinate x_out maps to a source coordinate x_src (resize_source_coord) and the output
// is a weighted sum of input elements around x_src: one for nearest, two for linear, four
// for cubic, per axis (N-linear / N-cubic over all axes).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/op_registry.h"

namespace kiln {

enum class ResizeMode { kNearest, kLinear, kCubic };

enum class ResizeCoordMode {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNearest,
  kTfCropAndResize,
};

enum class ResizeNearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordMode coord_mode = ResizeCoordMode::kHalfPixel;
  ResizeNearestMode nearest_mode = ResizeNearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;  // tf_crop_and_resize, outside the input
};

// Reads and validates the node's attributes. Opset-18 attributes (antialias, axes,
// keep_aspect_ratio_policy) with non-default values are reported as unsupported.
Result<ResizeAttrs> parse_resize_attrs(const Attributes& attrs);

// Everything the per-axis coordinate math needs, resolved from the inputs' values.
struct ResizeGeometry {
  Shape input_shape;
  Shape output_shape;
  // Per axis. scale = output/input length: the given scale, or sizes/input when sizes are
  // given. resized_length is the length the coordinate formulas use: the exact size when
  // sizes are given, input*scale (not floored) when scales are given, as the ONNX
  // reference does (it shows in align_corners with a fractional input*scale).
  std::vector<double> scale;
  std::vector<double> resized_length;
  // Normalized region of interest (tf_crop_and_resize); 0 and 1 when roi is not given.
  std::vector<double> roi_start;
  std::vector<double> roi_end;
};

// in = the node's input descs (X, roi, scales, sizes); the values of roi/scales/sizes must
// be known. Output lengths are sizes, or floor(input * scale).
Result<ResizeGeometry> resize_geometry(const std::vector<TensorDesc>& in);

// Source coordinate (in input elements) of output coordinate x_out along `axis`.
inline double resize_source_coord(const ResizeAttrs& a, const ResizeGeometry& g, size_t axis,
                                  int64_t x_out) {
  const double x = static_cast<double>(x_out);
  const double scale = g.scale[axis];
  const double len_in = static_cast<double>(g.input_shape[axis]);
  const double len_out = g.resized_length[axis];
  switch (a.coord_mode) {
    case ResizeCoordMode::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case ResizeCoordMode::kPytorchHalfPixel:
      // The spec and ONNX Runtime use 0 for a length-1 output (the numpy reference -0.5;
      // both give the same result for nearest and linear).
      return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordMode::kAlignCorners:
      return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
    case ResizeCoordMode::kAsymmetric: return x / scale;
    case ResizeCoordMode::kTfHalfPixelForNearest: return (x + 0.5) / scale;
    case ResizeCoordMode::kTfCropAndResize: {
      const double start = g.roi_start[axis], end = g.roi_end[axis];
      if (len_out == 1) return (end - start) * (len_in - 1) / 2 + start * (len_in - 1);
      return x * (end - start) * (len_in - 1) / (len_out - 1) + start * (len_in - 1);
    }
  }
  return 0.0;
}

// tf_crop_and_resize writes extrapolation_value where the source lies outside the input.
inline bool resize_is_outside(const ResizeAttrs& a, double x_src, int64_t len_in) {
  return a.coord_mode == ResizeCoordMode::kTfCropAndResize &&
         (x_src < 0 || x_src > static_cast<double>(len_in - 1));
}

// Nearest input index of x_src, clamped into [0, len_in).
inline int64_t resize_nearest_index(ResizeNearestMode mode, double x_src, int64_t len_in) {
  double base = std::floor(x_src);
  double frac = x_src - base;
  double pick = base;
  if (frac > 0) {
    switch (mode) {
      case ResizeNearestMode::kRoundPreferFloor: pick = frac <= 0.5 ? base : base + 1; break;
      case ResizeNearestMode::kRoundPreferCeil: pick = frac < 0.5 ? base : base + 1; break;
      case ResizeNearestMode::kFloor: pick = base; break;
      case ResizeNearestMode::kCeil: pick = base + 1; break;
    }
  }
  int64_t i = static_cast<int64_t>(pick);
  return i < 0 ? 0 : (i >= len_in ? len_in - 1 : i);
}

// Keys' cubic convolution kernel W(s) with parameter A (Keys 1981, eq. 4):
//   |s| ≤ 1:     (A+2)|s|³ − (A+3)|s|² + 1
//   1 < |s| < 2: A|s|³ − 5A|s|² + 8A|s| − 4A
//   otherwise 0
inline double resize_cubic_kernel(double s, double a) {
  s = std::fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0.0;
}

// The taps of one source coordinate `x` (not outside the input) along an axis of length
// `len_in`: (unclamped input index, weight) pairs for the mode, renormalized over the
// in-range taps when exclude_outside is set. Shared by the reference kernel and the GPU one.
inline void resize_taps(const ResizeAttrs& a, double x, int64_t len_in,
                        std::vector<std::pair<int64_t, double>>& taps) {
  taps.clear();
  if (a.mode == ResizeMode::kNearest) {
    taps.emplace_back(resize_nearest_index(a.nearest_mode, x, len_in), 1.0);
    return;
  }
  const double base = std::floor(x);
  const double r = x - base;
  const auto i0 = static_cast<int64_t>(base);
  if (a.mode == ResizeMode::kLinear) {
    taps.emplace_back(i0, 1 - r);
    taps.emplace_back(i0 + 1, r);
  } else {
    for (int k = -1; k <= 2; ++k)
      taps.emplace_back(i0 + k, resize_cubic_kernel(r - k, a.cubic_coeff_a));
  }
  if (a.exclude_outside) {
    double sum = 0;
    for (auto& [i, w] : taps) {
      if (i < 0 || i >= len_in) w = 0;
      sum += w;
    }
    if (sum != 0)
      for (auto& tap : taps) tap.second /= sum;
  }
}

// The taps of one axis over the whole output: output coordinate o uses entries
// [begin[o], begin[o+1]) of offset (clamped input index × `stride`) and weight, or none when
// outside[o] (tf_crop_and_resize extrapolation). Taps of weight 0 are dropped. Shared by the
// reference kernel and the CPU backend's.
struct ResizeAxisTaps {
  std::vector<int64_t> begin;
  std::vector<int64_t> offset;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
};
ResizeAxisTaps resize_axis_taps(const ResizeAttrs& a, const ResizeGeometry& g, size_t axis,
                                int64_t stride);

}  // namespace kiln
