#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

// x [2, C, 4, 5] → Mul(·, s) → Add(·, b) [→ Relu] → y, the constants shaped `cs`.
struct AffineGraph {
  Graph g;
  Value *x, *t, *u, *y;
};

void build(AffineGraph& a, const Shape& cs, bool relu, bool constant_first = false) {
  Graph& g = a.g;
  const int64_t c = 6;
  a.x = typed_value(g, "x", {2, c, 4, 5});
  a.t = typed_value(g, "t", {2, c, 4, 5});
  a.u = typed_value(g, "u", {2, c, 4, 5});
  Value* s = g.add_constant("s", random_tensor(cs, 1, 0.5f, 1.5f));
  Value* b = g.add_constant("b", random_tensor(cs, 2));
  if (constant_first) {
    g.add_node(OpKind::Mul, "mul", {s, a.x}, {a.t});
    g.add_node(OpKind::Add, "add", {b, a.t}, {a.u});
  } else {
    g.add_node(OpKind::Mul, "mul", {a.x, s}, {a.t});
    g.add_node(OpKind::Add, "add", {a.t, b}, {a.u});
  }
  a.y = a.u;
  if (relu) {
    a.y = typed_value(g, "y", {2, c, 4, 5});
    g.add_node(OpKind::Relu, "relu", {a.u}, {a.y});
  }
  g.inputs() = {a.x};
  g.outputs() = {a.y};
}

auto pass = [](Graph& g) { return fuse_channel_affine(g); };

TEST(FuseChannelAffine, MulAddReluBecomesOneBatchNorm) {
  AffineGraph a;
  build(a, {6, 1, 1}, true);
  EXPECT_TRUE(run_pass_and_compare(a.g, pass, {random_tensor({2, 6, 4, 5}, 3, -2.f, 2.f)}));
  ASSERT_EQ(a.g.nodes().size(), 1u);
  const Node& bn = *a.g.nodes()[0];
  EXPECT_EQ(bn.op, OpKind::BatchNormalization);
  EXPECT_EQ(bn.epilogue.act, Activation::kRelu);
  EXPECT_EQ(bn.attrs.get_float("epsilon", 1.f), 0.f);
  EXPECT_EQ(bn.output(0), a.y);
}

TEST(FuseChannelAffine, MulAddWithConstantsFirstAndRankFourConstants) {
  AffineGraph a;
  build(a, {1, 6, 1, 1}, false, true);
  EXPECT_TRUE(run_pass_and_compare(a.g, pass, {random_tensor({2, 6, 4, 5}, 4, -2.f, 2.f)}));
  ASSERT_EQ(a.g.nodes().size(), 1u);
  EXPECT_EQ(a.g.nodes()[0]->op, OpKind::BatchNormalization);
  EXPECT_EQ(a.g.nodes()[0]->epilogue.act, Activation::kNone);
}

TEST(FuseChannelAffine, LeavesWhatIsNotAPerChannelAffine) {
  for (const Shape& cs :
       {Shape{6, 4, 5}, Shape{1}, Shape{4, 1, 1}, Shape{6, 4, 1}, Shape{2, 6, 1, 1}}) {
    SCOPED_TRACE(shape_str(cs));
    AffineGraph a;
    if (cs == Shape{4, 1, 1}) {  // channels differ: not even a valid graph to run
      build(a, cs, true);
      auto changed = fuse_channel_affine(a.g);
      ASSERT_TRUE(changed.is_ok());
      EXPECT_FALSE(*changed);
      continue;
    }
    build(a, cs, true);
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, {random_tensor({2, 6, 4, 5}, 5)}));
    EXPECT_EQ(count_op(a.g, OpKind::BatchNormalization), 0);
  }
  {  // the Mul's result is read twice
    AffineGraph a;
    build(a, {6, 1, 1}, false);
    a.g.outputs() = {a.y, a.t};
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, {random_tensor({2, 6, 4, 5}, 6)}));
  }
  {  // the Add's result is a graph output too: the Relu stays
    AffineGraph a;
    build(a, {6, 1, 1}, true);
    a.g.outputs() = {a.y, a.u};
    EXPECT_TRUE(run_pass_and_compare(a.g, pass, {random_tensor({2, 6, 4, 5}, 7)}));
    EXPECT_EQ(count_op(a.g, OpKind::Relu), 1);
    EXPECT_EQ(count_op(a.g, OpKind::BatchNormalization), 1);
  }
}

}  // namespace
}  // namespace kiln::test
