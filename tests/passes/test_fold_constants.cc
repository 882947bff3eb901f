#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

Value* int_constant(Graph& g, const std::string& name, Shape s, std::vector<int64_t> v) {
  return g.add_constant(name, Tensor::from_int64s(std::move(s), std::move(v)));
}

// The chain exporters write for x.view(x.size(0), -1): with x's shape static it all folds
// into the Reshape's shape constant.
TEST(FoldConstants, FoldsShapeGatherConcatChain) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3, 4});
  Value* s = g.add_value("s");
  Value* n0 = g.add_value("n0");
  Value* n1 = g.add_value("n1");
  Value* shape = g.add_value("shape");
  Value* y = typed_value(g, "y", {2, 12});
  Attributes axis0;
  axis0.set("axis", int64_t{0});
  g.add_node(OpKind::Shape, "shape_of", {x}, {s});
  g.add_node(OpKind::Gather, "gather", {s, int_constant(g, "i0", {}, {0})}, {n0}, axis0);
  g.add_node(OpKind::Unsqueeze, "unsq", {n0, int_constant(g, "ax", {1}, {0})}, {n1});
  g.add_node(OpKind::Concat, "concat", {n1, int_constant(g, "m1", {1}, {-1})}, {shape}, axis0);
  g.add_node(OpKind::Reshape, "reshape", {x, shape}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, fold_constants, {random_tensor({2, 3, 4}, 1)}, 0, 0));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op, OpKind::Reshape);
  ASSERT_TRUE(shape->is_constant());
  EXPECT_EQ(shape->constant.to_int64s(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(g.find_value("s"), nullptr);  // intermediates dropped
}

TEST(FoldConstants, ConstantNodesAndConstantArithmetic) {
  Graph g;
  Value* x = typed_value(g, "x", {3});
  Value* c = g.add_value("c");
  Value* d = g.add_value("d");
  Value* y = typed_value(g, "y", {3});
  Attributes value;
  value.set("value", Tensor::from_floats({3}, {1.5f, -2.f, 0.25f}));
  g.add_node(OpKind::Constant, "const", {}, {c}, value);
  g.add_node(OpKind::Mul, "double", {c, g.add_constant("two", Tensor::from_floats({}, {2.f}))},
             {d});
  g.add_node(OpKind::Add, "add", {x, d}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, fold_constants, {random_tensor({3}, 2)}, 0, 0));
  ASSERT_EQ(g.nodes().size(), 1u);
  ASSERT_TRUE(d->is_constant());
  EXPECT_EQ(d->constant.to_floats(), (std::vector<float>{3.f, -4.f, 0.5f}));
  EXPECT_EQ(d->shape_string(), "[3]");
}

TEST(FoldConstants, LeavesDynamicShapesAndGraphOutputs) {
  Graph g;
  Value* x = g.add_value("x");
  x->dtype = DataType::kFloat32;
  x->has_shape = true;
  x->dims = {{-1, "batch"}, {3, ""}};
  Value* s = g.add_value("s");
  Value* y = g.add_value("y");
  g.add_node(OpKind::Shape, "shape_of", {x}, {s});
  // A constant-only node whose output is a graph output stays a node.
  g.add_node(OpKind::Relu, "relu", {g.add_constant("k", Tensor::from_floats({2}, {-1.f, 1.f}))},
             {y});
  g.inputs() = {x};
  g.outputs() = {s, y};
  EXPECT_FALSE(run_pass_and_compare(g, fold_constants, {random_tensor({5, 3}, 3)}, 0, 0));
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_FALSE(s->is_constant());
}

// With a dynamic batch, Shape(x) stays, but a Gather of its known dims folds (ShuffleNet's
// channel split computes C/2 this way); a Gather of the batch, or one out of range, stays.
TEST(FoldConstants, GatherOfKnownDimsOfADynamicShape) {
  Graph g;
  Value* x = g.add_value("x");
  x->dtype = DataType::kFloat32;
  x->has_shape = true;
  x->dims = {{-1, "batch"}, {8, ""}, {5, ""}, {7, ""}};
  Value* s = g.add_value("s");
  Value* hw = g.add_value("hw");
  Value* n = g.add_value("n");
  Value* shape = g.add_value("shape");
  Value* y = g.add_value("y");
  Attributes axis0;
  axis0.set("axis", int64_t{0});
  g.add_node(OpKind::Shape, "shape_of", {x}, {s});
  g.add_node(OpKind::Gather, "spatial", {s, int_constant(g, "i23", {2}, {2, -1})}, {hw}, axis0);
  g.add_node(OpKind::Gather, "batch", {s, int_constant(g, "i0", {1}, {0})}, {n}, axis0);
  g.add_node(OpKind::Concat, "concat", {int_constant(g, "m1", {1}, {-1}), hw}, {shape}, axis0);
  g.add_node(OpKind::Reshape, "reshape", {x, shape}, {y});
  g.inputs() = {x};
  g.outputs() = {y, n};
  EXPECT_TRUE(run_pass_and_compare(g, fold_constants, {random_tensor({3, 8, 5, 7}, 4)}, 0, 0));
  ASSERT_TRUE(shape->is_constant());
  EXPECT_EQ(shape->constant.to_int64s(), (std::vector<int64_t>{-1, 5, 7}));
  EXPECT_FALSE(n->is_constant());
  std::vector<std::string> left;
  for (const auto& node : g.nodes()) left.push_back(node->name);
  EXPECT_EQ(left, (std::vector<std::string>{"shape_of", "batch", "reshape"}));

  // An index out of range is left to the kernel, which reports it when the model runs.
  Value* bad = g.add_value("bad");
  g.add_node(OpKind::Gather, "out_of_range", {s, int_constant(g, "i9", {1}, {9})}, {bad}, axis0);
  Value* bad_out = g.add_value("bad_out");
  g.add_node(OpKind::Unsqueeze, "unsq", {bad, int_constant(g, "ax", {1}, {0})}, {bad_out});
  g.outputs().push_back(bad_out);
  ASSERT_TRUE(fold_constants(g).is_ok());
  EXPECT_FALSE(bad->is_constant());
}

TEST(FoldConstants, SkipsHugeResults) {
  Graph g;
  Value* x = typed_value(g, "x", {1});
  Value* big = g.add_value("big");
  Value* y = g.add_value("y");
  // 4097² float32 is just over 64 MiB.
  g.add_node(OpKind::Expand, "expand",
             {g.add_constant("one", Tensor::from_floats({}, {1.f})),
              int_constant(g, "shape", {2}, {4097, 4097})},
             {big});
  g.add_node(OpKind::Add, "add", {big, x}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_TRUE(verify_graph(g).is_ok());
}

}  // namespace
}  // namespace kiln::test
