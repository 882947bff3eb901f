// oneDNN Gemm (inner product) against the reference Gemm on random data: shapes × transB ×
// bias forms × epilogues; and the Gemms the backend leaves to the reference.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

struct GemmCase {
  const char* name;
  int64_t m, k, n;
  bool trans_b;
  Shape bias;  // empty: no C
  Activation act;
  bool residual;
};

const GemmCase kCases[] = {
    {"fc_transB_bias", 1, 64, 10, true, {10}, Activation::kNone, false},
    {"batch_bias_row", 4, 33, 17, true, {1, 17}, Activation::kNone, false},
    {"no_trans_no_bias", 3, 20, 9, false, {}, Activation::kNone, false},
    {"no_trans_bias_relu", 5, 16, 8, false, {8}, Activation::kRelu, false},
    {"sigmoid", 2, 12, 7, true, {7}, Activation::kSigmoid, false},
    {"residual_relu", 3, 10, 6, true, {6}, Activation::kRelu, true},
    {"residual_no_bias", 2, 8, 5, false, {}, Activation::kNone, true},
};

TEST(DnnlGemm, MatchesReference) {
  uint32_t seed = 500;
  for (const GemmCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Graph g;
    Tensor a = random_tensor({c.m, c.k}, ++seed);
    Tensor b = random_tensor(c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, ++seed);
    Tensor bias = c.bias.empty() ? Tensor() : random_tensor(c.bias, ++seed);
    Tensor residual = random_tensor({c.m, c.n}, ++seed);
    Attributes attrs;
    if (c.trans_b) attrs.set("transB", int64_t{1});
    std::vector<Value*> ins{f32_value(g, "a", a.shape()), g.add_constant("b", b)};
    std::vector<const Tensor*> tensors{&a, &b};
    if (!c.bias.empty()) {
      ins.push_back(f32_value(g, "c", c.bias));
      tensors.push_back(&bias);
    }
    if (c.residual) {
      ins.push_back(f32_value(g, "r", residual.shape()));
      tensors.push_back(&residual);
    }
    Node* n = g.add_node(OpKind::Gemm, "gemm", ins, {f32_value(g, "y", {c.m, c.n})}, attrs);
    n->epilogue.act = c.act;
    if (c.residual) n->epilogue.residual_input = static_cast<int>(ins.size()) - 1;
    ASSERT_TRUE(onednn_backend(2).supports(*n));
    std::unique_ptr<Kernel> kernel;
    expect_matches_reference(onednn_backend(2), *n, tensors, &kernel);
    ASSERT_TRUE(kernel);
    EXPECT_FALSE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference());
  }
}

// transA, alpha ≠ 1 and a B that is not a constant stay on the reference; a C that is not a
// row vector is claimed but runs the reference kernel (decided at prepare) with equal results.
TEST(DnnlGemm, LeavesOtherFormsToReference) {
  Graph g;
  Tensor b = random_tensor({4, 3});
  Attributes trans_a;
  trans_a.set("transA", int64_t{1});
  EXPECT_FALSE(onednn_backend(1).supports(
      *g.add_node(OpKind::Gemm, "ta", {f32_value(g, "a", {4, 2}), g.add_constant("b", b)},
                  {f32_value(g, "y", {2, 3})}, trans_a)));
  Attributes alpha;
  alpha.set("alpha", 0.5f);
  EXPECT_FALSE(onednn_backend(1).supports(
      *g.add_node(OpKind::Gemm, "al", {f32_value(g, "a2", {2, 4}), g.add_constant("b2", b)},
                  {f32_value(g, "y2", {2, 3})}, alpha)));
  EXPECT_FALSE(onednn_backend(1).supports(
      *g.add_node(OpKind::Gemm, "vb", {f32_value(g, "a3", {2, 4}), f32_value(g, "b3", {4, 3})},
                  {f32_value(g, "y3", {2, 3})})));

  Tensor a = random_tensor({2, 4}, 3), c = random_tensor({2, 3}, 4);
  Node* full_c =
      g.add_node(OpKind::Gemm, "fc",
                 {f32_value(g, "a4", {2, 4}), g.add_constant("b4", b), f32_value(g, "c4", {2, 3})},
                 {f32_value(g, "y4", {2, 3})});
  ASSERT_TRUE(onednn_backend(1).supports(*full_c));
  std::unique_ptr<Kernel> kernel;
  expect_matches_reference(onednn_backend(1), *full_c, {&a, &b, &c}, &kernel);
  ASSERT_TRUE(kernel);
  EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference());
}

}  // namespace
}  // namespace kiln::test
