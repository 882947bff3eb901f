// fuse_fp8_conv: the DQ of e4m3 codes quantize_int8 puts before a Conv of an fp8 engine is
// folded into the Conv, which then reads the codes (the Q stays), with the same numbers;
// patterns it cannot carry are left as they are.
#include <gtest/gtest.h>

#include "core/half.h"
#include "pass_test_util.h"

namespace kiln::test {
namespace {

// x [2,3,6,5] → Conv(w, b)[+relu] → y1, x → Conv(w2) → y2 (one Q → DQ pair for both).
struct TwoConvs {
  Graph g;
  TwoConvs() {
    Value* x = typed_value(g, "x", {2, 3, 6, 5});
    Value* y1 = typed_value(g, "y1", {2, 4, 4, 3});
    Value* y2 = typed_value(g, "y2", {2, 6, 6, 5});
    Node* c1 = g.add_node(OpKind::Conv, "conv1",
                          {x, g.add_constant("w", random_tensor({4, 3, 3, 3}, 7)),
                           g.add_constant("b", random_tensor({4}, 8))},
                          {y1});
    c1->epilogue.act = Activation::kRelu;
    g.add_node(OpKind::Conv, "conv2", {x, g.add_constant("w2", random_tensor({6, 3, 1, 1}, 9))},
               {y2});
    g.inputs() = {x};
    g.outputs() = {y1, y2};
  }
};

TEST(FuseFp8Conv, ConvsReadTheCodesWithTheSameNumbers) {
  TwoConvs t;
  QuantizationReport report;
  ASSERT_TRUE(*quantize_int8(t.g, {{"x", 1.2}}, &report, nullptr, Precision::kFp8));
  const Tensor x = random_tensor({2, 3, 6, 5}, 3, -2.f, 2.f);
  auto before = run_graph(t.g, {x});
  ASSERT_TRUE(before.is_ok()) << before.status().to_string();
  auto changed = fuse_fp8_conv(t.g, &report);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify_graph(t.g).is_ok());
  EXPECT_EQ(count_op(t.g, OpKind::QuantizeLinear), 1);
  EXPECT_EQ(count_op(t.g, OpKind::DequantizeLinear), 0);  // nothing else read it
  for (const auto& n : t.g.nodes()) {
    if (n->op != OpKind::Conv) continue;
    EXPECT_EQ(n->input(0)->dtype, DataType::kFloat8E4M3) << n->name;
    EXPECT_FLOAT_EQ(n->epilogue.input_scale, 1.2f / 448);
    EXPECT_EQ(n->epilogue.weight_scales.size(), static_cast<size_t>(n->input(1)->constant.dim(0)));
  }
  for (const auto& l : report.layers) EXPECT_EQ(l.runs, "fp8") << l.node;
  auto after = run_graph(t.g, {x});
  ASSERT_TRUE(after.is_ok()) << after.status().to_string();
  for (size_t i = 0; i < 2; ++i) expect_near((*after)[i], (*before)[i], 1e-6, 1e-6);
}

TEST(FuseFp8Conv, LeavesInt8PairsAndOffGridWeightsAlone) {
  TwoConvs a;
  ASSERT_TRUE(*quantize_int8(a.g, {{"x", 1.2}}));  // int8 codes: fuse_int8_conv's, not this
  EXPECT_FALSE(*fuse_fp8_conv(a.g));

  TwoConvs b;
  ASSERT_TRUE(*quantize_int8(b.g, {{"x", 1.2}}, nullptr, nullptr, Precision::kFp8));
  // conv2's weights moved off the e4m3 grid: conv2 keeps reading the DQ.
  for (const auto& n : b.g.nodes())
    if (n->name == "conv2") {
      Tensor w = n->input(1)->constant.clone();
      w.data<float>()[0] *= 1.013f;
      b.g.set_input(n.get(), 1, b.g.add_constant("w2_off", w));
    }
  ASSERT_TRUE(*fuse_fp8_conv(b.g));
  EXPECT_EQ(count_op(b.g, OpKind::DequantizeLinear), 1);
  for (const auto& n : b.g.nodes()) {
    if (n->op == OpKind::Conv) {
      EXPECT_EQ(n->epilogue.int8(), n->name == "conv1") << n->name;
    }
  }
}

}  // namespace
}  // namespace kiln::test
