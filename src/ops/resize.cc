// Resize: nearest / N-linear / N-cubic interpolation (ONNX opset 13 semantics).
//
// The reference kernel resolves, per axis and output coordinate, a short list of taps
// (input offset, weight); an output element is the sum over the Cartesian product of its
// axes' taps of the weight product times the input element. Coordinates and weights are
// computed in double (as the ONNX reference does, so rounding ties break the same way);
// the weighted sum runs in float (double for float64 data).

#include "ops/resize.h"

#include <string>
#include <type_traits>

#include "ops/op_util.h"

namespace kiln {

Result<ResizeAttrs> parse_resize_attrs(const Attributes& attrs) {
  ResizeAttrs a;
  const std::string mode = attrs.get_string("mode", "nearest");
  if (mode == "nearest")
    a.mode = ResizeMode::kNearest;
  else if (mode == "linear")
    a.mode = ResizeMode::kLinear;
  else if (mode == "cubic")
    a.mode = ResizeMode::kCubic;
  else
    return invalid_argument("unknown mode '" + mode + "' (expected nearest, linear, cubic)");

  const std::string coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    a.coord_mode = ResizeCoordMode::kHalfPixel;
  else if (coord == "pytorch_half_pixel")
    a.coord_mode = ResizeCoordMode::kPytorchHalfPixel;
  else if (coord == "align_corners")
    a.coord_mode = ResizeCoordMode::kAlignCorners;
  else if (coord == "asymmetric")
    a.coord_mode = ResizeCoordMode::kAsymmetric;
  // Opset 11 test data spells it tf_half_pixel_for_nn.
  else if (coord == "tf_half_pixel_for_nearest" || coord == "tf_half_pixel_for_nn")
    a.coord_mode = ResizeCoordMode::kTfHalfPixelForNearest;
  else if (coord == "tf_crop_and_resize")
    a.coord_mode = ResizeCoordMode::kTfCropAndResize;
  else
    return invalid_argument("unknown coordinate_transformation_mode '" + coord + "'");

  const std::string nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    a.nearest_mode = ResizeNearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil")
    a.nearest_mode = ResizeNearestMode::kRoundPreferCeil;
  else if (nearest == "floor")
    a.nearest_mode = ResizeNearestMode::kFloor;
  else if (nearest == "ceil")
    a.nearest_mode = ResizeNearestMode::kCeil;
  else
    return invalid_argument("unknown nearest_mode '" + nearest + "'");

  a.cubic_coeff_a = attrs.get_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  a.extrapolation_value = attrs.get_float("extrapolation_value", 0.f);

  if (attrs.get_int("antialias", 0) != 0) return unsupported("antialias=1 (opset 18)");
  if (attrs.has("axes")) return unsupported("the axes attribute (opset 18)");
  if (attrs.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return unsupported("keep_aspect_ratio_policy other than stretch (opset 18)");
  return a;
}

namespace {

// An optional input counts as given when present and non-empty.
bool given(const std::vector<TensorDesc>& in, size_t i) {
  return i < in.size() && in[i].present() && shape_numel(in[i].shape) > 0;
}

Result<std::vector<double>> known_doubles(const TensorDesc& d, const char* what) {
  if (!d.value)
    return unsupported(std::string(what) + " must be a constant (it is computed at run time)");
  if (!dtype_is_float(d.dtype))
    return invalid_argument(std::string(what) + " must be a float tensor, got " +
                            dtype_name(d.dtype));
  std::vector<double> v(static_cast<size_t>(d.value->numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = d.value->at_double(static_cast<int64_t>(i));
  return v;
}

}  // namespace

Result<ResizeGeometry> resize_geometry(const std::vector<TensorDesc>& in) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 4));
  ResizeGeometry g;
  g.input_shape = in[0].shape;
  const size_t rank = g.input_shape.size();
  const bool has_scales = given(in, 2), has_sizes = given(in, 3);
  if (has_scales && has_sizes) return invalid_argument("both scales and sizes are given");
  if (!has_scales && !has_sizes) return invalid_argument("neither scales nor sizes is given");

  g.roi_start.assign(rank, 0.0);
  g.roi_end.assign(rank, 1.0);
  if (given(in, 1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> roi, known_doubles(in[1], "roi"));
    if (roi.size() != 2 * rank)
      return invalid_argument("roi has " + std::to_string(roi.size()) + " elements, expected " +
                              std::to_string(2 * rank) + " (2 × rank of X)");
    for (size_t d = 0; d < rank; ++d) {
      g.roi_start[d] = roi[d];
      g.roi_end[d] = roi[rank + d];
    }
  }

  g.output_shape.resize(rank);
  g.scale.resize(rank);
  g.resized_length.resize(rank);
  if (has_scales) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> scales, known_doubles(in[2], "scales"));
    if (scales.size() != rank)
      return invalid_argument("scales has " + std::to_string(scales.size()) +
                              " elements, expected " + std::to_string(rank) + " (rank of X)");
    for (size_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0) || !std::isfinite(scales[d]))
        return invalid_argument("scales[" + std::to_string(d) + "] = " + std::to_string(scales[d]) +
                                " must be positive and finite");
      g.scale[d] = scales[d];
      g.resized_length[d] = static_cast<double>(g.input_shape[d]) * scales[d];
      const double out = std::floor(g.resized_length[d]);
      if (out > static_cast<double>(int64_t{1} << 40))
        return invalid_argument("scales[" + std::to_string(d) + "] gives an output dimension of " +
                                std::to_string(out));
      g.output_shape[d] = static_cast<int64_t>(out);
    }
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, known_int64s(in[3], "sizes"));
    if (sizes.size() != rank)
      return invalid_argument("sizes has " + std::to_string(sizes.size()) + " elements, expected " +
                              std::to_string(rank) + " (rank of X)");
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0)
        return invalid_argument("sizes[" + std::to_string(d) + "] = " + std::to_string(sizes[d]) +
                                " is negative");
      g.output_shape[d] = sizes[d];
      g.resized_length[d] = static_cast<double>(sizes[d]);
      g.scale[d] = static_cast<double>(sizes[d]) / static_cast<double>(g.input_shape[d]);
    }
  }
  for (size_t d = 0; d < rank; ++d)
    if (g.input_shape[d] == 0 && g.output_shape[d] > 0)
      return invalid_argument("axis " + std::to_string(d) + " of X is empty and cannot be " +
                              "resized to " + std::to_string(g.output_shape[d]));
  return g;
}

ResizeAxisTaps resize_axis_taps(const ResizeAttrs& a, const ResizeGeometry& g, size_t axis,
                                int64_t stride) {
  const int64_t len_in = g.input_shape[axis];
  const int64_t len_out = g.output_shape[axis];
  ResizeAxisTaps t;
  t.begin.push_back(0);
  t.outside.assign(static_cast<size_t>(len_out), 0);
  std::vector<std::pair<int64_t, double>> taps;  // (unclamped index, weight)
  for (int64_t o = 0; o < len_out; ++o) {
    const double x = resize_source_coord(a, g, axis, o);
    taps.clear();
    if (resize_is_outside(a, x, len_in)) {
      t.outside[o] = 1;
    } else {
      resize_taps(a, x, len_in, taps);
    }
    for (const auto& [i, w] : taps) {
      // Taps of weight 0 (e.g. every axis that is not resized) add nothing; dropping them
      // keeps the product over axes small.
      if (w == 0) continue;
      const int64_t clamped = i < 0 ? 0 : (i >= len_in ? len_in - 1 : i);  // edge padding
      t.offset.push_back(clamped * stride);
      t.weight.push_back(w);
    }
    t.begin.push_back(static_cast<int64_t>(t.offset.size()));
  }
  return t;
}

namespace {

template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// Sum over the taps of axes d.. of (product of weights) × x[offset].
template <class T, class Acc>
Acc gather(const std::vector<ResizeAxisTaps>& taps, const std::vector<int64_t>& idx, size_t d,
           int64_t off, const T* x) {
  if (d == taps.size()) return static_cast<Acc>(x[off]);
  const ResizeAxisTaps& t = taps[d];
  Acc sum = 0;
  for (int64_t k = t.begin[idx[d]]; k < t.begin[idx[d] + 1]; ++k)
    sum += static_cast<Acc>(t.weight[k]) * gather<T, Acc>(taps, idx, d + 1, off + t.offset[k], x);
  return sum;
}

template <class T>
void resize_loop(const ResizeAttrs& a, const std::vector<ResizeAxisTaps>& taps,
                 const Shape& out_shape, const T* x, T* y) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const size_t rank = out_shape.size();
  const int64_t n = shape_numel(out_shape);
  const T extrapolated = from_double<T>(a.extrapolation_value);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) outside = outside || taps[d].outside[idx[d]];
    if (outside) {
      y[i] = extrapolated;
    } else if (a.mode == ResizeMode::kNearest) {
      // A copy, no arithmetic: works for every dtype and keeps integers exact.
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off += taps[d].offset[taps[d].begin[idx[d]]];
      y[i] = x[off];
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                         std::is_same_v<T, BFloat16>) {
      y[i] = T(gather<T, Acc>(taps, idx, 0, 0, x));
    }
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<TensorDesc> descs_of(const std::vector<const Tensor*>& in) {
  std::vector<TensorDesc> d(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) d[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  return d;
}

Status check_dtype(const ResizeAttrs& a, DataType dt) {
  if (dt == DataType::kString || dt == DataType::kUndefined)
    return unsupported(std::string("Resize of ") + dtype_name(dt));
  if (a.mode != ResizeMode::kNearest && !dtype_is_float(dt))
    return unsupported(std::string(a.mode == ResizeMode::kLinear ? "linear" : "cubic") +
                       " Resize of " + dtype_name(dt) + " (float types only; nearest takes any)");
  return Status::ok();
}

Status infer_resize(const Node& node, const std::vector<TensorDesc>& in,
                    std::vector<TensorDesc>& out) {
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, parse_resize_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ResizeGeometry g, resize_geometry(in));
  KILN_RETURN_IF_ERROR(check_dtype(a, in[0].dtype));
  out[0] = {in[0].dtype, g.output_shape};
  return Status::ok();
}

Status run_resize(const Node& node, const std::vector<const Tensor*>& in,
                  const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, parse_resize_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ResizeGeometry g, resize_geometry(descs_of(in)));
  KILN_RETURN_IF_ERROR(check_dtype(a, in[0]->dtype()));
  const std::vector<int64_t> strides = strides_of(g.input_shape);
  std::vector<ResizeAxisTaps> taps;
  for (size_t d = 0; d < g.input_shape.size(); ++d)
    taps.push_back(resize_axis_taps(a, g, d, strides[d]));
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    resize_loop<T>(a, taps, g.output_shape, in[0]->data<T>(), out[0]->data<T>());
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(Resize, infer_resize, run_resize);

}  // namespace kiln
