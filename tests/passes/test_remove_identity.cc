#include "passes/pass_test_util.h"

namespace kiln::test {
namespace {

TEST(RemoveIdentity, RemovesIdentityBetweenNodes) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3});
  Value* a = typed_value(g, "a", {2, 3});
  Value* b = typed_value(g, "b", {2, 3});
  Value* y = typed_value(g, "y", {2, 3});
  g.add_node(OpKind::Relu, "relu1", {x}, {a});
  g.add_node(OpKind::Identity, "id", {a}, {b});
  g.add_node(OpKind::Sigmoid, "sig", {b}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, remove_identity, {random_tensor({2, 3}, 1)}));
  EXPECT_EQ(count_op(g, OpKind::Identity), 0);
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.find_value("b"), nullptr);
}

TEST(RemoveIdentity, GraphOutputKeepsItsName) {
  Graph g;
  Value* x = typed_value(g, "x", {4});
  Value* a = typed_value(g, "a", {4});
  Value* y = typed_value(g, "scores", {4});
  g.add_node(OpKind::Relu, "relu", {x}, {a});
  g.add_node(OpKind::Identity, "id", {a}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_TRUE(run_pass_and_compare(g, remove_identity, {random_tensor({4}, 2)}));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name, "scores");
  EXPECT_EQ(g.outputs()[0]->producer, g.nodes()[0].get());
}

TEST(RemoveIdentity, KeepsIdentityFromGraphInputToGraphOutput) {
  Graph g;
  Value* x = typed_value(g, "x", {4});
  Value* y = typed_value(g, "y", {4});
  g.add_node(OpKind::Identity, "id", {x}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_FALSE(run_pass_and_compare(g, remove_identity, {random_tensor({4}, 3)}));
  EXPECT_EQ(count_op(g, OpKind::Identity), 1);
  EXPECT_EQ(g.outputs()[0]->name, "y");
}

// Dropout: removed in inference mode with the mask unused; kept otherwise.
TEST(RemoveIdentity, InferenceDropoutOnly) {
  struct Case {
    const char* name;
    bool training;  // training_mode = true constant
    bool use_mask;
    bool removed;
  };
  for (const Case& c : {Case{"plain", false, false, true}, Case{"training", true, false, false},
                        Case{"mask used", false, true, false}}) {
    SCOPED_TRACE(c.name);
    Graph g;
    Value* x = typed_value(g, "x", {2, 2});
    Value* a = typed_value(g, "a", {2, 2});
    Value* d = typed_value(g, "d", {2, 2});
    Value* y = typed_value(g, "y", {2, 2});
    Value* mask = g.add_value("mask");
    Value* ratio = g.add_constant("ratio", Tensor::from_floats({}, {0.5f}));
    Tensor mode(DataType::kBool, {});
    mode.data<bool>()[0] = c.training;
    Value* tm = g.add_constant("mode", mode);
    g.add_node(OpKind::Relu, "relu", {x}, {a});
    g.add_node(OpKind::Dropout, "drop", {a, ratio, tm}, {d, c.use_mask ? mask : nullptr});
    g.add_node(OpKind::Tanh, "tanh", {d}, {y});
    g.inputs() = {x};
    g.outputs() = {y};
    if (c.use_mask) g.outputs().push_back(mask);
    bool changed = remove_identity(g).value();
    EXPECT_EQ(changed, c.removed);
    EXPECT_EQ(count_op(g, OpKind::Dropout), c.removed ? 0 : 1);
    EXPECT_TRUE(verify_graph(g).is_ok());
    if (c.removed) {
      auto out = run_graph(g, {random_tensor({2, 2}, 4)});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      Tensor x4 = random_tensor({2, 2}, 4);
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR((*out)[0].data<float>()[i], std::tanh(std::max(0.f, x4.data<float>()[i])),
                    1e-6);
    }
  }
}

}  // namespace
// Pad by a constant of zeros (DenseNet's exports write one before each transition pool) is
// the identity in every mode; any non-zero pad, or pads computed at run time, keep it.
TEST(RemoveIdentity, PadByZeros) {
  struct Case {
    const char* name;
    std::vector<int64_t> pads;  // empty: pads are a graph input
    const char* mode;
    bool removed;
  };
  for (const Case& c : {Case{"zeros", {0, 0, 0, 0, 0, 0, 0, 0}, "constant", true},
                        Case{"zeros_reflect", {0, 0, 0, 0, 0, 0, 0, 0}, "reflect", true},
                        Case{"one_pixel", {0, 0, 1, 0, 0, 0, 0, 0}, "constant", false},
                        Case{"computed", {}, "constant", false}}) {
    SCOPED_TRACE(c.name);
    Graph g;
    Value* x = typed_value(g, "x", {1, 2, 3, 3});
    Value* a = typed_value(g, "a", {1, 2, 3, 3});
    Value* pads = nullptr;
    if (c.pads.empty()) {
      pads = g.add_value("pads");
      pads->dtype = DataType::kInt64;
    } else {
      pads = g.add_constant("pads", Tensor::from_int64s({8}, c.pads));
    }
    Value* p = typed_value(g, "p", {1, 2, c.removed ? 3 : 4, 3});
    Value* y = typed_value(g, "y", {1, 2, c.removed ? 3 : 4, 3});
    Attributes at;
    at.set("mode", std::string(c.mode));
    g.add_node(OpKind::Relu, "relu", {x}, {a});
    g.add_node(OpKind::Pad, "pad", {a, pads}, {p}, at);
    g.add_node(OpKind::Tanh, "tanh", {p}, {y});
    g.inputs() = {x};
    if (c.pads.empty()) g.inputs().push_back(pads);
    g.outputs() = {y};
    if (c.removed) {
      EXPECT_TRUE(run_pass_and_compare(g, remove_identity, {random_tensor({1, 2, 3, 3}, 7)}));
    } else {
      EXPECT_FALSE(remove_identity(g).value());
    }
    EXPECT_EQ(count_op(g, OpKind::Pad), c.removed ? 0 : 1);
    EXPECT_TRUE(verify_graph(g).is_ok());
  }
}

}  // namespace kiln::test
