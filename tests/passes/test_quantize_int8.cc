// quantize_int8: Q/DQ pairs before the quantizable layers, their weights rounded per output
// channel, checked against a quantization written here on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "pass_test_util.h"

namespace kiln::test {
namespace {

// x rounded to the int8 grid of `amax` (scale amax / 127, zero point 0, codes -128..127).
Tensor fake_quant(const Tensor& x, double amax) {
  const float s = static_cast<float>(amax / 127.0);
  std::vector<float> v(x.data<float>(), x.data<float>() + x.numel());
  for (float& f : v) f = std::clamp(std::nearbyint(f / s), -128.f, 127.f) * s;
  return Tensor::from_floats(x.shape(), v);
}

// w rounded per slice of axis `axis` (symmetric, max|w| / 127), as written here.
Tensor fake_quant_channels(const Tensor& w, int axis) {
  const Shape& s = w.shape();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t ch = s[axis];
  std::vector<float> v(w.data<float>(), w.data<float>() + w.numel());
  std::vector<float> amax(ch, 0.f);
  for (size_t k = 0; k < v.size(); ++k)
    amax[(k / inner) % ch] = std::max(amax[(k / inner) % ch], std::fabs(v[k]));
  for (size_t k = 0; k < v.size(); ++k) {
    const float sc = amax[(k / inner) % ch] / 127.f;
    v[k] = std::nearbyint(v[k] / sc) * sc;
  }
  return Tensor::from_floats(s, v);
}

// x [2,3,6,5] → Conv(w [4,3,3,3], bias) → y.
struct ConvGraph {
  Graph g;
  Tensor w = random_tensor({4, 3, 3, 3}, 7);
  Tensor bias = random_tensor({4}, 8);
  ConvGraph() {
    Value* x = typed_value(g, "x", {2, 3, 6, 5});
    Value* y = typed_value(g, "y", {2, 4, 4, 3});
    g.add_node(OpKind::Conv, "conv", {x, g.add_constant("w", w), g.add_constant("b", bias)}, {y});
    g.inputs() = {x};
    g.outputs() = {y};
  }
};

TEST(QuantizeInt8, ConvComputesOnTheInt8Grid) {
  ConvGraph c;
  const Tensor x = random_tensor({2, 3, 6, 5}, 9, -2.f, 2.f);
  auto before = run_graph(c.g, {x});
  ASSERT_TRUE(before.is_ok());
  EXPECT_EQ(int8_calibration_values(c.g), std::vector<std::string>{"x"});
  QuantizationReport report;
  auto changed = quantize_int8(c.g, {{"x", 1.5}}, &report);  // clips |x| > 1.5
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify_graph(c.g).is_ok());
  EXPECT_EQ(count_op(c.g, OpKind::QuantizeLinear), 1);
  EXPECT_EQ(count_op(c.g, OpKind::DequantizeLinear), 1);
  ASSERT_EQ(report.layers.size(), 1u);
  EXPECT_EQ(report.layers[0].node, "conv");
  EXPECT_EQ(report.layers[0].input, "x");
  EXPECT_EQ(report.layers[0].amax, 1.5);
  EXPECT_TRUE(report.float_layers.empty());
  auto after = run_graph(c.g, {x});
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();

  // The same conv on inputs and weights quantized here.
  ConvGraph want;
  for (const auto& v : want.g.values())
    if (v->name == "w") v->constant = fake_quant_channels(c.w, 0);
  auto expected = run_graph(want.g, {fake_quant(x, 1.5)});
  ASSERT_TRUE(expected.is_ok());
  expect_near((*after)[0], (*expected)[0], 1e-5, 1e-5);
  // ... which is not the float answer: the rounding happened.
  double diff = 0;
  for (int64_t k = 0; k < (*after)[0].numel(); ++k)
    diff = std::max<double>(
        diff, std::fabs((*after)[0].data<float>()[k] - (*before)[0].data<float>()[k]));
  EXPECT_GT(diff, 1e-3);
}

// The nearest e4m3 value of v / s (by search over the grid written here, ties to even codes,
// saturating at 448), times s.
float e4m3_rounded(float v, float s) {
  static const std::vector<float> grid = [] {
    std::vector<float> g;
    for (int e = 0; e < 16; ++e)
      for (int m = 0; m < 8; ++m) {
        if (e == 15 && m == 7) continue;
        g.push_back(e == 0 ? std::ldexp(static_cast<float>(m), -9)
                           : std::ldexp(static_cast<float>(8 + m), e - 10));
      }
    return g;
  }();
  const float a = std::fabs(v / s);
  size_t best = 0;
  for (size_t k = 1; k < grid.size(); ++k) {
    const float d = std::fabs(grid[k] - a), e = std::fabs(grid[best] - a);
    if (d < e || (d == e && k % 2 == 0)) best = k;
  }
  return std::copysign(grid[best], v) * s;
}

TEST(QuantizeInt8, Fp8ConvComputesOnTheE4m3Grid) {
  ConvGraph c;
  const Tensor x = random_tensor({2, 3, 6, 5}, 9, -2.f, 2.f);
  QuantizationReport report;
  auto changed = quantize_int8(c.g, {{"x", 1.5}}, &report, nullptr, Precision::kFp8);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  ASSERT_TRUE(verify_graph(c.g).is_ok());
  int fp8_codes = 0;
  for (const auto& v : c.g.values()) fp8_codes += v->dtype == DataType::kFloat8E4M3;
  EXPECT_EQ(fp8_codes, 2);  // the Q's output and its zero point (a constant of that dtype)
  ASSERT_EQ(report.layers.size(), 1u);
  EXPECT_EQ(report.layers[0].runs, "fp8 simulated");
  auto after = run_graph(c.g, {x});
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();

  // Inputs on the e4m3 grid of scale 1.5 / 448 (saturating: |x| > 1.5 becomes 1.5), weights
  // per output channel on the grid of max|w_c| / 448.
  std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
  for (float& v : xv) v = e4m3_rounded(v, 1.5f / 448);
  const int64_t inner = 27;
  std::vector<float> wv(c.w.data<float>(), c.w.data<float>() + c.w.numel());
  for (int64_t k = 0; k < 4; ++k) {
    float m = 0;
    for (int64_t i = 0; i < inner; ++i) m = std::max(m, std::fabs(wv[k * inner + i]));
    for (int64_t i = 0; i < inner; ++i)
      wv[k * inner + i] = e4m3_rounded(wv[k * inner + i], m / 448);
  }
  ConvGraph want;
  for (const auto& v : want.g.values())
    if (v->name == "w") v->constant = Tensor::from_floats(c.w.shape(), wv);
  auto expected = run_graph(want.g, {Tensor::from_floats(x.shape(), xv)});
  ASSERT_TRUE(expected.is_ok());
  expect_near((*after)[0], (*expected)[0], 1e-5, 1e-5);
}

TEST(QuantizeInt8, GemmWeightsPerOutputColumn) {
  for (int64_t trans_b : {0, 1}) {
    SCOPED_TRACE("transB " + std::to_string(trans_b));
    Graph g;
    Value* x = typed_value(g, "x", {3, 6});
    Value* y = typed_value(g, "y", {3, 5});
    Attributes a;
    a.set("transB", trans_b);
    const Tensor w = random_tensor(trans_b ? Shape{5, 6} : Shape{6, 5}, 3);
    g.add_node(OpKind::Gemm, "fc", {x, g.add_constant("w", w)}, {y}, a);
    g.inputs() = {x};
    g.outputs() = {y};
    ASSERT_TRUE(quantize_int8(g, {{"x", 1.0}}).is_ok());
    const Value* rounded = nullptr;
    for (const auto& n : g.nodes())
      if (n->op == OpKind::Gemm) rounded = n->input(1);
    ASSERT_TRUE(rounded && rounded->is_constant());
    expect_near(rounded->constant, fake_quant_channels(w, trans_b ? 0 : 1), 0, 0);
  }
}

// A value that is never negative (a Relu's output, a max pool of one, a conv whose epilogue
// ends in Relu) gets uint8 codes over [0, amax]: scale amax / 255; any other int8 over ±amax.
TEST(QuantizeInt8, ValuesNeverNegativeGetUint8Codes) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 3, 8, 8});
  Value* r = typed_value(g, "r", {1, 3, 8, 8});
  Value* p = typed_value(g, "p", {1, 3, 4, 4});
  Value* c = typed_value(g, "c", {1, 4, 4, 4});
  Value* y = typed_value(g, "y", {1, 2, 4, 4});
  Value* z = typed_value(g, "z", {1, 2, 8, 8});
  g.add_node(OpKind::Relu, "relu", {x}, {r});
  Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  g.add_node(OpKind::MaxPool, "pool", {r}, {p}, pool);
  Node* conv = g.add_node(OpKind::Conv, "conv",
                          {p, g.add_constant("w1", random_tensor({4, 3, 1, 1}, 1))}, {c});
  conv->epilogue.act = Activation::kRelu;
  g.add_node(OpKind::Conv, "next", {c, g.add_constant("w2", random_tensor({2, 4, 1, 1}, 2))}, {y});
  g.add_node(OpKind::Conv, "signed", {x, g.add_constant("w3", random_tensor({2, 3, 1, 1}, 3))},
             {z});
  g.inputs() = {x};
  g.outputs() = {y, z};
  ASSERT_TRUE(quantize_int8(g, {{"p", 2.0}, {"c", 3.0}, {"x", 1.0}}).is_ok());
  ASSERT_TRUE(verify_graph(g).is_ok());
  std::map<std::string, std::pair<DataType, float>> codes;  // per quantized value
  for (const auto& n : g.nodes())
    if (n->op == OpKind::QuantizeLinear)
      codes[n->input(0)->name] = {n->output(0)->dtype, *n->input(1)->constant.data<float>()};
  ASSERT_EQ(codes.size(), 3u);
  EXPECT_EQ(codes["p"].first, DataType::kUInt8);
  EXPECT_FLOAT_EQ(codes["p"].second, 2.f / 255);
  EXPECT_EQ(codes["c"].first, DataType::kUInt8);
  EXPECT_FLOAT_EQ(codes["c"].second, 3.f / 255);
  EXPECT_EQ(codes["x"].first, DataType::kInt8);
  EXPECT_FLOAT_EQ(codes["x"].second, 1.f / 127);
}

TEST(QuantizeInt8, OnePairPerValueSharedByItsReaders) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 3, 4, 4});
  Value* a = typed_value(g, "a", {1, 2, 4, 4});
  Value* b = typed_value(g, "b", {1, 2, 4, 4});
  g.add_node(OpKind::Conv, "left", {x, g.add_constant("w1", random_tensor({2, 3, 1, 1}, 1))}, {a});
  g.add_node(OpKind::Conv, "right", {x, g.add_constant("w2", random_tensor({2, 3, 1, 1}, 2))}, {b});
  g.inputs() = {x};
  g.outputs() = {a, b};
  QuantizationReport report;
  ASSERT_TRUE(quantize_int8(g, {{"x", 1.0}}, &report).is_ok());
  EXPECT_EQ(count_op(g, OpKind::QuantizeLinear), 1);
  EXPECT_EQ(report.layers.size(), 2u);
  ASSERT_TRUE(verify_graph(g).is_ok());
}

TEST(QuantizeInt8, LayersWithoutAScaleStayInFloatAndSayWhy) {
  ConvGraph c;
  QuantizationReport report;
  auto changed = quantize_int8(c.g, {{"other", 1.0}}, &report);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(count_op(c.g, OpKind::QuantizeLinear), 0);
  ASSERT_EQ(report.float_layers.size(), 1u);
  EXPECT_NE(report.float_layers[0].find("no scale for its input 'x'"), std::string::npos)
      << report.float_layers[0];
  // An input that was all zeros in calibration has no scale either.
  ConvGraph zero;
  QuantizationReport r2;
  ASSERT_TRUE(quantize_int8(zero.g, {{"x", 0.0}}, &r2).is_ok());
  ASSERT_EQ(r2.float_layers.size(), 1u);
  EXPECT_NE(r2.float_layers[0].find("all zeros"), std::string::npos) << r2.float_layers[0];
}

// A layer a precision override names (kept at a higher precision by hand or by measured
// error) stays in float; its neighbour sharing the input is still quantized.
TEST(QuantizeInt8, LayersAnOverrideKeepsStayInFloat) {
  Graph g;
  Value* x = typed_value(g, "x", {1, 3, 4, 4});
  Value* a = typed_value(g, "a", {1, 2, 4, 4});
  Value* b = typed_value(g, "b", {1, 2, 4, 4});
  g.add_node(OpKind::Conv, "left", {x, g.add_constant("w1", random_tensor({2, 3, 1, 1}, 1))}, {a});
  Node* right = g.add_node(OpKind::Conv, "right",
                           {x, g.add_constant("w2", random_tensor({2, 3, 1, 1}, 2))}, {b});
  g.inputs() = {x};
  g.outputs() = {a, b};
  QuantizationReport report;
  const PrecisionMap keep{{"right", Precision::kFp16}};
  ASSERT_TRUE(quantize_int8(g, {{"x", 1.0}}, &report, &keep).is_ok());
  ASSERT_EQ(report.layers.size(), 1u);
  EXPECT_EQ(report.layers[0].node, "left");
  ASSERT_EQ(report.float_layers.size(), 1u);
  EXPECT_NE(report.float_layers[0].find("kept in fp16 by a precision override"), std::string::npos)
      << report.float_layers[0];
  EXPECT_EQ(right->input(0), x);
}

TEST(QuantizeInt8, WeightsComputedInTheGraphStayInFloat) {
  Graph g;
  Value* x = typed_value(g, "x", {3, 6});
  Value* w = typed_value(g, "w", {6, 5});
  Value* y = typed_value(g, "y", {3, 5});
  g.add_node(OpKind::MatMul, "mm", {x, w}, {y});
  g.inputs() = {x, w};
  g.outputs() = {y};
  EXPECT_TRUE(int8_calibration_values(g).empty());
  QuantizationReport report;
  ASSERT_TRUE(quantize_int8(g, {{"x", 1.0}}, &report).is_ok());
  ASSERT_EQ(report.float_layers.size(), 1u);
  EXPECT_NE(report.float_layers[0].find("not a float32 constant"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
