// Pooling test cases and a naive N-d pooling written straight from the ONNX formulas:
// every output position, every kernel tap, coordinate o*s - pad_begin + k*d. Each case
// states its expected output shape and resolved padding by hand, so the shape rule is
// checked independently of the kernel.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "ops/elementwise_test_util.h"

namespace kiln::test {

struct PoolCase {
  std::string name;
  Shape in;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;    // empty: attribute absent
  std::vector<int64_t> pads;       // empty: attribute absent
  std::vector<int64_t> dilations;  // empty: attribute absent
  std::string auto_pad;            // empty: attribute absent
  int64_t ceil_mode = 0;
  Shape want_out;                      // hand-computed output shape
  std::vector<int64_t> resolved_pads;  // hand-computed [begins..., ends...]; empty: all 0
};

// Shapes and padding below are worked out by hand from the formulas in src/ops/pool.h.
// Fields: name, in, kernel, strides, pads, dilations, auto_pad, ceil_mode, want_out,
// resolved_pads.
inline const std::vector<PoolCase> kPoolCases = {
    {"2d_default", {2, 3, 8, 8}, {2, 2}, {}, {}, {}, "", 0, {2, 3, 7, 7}, {}},
    {"1d_strides", {1, 2, 10}, {3}, {2}, {}, {}, "", 0, {1, 2, 4}, {}},
    {"3d_strides", {1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {}, {}, "", 0, {1, 2, 4, 2, 3}, {}},
    {"2d_asymmetric_pads",
     {1, 2, 5, 5},
     {3, 3},
     {},
     {1, 2, 2, 1},
     {},
     "",
     0,
     {1, 2, 6, 6},
     {1, 2, 2, 1}},
    {"2d_strides_pads",
     {1, 1, 7, 6},
     {3, 2},
     {2, 3},
     {1, 0, 1, 1},
     {},
     "",
     0,
     {1, 1, 4, 2},
     {1, 0, 1, 1}},
    {"2d_ceil", {1, 2, 4, 4}, {3, 3}, {2, 2}, {}, {}, "", 1, {1, 2, 2, 2}, {}},
    // Last window: input 5, end pad 6, overflow 7.
    {"1d_ceil_pads_overflow", {1, 2, 6}, {3}, {2}, {1, 1}, {}, "", 1, {1, 2, 4}, {1, 1}},
    // ceil gives 3 windows, but the third would start in the end padding: dropped.
    {"1d_ceil_drops_window_in_padding", {1, 1, 4}, {2}, {3}, {1, 1}, {}, "", 1, {1, 1, 2}, {1, 1}},
    {"2d_ceil_pads",
     {1, 2, 7, 9},
     {3, 2},
     {2, 2},
     {0, 1, 1, 0},
     {},
     "",
     1,
     {1, 2, 4, 5},
     {0, 1, 1, 0}},
    {"2d_same_upper",
     {1, 2, 5, 6},
     {3, 2},
     {2, 2},
     {},
     {},
     "SAME_UPPER",
     0,
     {1, 2, 3, 3},
     {1, 0, 1, 0}},
    {"2d_same_upper_odd_pad",
     {1, 1, 5, 5},
     {2, 2},
     {},
     {},
     {},
     "SAME_UPPER",
     0,
     {1, 1, 5, 5},
     {0, 0, 1, 1}},
    {"2d_same_lower_odd_pad",
     {1, 1, 5, 5},
     {2, 2},
     {},
     {},
     {},
     "SAME_LOWER",
     0,
     {1, 1, 5, 5},
     {1, 1, 0, 0}},
    {"1d_same_lower_strided", {1, 2, 7}, {4}, {3}, {}, {}, "SAME_LOWER", 0, {1, 2, 3}, {2, 1}},
    {"1d_same_upper_ignores_ceil", {1, 1, 5}, {2}, {2}, {}, {}, "SAME_UPPER", 1, {1, 1, 3}, {0, 1}},
    {"2d_valid", {1, 2, 7, 8}, {3, 3}, {2, 3}, {}, {}, "VALID", 0, {1, 2, 3, 2}, {}},
    {"2d_valid_ignores_pads",
     {1, 1, 6, 6},
     {3, 3},
     {},
     {1, 1, 1, 1},
     {},
     "VALID",
     0,
     {1, 1, 4, 4},
     {}},
    // Dilated cases (MaxPool only; AveragePool has dilations from opset 19).
    {"2d_dilations", {1, 2, 8, 8}, {2, 2}, {}, {}, {2, 2}, "", 0, {1, 2, 6, 6}, {}},
    {"2d_dilations_strides_pads",
     {1, 1, 9, 10},
     {3, 2},
     {2, 1},
     {2, 1, 1, 2},
     {2, 3},
     "",
     0,
     {1, 1, 4, 10},
     {2, 1, 1, 2}},
    {"1d_dilations_ceil", {1, 1, 9}, {2}, {2}, {}, {3}, "", 1, {1, 1, 4}, {}},
    {"2d_same_upper_dilated",
     {1, 1, 6, 6},
     {2, 2},
     {},
     {},
     {2, 2},
     "SAME_UPPER",
     0,
     {1, 1, 6, 6},
     {1, 1, 1, 1}},
};

inline Attributes pool_attrs(const PoolCase& c) {
  Attributes a;
  a.set("kernel_shape", c.kernel);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.auto_pad.empty()) a.set("auto_pad", c.auto_pad);
  if (c.ceil_mode) a.set("ceil_mode", c.ceil_mode);
  return a;
}

enum class NaiveKind { kMax, kAverage, kAverageIncludePad };

struct NaivePoolResult {
  Tensor y;
  Tensor indices;  // MaxPool only: int64 flattened index (row- or column-major spatially)
};

inline NaivePoolResult naive_pool(const Tensor& x, const PoolCase& c, NaiveKind kind,
                                  bool col_major = false) {
  const size_t n = c.kernel.size();
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t def) {
    return v.empty() ? def : v[i];
  };
  const Shape& out = c.want_out;
  std::vector<double> y(shape_numel(out));
  std::vector<double> idx(shape_numel(out));
  const int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (size_t d = 0; d < n; ++d) {
    in_plane *= c.in[d + 2];
    out_plane *= out[d + 2];
    taps *= c.kernel[d];
  }
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t q = 0; q < out_plane; ++q) {
      // Output coordinates of q (row-major).
      std::vector<int64_t> o(n);
      for (int64_t d = static_cast<int64_t>(n) - 1, r = q; d >= 0; --d) {
        o[d] = r % out[d + 2];
        r /= out[d + 2];
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_idx = -1, count = 0, padded = 0;
      for (int64_t t = 0; t < taps; ++t) {
        // Kernel tap t (row-major over the kernel) → input coordinates.
        std::vector<int64_t> coord(n);
        bool inside = true, in_padded = true;
        for (int64_t d = static_cast<int64_t>(n) - 1, r = t; d >= 0; --d) {
          const int64_t k = r % c.kernel[d];
          r /= c.kernel[d];
          const int64_t pb = at(c.resolved_pads, d, 0), pe = at(c.resolved_pads, d + n, 0);
          coord[d] = o[d] * at(c.strides, d, 1) - pb + k * at(c.dilations, d, 1);
          inside = inside && coord[d] >= 0 && coord[d] < c.in[d + 2];
          in_padded = in_padded && coord[d] >= -pb && coord[d] < c.in[d + 2] + pe;
        }
        if (in_padded) ++padded;
        if (!inside) continue;
        // Flattened position of the tap within the plane, row- and column-major.
        int64_t row = 0, col = 0;
        for (size_t d = 0; d < n; ++d) row = row * c.in[d + 2] + coord[d];
        for (int64_t d = static_cast<int64_t>(n) - 1; d >= 0; --d)
          col = col * c.in[d + 2] + coord[d];
        double v = x.at_double(p * in_plane + row);
        sum += v;
        ++count;
        if (v > best) {
          best = v;
          best_idx = p * in_plane + (col_major ? col : row);
        }
      }
      const int64_t i = p * out_plane + q;
      if (kind == NaiveKind::kMax)
        y[i] = best;
      else
        y[i] = sum / static_cast<double>(kind == NaiveKind::kAverage ? count : padded);
      idx[i] = static_cast<double>(best_idx);
    }
  }
  return {make_tensor(x.dtype(), out, y), make_tensor(DataType::kInt64, out, idx)};
}

}  // namespace kiln::test
