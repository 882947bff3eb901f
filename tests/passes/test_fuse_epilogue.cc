#include <cmath>

#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

auto fuse = [](Graph& g) { return fuse_epilogue(g); };

// Conv 3→4 channels, 3×3, on [2,3,6,6] → [2,4,4,4].
Value* add_conv(Graph& g, Value* x, const std::string& out) {
  Value* c = typed_value(g, out, {2, 4, 4, 4});
  g.add_node(OpKind::Conv, "conv",
             {x, g.add_constant("w", random_tensor({4, 3, 3, 3}, 11)),
              g.add_constant("b", random_tensor({4}, 12))},
             {c});
  return c;
}

TEST(FuseEpilogue, ConvResidualRelu) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3, 6, 6});
  Value* r = typed_value(g, "shortcut", {2, 4, 4, 4});
  Value* c = add_conv(g, x, "c");
  Value* s = typed_value(g, "sum", {2, 4, 4, 4});
  Value* y = typed_value(g, "y", {2, 4, 4, 4});
  g.add_node(OpKind::Add, "add", {r, c}, {s});
  g.add_node(OpKind::Relu, "relu", {s}, {y});
  g.inputs() = {x, r};
  g.outputs() = {y};
  std::vector<std::vector<std::string>> groups;
  EXPECT_TRUE(
      run_pass_and_compare(g, [&](Graph& gr) { return fuse_epilogue(gr, &groups); },
                           {random_tensor({2, 3, 6, 6}, 1), random_tensor({2, 4, 4, 4}, 2)}));
  ASSERT_EQ(g.nodes().size(), 1u);
  const Node& n = *g.nodes()[0];
  EXPECT_EQ(n.epilogue.act, Activation::kRelu);
  ASSERT_EQ(n.epilogue.residual_input, 3);
  EXPECT_EQ(n.inputs[3], r);
  EXPECT_EQ(n.outputs[0]->name, "y");
  EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"conv", "add", "relu"}}));
}

// A constant [C,1,1] added after Conv is folded into the bias, not kept as a residual.
TEST(FuseEpilogue, ConstantChannelAddBecomesConvBias) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3, 6, 6});
  Value* c = add_conv(g, x, "c");
  Value* s = typed_value(g, "s", {2, 4, 4, 4});
  Value* y = typed_value(g, "y", {2, 4, 4, 4});
  g.add_node(OpKind::Add, "bias_add", {c, g.add_constant("k", random_tensor({4, 1, 1}, 3))}, {s});
  g.add_node(OpKind::Tanh, "tanh", {s}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, fuse, {random_tensor({2, 3, 6, 6}, 4)}));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->epilogue.act, Activation::kTanh);
  EXPECT_EQ(g.nodes()[0]->epilogue.residual_input, -1);
  EXPECT_EQ(g.nodes()[0]->inputs.size(), 3u);
}

// Every activation the epilogue knows, after a Gemm.
TEST(FuseEpilogue, Activations) {
  struct Case {
    OpKind op;
    Attributes attrs;
    Activation act;
    std::vector<float> clip;  // Clip min, max as constant inputs
  };
  Attributes leaky, hsig;
  leaky.set("alpha", 0.2f);
  hsig.set("alpha", 0.3f);
  hsig.set("beta", 0.4f);
  std::vector<Case> cases = {
      {OpKind::Relu, {}, Activation::kRelu, {}},
      {OpKind::Clip, {}, Activation::kClip, {0.f, 0.6f}},
      {OpKind::LeakyRelu, leaky, Activation::kLeakyRelu, {}},
      {OpKind::Sigmoid, {}, Activation::kSigmoid, {}},
      {OpKind::Tanh, {}, Activation::kTanh, {}},
      {OpKind::HardSigmoid, hsig, Activation::kHardSigmoid, {}},
      {OpKind::HardSwish, {}, Activation::kHardSwish, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(op_name(c.op));
    Graph g;
    Value* x = typed_value(g, "x", {3, 4});
    Value* m = typed_value(g, "m", {3, 5});
    Value* y = typed_value(g, "y", {3, 5});
    g.add_node(OpKind::Gemm, "fc",
               {x, g.add_constant("w", random_tensor({4, 5}, 5, -3.f, 3.f)),
                g.add_constant("c", random_tensor({5}, 6))},
               {m});
    std::vector<Value*> act_in{m};
    for (float v : c.clip) act_in.push_back(g.add_constant("k", Tensor::from_floats({}, {v})));
    g.add_node(c.op, "act", act_in, {y}, c.attrs);
    g.inputs() = {x};
    g.outputs() = {y};
    EXPECT_TRUE(run_pass_and_compare(g, fuse, {random_tensor({3, 4}, 7)}));
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0]->epilogue.act, c.act);
  }
}

TEST(FuseEpilogue, MatMulSilu) {
  Graph g;
  Value* x = typed_value(g, "x", {3, 4});
  Value* m = typed_value(g, "m", {3, 2});
  Value* s = typed_value(g, "s", {3, 2});
  Value* y = typed_value(g, "y", {3, 2});
  g.add_node(OpKind::MatMul, "mm", {x, g.add_constant("w", random_tensor({4, 2}, 8))}, {m});
  g.add_node(OpKind::Sigmoid, "sig", {m}, {s});
  g.add_node(OpKind::Mul, "mul", {s, m}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, fuse, {random_tensor({3, 4}, 9, -3.f, 3.f)}));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->epilogue.act, Activation::kSilu);
}

// A Linear layer as exporters write it on a rank-4 activation (ConvNeXt's MLP): MatMul by a
// constant, Add of a constant [N] (or [1,1,N]) along the last axis, then a residual and an
// activation: one MatMul with act(x·W + bias[n] + residual).
TEST(FuseEpilogue, MatMulBiasResidualRelu) {
  for (const Shape& bias_shape : {Shape{5}, Shape{1, 1, 5}}) {
    SCOPED_TRACE(shape_str(bias_shape));
    Graph g;
    Value* x = typed_value(g, "x", {2, 3, 4, 6});
    Value* r = typed_value(g, "r", {2, 3, 4, 5});
    Value* m = typed_value(g, "m", {2, 3, 4, 5});
    Value* b = typed_value(g, "b", {2, 3, 4, 5});
    Value* s = typed_value(g, "s", {2, 3, 4, 5});
    Value* y = typed_value(g, "y", {2, 3, 4, 5});
    g.add_node(OpKind::MatMul, "mm", {x, g.add_constant("w", random_tensor({6, 5}, 8))}, {m});
    g.add_node(OpKind::Add, "bias", {g.add_constant("k", random_tensor(bias_shape, 9)), m}, {b});
    g.add_node(OpKind::Add, "res", {b, r}, {s});
    g.add_node(OpKind::Relu, "relu", {s}, {y});
    g.inputs() = {x, r};
    g.outputs() = {y};
    std::vector<std::vector<std::string>> groups;
    EXPECT_TRUE(
        run_pass_and_compare(g, [&](Graph& gr) { return fuse_epilogue(gr, &groups); },
                             {random_tensor({2, 3, 4, 6}, 10), random_tensor({2, 3, 4, 5}, 11)}));
    ASSERT_EQ(g.nodes().size(), 1u);
    const Node& n = *g.nodes()[0];
    EXPECT_EQ(n.epilogue.bias_input, 2);
    EXPECT_EQ(n.epilogue.residual_input, 3);
    EXPECT_EQ(n.epilogue.act, Activation::kRelu);
    EXPECT_EQ(n.inputs[2]->constant.shape(), Shape{5});
    EXPECT_EQ(n.epilogue.describe(), "+ bias[n] + residual → Relu");
    EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"mm", "bias", "res", "relu"}}));
  }
}

// GELU as exporters write it after a Linear layer: x/√2 (or x·(1/√2)) → Erf → +1, then
// (x·t)·0.5 or (x·0.5)·t, constants on either side. `form` picks the variant; `sqrt2` is the
// divisor written (anything but √2 is not GELU and must stay).
void gelu_graph(Graph& g, int form, float sqrt2) {
  Value* x = typed_value(g, "x", {2, 3, 4, 6});
  Value* m = typed_value(g, "m", {2, 3, 4, 5});
  Value* d = typed_value(g, "d", {2, 3, 4, 5});
  Value* e = typed_value(g, "e", {2, 3, 4, 5});
  Value* t = typed_value(g, "t", {2, 3, 4, 5});
  Value* p = typed_value(g, "p", {2, 3, 4, 5});
  Value* y = typed_value(g, "y", {2, 3, 4, 5});
  auto scalar = [&](const std::string& name, float v) {
    return g.add_constant(name, Tensor::from_floats({}, {v}));
  };
  g.add_node(OpKind::MatMul, "mm", {x, g.add_constant("w", random_tensor({6, 5}, 8))}, {m});
  if (form == 1)
    g.add_node(OpKind::Mul, "scale", {scalar("inv", 1.f / sqrt2), m}, {d});
  else
    g.add_node(OpKind::Div, "scale", {m, scalar("s2", sqrt2)}, {d});
  g.add_node(OpKind::Erf, "erf", {d}, {e});
  g.add_node(OpKind::Add, "one", {scalar("c1", 1.f), e}, {t});
  if (form == 2) {
    g.add_node(OpKind::Mul, "half", {m, scalar("c5", 0.5f)}, {p});
    g.add_node(OpKind::Mul, "mul", {t, p}, {y});
  } else {
    g.add_node(OpKind::Mul, "mul", {m, t}, {p});
    g.add_node(OpKind::Mul, "half", {scalar("c5", 0.5f), p}, {y});
  }
  g.inputs() = {x};
  g.outputs() = {y};
}

TEST(FuseEpilogue, MatMulGelu) {
  for (int form = 0; form < 3; ++form) {
    SCOPED_TRACE(form);
    Graph g;
    gelu_graph(g, form, std::sqrt(2.f));
    EXPECT_TRUE(run_pass_and_compare(g, fuse, {random_tensor({2, 3, 4, 6}, 12, -3.f, 3.f)}));
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0]->epilogue.act, Activation::kGelu);
    EXPECT_EQ(g.nodes()[0]->outputs[0]->name, "y");
  }
  Graph not_gelu;
  gelu_graph(not_gelu, 0, 1.5f);
  EXPECT_FALSE(run_pass_and_compare(not_gelu, fuse, {random_tensor({2, 3, 4, 6}, 13)}));
  EXPECT_EQ(not_gelu.nodes().size(), 6u);
}

// An Add that is not a bias along the last axis stays: a constant per row ([M, 1]), an
// activation of shape [N], or any Add after a MatMul by a 1-D B (its output's last axis is A's
// rows).
TEST(FuseEpilogue, MatMulAddThatIsNotABiasStays) {
  {
    Graph g;
    Value* x = typed_value(g, "x", {3, 4});
    Value* m = typed_value(g, "m", {3});
    Value* y = typed_value(g, "y", {3});
    g.add_node(OpKind::MatMul, "mm", {x, g.add_constant("w", random_tensor({4}, 8))}, {m});
    g.add_node(OpKind::Add, "add", {m, g.add_constant("k", random_tensor({3}, 3))}, {y});
    g.inputs() = {x};
    g.outputs() = {y};
    EXPECT_FALSE(run_pass_and_compare(g, fuse, {random_tensor({3, 4}, 4)}));
    EXPECT_EQ(g.nodes().size(), 2u);
  }
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(which);
    Graph g;
    Value* x = typed_value(g, "x", {3, 4});
    Value* m = typed_value(g, "m", {3, 2});
    Value* y = typed_value(g, "y", {3, 2});
    Value* k =
        which == 0 ? g.add_constant("k", random_tensor({3, 1}, 3)) : typed_value(g, "k", {2});
    g.add_node(OpKind::MatMul, "mm", {x, g.add_constant("w", random_tensor({4, 2}, 8))}, {m});
    g.add_node(OpKind::Add, "add", {m, k}, {y});
    g.inputs() = {x};
    std::vector<Tensor> inputs{random_tensor({3, 4}, 4)};
    if (which == 1) {
      g.inputs().push_back(k);
      inputs.push_back(random_tensor({2}, 5));
    }
    g.outputs() = {y};
    EXPECT_FALSE(run_pass_and_compare(g, fuse, inputs));
    EXPECT_EQ(g.nodes().size(), 2u);
    EXPECT_TRUE(g.nodes()[0]->epilogue.empty());
  }
}

// Preconditions: nothing changes when the intermediate is a graph output, when the Clip
// bounds are not constant, or when the residual has another shape (broadcast).
TEST(FuseEpilogue, FailedPreconditionsChangeNothing) {
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Graph g;
    Value* x = typed_value(g, "x", {2, 3, 6, 6});
    Value* lo = typed_value(g, "lo", {});
    Value* c = add_conv(g, x, "c");
    Value* y = typed_value(g, "y", {2, 4, 4, 4});
    std::vector<Tensor> inputs;
    inputs.push_back(random_tensor({2, 3, 6, 6}, 1));
    g.inputs() = {x};
    g.outputs() = {y};
    if (which == 0) {
      g.add_node(OpKind::Relu, "relu", {c}, {y});
      g.outputs().push_back(c);
    } else if (which == 1) {
      g.add_node(OpKind::Clip, "clip", {c, lo}, {y});
      g.inputs().push_back(lo);
      inputs.push_back(Tensor::from_floats({}, {0.1f}));
    } else {
      Value* r = typed_value(g, "r", {4, 1, 1});
      g.add_node(OpKind::Add, "add", {c, r}, {y});
      g.inputs().push_back(r);
      inputs.push_back(random_tensor({4, 1, 1}, 2));
    }
    EXPECT_FALSE(run_pass_and_compare(g, fuse, inputs));
    EXPECT_EQ(g.nodes().size(), 2u);
    EXPECT_TRUE(g.nodes()[0]->epilogue.empty());
  }
}

// Activation then Add is not act(op + residual): only the activation fuses.
TEST(FuseEpilogue, ActivationBeforeAddFusesOnlyTheActivation) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3, 6, 6});
  Value* r = typed_value(g, "r", {2, 4, 4, 4});
  Value* c = add_conv(g, x, "c");
  Value* a = typed_value(g, "a", {2, 4, 4, 4});
  Value* y = typed_value(g, "y", {2, 4, 4, 4});
  g.add_node(OpKind::Relu, "relu", {c}, {a});
  g.add_node(OpKind::Add, "add", {a, r}, {y});
  g.inputs() = {x, r};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(
      g, fuse, {random_tensor({2, 3, 6, 6}, 3), random_tensor({2, 4, 4, 4}, 4)}));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(count_op(g, OpKind::Add), 1);
  EXPECT_EQ(g.find_value("a")->producer->op, OpKind::Conv);
  EXPECT_EQ(g.find_value("a")->producer->epilogue.residual_input, -1);
}

}  // namespace
}  // namespace kiln::test
