#include "ops/pool.h"

#include <algorithm>
#include <string>

namespace kiln {

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Reads an ints attribute that has one positive entry per spatial dim (default all 1).
Result<std::vector<int64_t>> per_dim_ints(const Attributes& attrs, const char* name,
                                          int64_t spatial_rank) {
  std::vector<int64_t> v = attrs.get_ints(name, std::vector<int64_t>(spatial_rank, 1));
  if (static_cast<int64_t>(v.size()) != spatial_rank)
    return invalid_argument(std::string(name) + " " + ints_str(v) + " has " +
                            std::to_string(v.size()) + " entries, expected " +
                            std::to_string(spatial_rank) + " (one per spatial dim)");
  for (int64_t x : v)
    if (x < 1) return invalid_argument(std::string(name) + " " + ints_str(v) + " must be ≥ 1");
  return v;
}

Result<bool> bool_attr(const Attributes& attrs, const char* name) {
  int64_t v = attrs.get_int(name, 0);
  if (v != 0 && v != 1)
    return invalid_argument(std::string(name) + " must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

}  // namespace

Result<PoolAttrs> parse_pool_attrs(const Attributes& attrs, int64_t spatial_rank,
                                   PoolAttrOptions options) {
  if (spatial_rank < 1)
    return invalid_argument("input must have rank ≥ 3 (N, C, spatial...), got rank " +
                            std::to_string(spatial_rank + 2));
  PoolAttrs a;
  if (!attrs.has("kernel_shape")) return invalid_argument("attribute kernel_shape is required");
  KILN_ASSIGN_OR_RETURN(a.kernel_shape, per_dim_ints(attrs, "kernel_shape", spatial_rank));
  KILN_ASSIGN_OR_RETURN(a.strides, per_dim_ints(attrs, "strides", spatial_rank));
  if (options.dilations) {
    KILN_ASSIGN_OR_RETURN(a.dilations, per_dim_ints(attrs, "dilations", spatial_rank));
  } else {
    // Older opsets have no dilations; accept only the no-op value.
    KILN_ASSIGN_OR_RETURN(a.dilations, per_dim_ints(attrs, "dilations", spatial_rank));
    for (int64_t d : a.dilations)
      if (d != 1) return unsupported("dilations " + ints_str(a.dilations) + " on this op");
  }

  KILN_ASSIGN_OR_RETURN(a.auto_pad, parse_auto_pad(attrs.get_string("auto_pad", "NOTSET")));

  a.pads = attrs.get_ints("pads", std::vector<int64_t>(2 * spatial_rank, 0));
  if (static_cast<int64_t>(a.pads.size()) != 2 * spatial_rank)
    return invalid_argument("pads " + ints_str(a.pads) + " has " + std::to_string(a.pads.size()) +
                            " entries, expected " + std::to_string(2 * spatial_rank));
  for (int64_t i = 0; i < 2 * spatial_rank; ++i) {
    if (a.pads[i] < 0) return invalid_argument("pads " + ints_str(a.pads) + " must be ≥ 0");
    // Same rule as ONNX Runtime: a pad at least as wide as the window could make a window
    // read nothing but padding.
    int64_t ek = (a.kernel_shape[i % spatial_rank] - 1) * a.dilations[i % spatial_rank] + 1;
    if (a.auto_pad == AutoPad::kNotSet && a.pads[i] >= ek)
      return invalid_argument("pads " + ints_str(a.pads) + " must be smaller than the kernel " +
                              ints_str(a.kernel_shape));
  }
  if (a.auto_pad != AutoPad::kNotSet) a.pads.assign(2 * spatial_rank, 0);

  KILN_ASSIGN_OR_RETURN(a.ceil_mode, bool_attr(attrs, "ceil_mode"));
  if (options.count_include_pad) {
    KILN_ASSIGN_OR_RETURN(a.count_include_pad, bool_attr(attrs, "count_include_pad"));
  }
  if (options.storage_order) {
    KILN_ASSIGN_OR_RETURN(bool col_major, bool_attr(attrs, "storage_order"));
    a.storage_order = col_major ? 1 : 0;
  }
  return a;
}

Result<std::vector<PoolDim>> pool_dims(const PoolAttrs& a, const Shape& input) {
  const int64_t n = static_cast<int64_t>(a.kernel_shape.size());
  if (static_cast<int64_t>(input.size()) != n + 2)
    return invalid_argument("input " + shape_str(input) + " has rank " +
                            std::to_string(input.size()) + ", kernel_shape " +
                            ints_str(a.kernel_shape) + " needs rank " + std::to_string(n + 2));
  std::vector<PoolDim> dims(n);
  for (int64_t i = 0; i < n; ++i) {
    PoolDim& d = dims[i];
    d.in = input[i + 2];
    d.kernel = a.kernel_shape[i];
    d.stride = a.strides[i];
    d.dilation = a.dilations[i];
    const int64_t ek = d.effective_kernel();
    switch (a.auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        d.out = (d.in + d.stride - 1) / d.stride;
        int64_t total = std::max<int64_t>(0, (d.out - 1) * d.stride + ek - d.in);
        int64_t small = total / 2;
        d.pad_begin = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
        d.pad_end = total - d.pad_begin;
        break;
      }
      case AutoPad::kValid:
      case AutoPad::kNotSet: {
        if (a.auto_pad == AutoPad::kNotSet) {
          d.pad_begin = a.pads[i];
          d.pad_end = a.pads[i + n];
        }
        int64_t span = d.in + d.pad_begin + d.pad_end - ek;
        if (span < 0)
          return invalid_argument("spatial dim " + std::to_string(i) + ": window of " +
                                  std::to_string(ek) + " does not fit padded input of " +
                                  std::to_string(d.in + d.pad_begin + d.pad_end));
        bool ceil = a.ceil_mode && a.auto_pad == AutoPad::kNotSet;
        d.out = (ceil ? (span + d.stride - 1) / d.stride : span / d.stride) + 1;
        if (ceil && (d.out - 1) * d.stride >= d.in + d.pad_begin) --d.out;
        break;
      }
    }
  }
  return dims;
}

Shape pool_output_shape(const Shape& input, const std::vector<PoolDim>& dims) {
  Shape out = {input[0], input[1]};
  for (const PoolDim& d : dims) out.push_back(d.out);
  return out;
}

PoolWindows pool_windows(const std::vector<PoolDim>& dims, bool with_col_offsets) {
  const size_t n = dims.size();
  PoolWindows w;
  // Per dim and output index: the input coordinates read, and the window size with padding.
  std::vector<std::vector<std::vector<int64_t>>> coords(n);
  std::vector<std::vector<int64_t>> padded(n);
  std::vector<int64_t> row_stride(n, 1), col_stride(n, 1);
  for (size_t d = 0; d < n; ++d) {
    const PoolDim& pd = dims[d];
    coords[d].resize(pd.out);
    padded[d].resize(pd.out);
    for (int64_t o = 0; o < pd.out; ++o) {
      int64_t start = o * pd.stride - pd.pad_begin;
      for (int64_t j = 0; j < pd.kernel; ++j) {
        int64_t c = start + j * pd.dilation;
        if (c >= 0 && c < pd.in) coords[d][o].push_back(c);
        if (c >= -pd.pad_begin && c < pd.in + pd.pad_end) ++padded[d][o];
      }
    }
    w.in_plane *= pd.in;
    w.out_plane *= pd.out;
  }
  for (int64_t d = static_cast<int64_t>(n) - 2; d >= 0; --d)
    row_stride[d] = row_stride[d + 1] * dims[d + 1].in;
  for (size_t d = 1; d < n; ++d) col_stride[d] = col_stride[d - 1] * dims[d - 1].in;

  w.begin.reserve(w.out_plane + 1);
  w.padded_count.reserve(w.out_plane);
  std::vector<int64_t> o(n, 0), t(n, 0);
  for (int64_t p = 0; p < w.out_plane; ++p) {
    w.begin.push_back(static_cast<int64_t>(w.offsets.size()));
    int64_t count = 1;
    bool empty = false;
    for (size_t d = 0; d < n; ++d) {
      count *= padded[d][o[d]];
      empty = empty || coords[d][o[d]].empty();
    }
    w.padded_count.push_back(count);
    // Cartesian product of the per-dim coordinate lists, last dim fastest.
    std::fill(t.begin(), t.end(), 0);
    while (!empty) {
      int64_t row = 0, col = 0;
      for (size_t d = 0; d < n; ++d) {
        int64_t c = coords[d][o[d]][t[d]];
        row += c * row_stride[d];
        col += c * col_stride[d];
      }
      w.offsets.push_back(row);
      if (with_col_offsets) w.col_offsets.push_back(col);
      int64_t d = static_cast<int64_t>(n) - 1;
      for (; d >= 0; --d) {
        if (++t[d] < static_cast<int64_t>(coords[d][o[d]].size())) break;
        t[d] = 0;
      }
      if (d < 0) break;
    }
    for (int64_t d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
      if (++o[d] < dims[d].out) break;
      o[d] = 0;
    }
  }
  w.begin.push_back(static_cast<int64_t>(w.offsets.size()));
  return w;
}

}  // namespace kiln
