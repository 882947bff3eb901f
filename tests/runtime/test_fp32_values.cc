// EngineOptions::fp32_values mapped onto the optimized graph (runtime/fp32_values.h): the
// nodes writing and reading a value are kept in fp32, a value fused into a group keeps the
// group, a user's override wins, an unknown value is a note. The CUDA side (an overflowing
// value kept finite in an fp16 plan) is tests/backends/cuda/test_fp32_values.cc.
#include <gtest/gtest.h>

#include "onnx/importer.h"
#include "onnx/onnx_test_util.h"
#include "ops/op_test_util.h"
#include "runtime/fp32_values.h"

namespace kiln::test {
namespace {

// x → Conv "conv1" → c1 → Relu "relu1" → r1 → Conv "conv2" → c2 → Mul "scale" (by 2) → y.
// The optimizer fuses relu1 into conv1 (c1 disappears).
struct Optimized {
  std::unique_ptr<Graph> g;
  ValueUses uses;
  PassReport passes;
};

Optimized optimized() {
  ModelBuilder b(17);
  b.input("x", kFloat, {1, 4, 6, 6});
  b.initializer("w1", {4, 4, 3, 3}, random_tensor({4, 4, 3, 3}, 11, -0.3f, 0.3f).to_floats());
  b.initializer("w2", {4, 4, 1, 1}, random_tensor({4, 4, 1, 1}, 12, -0.3f, 0.3f).to_floats());
  b.initializer("two", {1}, {2.f});
  add_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  b.node("Mul", {"c2", "two"}, {"y"}, "scale");
  b.output("y", kFloat, {1, 4, 6, 6});
  Optimized o;
  auto g = import_onnx_bytes(b.bytes(), ".");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  o.g = std::move(g).value();
  o.uses = value_uses(*o.g);
  EXPECT_TRUE(optimize_graph(*o.g, EngineOptions{}, &o.passes).is_ok());
  return o;
}

struct Kept {
  std::map<std::string, Precision> overrides;
  std::vector<std::string> kept, notes;
};

Kept keep(const Optimized& o, const std::vector<std::string>& values,
          std::map<std::string, Precision> overrides = {}) {
  Kept k;
  k.overrides = std::move(overrides);
  keep_values_in_fp32(*o.g, o.uses, o.passes, values, k.overrides, k.kept, k.notes);
  return k;
}

TEST(Fp32Values, WriterAndReadersOfAValueComputeInFp32) {
  Optimized o = optimized();
  Kept k = keep(o, {"r1"});
  EXPECT_EQ(k.overrides, (std::map<std::string, Precision>{{"conv1", Precision::kFp32},
                                                           {"conv2", Precision::kFp32}}));
  EXPECT_EQ(k.kept, (std::vector<std::string>{"node 'conv1' (Conv) in fp32: writes 'r1'",
                                              "node 'conv2' (Conv) in fp32: reads 'r1'"}));
  EXPECT_TRUE(k.notes.empty());
  // A graph output: its writer only.
  EXPECT_EQ(keep(o, {"y"}).overrides,
            (std::map<std::string, Precision>{{"scale", Precision::kFp32}}));
}

TEST(Fp32Values, AValueFusedAwayKeepsItsGroup) {
  Optimized o = optimized();
  ASSERT_EQ(o.g->find_value("c1"), nullptr);  // conv1 + relu1 write r1 directly
  Kept k = keep(o, {"c1"});
  EXPECT_EQ(k.overrides, (std::map<std::string, Precision>{{"conv1", Precision::kFp32}}));
  EXPECT_EQ(k.kept, (std::vector<std::string>{"node 'conv1' (Conv) in fp32: computes 'c1'"}));
}

TEST(Fp32Values, AGivenOverrideWinsAndUnknownValuesAreNoted) {
  Optimized o = optimized();
  Kept k = keep(o, {"r1", "nope"}, {{"conv2", Precision::kFp16}});
  EXPECT_EQ(k.overrides, (std::map<std::string, Precision>{{"conv1", Precision::kFp32},
                                                           {"conv2", Precision::kFp16}}));
  ASSERT_EQ(k.notes.size(), 1u);
  EXPECT_NE(k.notes[0].find("'nope'"), std::string::npos) << k.notes[0];
}

TEST(Fp32Values, SurvivorsAreFoundThroughChainsOfFusions) {
  Optimized o = optimized();
  EXPECT_EQ(surviving_node(*o.g, o.passes, "conv2"), "conv2");
  EXPECT_EQ(surviving_node(*o.g, o.passes, "relu1"), "conv1");
  EXPECT_EQ(surviving_node(*o.g, o.passes, "gone"), "");
  PassReport chain = o.passes;
  chain.fused_into["mul"] = {"mul_affine", 0};
  chain.fused_into["mul_affine"] = {"relu1", 0};  // and relu1 went into conv1
  EXPECT_EQ(surviving_node(*o.g, chain, "mul"), "conv1");
  chain.fused_into["a"] = {"b", 0};
  chain.fused_into["b"] = {"a", 0};
  EXPECT_EQ(surviving_node(*o.g, chain, "a"), "");  // a cycle ends
}

TEST(Fp32Values, Fp32EnginesIgnoreThem) {
  EngineOptions opts;
  opts.fp32_values = {"r1", "nope"};
  ModelBuilder b(17);
  b.input("x", kFloat, {1, 3});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y", kFloat, {1, 3});
  auto e = Engine::from_bytes(b.bytes(), opts);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_TRUE((*e)->report().fp32_kept.empty());
  EXPECT_TRUE((*e)->options().precision_overrides.empty());
}

}  // namespace
}  // namespace kiln::test
