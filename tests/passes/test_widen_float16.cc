// widen_float16 on tiny graphs in the float16 form of the common converters (float32 inputs
// and outputs behind Casts, float16 weights and values inside), and with float16 inputs and
// outputs: the graph computes in float32 with the stored weights, keeps its interface, and
// gives float16's answer within float16's rounding.
#include <gtest/gtest.h>

#include "core/half.h"
#include "pass_test_util.h"

namespace kiln::test {
namespace {

Tensor to_half(const Tensor& t) {
  Tensor h(DataType::kFloat16, t.shape());
  store_floats(t.data<float>(), static_cast<size_t>(t.numel()), DataType::kFloat16, h.raw());
  return h;
}

Value* value_of(Graph& g, const std::string& name, DataType dt, const Shape& s) {
  Value* v = typed_value(g, name, s);
  v->dtype = dt;
  return v;
}

Attributes cast_to(int64_t to) {
  Attributes a;
  a.set("to", to);
  return a;
}

// x (float32) → Cast(fp16) → Conv(w16, b16) → Relu → Cast(fp32) → y, as a converter writes it.
struct Float16Conv {
  Graph g;
  Tensor w = random_tensor({4, 3, 3, 3}, 7), b = random_tensor({4}, 8);
  explicit Float16Conv(DataType io = DataType::kFloat32) {
    const bool f32 = io == DataType::kFloat32;
    Value* x = value_of(g, "x", io, {2, 3, 6, 5});
    Value* x16 = f32 ? value_of(g, "x16", DataType::kFloat16, {2, 3, 6, 5}) : x;
    Value* c = value_of(g, "c", DataType::kFloat16, {2, 4, 4, 3});
    Value* r = f32 ? value_of(g, "r", DataType::kFloat16, {2, 4, 4, 3})
                   : value_of(g, "y", DataType::kFloat16, {2, 4, 4, 3});
    if (f32) g.add_node(OpKind::Cast, "to16", {x}, {x16}, cast_to(10));
    g.add_node(OpKind::Conv, "conv",
               {x16, g.add_constant("w", to_half(w)), g.add_constant("b", to_half(b))}, {c});
    g.add_node(OpKind::Relu, "relu", {c}, {r});
    Value* y = r;
    if (f32) {
      y = value_of(g, "y", DataType::kFloat32, {2, 4, 4, 3});
      g.add_node(OpKind::Cast, "to32", {r}, {y}, cast_to(1));
    }
    g.inputs() = {x};
    g.outputs() = {y};
  }
};

TEST(WidenFloat16, ConverterFormComputesInFloat32WithTheStoredWeights) {
  Float16Conv m;
  const Tensor x = random_tensor({2, 3, 6, 5}, 9);
  auto before = run_graph(m.g, {x});
  ASSERT_TRUE(before.is_ok()) << before.status().to_string();
  auto changed = widen_float16(m.g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify_graph(m.g).is_ok());
  // The Casts are gone; nothing is float16; the interface is unchanged.
  EXPECT_EQ(count_op(m.g, OpKind::Cast), 0);
  for (const auto& v : m.g.values()) EXPECT_NE(v->dtype, DataType::kFloat16) << v->name;
  ASSERT_EQ(m.g.outputs().size(), 1u);
  EXPECT_EQ(m.g.outputs()[0]->name, "y");
  EXPECT_EQ(m.g.inputs()[0]->name, "x");
  // The weights are the stored float16 values, exactly.
  const Value* w = m.g.nodes()[0]->input(1);
  ASSERT_TRUE(w->is_constant());
  ASSERT_EQ(w->constant.dtype(), DataType::kFloat32);
  for (int64_t i = 0; i < w->constant.numel(); ++i)
    EXPECT_EQ(w->constant.data<float>()[i],
              half_bits_to_float(float_to_half_bits(m.w.data<float>()[i])));
  auto after = run_graph(m.g, {x});
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();
  // float32 arithmetic on float16 data: within float16's rounding of the float16 answer.
  expect_near((*after)[0], (*before)[0], 2e-2, 5e-3);
  // And the same as a float32 conv on the rounded input and weights.
  Float16Conv again;
  ASSERT_TRUE(widen_float16(again.g).is_ok());
  auto twice = run_graph(again.g, {x});
  ASSERT_TRUE(twice.is_ok());
  expect_near((*after)[0], (*twice)[0], 0, 0);
}

TEST(WidenFloat16, Float16InputsAndOutputsStayFloat16) {
  Float16Conv m(DataType::kFloat16);
  const Tensor x = to_half(random_tensor({2, 3, 6, 5}, 10));
  auto before = run_graph(m.g, {x});
  ASSERT_TRUE(before.is_ok()) << before.status().to_string();
  ASSERT_TRUE(*widen_float16(m.g));
  ASSERT_TRUE(verify_graph(m.g).is_ok());
  EXPECT_EQ(m.g.inputs()[0]->dtype, DataType::kFloat16);
  EXPECT_EQ(m.g.outputs()[0]->dtype, DataType::kFloat16);
  EXPECT_EQ(count_op(m.g, OpKind::Cast), 2);  // widen after the input, narrow before the output
  auto after = run_graph(m.g, {x});
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();
  ASSERT_EQ((*after)[0].dtype(), DataType::kFloat16);
  expect_near((*after)[0], (*before)[0], 2e-2, 5e-3);
}

// A ConstantOfShape filling float16 fills float32 after.
TEST(WidenFloat16, ConstantOfShapeValueIsWidened) {
  Graph g;
  Value* shape = g.add_constant("shape", Tensor(DataType::kInt64, {1}));
  shape->constant.data<int64_t>()[0] = 3;
  shape->dtype = DataType::kInt64;
  Value* c = value_of(g, "c", DataType::kFloat16, {3});
  Attributes fill;
  fill.set("value", to_half(Tensor::from_floats({1}, {1.5f})));
  g.add_node(OpKind::ConstantOfShape, "fill", {shape}, {c}, fill);
  Value* x = value_of(g, "x", DataType::kFloat32, {3});
  Value* x16 = value_of(g, "x16", DataType::kFloat16, {3});
  g.add_node(OpKind::Cast, "to16", {x}, {x16}, cast_to(10));
  Value* s = value_of(g, "s", DataType::kFloat16, {3});
  g.add_node(OpKind::Add, "add", {x16, c}, {s});
  Value* y = value_of(g, "y", DataType::kFloat32, {3});
  g.add_node(OpKind::Cast, "to32", {s}, {y}, cast_to(1));
  g.inputs() = {x};
  g.outputs() = {y};
  ASSERT_TRUE(*widen_float16(g));
  ASSERT_TRUE(verify_graph(g).is_ok());
  auto out = run_graph(g, {Tensor::from_floats({3}, {1.f, 2.f, -3.f})});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_near((*out)[0], Tensor::from_floats({3}, {2.5f, 3.5f, -1.5f}), 0, 0);
}

TEST(WidenFloat16, Float32GraphsAndFloat16RequestsAreLeftAlone) {
  Graph g;
  Value* x = typed_value(g, "x", {4});
  Value* y = typed_value(g, "y", {4});
  g.add_node(OpKind::Relu, "relu", {x}, {y});
  g.inputs() = {x};
  g.outputs() = {y};
  EXPECT_FALSE(*widen_float16(g));

  // A node asking for float16 by attribute (not a Cast) keeps the graph as it is.
  Float16Conv m;
  Value* z = value_of(m.g, "z", DataType::kFloat16, {4});
  Attributes dtype;
  dtype.set("dtype", int64_t{10});
  m.g.add_node(OpKind::Identity, "asks", {m.g.add_constant("k", to_half(random_tensor({4}, 3)))},
               {z}, dtype);
  EXPECT_FALSE(*widen_float16(m.g));
  EXPECT_EQ(count_op(m.g, OpKind::Cast), 2);
}

}  // namespace
}  // namespace kiln::test
