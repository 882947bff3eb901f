// Normalization of pre-opset-7 elementwise forms (broadcast/axis attributes, PRelu's
// per-channel slope) and other small legacy attribute forms (Cast-1 type names, Concat-1's
// default axis).

#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// ---- elementwise < 7 ----------------------------------------------------------------------

TEST(ImporterNormalize, LegacyBroadcastWithAxisUnsqueezesB) {
  ModelBuilder b(6);
  b.input("a", kFloat, {2, 3, 4});
  b.initializer("bias", {3}, {10, 20, 30});
  auto& n = b.node("Add", {"a", "bias"}, {"y"}, "add");
  add_attr(n, "broadcast", int64_t{1});
  add_attr(n, "axis", int64_t{1});
  b.output("y", kFloat, {2, 3, 4});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* un = only_node(*g, OpKind::Unsqueeze);
  const Node* add = only_node(*g, OpKind::Add);
  ASSERT_TRUE(un && add);
  EXPECT_EQ(ints_of(un->input(1)), (std::vector<int64_t>{1}));
  EXPECT_EQ(add->input(1), un->outputs[0]);
  EXPECT_TRUE(add->attrs.all().empty());

  Tensor a = ramp({2, 3, 4});
  Tensor y = run_model(b, {{"a", a}}, "y");
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], a.data<float>()[i] + 10.f * ((i / 4) % 3 + 1));
}

TEST(ImporterNormalize, LegacyBroadcastTrailingNeedsNothing) {
  ModelBuilder b(6);
  b.input("a", kFloat, {2, 3});
  b.initializer("s", {3}, {1, 2, 3});
  auto& n = b.node("Mul", {"a", "s"}, {"y"});
  add_attr(n, "broadcast", int64_t{1});
  b.output("y", kFloat, {2, 3});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nodes().size(), 1u);
  EXPECT_TRUE(g->nodes()[0]->attrs.all().empty());
}

TEST(ImporterNormalize, CastBefore6TypeNameBecomesEnum) {
  ModelBuilder b(5);
  b.input("x", kFloat, {3});
  add_attr(b.node("Cast", {"x"}, {"y"}), "to", std::string("INT64"));
  b.output_any("y", kInt64, 1);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nodes()[0]->attrs.get_int("to", 0), static_cast<int64_t>(DataType::kInt64));
}

TEST(ImporterNormalize, ConcatBefore4DefaultsAxisTo1) {
  ModelBuilder b(3, 3);
  b.input("a", kFloat, {2, 2});
  b.input("c", kFloat, {2, 3});
  b.node("Concat", {"a", "c"}, {"y"});
  b.output("y", kFloat, {2, 5});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nodes()[0]->attrs.get_int("axis", -7), 1);
}

TEST(ImporterNormalize, PReluBefore7SlopeIsPerChannel) {
  ModelBuilder b(6);
  b.input("x", kFloat, {2, 3, 4});
  b.initializer("slope", {3}, {0.1f, 0.2f, 0.3f});
  b.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  b.output("y", kFloat, {2, 3, 4});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* un = only_node(*g, OpKind::Unsqueeze);
  ASSERT_TRUE(un);
  EXPECT_EQ(ints_of(un->input(1)), (std::vector<int64_t>{1}));
  EXPECT_EQ(only_node(*g, OpKind::PRelu)->input(1), un->outputs[0]);

  Tensor x = ramp({2, 3, 4});
  Tensor y = run_model(b, {{"x", x}}, "y");
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) {
    float v = x.data<float>()[i], slope = 0.1f * static_cast<float>((i / 4) % 3 + 1);
    EXPECT_FLOAT_EQ(y.data<float>()[i], v < 0 ? v * slope : v) << i;
  }
}

TEST(ImporterNormalize, PReluFrom7KeepsNumpyBroadcast) {
  ModelBuilder b(9);
  b.input("x", kFloat, {2, 3, 4});
  b.initializer("slope", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  b.node("PRelu", {"x", "slope"}, {"y"});
  b.output("y", kFloat, {2, 3, 4});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nodes().size(), 1u);
}

// The whole legacy pipeline runs and matches the math written out here.
TEST(ImporterNormalize, LegacyPipelineRuns) {
  ModelBuilder b = legacy_pipeline_model();
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_EQ(nodes_of(*g, OpKind::Resize).size(), 1u);
  EXPECT_EQ(nodes_of(*g, OpKind::Flatten).size(), 1u);  // Softmax-1 over C·H·W

  Tensor x = ramp({1, 3, 4, 4}, 0.61f, 0.f);
  Tensor y = run_model(b, {{"x", x}}, "y");
  ASSERT_EQ(y.shape(), (Shape{1, 3, 10, 10}));
  const float bias[3] = {0.1f, -0.2f, 0.3f};
  // p[c][i][j] on the padded 5x5 grid (one row/column of 0.25 before), then ×2 nearest.
  auto padded = [&](int c, int i, int j) {
    if (i == 0 || j == 0) return 0.25f;
    float v = x.data<float>()[(c * 4 + i - 1) * 4 + j - 1] + bias[c];
    return std::min(std::max(v, -0.5f), 0.8f);
  };
  double sum = 0;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) sum += std::exp(padded(c, i / 2, j / 2));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j)
        EXPECT_NEAR(y.data<float>()[(c * 10 + i) * 10 + j], std::exp(padded(c, i / 2, j / 2)) / sum,
                    1e-7)
            << c << "," << i << "," << j;
}

}  // namespace
}  // namespace kiln::test
