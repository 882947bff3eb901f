#include "ops/squeeze_excite.h"
#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

// x [2, 8, 3, 5] → GlobalAveragePool → Conv 1×1 (8 → 3) [act1] → Conv 1×1 (3 → 8) [act2] →
// Mul(x, gate) → y, as fuse_epilogue leaves a squeeze-and-excitation block.
struct SeGraph {
  Graph g;
  Value *x, *pooled, *hidden, *gate, *y;
  Node *pool, *conv1, *conv2, *mul;
};

struct SeOptions {
  Activation act1 = Activation::kSilu, act2 = Activation::kSigmoid;
  bool biases = true;
  bool gate_first = false;  // Mul(gate, x)
  int64_t conv1_stride = 1;
};

void build(SeGraph& a, const SeOptions& o = {}) {
  Graph& g = a.g;
  a.x = typed_value(g, "x", {2, 8, 3, 5});
  a.pooled = typed_value(g, "pooled", {2, 8, 1, 1});
  a.hidden = typed_value(g, "hidden", {2, 3, 1, 1});
  a.gate = typed_value(g, "gate", {2, 8, 1, 1});
  a.y = typed_value(g, "y", {2, 8, 3, 5});
  Value* w1 = g.add_constant("w1", random_tensor({3, 8, 1, 1}, 31, -0.5f, 0.5f));
  Value* w2 = g.add_constant("w2", random_tensor({8, 3, 1, 1}, 32, -0.5f, 0.5f));
  Value* b1 = o.biases ? g.add_constant("b1", random_tensor({3}, 33)) : nullptr;
  Value* b2 = o.biases ? g.add_constant("b2", random_tensor({8}, 34)) : nullptr;
  a.pool = g.add_node(OpKind::GlobalAveragePool, "pool", {a.x}, {a.pooled});
  Attributes c1;
  c1.set("strides", std::vector<int64_t>{o.conv1_stride, o.conv1_stride});
  std::vector<Value*> in1 = {a.pooled, w1}, in2 = {a.hidden, w2};
  if (o.biases) {
    in1.push_back(b1);
    in2.push_back(b2);
  }
  a.conv1 = g.add_node(OpKind::Conv, "fc1", in1, {a.hidden}, c1);
  a.conv1->epilogue.act = o.act1;
  a.conv2 = g.add_node(OpKind::Conv, "fc2", in2, {a.gate});
  a.conv2->epilogue.act = o.act2;
  if (o.act2 == Activation::kHardSigmoid) {
    a.conv2->epilogue.alpha = 1.f / 6.f;
    a.conv2->epilogue.beta = 0.5f;
  }
  a.mul = g.add_node(
      OpKind::Mul, "scale",
      o.gate_first ? std::vector<Value*>{a.gate, a.x} : std::vector<Value*>{a.x, a.gate}, {a.y});
  g.inputs() = {a.x};
  g.outputs() = {a.y};
}

std::vector<Tensor> inputs() { return {random_tensor({2, 8, 3, 5}, 35, -2.f, 2.f)}; }

TEST(FuseSqueezeExcite, FourNodesBecomeOne) {
  const SeOptions cases[] = {
      {},
      {Activation::kRelu, Activation::kHardSigmoid, true, false, 1},
      {Activation::kNone, Activation::kSigmoid, false, true, 1},
  };
  for (const SeOptions& o : cases) {
    SCOPED_TRACE(std::string(activation_name(o.act1)) + "/" + activation_name(o.act2));
    SeGraph a;
    build(a, o);
    std::vector<std::vector<std::string>> groups;
    EXPECT_TRUE(run_pass_and_compare(
        a.g, [&](Graph& g) { return fuse_squeeze_excite(g, &groups); }, inputs()));
    ASSERT_EQ(a.g.nodes().size(), 1u);
    const Node& n = *a.g.nodes()[0];
    EXPECT_EQ(n.op, OpKind::SqueezeExcite);
    EXPECT_EQ(n.name, "scale");
    EXPECT_EQ(n.input(0), a.x);
    EXPECT_EQ(n.output(0), a.y);
    EXPECT_EQ(n.inputs.size(), 5u);
    EXPECT_EQ(n.input(2) != nullptr, o.biases);
    auto attrs = squeeze_excite_attrs(n);
    ASSERT_TRUE(attrs.is_ok()) << attrs.status().to_string();
    EXPECT_EQ(attrs->squeeze, o.act1);
    EXPECT_EQ(attrs->excite, o.act2);
    EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"scale", "pool", "fc1", "fc2"}}));
  }
}

TEST(FuseSqueezeExcite, LeavesOtherPatternsAlone) {
  {
    SCOPED_TRACE("a strided conv");
    SeGraph a;
    build(a, {Activation::kSilu, Activation::kSigmoid, true, false, 2});
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
  {
    SCOPED_TRACE("the gate scales another tensor");
    SeGraph a;
    build(a);
    Value* other = typed_value(a.g, "other", {2, 8, 3, 5});
    a.g.inputs().push_back(other);
    a.g.set_input(a.mul, 0, other);
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
  {
    SCOPED_TRACE("the hidden vector is also a graph output");
    SeGraph a;
    build(a);
    a.g.outputs().push_back(a.hidden);
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
  {
    SCOPED_TRACE("a residual epilogue on the second conv");
    SeGraph a;
    build(a);
    a.conv2->epilogue.residual_input = 3;
    a.g.set_input(a.conv2, 3, a.pooled);
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
  {
    SCOPED_TRACE("grouped conv");
    SeGraph a;
    build(a);
    a.conv1->attrs.set("group", int64_t{2});
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
  {
    SCOPED_TRACE("a max pool");
    SeGraph a;
    build(a);
    a.pool->op = OpKind::GlobalMaxPool;
    EXPECT_FALSE(fuse_squeeze_excite(a.g).value());
  }
}

TEST(FuseSqueezeExcite, UnknownActivationNameIsAnError) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 2, 1, 1});
  Attributes at;
  at.set("excite_activation", std::string("Swish2"));
  Node* n = g.add_node(OpKind::SqueezeExcite, "se", {x}, {g.add_value("y")}, at);
  auto a = squeeze_excite_attrs(*n);
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("Swish2"), std::string::npos) << a.status().to_string();
}

}  // namespace
}  // namespace kiln::test
