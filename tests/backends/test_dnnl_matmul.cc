// The MatMuls the oneDNN backend leaves to the reference. Those it runs (by a constant matrix,
// as an inner product over A's flattened rows) are tested by MatMul's case table
// (tests/ops/cases/mat_mul.cc), which every backend's harness runs.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

// A computed B, a 1-D B, a batched B and a 1-D A stay on the reference.
TEST(DnnlMatMul, LeavesOtherFormsToReference) {
  Graph g;
  EXPECT_FALSE(onednn_backend(1).supports(*g.add_node(
      OpKind::MatMul, "computed", {f32_value(g, "a", {2, 4}), f32_value(g, "b", {4, 3})},
      {f32_value(g, "y", {2, 3})})));
  EXPECT_FALSE(onednn_backend(1).supports(
      *g.add_node(OpKind::MatMul, "vector_b",
                  {f32_value(g, "a2", {2, 4}), g.add_constant("b2", random_tensor({4}, 1))},
                  {f32_value(g, "y2", {2})})));
  EXPECT_FALSE(onednn_backend(1).supports(*g.add_node(
      OpKind::MatMul, "batched_b",
      {f32_value(g, "a3", {2, 2, 4}), g.add_constant("b3", random_tensor({2, 4, 3}, 2))},
      {f32_value(g, "y3", {2, 2, 3})})));
  EXPECT_FALSE(onednn_backend(1).supports(
      *g.add_node(OpKind::MatMul, "vector_a",
                  {f32_value(g, "a4", {4}), g.add_constant("b4", random_tensor({4, 3}, 3))},
                  {f32_value(g, "y4", {3})})));
}

}  // namespace
}  // namespace kiln::test
