#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

// x [2, 12, 3, 5] → Reshape(s5) → Transpose(perm) → Reshape(s4) → y, shapes as constants.
struct ShuffleGraph {
  Graph g;
  Value *x, *r, *t, *y;
  Node *first, *tr, *second;
};

void build(ShuffleGraph& a, std::vector<int64_t> perm, std::vector<int64_t> s5,
           std::vector<int64_t> s4) {
  Graph& g = a.g;
  a.x = typed_value(g, "x", {2, 12, 3, 5});
  a.r = g.add_value("r");
  a.t = g.add_value("t");
  a.y = g.add_value("y");
  Value* v5 = g.add_constant("s5", Tensor::from_int64s({static_cast<int64_t>(s5.size())}, s5));
  Value* v4 = g.add_constant("s4", Tensor::from_int64s({static_cast<int64_t>(s4.size())}, s4));
  a.first = g.add_node(OpKind::Reshape, "view", {a.x, v5}, {a.r});
  Attributes ta;
  ta.set("perm", perm);
  a.tr = g.add_node(OpKind::Transpose, "transpose", {a.r}, {a.t}, ta);
  a.second = g.add_node(OpKind::Reshape, "unview", {a.t, v4}, {a.y});
  g.inputs() = {a.x};
  g.outputs() = {a.y};
}

std::vector<Tensor> inputs() { return {random_tensor({2, 12, 3, 5}, 21, -2.f, 2.f)}; }

auto pass = [](Graph& g) { return fuse_channel_shuffle(g); };

TEST(FuseChannelShuffle, ThreeNodesBecomeOne) {
  // A per-pixel shuffle in 3 groups, and shapes that make it a general block transpose.
  for (auto [s5, s4] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{0, 3, -1, 3, 5}, {0, -1, 3, 5}}, {{4, 3, 2, 3, 5}, {2, 12, 15}}}) {
    SCOPED_TRACE(shape_str(s5));
    ShuffleGraph a;
    build(a, {0, 2, 1, 3, 4}, s5, s4);
    std::vector<std::vector<std::string>> groups;
    EXPECT_TRUE(run_pass_and_compare(
        a.g, [&](Graph& g) { return fuse_channel_shuffle(g, &groups); }, inputs()));
    ASSERT_EQ(a.g.nodes().size(), 1u);
    const Node& n = *a.g.nodes()[0];
    EXPECT_EQ(n.op, OpKind::ChannelShuffle);
    EXPECT_EQ(n.name, "view");
    EXPECT_EQ(n.input(0), a.x);
    EXPECT_EQ(n.output(0), a.y);
    EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"view", "transpose", "unview"}}));
  }
}

TEST(FuseChannelShuffle, PerPixelShuffleMovesWholeChannels) {
  // y channel k·G + g is x channel g·K + k (G = 3 groups of K = 4).
  ShuffleGraph a;
  build(a, {0, 2, 1, 3, 4}, {2, 3, 4, 3, 5}, {2, 12, 3, 5});
  ASSERT_TRUE(fuse_channel_shuffle(a.g).value());
  const Tensor x = inputs()[0];
  auto y = run_graph(a.g, {x});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<float> xv = x.to_floats(), yv = (*y)[0].to_floats();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t g = 0; g < 3; ++g)
        for (int64_t p = 0; p < 15; ++p)
          ASSERT_EQ(yv[(n * 12 + k * 3 + g) * 15 + p], xv[(n * 12 + g * 4 + k) * 15 + p]);
}

TEST(FuseChannelShuffle, LeavesOtherPatternsAlone) {
  {
    SCOPED_TRACE("another permutation");
    ShuffleGraph a;
    build(a, {0, 1, 2, 4, 3}, {2, 3, 4, 3, 5}, {2, 12, 5, 3});
    EXPECT_FALSE(fuse_channel_shuffle(a.g).value());
    EXPECT_EQ(a.g.nodes().size(), 3u);
  }
  {
    SCOPED_TRACE("the transposed value is also a graph output");
    ShuffleGraph a;
    build(a, {0, 2, 1, 3, 4}, {2, 3, 4, 3, 5}, {2, 12, 3, 5});
    a.g.outputs().push_back(a.t);
    EXPECT_FALSE(fuse_channel_shuffle(a.g).value());
  }
  {
    SCOPED_TRACE("allowzero on a Reshape");
    ShuffleGraph a;
    build(a, {0, 2, 1, 3, 4}, {2, 3, 4, 3, 5}, {2, 12, 3, 5});
    a.second->attrs.set("allowzero", int64_t{1});
    EXPECT_FALSE(fuse_channel_shuffle(a.g).value());
  }
}

TEST(FuseChannelShuffle, WrongShapesAreStillErrors) {
  // The fused node checks the shapes as the Reshapes did: 5 entries, matching element counts.
  ShuffleGraph a;
  build(a, {0, 2, 1, 3, 4}, {2, 3, 4, 3, 5}, {2, 12, 3, 5});
  ASSERT_TRUE(fuse_channel_shuffle(a.g).value());
  const Node& n = *a.g.nodes()[0];
  const Tensor x = inputs()[0];
  for (auto [s5, s4] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{2, 3, 4, 15}, {2, 12, 3, 5}}, {{2, 3, 4, 3, 5}, {2, 12, 3, 4}}}) {
    const Tensor t5 = Tensor::from_int64s({static_cast<int64_t>(s5.size())}, s5);
    const Tensor t4 = Tensor::from_int64s({static_cast<int64_t>(s4.size())}, s4);
    std::vector<Tensor> out;
    const Status st = run_reference(n, {&x, &t5, &t4}, out);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find("view"), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace kiln::test
