// Gemm: Y = alpha * A' * B' + beta * C, with A' = transA ? A^T : A (M×K), B' = transB ?
// B^T : B (K×N), and C (optional) unidirectionally broadcast to (M, N).

#include "ops/gemm.h"

#include <cmath>
#include <type_traits>

#include "ops/gemm_kernel.h"
#include "ops/op_util.h"

namespace kiln {

namespace {

bool gemm_dtype_ok(DataType dt) {
  return dtype_is_float(dt) || dt == DataType::kInt32 || dt == DataType::kInt64 ||
         dt == DataType::kUInt32 || dt == DataType::kUInt64;
}

struct GemmDims {
  int64_t m, n, k;
  bool trans_a, trans_b;
};

Result<GemmDims> gemm_dims(const Node& node, const std::vector<TensorDesc>& in) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  if (!gemm_dtype_ok(in[0].dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(in[0].dtype) +
                       " (Gemm takes float types and 32/64-bit integers)");
  KILN_RETURN_IF_ERROR(check_same_dtypes(in));
  for (int i = 0; i < 2; ++i)
    if (in[i].shape.size() != 2)
      return invalid_argument("input " + std::to_string(i) + ": expected rank 2, got shape " +
                              shape_str(in[i].shape));
  GemmDims d;
  d.trans_a = gemm_attrs(node).trans_a;
  d.trans_b = gemm_attrs(node).trans_b;
  d.m = in[0].shape[d.trans_a ? 1 : 0];
  d.k = in[0].shape[d.trans_a ? 0 : 1];
  int64_t kb = in[1].shape[d.trans_b ? 1 : 0];
  d.n = in[1].shape[d.trans_b ? 0 : 1];
  if (kb != d.k)
    return invalid_argument("inner dimensions differ: A " + shape_str(in[0].shape) +
                            (d.trans_a ? " (transposed)" : "") + ", B " + shape_str(in[1].shape) +
                            (d.trans_b ? " (transposed)" : ""));
  if (in.size() > 2 && in[2].present()) {
    const Shape& c = in[2].shape;
    const Shape mn = {d.m, d.n};
    bool ok = c.size() <= 2;
    for (size_t i = 0; ok && i < c.size(); ++i) ok = c[i] == 1 || c[i] == mn[2 - c.size() + i];
    if (!ok)
      return invalid_argument("C " + shape_str(c) + " does not broadcast to " + shape_str(mn));
  }
  float alpha = gemm_attrs(node).alpha, beta = gemm_attrs(node).beta;
  if (!dtype_is_float(in[0].dtype) && (alpha != std::floor(alpha) || beta != std::floor(beta)))
    return unsupported("non-integer alpha/beta on integer Gemm");
  return d;
}

Status infer_gemm(const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  KILN_ASSIGN_OR_RETURN(GemmDims d, gemm_dims(node, in));
  out[0] = {in[0].dtype, {d.m, d.n}};
  return Status::ok();
}

Status run_gemm(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  KILN_ASSIGN_OR_RETURN(GemmDims d, gemm_dims(node, descs));
  const Tensor* c = in.size() > 2 ? in[2] : nullptr;
  const float alpha = gemm_attrs(node).alpha;
  const float beta = gemm_attrs(node).beta;
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int8_t> ||
                  std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t> ||
                  std::is_same_v<T, uint16_t>) {
      return unsupported(std::string("Gemm on ") + dtype_name(in[0]->dtype()));
    } else {
      using Acc = GemmAcc<T>;
      std::vector<Acc> b_buf, acc(static_cast<size_t>(d.m * d.n));
      const Acc* b = pack_gemm_b<Acc>(in[1]->data<T>(), d.trans_b, d.k, d.n, b_buf);
      // A(i,k) is A[i,k] (row stride K) or A[k,i] (A is K×M).
      gemm_ikj(in[0]->data<T>(), d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1, b, acc.data(), d.m, d.n,
               d.k);
      std::vector<int64_t> c_strides;
      if (c) c_strides = broadcast_strides(c->shape(), {d.m, d.n});
      const T* cd = c ? c->data<T>() : nullptr;
      const Acc a_scale = static_cast<Acc>(alpha), c_scale = static_cast<Acc>(beta);
      T* y = out[0]->data<T>();
      for (int64_t i = 0; i < d.m; ++i) {
        for (int64_t j = 0; j < d.n; ++j) {
          Acc v = a_scale * acc[i * d.n + j];
          if (cd) v += c_scale * static_cast<Acc>(cd[i * c_strides[0] + j * c_strides[1]]);
          y[i * d.n + j] = static_cast<T>(v);
        }
      }
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Gemm, infer_gemm, run_gemm);

}  // namespace kiln
