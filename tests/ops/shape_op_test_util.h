// Helpers for the tests of data-movement ops (Reshape, Transpose, Slice, Gather...): random
// tensors of any dtype, expected outputs built by explicit index math, exact comparison.
#pragma once

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/op_test_util.h"

namespace kiln::test {

// The dtypes every data-movement op is run on: one per element size, plus bool.
inline const std::vector<DataType>& movable_dtypes() {
  static const std::vector<DataType> kAll = {DataType::kFloat32, DataType::kInt64,
                                             DataType::kFloat16, DataType::kUInt8, DataType::kBool};
  return kAll;
}

// Random bytes (bool: 0/1) so every element differs from its neighbours with high odds;
// data-movement ops never look at the values, so any bit pattern is a fair input.
inline Tensor random_of(DataType dt, const Shape& shape, uint32_t seed = 1) {
  Tensor t(dt, shape);
  std::mt19937 gen(seed);
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(gen());
  if (dt == DataType::kBool)
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
  return t;
}

inline Tensor int64s(const std::vector<int64_t>& v) {
  return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
}

// Row-major multi-index of flat position i in `shape`.
inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

// The tensor of shape `out_shape` whose element at multi-index m is x's element at flat
// index source(m).
inline Tensor build_expected(const Tensor& x, const Shape& out_shape,
                             const std::function<int64_t(const std::vector<int64_t>&)>& source) {
  Tensor want(x.dtype(), out_shape);
  const size_t es = dtype_size(x.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    int64_t j = source(unravel(i, out_shape));
    std::memcpy(static_cast<char*>(want.raw()) + i * es, static_cast<const char*>(x.raw()) + j * es,
                es);
  }
  return want;
}

// Same dtype, same shape, identical bytes.
inline void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(dtype_name(got.dtype()), std::string(dtype_name(want.dtype())));
  ASSERT_EQ(got.shape(), want.shape())
      << shape_str(got.shape()) << " vs " << shape_str(want.shape());
  const size_t es = dtype_size(got.dtype());
  int misses = 0;
  for (int64_t i = 0; i < got.numel() && misses < 5; ++i) {
    if (std::memcmp(static_cast<const char*>(got.raw()) + i * es,
                    static_cast<const char*>(want.raw()) + i * es, es) != 0) {
      ADD_FAILURE() << "element " << i << " differs";
      ++misses;
    }
  }
}

// Runs the op and expects an error whose message contains `needle`.
inline void expect_error(OpKind op, const Attributes& attrs,
                         const std::vector<const Tensor*>& inputs, const std::string& needle,
                         size_t num_outputs = 1) {
  auto out = run_op(op, attrs, inputs, num_outputs);
  ASSERT_FALSE(out.is_ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(out.status().message().find(needle), std::string::npos) << out.status().to_string();
}

// Runs only the shape rule on descriptors (value nullptr = contents unknown, as when planning
// a graph whose shape inputs are computed at run time).
inline Result<std::vector<TensorDesc>> infer_op(OpKind op, const Attributes& attrs,
                                                const std::vector<TensorDesc>& in,
                                                size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> ins, outs;
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(g.add_value("in" + std::to_string(i)));
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  Node* n = g.add_node(op, "test_node", ins, outs, attrs);
  const OpDef* def = OpRegistry::find(op);
  if (!def) return internal_error("no OpDef");
  std::vector<TensorDesc> out(num_outputs);
  KILN_RETURN_IF_ERROR(def->infer(*n, in, out));
  return out;
}

}  // namespace kiln::test
