// MatMul: numpy.matmul. A 1-D A is a row vector (1×K) and a 1-D B a column vector (K×1),
// the added dim removed from the result; leading (batch) dims broadcast.

#include <type_traits>

#include "ops/gemm_kernel.h"
#include "ops/op_util.h"

namespace kiln {

namespace {

struct MatMulDims {
  Shape a_batch, b_batch, batch;  // batch = broadcast of a_batch and b_batch
  int64_t m, n, k;
  Shape out;
};

Result<MatMulDims> mat_mul_dims(const std::vector<TensorDesc>& in) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  const DataType dt = in[0].dtype;
  if (!dtype_is_float(dt) && dt != DataType::kInt32 && dt != DataType::kInt64 &&
      dt != DataType::kUInt32 && dt != DataType::kUInt64)
    return unsupported(std::string("input 0: element type ") + dtype_name(dt) +
                       " (MatMul takes float types and 32/64-bit integers)");
  if (in[1].dtype != dt)
    return invalid_argument(std::string("input 1: expected ") + dtype_name(dt) + ", got " +
                            dtype_name(in[1].dtype));
  Shape a = in[0].shape, b = in[1].shape;
  if (a.empty() || b.empty())
    return invalid_argument("MatMul needs inputs of rank ≥ 1, got " + shape_str(a) + " and " +
                            shape_str(b));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulDims d;
  d.m = a[a.size() - 2];
  d.k = a[a.size() - 1];
  d.n = b[b.size() - 1];
  if (b[b.size() - 2] != d.k)
    return invalid_argument("inner dimensions differ: " + shape_str(in[0].shape) + " × " +
                            shape_str(in[1].shape));
  d.a_batch.assign(a.begin(), a.end() - 2);
  d.b_batch.assign(b.begin(), b.end() - 2);
  KILN_ASSIGN_OR_RETURN(d.batch, broadcast_shapes({d.a_batch, d.b_batch}));
  d.out = d.batch;
  if (!a_vec) d.out.push_back(d.m);
  if (!b_vec) d.out.push_back(d.n);
  return d;
}

Status infer_mat_mul(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_ASSIGN_OR_RETURN(MatMulDims d, mat_mul_dims(in));
  out[0] = {in[0].dtype, d.out};
  return Status::ok();
}

Status run_mat_mul(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  std::vector<TensorDesc> descs = {{in[0]->dtype(), in[0]->shape(), in[0]},
                                   {in[1]->dtype(), in[1]->shape(), in[1]}};
  KILN_ASSIGN_OR_RETURN(MatMulDims d, mat_mul_dims(descs));
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int8_t> ||
                  std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t> ||
                  std::is_same_v<T, uint16_t>) {
      return unsupported(std::string("MatMul on ") + dtype_name(in[0]->dtype()));
    } else {
      using Acc = GemmAcc<T>;
      const int64_t a_size = d.m * d.k, b_size = d.k * d.n, c_size = d.m * d.n;
      // Batch strides in matrices (0 where a side is broadcast).
      const std::vector<int64_t> a_strides = broadcast_strides(d.a_batch, d.batch);
      const std::vector<int64_t> b_strides = broadcast_strides(d.b_batch, d.batch);
      const T* a = in[0]->data<T>();
      const T* b = in[1]->data<T>();
      T* y = out[0]->data<T>();
      std::vector<Acc> b_buf, c_buf;
      int64_t packed_b = -1;  // which B matrix b_buf holds: a broadcast B is packed once
      for_each_broadcast(
          d.batch, {a_strides, b_strides}, [&](int64_t i, const std::vector<int64_t>& off) {
            const Acc* bm;
            if constexpr (std::is_same_v<T, Acc>) {
              bm = b + off[1] * b_size;
            } else {
              if (packed_b != off[1]) {
                pack_gemm_b<Acc>(b + off[1] * b_size, false, d.k, d.n, b_buf);
                packed_b = off[1];
              }
              bm = b_buf.data();
            }
            if constexpr (std::is_same_v<T, Acc>) {
              gemm_ikj(a + off[0] * a_size, d.k, 1, bm, y + i * c_size, d.m, d.n, d.k);
            } else {
              c_buf.resize(static_cast<size_t>(c_size));
              gemm_ikj(a + off[0] * a_size, d.k, 1, bm, c_buf.data(), d.m, d.n, d.k);
              for (int64_t j = 0; j < c_size; ++j) y[i * c_size + j] = static_cast<T>(c_buf[j]);
            }
          });
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(MatMul, infer_mat_mul, run_mat_mul);

}  // namespace kiln
