// The fp16 range guard (kiln/fp16_range.h) and Context::value_stats on small graphs built to
// overflow and underflow float16, and one that stays inside its range.
#include <gtest/gtest.h>

#include <random>

#include "kiln/fp16_range.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

Tensor normal_input(const Shape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(shape_numel(s));
  for (float& x : v) x = d(gen);
  return Tensor::from_floats(s, v);
}

// x [N,16] → Mul a → Mul b → Mul c → Relu → y, the three factors given.
std::shared_ptr<Engine> scaling_model(float a, float b, float c) {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", 16});
  m.initializer("a", {}, {a});
  m.initializer("b", {}, {b});
  m.initializer("c", {}, {c});
  m.node("Mul", {"x", "a"}, {"xa"}, "first");
  m.node("Mul", {"xa", "b"}, {"xab"}, "second");
  m.node("Mul", {"xab", "c"}, {"xabc"}, "third");
  m.node("Relu", {"xabc"}, {"y"}, "relu");
  m.output("y", kFloat, {"N", 16});
  auto e = Engine::from_bytes(m.bytes(), {});
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? *e : nullptr;
}

std::vector<std::map<std::string, Tensor>> samples() {
  return {{{"x", normal_input({2, 16}, 1)}}, {{"x", normal_input({3, 16}, 2)}}};
}

TEST(ValueStats, CountsEveryNodeOutput) {
  auto e = scaling_model(2.f, 1e-6f, 0.f);
  ASSERT_TRUE(e);
  Tensor x = Tensor::from_floats({1, 16}, {1, -2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  auto stats = e->create_context()->value_stats({{"x", x}});
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  ASSERT_EQ(stats->size(), 4u);
  EXPECT_EQ((*stats)[0].node, "first");
  EXPECT_EQ((*stats)[0].op, "Mul");
  EXPECT_EQ((*stats)[0].count, 16);
  EXPECT_EQ((*stats)[0].nonzero, 15);
  EXPECT_DOUBLE_EQ((*stats)[0].max_abs, 30.0);
  EXPECT_EQ((*stats)[0].below_fp16_normal, 0);
  // second: 2e-6·x, every non-zero below 6.1e-5 (|2e-6·15| = 3e-5).
  EXPECT_EQ((*stats)[1].value, "xab");
  EXPECT_EQ((*stats)[1].below_fp16_normal, 15);
  EXPECT_EQ((*stats)[2].nonzero, 0);  // times 0
}

TEST(Fp16Range, NamesTheNodeThatOverflows) {
  // first: x·300 (up to ~1e3), second: ·300 (up to ~3e5 > 65504), third: ·1e-3 back in range.
  auto e = scaling_model(300.f, 300.f, 1e-3f);
  ASSERT_TRUE(e);
  auto r = check_fp16_range(*e, samples());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->samples, 2);
  EXPECT_EQ(r->values_checked, 4);
  ASSERT_EQ(r->findings.size(), 1u);
  const Fp16RangeFinding& f = r->findings[0];
  EXPECT_EQ(f.kind, Fp16RangeFinding::Kind::kOverflow);
  EXPECT_EQ(f.node, "second");
  EXPECT_EQ(f.value, "xab");
  EXPECT_GT(f.max_abs, 65504);
  const std::string line = describe(f);
  EXPECT_NE(line.find("node 'second' (Mul): output 'xab' reaches"), std::string::npos) << line;
  EXPECT_NE(line.find("beyond fp16's 65504"), std::string::npos) << line;
}

TEST(Fp16Range, NamesTheNodeThatUnderflows) {
  auto e = scaling_model(1.f, 1e-7f, 1e7f);
  ASSERT_TRUE(e);
  auto r = check_fp16_range(*e, samples());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].kind, Fp16RangeFinding::Kind::kUnderflow);
  EXPECT_EQ(r->findings[0].node, "second");
  EXPECT_GT(r->findings[0].below_normal_fraction, 0.99);
  EXPECT_NE(describe(r->findings[0]).find("below fp16's smallest normal"), std::string::npos);
}

TEST(Fp16Range, QuietInsideTheRange) {
  auto e = scaling_model(3.f, 0.5f, 20.f);
  ASSERT_TRUE(e);
  auto r = check_fp16_range(*e, samples());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->findings.empty()) << describe(r->findings[0]);
}

TEST(Fp16Range, RefusesWhatItCannotCheck) {
  auto e = scaling_model(1.f, 1.f, 1.f);
  ASSERT_TRUE(e);
  EXPECT_FALSE(check_fp16_range(*e, {}).is_ok());
  auto bad = check_fp16_range(*e, {{{"x", normal_input({2, 7}, 3)}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("sample 1"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace kiln::test
