// fuse_int8_conv: the Q → DQ pair quantize_int8 puts before a Conv (Gemm, MatMul) becomes its int8
// operands (Epilogue::input_scale, weight_scales), with the same numbers; patterns it cannot
// carry are left as they are.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"

namespace kiln::test {
namespace {

// x [2,3,6,5] → Relu → r; r → Conv(w, b) → y1 and r → Conv(w2) [+ relu] → y2: two convs share
// one input, so quantize_int8 gives them one Q → DQ pair.
struct TwoConvs {
  Graph g;
  TwoConvs() {
    Value* x = typed_value(g, "x", {2, 3, 6, 5});
    Value* r = typed_value(g, "r", {2, 3, 6, 5});
    Value* y1 = typed_value(g, "y1", {2, 4, 4, 3});
    Value* y2 = typed_value(g, "y2", {2, 6, 6, 5});
    g.add_node(OpKind::Relu, "relu", {x}, {r});
    g.add_node(OpKind::Conv, "conv1",
               {r, g.add_constant("w", random_tensor({4, 3, 3, 3}, 7)),
                g.add_constant("b", random_tensor({4}, 8))},
               {y1});
    Node* c2 = g.add_node(OpKind::Conv, "conv2",
                          {r, g.add_constant("w2", random_tensor({6, 3, 1, 1}, 9))}, {y2});
    c2->epilogue.act = Activation::kRelu;
    g.inputs() = {x};
    g.outputs() = {y1, y2};
  }
};

TEST(FuseInt8Conv, FoldsThePairIntoBothConvsWithTheSameNumbers) {
  TwoConvs t;
  QuantizationReport report;
  auto q = quantize_int8(t.g, {{"r", 0.8}}, &report);  // clips r > 0.8
  ASSERT_TRUE(q.is_ok() && *q);
  const Tensor x = random_tensor({2, 3, 6, 5}, 3);
  auto simulated = run_graph(t.g, {x});
  ASSERT_TRUE(simulated.is_ok()) << simulated.status().to_string();

  auto changed = fuse_int8_conv(t.g, &report);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify_graph(t.g).is_ok());
  EXPECT_EQ(count_op(t.g, OpKind::QuantizeLinear), 0);
  EXPECT_EQ(count_op(t.g, OpKind::DequantizeLinear), 0);
  for (const auto& n : t.g.nodes()) {
    if (n->op != OpKind::Conv) continue;
    SCOPED_TRACE(n->name);
    EXPECT_EQ(n->input(0)->name, "r");
    // r is a Relu's output: uint8 codes over [0, 0.8].
    EXPECT_FLOAT_EQ(n->epilogue.input_scale, 0.8f / 255);
    EXPECT_TRUE(n->epilogue.input_uint8);
    EXPECT_EQ(n->epilogue.input_zero_point, 0);
    EXPECT_EQ(n->epilogue.weight_scales.size(), static_cast<size_t>(n->input(1)->constant.dim(0)));
    EXPECT_NE(n->epilogue.describe().find("int8"), std::string::npos) << n->epilogue.describe();
  }
  ASSERT_EQ(report.layers.size(), 2u);
  for (const auto& l : report.layers) EXPECT_EQ(l.runs, "int8");

  // The reference runs the int8 operands as the pair did.
  auto fused = run_graph(t.g, {x});
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  for (size_t i = 0; i < 2; ++i) expect_near((*fused)[i], (*simulated)[i], 1e-6, 1e-6);
}

// A classifier's Gemm (B [N, K], transB) and a Linear layer's MatMul (B [K, N]): their weights
// grids per output channel (B's rows, B's columns), the same numbers as the pairs.
TEST(FuseInt8Conv, FoldsThePairIntoGemmAndMatMul) {
  Graph g;
  Value* x = typed_value(g, "x", {3, 16});
  Value* y1 = typed_value(g, "y1", {3, 5});
  Value* y2 = typed_value(g, "y2", {3, 7});
  Node* gemm = g.add_node(OpKind::Gemm, "fc",
                          {x, g.add_constant("w", random_tensor({5, 16}, 17)),
                           g.add_constant("b", random_tensor({5}, 18))},
                          {y1});
  gemm->attrs.set("transB", int64_t{1});
  g.add_node(OpKind::MatMul, "linear", {x, g.add_constant("w2", random_tensor({16, 7}, 19))}, {y2});
  g.inputs() = {x};
  g.outputs() = {y1, y2};
  QuantizationReport report;
  auto q = quantize_int8(g, {{"x", 0.9}}, &report);
  ASSERT_TRUE(q.is_ok() && *q);
  const Tensor in = random_tensor({3, 16}, 4);
  auto simulated = run_graph(g, {in});
  ASSERT_TRUE(simulated.is_ok()) << simulated.status().to_string();
  auto changed = fuse_int8_conv(g, &report);
  ASSERT_TRUE(changed.is_ok() && *changed) << changed.status().to_string();
  ASSERT_TRUE(verify_graph(g).is_ok());
  EXPECT_EQ(count_op(g, OpKind::QuantizeLinear), 0);
  for (const auto& n : g.nodes()) {
    if (n->op != OpKind::Gemm && n->op != OpKind::MatMul) continue;
    SCOPED_TRACE(n->name);
    EXPECT_EQ(n->input(0)->name, "x");
    EXPECT_FLOAT_EQ(n->epilogue.input_scale, 0.9f / 127);
    EXPECT_EQ(n->epilogue.weight_scales.size(), n->op == OpKind::Gemm ? 5u : 7u);
  }
  for (const auto& l : report.layers) EXPECT_EQ(l.runs, "int8");
  auto fused = run_graph(g, {in});
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  for (size_t i = 0; i < 2; ++i) expect_near((*fused)[i], (*simulated)[i], 1e-6, 1e-6);
}

// ONNX Runtime's default activations: uint8 codes with a zero point, folded with the same
// numbers (padding included: it stands for x = 0).
TEST(FuseInt8Conv, FoldsAUint8PairWithAZeroPoint) {
  Graph g;
  Value* x = typed_value(g, "x", {2, 3, 6, 5});
  Value* codes = g.add_value("codes");
  codes->dtype = DataType::kUInt8;
  Value* back = typed_value(g, "back", {2, 3, 6, 5});
  Value* y = typed_value(g, "y", {2, 4, 6, 5});
  Value* scale = g.add_constant("s", Tensor::from_floats({}, {1.5f / 255}));
  Tensor zp(DataType::kUInt8, {});
  *zp.data<uint8_t>() = 100;
  Value* zero = g.add_constant("zp", std::move(zp));
  Tensor w = random_tensor({4, 3, 3, 3}, 11);
  for (int64_t m = 0; m < 4; ++m) {  // onto the per-channel grid max|w| / 127
    float* p = w.data<float>() + m * 27;
    float amax = 0;
    for (int i = 0; i < 27; ++i) amax = std::max(amax, std::fabs(p[i]));
    for (int i = 0; i < 27; ++i) p[i] = std::nearbyint(p[i] / (amax / 127)) * (amax / 127);
  }
  g.add_node(OpKind::QuantizeLinear, "q", {x, scale, zero}, {codes});
  g.add_node(OpKind::DequantizeLinear, "dq", {codes, scale, zero}, {back});
  Node* conv = g.add_node(OpKind::Conv, "conv", {back, g.add_constant("w", std::move(w))}, {y});
  conv->attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g.inputs() = {x};
  g.outputs() = {y};
  const Tensor input = random_tensor({2, 3, 6, 5}, 12);
  auto pair = run_graph(g, {input});
  ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
  auto changed = fuse_int8_conv(g);
  ASSERT_TRUE(changed.is_ok() && *changed);
  EXPECT_EQ(conv->epilogue.input_zero_point, 100);
  EXPECT_TRUE(conv->epilogue.input_uint8);
  EXPECT_NE(conv->epilogue.describe().find("uint8"), std::string::npos);
  auto fused = run_graph(g, {input});
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  expect_near((*fused)[0], (*pair)[0], 1e-6, 1e-6);
}

TEST(FuseInt8Conv, LeavesWhatItCannotCarry) {
  // A pair whose Q and DQ zero points differ (two grids), then a conv whose weights are off
  // the grid.
  Graph g;
  Value* x = typed_value(g, "x", {1, 3, 5, 5});
  Value* codes = g.add_value("codes");
  codes->dtype = DataType::kInt8;
  Value* back = typed_value(g, "back", {1, 3, 5, 5});
  Value* y = typed_value(g, "y", {1, 2, 5, 5});
  Value* scale = g.add_constant("s", Tensor::from_floats({}, {0.01f}));
  Tensor zp(DataType::kInt8, {});
  *zp.data<int8_t>() = 3;
  Value* zero = g.add_constant("zp", std::move(zp));
  Tensor zp0(DataType::kInt8, {});
  *zp0.data<int8_t>() = 0;
  Value* zero0 = g.add_constant("zp0", std::move(zp0));
  g.add_node(OpKind::QuantizeLinear, "q", {x, scale, zero}, {codes});
  g.add_node(OpKind::DequantizeLinear, "dq", {codes, scale, zero0}, {back});
  g.add_node(OpKind::Conv, "conv", {back, g.add_constant("w", random_tensor({2, 3, 1, 1}, 4))},
             {y});
  g.inputs() = {x};
  g.outputs() = {y};
  auto changed = fuse_int8_conv(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);

  // Both zero points 0 now, but the weights are random floats, off any int8 grid.
  for (const auto& v : g.values())
    if (v->name == "zp") *v->constant.data<int8_t>() = 0;
  changed = fuse_int8_conv(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(count_op(g, OpKind::DequantizeLinear), 1);
}

}  // namespace
}  // namespace kiln::test
