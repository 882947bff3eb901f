#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

TEST(EliminateDeadNodes, RemovesBranchesThatReachNoOutput) {
  Graph g;
  Value* x = typed_value(g, "x", {4});
  Value* a = typed_value(g, "a", {4});
  Value* dead1 = typed_value(g, "dead1", {4});
  Value* dead2 = typed_value(g, "dead2", {4});
  Value* y = typed_value(g, "y", {4});
  g.add_node(OpKind::Relu, "relu", {x}, {a});
  g.add_node(OpKind::Sigmoid, "unused1", {a}, {dead1});
  g.add_node(OpKind::Tanh, "unused2", {dead1}, {dead2});
  g.add_node(OpKind::Exp, "exp", {a}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, eliminate_dead_nodes, {random_tensor({4}, 1)}, 0, 0));
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.find_value("dead1"), nullptr);
  EXPECT_EQ(g.find_value("dead2"), nullptr);
  EXPECT_NE(g.find_value("x"), nullptr);          // graph inputs stay even when unused
  EXPECT_FALSE(eliminate_dead_nodes(g).value());  // nothing left to do
}

// The whole pipeline on conv → bn → add(shortcut) → relu, plus an Identity: one Conv node
// with a residual + Relu epilogue, same numbers, and the report names the group.
TEST(OptimizeGraph, ConvBnResidualReluPipeline) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 2, 5, 5});
  Value* c = typed_value(g, "c", {1, 2, 5, 5});
  Value* b = typed_value(g, "b", {1, 2, 5, 5});
  Value* i = typed_value(g, "i", {1, 2, 5, 5});
  Value* s = typed_value(g, "s", {1, 2, 5, 5});
  Value* y = typed_value(g, "y", {1, 2, 5, 5});
  Attributes pads;
  pads.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g.add_node(OpKind::Conv, "conv1", {x, g.add_constant("w", random_tensor({2, 2, 3, 3}, 1))}, {c},
             pads);
  g.add_node(
      OpKind::BatchNormalization, "bn1",
      {c, g.add_constant("g", random_tensor({2}, 2, 0.5f, 1.f)),
       g.add_constant("be", random_tensor({2}, 3)), g.add_constant("m", random_tensor({2}, 4)),
       g.add_constant("v", random_tensor({2}, 5, 0.5f, 1.f))},
      {b});
  g.add_node(OpKind::Identity, "id", {b}, {i});
  g.add_node(OpKind::Add, "add1", {i, x}, {s});
  g.add_node(OpKind::Relu, "relu1", {s}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  PassReport report;
  EngineOptions verified;
  verified.verify_passes = true;
  EXPECT_TRUE(run_pass_and_compare(
      g,
      [&](Graph& gr) -> Result<bool> {
        KILN_RETURN_IF_ERROR(optimize_graph(gr, verified, &report));
        return true;
      },
      {random_tensor({1, 2, 5, 5}, 6)}, 1e-5, 1e-4));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(report.nodes_before, 5);
  // remove_identity runs twice, then fuse_channel_affine (pipeline.cc); the input format is
  // float32, so normalize_image_inputs changes nothing and is not listed.
  ASSERT_EQ(report.steps.size(), 8u);
  EXPECT_EQ(report.steps[0].pass, "remove_identity");
  EXPECT_EQ(report.steps[0].nodes_after, 4);
  EXPECT_EQ(report.steps.back().nodes_after, 1);
  ASSERT_EQ(report.fused_groups.size(), 1u);
  EXPECT_EQ(report.fused_groups[0], "conv1 + bn1 + add1 + relu1 → Conv[+ residual → Relu]");
}

}  // namespace
}  // namespace kiln::test
