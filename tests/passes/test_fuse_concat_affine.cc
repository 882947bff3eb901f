#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

// x0 [2, 4, 3, 5], x1 [2, 6, 3, 5] → Concat(axis) → BatchNormalization [→ Relu epilogue] → y.
struct CatGraph {
  Graph g;
  Value *x0, *x1, *cat, *y;
  Node* bn = nullptr;
};

void build(CatGraph& a, bool relu, int64_t axis = 1, float eps = 1e-5f) {
  Graph& g = a.g;
  a.x0 = typed_value(g, "x0", {2, 4, 3, 5});
  a.x1 = typed_value(g, "x1", axis == 1 ? Shape{2, 6, 3, 5} : Shape{2, 4, 3, 5});
  const Shape out = axis == 1 ? Shape{2, 10, 3, 5} : Shape{2, 4, 6, 5};
  a.cat = typed_value(g, "cat", out);
  a.y = typed_value(g, "y", out);
  Attributes ca;
  ca.set("axis", axis);
  g.add_node(OpKind::Concat, "concat", {a.x0, a.x1}, {a.cat}, ca);
  const int64_t c = out[1];
  std::vector<Value*> in{a.cat, g.add_constant("scale", random_tensor({c}, 1, 0.5f, 1.5f)),
                         g.add_constant("B", random_tensor({c}, 2)),
                         g.add_constant("mean", random_tensor({c}, 3, -0.5f, 0.5f)),
                         g.add_constant("var", random_tensor({c}, 4, 0.2f, 2.f))};
  Attributes ba;
  ba.set("epsilon", eps);
  a.bn = g.add_node(OpKind::BatchNormalization, "norm", in, {a.y}, ba);
  if (relu) a.bn->epilogue.act = Activation::kRelu;
  g.inputs() = {a.x0, a.x1};
  g.outputs() = {a.y};
}

std::vector<Tensor> inputs(int64_t axis = 1) {
  return {random_tensor({2, 4, 3, 5}, 10, -2.f, 2.f),
          random_tensor(axis == 1 ? Shape{2, 6, 3, 5} : Shape{2, 4, 3, 5}, 11, -2.f, 2.f)};
}

auto pass = [](Graph& g) { return fuse_concat_affine(g); };

TEST(FuseConcatAffine, ConcatNormReluBecomesOneConcat) {
  for (bool relu : {true, false}) {
    SCOPED_TRACE(relu ? "relu" : "no activation");
    CatGraph a;
    build(a, relu, 1, 1e-3f);
    EXPECT_TRUE(run_pass_and_compare(a.g, pass, inputs()));
    ASSERT_EQ(a.g.nodes().size(), 1u);
    const Node& cat = *a.g.nodes()[0];
    EXPECT_EQ(cat.op, OpKind::Concat);
    EXPECT_EQ(cat.epilogue.affine_input, 2);
    EXPECT_EQ(cat.epilogue.act, relu ? Activation::kRelu : Activation::kNone);
    ASSERT_EQ(cat.inputs.size(), 4u);
    EXPECT_EQ(cat.input(2)->constant.shape(), Shape{10});
    EXPECT_EQ(cat.output(0), a.y);  // the norm's output, name kept
    EXPECT_EQ(a.g.find_value("cat"), nullptr);
  }
}

TEST(FuseConcatAffine, ReportsTheGroup) {
  CatGraph a;
  build(a, true);
  std::vector<std::vector<std::string>> groups;
  auto changed = fuse_concat_affine(a.g, &groups);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_TRUE(*changed);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (std::vector<std::string>{"concat", "norm"}));
  EXPECT_EQ(a.g.nodes()[0]->epilogue.describe(), "× scale[c] + shift[c] → Relu");
}

TEST(FuseConcatAffine, LeavesWhatItCannotFuse) {
  {  // not on channels
    CatGraph a;
    build(a, true, 2);
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, inputs(2)));
    EXPECT_EQ(count_op(a.g, OpKind::BatchNormalization), 1);
  }
  {  // the concatenation is read by another node too
    CatGraph a;
    build(a, true);
    a.g.outputs() = {a.y, a.cat};
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, inputs()));
  }
  {  // statistics that are not constants
    CatGraph a;
    build(a, false);
    Value* m = typed_value(a.g, "m", {10});
    a.g.set_input(a.bn, 3, m);
    a.g.inputs().push_back(m);
    std::vector<Tensor> in = inputs();
    in.push_back(random_tensor({10}, 12));
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, in));
  }
  {  // a constant input: the CUDA kernel keeps such a concat plain
    CatGraph a;
    build(a, false);
    a.g.set_input(a.g.nodes()[0].get(), 1, a.g.add_constant("k", random_tensor({2, 6, 3, 5}, 13)));
    a.g.inputs() = {a.x0};
    EXPECT_FALSE(run_pass_and_compare(a.g, pass, {inputs()[0]}));
  }
}

// The reference applies the epilogue itself: a Concat with one equals Concat then the norm.
TEST(FuseConcatAffine, ReferenceRejectsBadAffineInputs) {
  CatGraph a;
  build(a, true);
  ASSERT_TRUE(*fuse_concat_affine(a.g));
  Node* cat = a.g.nodes()[0].get();
  a.g.set_input(cat, 3, a.g.add_constant("short", random_tensor({9}, 20)));
  const Tensor x0 = inputs()[0], x1 = inputs()[1];
  std::vector<const Tensor*> in{&x0, &x1, &cat->input(2)->constant, &cat->input(3)->constant};
  std::vector<Tensor> out;
  Status s = run_reference(*cat, in, out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("shift"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace kiln::test
