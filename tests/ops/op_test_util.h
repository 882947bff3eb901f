// Helpers for op tests: build a one-node graph, run the reference kernel, compare.
//
//   auto out = run_op(OpKind::Relu, {}, {&x});
//   ASSERT_TRUE(out.is_ok()) << out.status().to_string();
//   expect_near((*out)[0], expected, 1e-6);
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"

namespace kiln::test {

// Runs one node of kind `op` with `attrs` on `inputs` (nullptr for an omitted optional
// input) and `num_outputs` outputs through shape rule + reference kernel.
inline Result<std::vector<Tensor>> run_op(OpKind op, const Attributes& attrs,
                                          const std::vector<const Tensor*>& inputs,
                                          size_t num_outputs = 1) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(inputs[i] ? g.add_value("in" + std::to_string(i)) : nullptr);
  std::vector<Value*> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  Node* n = g.add_node(op, "test_node", ins, outs, attrs);
  std::vector<Tensor> out;
  KILN_RETURN_IF_ERROR(run_reference(*n, inputs, out));
  return out;
}

// Uniform random float32 tensor in [lo, hi), deterministic for a seed. Never zeros.
inline Tensor random_tensor(const Shape& shape, uint32_t seed = 1, float lo = -1.f,
                            float hi = 1.f) {
  Tensor t(DataType::kFloat32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Element-wise |a-b| ≤ atol + rtol·|b|, with same dtype and shape; reports the first misses.
inline void expect_near(const Tensor& got, const Tensor& want, double atol, double rtol = 0) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape())
      << shape_str(got.shape()) << " vs " << shape_str(want.shape());
  int misses = 0;
  for (int64_t i = 0; i < got.numel() && misses < 5; ++i) {
    double a = got.at_double(i), b = want.at_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
      ++misses;
    }
  }
}

// ‖got − want‖ / ‖want‖ over all elements; NaN in `got` gives +inf.
inline double relative_l2(const Tensor& got, const Tensor& want) {
  std::vector<float> g = got.to_floats(), w = want.to_floats();
  if (g.size() != w.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && !std::isnan(w[i])) return INFINITY;
    double d = double(g[i]) - double(w[i]);
    num += d * d;
    den += double(w[i]) * w[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace kiln::test
