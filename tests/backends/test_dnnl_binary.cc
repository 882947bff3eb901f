// oneDNN Add/Sub/Mul/Div beyond the op case tables (tests/ops/cases/binary.cc, which cover the
// broadcast patterns and which of them oneDNN runs): both operands broadcasting, a fused
// activation, other dtypes.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

// Both inputs broadcast ([N,1] with [1,M]): oneDNN cannot; the reference kernel runs.
TEST(DnnlBinary, BothBroadcastingRunsTheReference) {
  Tensor a = random_tensor({4, 1}, 1), b = random_tensor({1, 5}, 2);
  EXPECT_FALSE(dnnl_matches_reference(OpKind::Add, {}, {{a}, {b}}));
}

// A fused activation rides along as a post-op.
TEST(DnnlBinary, FusedActivation) {
  Graph g;
  Tensor a = random_tensor({2, 4, 3, 3}, 3), b = random_tensor({2, 4, 3, 3}, 4);
  Node* n =
      g.add_node(OpKind::Add, "add", {f32_value(g, "a", a.shape()), f32_value(g, "b", b.shape())},
                 {f32_value(g, "y", a.shape())});
  n->epilogue.act = Activation::kRelu;
  ASSERT_TRUE(onednn_backend(2).supports(*n));
  std::unique_ptr<Kernel> kernel;
  expect_matches_reference(onednn_backend(2), *n, {&a, &b}, &kernel);
  EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).prepared());
}

// Integer arithmetic (shape computations) stays on the reference backend.
TEST(DnnlBinary, DeclinesOtherDtypes) {
  Graph g;
  Value* a = g.add_value("a");
  a->dtype = DataType::kInt64;
  Value* b = g.add_value("b");
  b->dtype = DataType::kInt64;
  Node* n = g.add_node(OpKind::Mul, "mul", {a, b}, {g.add_value("y")});
  EXPECT_FALSE(onednn_backend(2).supports(*n));
}

}  // namespace
}  // namespace kiln::test
