// Shared code of the Reduce* ops: axes resolution, output shape, and one reference kernel
// parameterized by the reduction (sum, mean, max, L2), so each op file only states where its
// axes come from and which dtypes it takes.
//
// Semantics (ONNX opset 13): axes may be negative and must not repeat; empty axes reduce
// every axis unless noop_with_empty_axes is set (ReduceSum's input form), which makes the
// op an identity. keepdims (default 1) keeps reduced axes as size 1. Reducing an empty
// axis gives the reduction's identity: 0 for sum and L2, NaN (floats) or 0 (integers) for
// mean, -inf or the type's lowest value for max. L2 is sqrt(Σx²) (integers: truncated).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op_util.h"

namespace kiln {

enum class ReduceKind { kSum, kMean, kMax, kL2 };

struct ReduceSpec {
  std::vector<bool> reduced;  // one per input axis
  Shape out_shape;            // with keepdims applied
};

// `axes` as given (possibly negative); empty means all axes, or none with noop_if_empty.
inline Result<ReduceSpec> reduce_spec(const Shape& in, const std::vector<int64_t>& axes,
                                      bool keepdims, bool noop_if_empty) {
  const int64_t rank = static_cast<int64_t>(in.size());
  ReduceSpec s;
  s.reduced.assign(rank, axes.empty() && !noop_if_empty);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, rank, "axes entry"));
    if (s.reduced[axis])
      return invalid_argument("axes entry " + std::to_string(a) + " repeats axis " +
                              std::to_string(axis));
    s.reduced[axis] = true;
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (!s.reduced[i])
      s.out_shape.push_back(in[i]);
    else if (keepdims)
      s.out_shape.push_back(1);
  }
  return s;
}

// keepdims and noop_with_empty_axes must be 0 or 1.
inline Result<bool> reduce_flag(const Node& node, const char* name, int64_t def) {
  int64_t v = node.attrs.get_int(name, def);
  if (v != 0 && v != 1)
    return invalid_argument(std::string(name) + " must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

// ReduceMean / ReduceMax / ReduceL2: axes is an attribute (through opset 17).
inline Result<ReduceSpec> reduce_spec_from_attr(const Node& node, const Shape& in) {
  KILN_ASSIGN_OR_RETURN(bool keepdims, reduce_flag(node, "keepdims", 1));
  return reduce_spec(in, node.attrs.get_ints("axes"), keepdims, false);
}

// ReduceSum: axes is optional input 1 (absent or empty: see noop_with_empty_axes).
inline Result<ReduceSpec> reduce_spec_from_input(const Node& node,
                                                 const std::vector<TensorDesc>& in) {
  KILN_ASSIGN_OR_RETURN(bool keepdims, reduce_flag(node, "keepdims", 1));
  KILN_ASSIGN_OR_RETURN(bool noop, reduce_flag(node, "noop_with_empty_axes", 0));
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1].present()) {
    if (in[1].shape.size() != 1)
      return invalid_argument("axes (input 1) must be 1-D, got shape " + shape_str(in[1].shape));
    KILN_ASSIGN_OR_RETURN(axes, known_int64s(in[1], "axes (input 1)"));
  }
  return reduce_spec(in[0].shape, axes, keepdims, noop);
}

// GlobalAveragePool/GlobalMaxPool as a reduction over every spatial axis of a float
// (N, C, D1..Dn) input, n ≥ 1, keeping the reduced dims: output (N, C, 1, .., 1).
inline Result<ReduceSpec> global_pool_spec(const TensorDesc& x, const char* op) {
  if (!dtype_is_float(x.dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(x.dtype) + " (" + op +
                       " takes float types)");
  if (x.shape.size() < 3)
    return invalid_argument("input 0: expected rank ≥ 3 (N, C, spatial...), got shape " +
                            shape_str(x.shape));
  std::vector<int64_t> spatial;
  for (size_t i = 2; i < x.shape.size(); ++i) spatial.push_back(static_cast<int64_t>(i));
  return reduce_spec(x.shape, spatial, /*keepdims=*/true, false);
}

// Descs of run()'s tensors, to share reduce_spec_from_input between infer and run.
inline std::vector<TensorDesc> reduce_descs(const std::vector<const Tensor*>& in) {
  std::vector<TensorDesc> d(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) d[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  return d;
}

// ONNX opset 13: Sum/Mean take float types and 32/64-bit integers; Max also 8-bit ints.
inline Status check_reduce_dtype(ReduceKind kind, DataType dt) {
  bool ok = dtype_is_float(dt) || dt == DataType::kInt32 || dt == DataType::kInt64 ||
            dt == DataType::kUInt32 || dt == DataType::kUInt64 ||
            (kind == ReduceKind::kMax && (dt == DataType::kInt8 || dt == DataType::kUInt8));
  if (ok) return Status::ok();
  return unsupported(std::string("input 0: element type ") + dtype_name(dt) +
                     (kind == ReduceKind::kMax ? " (takes float types and 8/32/64-bit integers)"
                                               : " (takes float types and 32/64-bit integers)"));
}

// y[out] = reduce over x's reduced axes. Sums accumulate in double for float types and in
// 64 bits for integers (integer mean truncates, like ONNX Runtime).
inline Status run_reduce(ReduceKind kind, const Tensor& x, const ReduceSpec& spec, Tensor& y) {
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("Reduce on bool");
    } else {
      constexpr bool kFloat = !std::is_integral_v<T>;
      // Sum/mean accumulator, and the type max compares in (Half/BFloat16 via float).
      using SumAcc = std::conditional_t<kFloat, double,
                                        std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
      using MaxAcc =
          std::conditional_t<kFloat, std::conditional_t<std::is_same_v<T, double>, double, float>,
                             T>;
      const int64_t n_out = shape_numel(spec.out_shape);
      // Output strides over the input's axes: 0 on reduced axes, so every input element
      // lands on its output element whether or not keepdims kept the axis.
      std::vector<int64_t> out_strides(x.rank(), 0);
      int64_t stride = 1, count = 1;
      for (int64_t i = x.rank() - 1; i >= 0; --i) {
        if (spec.reduced[i]) {
          count *= x.dim(i);
        } else {
          out_strides[i] = stride;
          stride *= x.dim(i);
        }
      }
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      if (kind == ReduceKind::kMax) {
        const MaxAcc kLowest = std::numeric_limits<MaxAcc>::has_infinity
                                   ? -std::numeric_limits<MaxAcc>::infinity()
                                   : std::numeric_limits<MaxAcc>::lowest();
        std::vector<MaxAcc> acc(n_out, kLowest);
        for_each_broadcast(x.shape(), {out_strides},
                           [&](int64_t i, const std::vector<int64_t>& off) {
                             MaxAcc v = static_cast<MaxAcc>(xd[i]);
                             MaxAcc& a = acc[off[0]];
                             if (v > a || v != v) a = a != a ? a : v;  // NaN sticks once seen
                           });
        for (int64_t o = 0; o < n_out; ++o) yd[o] = static_cast<T>(acc[o]);
      } else {
        std::vector<SumAcc> acc(n_out, SumAcc(0));
        for_each_broadcast(x.shape(), {out_strides},
                           [&](int64_t i, const std::vector<int64_t>& off) {
                             const SumAcc v = static_cast<SumAcc>(xd[i]);
                             acc[off[0]] += kind == ReduceKind::kL2 ? v * v : v;
                           });
        for (int64_t o = 0; o < n_out; ++o) {
          SumAcc v = acc[o];
          if (kind == ReduceKind::kL2) {
            v = static_cast<SumAcc>(std::sqrt(static_cast<double>(v)));
          } else if (kind == ReduceKind::kMean) {
            if constexpr (kFloat)
              v /= static_cast<double>(count);
            else
              v = count > 0 ? v / static_cast<SumAcc>(count) : SumAcc(0);
          }
          if constexpr (kFloat && !std::is_same_v<T, double>)
            yd[o] = T(static_cast<float>(v));
          else
            yd[o] = static_cast<T>(v);
        }
      }
      return Status::ok();
    }
  });
}

// The shape rule and the kernel of a reduction whose axes are an attribute (ReduceMean,
// ReduceMax, ReduceL2): one input, of a dtype `kind` takes.
inline Status infer_reduce_attr_axes(ReduceKind kind, const Node& node,
                                     const std::vector<TensorDesc>& in,
                                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(check_reduce_dtype(kind, in[0].dtype));
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_attr(node, in[0].shape));
  out[0] = {in[0].dtype, spec.out_shape};
  return Status::ok();
}

// run_reduce for a reduction whose axes are an attribute (see infer_reduce_attr_axes).
inline Status run_reduce_attr_axes(ReduceKind kind, const Node& node,
                                   const std::vector<const Tensor*>& in,
                                   const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_attr(node, in[0]->shape()));
  return run_reduce(kind, *in[0], spec, *out[0]);
}

}  // namespace kiln
