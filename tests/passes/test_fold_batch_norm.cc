#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

// BN params for c channels; var is kept positive.
std::vector<Value*> bn_params(Graph& g, int64_t c, uint32_t seed) {
  return {g.add_constant("gamma", random_tensor({c}, seed, 0.5f, 1.5f)),
          g.add_constant("beta", random_tensor({c}, seed + 1)),
          g.add_constant("mean", random_tensor({c}, seed + 2)),
          g.add_constant("var", random_tensor({c}, seed + 3, 0.2f, 2.f))};
}

Node* add_bn(Graph& g, Value* x, Value* y, int64_t c, uint32_t seed) {
  std::vector<Value*> in{x};
  for (Value* p : bn_params(g, c, seed)) in.push_back(p);
  Attributes a;
  a.set("epsilon", 1e-3f);
  return g.add_node(OpKind::BatchNormalization, "bn", in, {y}, a);
}

// Conv (with and without bias) → BN → Relu: BN folds into Conv's weights and bias.
TEST(FoldBatchNorm, FoldsIntoConv) {
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "bias" : "no bias");
    Graph g;
    Value* x = typed_value(g, "x", {2, 3, 5, 5});
    Value* c = typed_value(g, "c", {2, 4, 3, 3});
    Value* b = typed_value(g, "b", {2, 4, 3, 3});
    Value* y = typed_value(g, "y", {2, 4, 3, 3});
    std::vector<Value*> conv_in{x, g.add_constant("w", random_tensor({4, 3, 3, 3}, 7))};
    if (with_bias) conv_in.push_back(g.add_constant("bias", random_tensor({4}, 8)));
    g.add_node(OpKind::Conv, "conv", conv_in, {c});
    add_bn(g, c, b, 4, 10);
    g.add_node(OpKind::Relu, "relu", {b}, {y});
    g.inputs() = {x};
    g.outputs() = {y};
    EXPECT_TRUE(run_pass_and_compare(
        g, [](Graph& gr) { return fold_batch_norm(gr); }, {random_tensor({2, 3, 5, 5}, 9)}, 1e-5,
        1e-4));
    EXPECT_EQ(count_op(g, OpKind::BatchNormalization), 0);
    EXPECT_EQ(g.nodes().size(), 2u);
    EXPECT_EQ(g.nodes()[0]->outputs[0]->name, "b");  // the conv now writes BN's output
  }
}

TEST(FoldBatchNorm, FoldsIntoGemmWithTransB) {
  Graph g;
  Value* x = typed_value(g, "x", {3, 6});
  Value* m = typed_value(g, "m", {3, 5});
  Value* y = typed_value(g, "y", {3, 5});
  Attributes a;
  a.set("transB", int64_t{1});
  a.set("alpha", 0.7f);
  a.set("beta", 1.3f);
  g.add_node(OpKind::Gemm, "fc",
             {x, g.add_constant("w", random_tensor({5, 6}, 1)),
              g.add_constant("c", random_tensor({5}, 2))},
             {m}, a);
  add_bn(g, m, y, 5, 20);
  g.inputs() = {x};
  g.outputs() = {y};
  std::vector<std::vector<std::string>> groups;
  EXPECT_TRUE(run_pass_and_compare(
      g, [&](Graph& gr) { return fold_batch_norm(gr, &groups); }, {random_tensor({3, 6}, 3)}, 1e-5,
      1e-4));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name, "y");  // the graph output keeps its name
  EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"fc", "bn"}}));
}

// A BN after something it cannot fold into, or after a Conv whose output is also read
// elsewhere, becomes Mul + Add with [C,1,1] constants.
TEST(FoldBatchNorm, StandaloneBecomesMulAdd) {
  for (bool shared_conv : {false, true}) {
    SCOPED_TRACE(shared_conv ? "conv output shared" : "after relu");
    Graph g;
    Value* x = typed_value(g, "x", {2, 3, 4, 4});
    Value* r = typed_value(g, "r", {2, 3, 4, 4});
    Value* y = typed_value(g, "y", {2, 3, 4, 4});
    if (shared_conv)
      g.add_node(OpKind::Conv, "conv", {x, g.add_constant("w", random_tensor({3, 3, 1, 1}, 4))},
                 {r});
    else
      g.add_node(OpKind::Relu, "relu", {x}, {r});
    add_bn(g, r, y, 3, 30);
    g.inputs() = {x};
    g.outputs() = {y};
    if (shared_conv) g.outputs().push_back(r);
    EXPECT_TRUE(run_pass_and_compare(
        g, [](Graph& gr) { return fold_batch_norm(gr); }, {random_tensor({2, 3, 4, 4}, 5)}, 1e-5,
        1e-4));
    EXPECT_EQ(count_op(g, OpKind::BatchNormalization), 0);
    EXPECT_EQ(count_op(g, OpKind::Mul), 1);
    EXPECT_EQ(count_op(g, OpKind::Add), 1);
    EXPECT_EQ(g.find_value("bn_scale")->constant.shape(), (Shape{3, 1, 1}));
  }
}

TEST(FoldBatchNorm, NonConstantParamsChangeNothing) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 2, 3, 3});
  Value* gamma = typed_value(g, "gamma_in", {2});
  Value* c = typed_value(g, "c", {1, 2, 3, 3});
  Value* y = typed_value(g, "y", {1, 2, 3, 3});
  g.add_node(OpKind::Conv, "conv", {x, g.add_constant("w", random_tensor({2, 2, 1, 1}, 1))}, {c});
  std::vector<Value*> p = bn_params(g, 2, 40);
  g.add_node(OpKind::BatchNormalization, "bn", {c, gamma, p[1], p[2], p[3]}, {y});
  g.inputs() = {x, gamma};
  g.outputs() = {y};
  EXPECT_FALSE(
      run_pass_and_compare(g, [](Graph& gr) { return fold_batch_norm(gr); },
                           {random_tensor({1, 2, 3, 3}, 2), random_tensor({2}, 3, 0.5f, 1.f)}));
  EXPECT_EQ(count_op(g, OpKind::BatchNormalization), 1);
  EXPECT_EQ(g.nodes().size(), 2u);
}

}  // namespace
}  // namespace kiln::test
