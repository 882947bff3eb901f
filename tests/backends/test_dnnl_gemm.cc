// The Gemms the oneDNN backend leaves to the reference. Those it runs are tested by Gemm's case
// table (tests/ops/cases/gemm.cc), which every backend's harness runs.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

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
  // oneDNN declines it at prepare, saying why; the planner takes the reference kernel.
  auto declined = run_backend(onednn_backend(1), *full_c, {&a, &b, &c});
  ASSERT_FALSE(declined.is_ok());
  EXPECT_EQ(declined.status().code(), StatusCode::kUnsupported) << declined.status().to_string();
}

}  // namespace
}  // namespace kiln::test
