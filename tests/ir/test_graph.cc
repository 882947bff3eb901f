#include <gtest/gtest.h>

#include "ir/graph.h"

namespace kiln {
namespace {

TEST(Graph, TopoSortOrdersProducersFirstAndVerifies) {
  Graph g;
  Value* x = g.add_value("x");
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.inputs().push_back(x);
  // Added out of order: b = Relu(a) before a = Relu(x).
  g.add_node(OpKind::Relu, "second", {a}, {b});
  g.add_node(OpKind::Relu, "first", {x}, {a});
  g.outputs().push_back(b);
  EXPECT_FALSE(verify_graph(g).is_ok());
  ASSERT_TRUE(g.topo_sort().is_ok());
  EXPECT_EQ(g.nodes()[0]->name, "first");
  EXPECT_TRUE(verify_graph(g).is_ok()) << verify_graph(g).to_string();
}

TEST(Graph, DetectsCycles) {
  Graph g;
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.add_node(OpKind::Relu, "n1", {a}, {b});
  g.add_node(OpKind::Relu, "n2", {b}, {a});
  EXPECT_FALSE(g.topo_sort().is_ok());
}

TEST(Graph, ReplaceAllUsesAndRemoveNode) {
  Graph g;
  Value* x = g.add_value("x");
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.inputs().push_back(x);
  Node* id = g.add_node(OpKind::Identity, "id", {x}, {a});
  g.add_node(OpKind::Relu, "relu", {a, a}, {b});
  g.outputs().push_back(b);
  g.replace_all_uses(a, x);
  g.remove_node(id);
  g.remove_unused_values();
  EXPECT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(x->consumers.size(), 2u);
  EXPECT_EQ(g.find_value("a"), nullptr);
  EXPECT_TRUE(verify_graph(g).is_ok()) << verify_graph(g).to_string();
  EXPECT_NE(print_graph(g).find("relu = Relu(x:undefined[?], x:undefined[?])"), std::string::npos)
      << print_graph(g);
}

TEST(Graph, UniqueValueNames) {
  Graph g;
  Value* a = g.add_value("t");
  Value* b = g.add_value("t");
  EXPECT_NE(a->name, b->name);
  EXPECT_EQ(op_from_name("Conv"), OpKind::Conv);
  EXPECT_FALSE(op_from_name("NotAnOp").has_value());
  EXPECT_STREQ(op_name(OpKind::MaxPool), "MaxPool");
}

}  // namespace
}  // namespace kiln
