// oneDNN MatMul by a constant matrix (an inner product over A's flattened rows) against the
// reference MatMul on random data: ranks 2 to 4 of A × the epilogues fuse_epilogue makes (a
// Linear layer's bias, GELU, a residual, ReLU); and the MatMuls the backend leaves to the
// reference.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

struct MatMulCase {
  const char* name;
  Shape a;
  int64_t n;
  bool bias;
  Activation act;
  bool residual;
};

const MatMulCase kCases[] = {
    {"2d", {5, 12}, 7, false, Activation::kNone, false},
    {"3d_bias", {2, 9, 16}, 11, true, Activation::kNone, false},
    {"4d_bias_gelu", {2, 5, 6, 24}, 40, true, Activation::kGelu, false},
    {"4d_bias_residual_relu", {1, 7, 7, 32}, 32, true, Activation::kRelu, true},
    {"residual_no_bias", {3, 8}, 5, false, Activation::kNone, true},
};

TEST(DnnlMatMul, MatchesReference) {
  uint32_t seed = 900;
  for (const MatMulCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Graph g;
    const int64_t k = c.a.back();
    Shape ys = c.a;
    ys.back() = c.n;
    Tensor a = random_tensor(c.a, ++seed);
    Tensor b = random_tensor({k, c.n}, ++seed);
    Tensor bias = random_tensor({c.n}, ++seed);
    Tensor residual = random_tensor(ys, ++seed);
    std::vector<Value*> ins{f32_value(g, "a", a.shape()), g.add_constant("b", b)};
    std::vector<const Tensor*> tensors{&a, &b};
    Node* n = g.add_node(OpKind::MatMul, "mm", ins, {f32_value(g, "y", ys)});
    if (c.bias) {
      n->epilogue.bias_input = static_cast<int>(n->inputs.size());
      g.set_input(n, n->inputs.size(), g.add_constant("bias", bias));
      tensors.push_back(&bias);
    }
    if (c.residual) {
      n->epilogue.residual_input = static_cast<int>(n->inputs.size());
      g.set_input(n, n->inputs.size(), f32_value(g, "r", ys));
      tensors.push_back(&residual);
    }
    n->epilogue.act = c.act;
    ASSERT_TRUE(onednn_backend(2).supports(*n));
    std::unique_ptr<Kernel> kernel;
    expect_matches_reference(onednn_backend(2), *n, tensors, &kernel);
    ASSERT_TRUE(kernel);
    EXPECT_FALSE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference());
    EXPECT_NE(kernel->tactic().find("onednn"), std::string::npos) << kernel->tactic();
  }
}

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
