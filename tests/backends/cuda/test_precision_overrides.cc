// Per-node precision in CUDA plans (EngineOptions::precision_overrides): one layer of an fp16
// plan computed in fp32, and one of an fp32 plan in fp16, with the conversions around it as
// plan steps. Checked against the reference (activation memory poisoned), and the profile
// names the overridden steps.
#include <gtest/gtest.h>

#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// x [N,8,10,10] → Conv "conv1" + Relu → Conv "conv2" (1x1) + x (fused as its residual) →
// Softmax "softmax" → y: the overridden node sits inside the graph (conv2) or ends it
// (softmax).
ModelBuilder small_net() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, 10, 10});
  b.initializer("w1", {8, 8, 3, 3}, random_tensor({8, 8, 3, 3}, 11, -0.3f, 0.3f).to_floats());
  b.initializer("b1", {8}, random_tensor({8}, 12, -0.3f, 0.3f).to_floats());
  b.initializer("w2", {8, 8, 1, 1}, random_tensor({8, 8, 1, 1}, 13, -0.3f, 0.3f).to_floats());
  add_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads",
           std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  b.node("Add", {"c2", "x"}, {"s"}, "add");
  add_attr(b.node("Softmax", {"s"}, {"y"}, "softmax"), "axis", int64_t{-1});
  b.output("y", kFloat, {"N", 8, 10, 10});
  return b;
}

struct Got {
  Tensor y;
  std::vector<LayerProfile> layers;
};

Got run(const EngineOptions& o, const Tensor& x) {
  Got g;
  auto e = Engine::from_bytes(small_net().bytes(), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return g;
  auto ctx = (*e)->create_context();
  auto out = ctx->run({{"x", x}});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return g;
  g.y = out->at("y");
  if (o.device == Device::kCuda) {
    auto layers = ctx->profile_layers(1);
    EXPECT_TRUE(layers.is_ok()) << layers.status().to_string();
    if (layers.is_ok()) g.layers = *layers;
  }
  return g;
}

TEST(CudaPrecisionOverrides, OneLayerInAnotherPrecision) {
  std::mt19937 gen(9);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> xv(3 * 8 * 10 * 10);
  for (float& v : xv) v = d(gen);
  Tensor x = Tensor::from_floats({3, 8, 10, 10}, xv);
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  Got want = run(ref, x);
  ASSERT_TRUE(want.y.defined());

  struct Case {
    Precision plan;
    std::map<std::string, Precision> overrides;
    double tol;
  };
  const Case cases[] = {
      {Precision::kFp16, {{"conv2", Precision::kFp32}}, 5e-3},
      {Precision::kFp16, {{"softmax", Precision::kFp32}}, 5e-3},
      {Precision::kFp16, {{"conv1", Precision::kFp32}, {"conv2", Precision::kFp32}}, 3e-3},
      {Precision::kFp32, {{"conv2", Precision::kFp16}}, 5e-3},
      {Precision::kBf16, {{"conv2", Precision::kFp32}}, 4e-2},
      {Precision::kFp16, {{"conv2", Precision::kBf16}}, 4e-2},
  };
  for (const Case& c : cases) {
    EngineOptions o;
    o.device = Device::kCuda;
    o.precision = c.plan;
    o.precision_overrides = c.overrides;
    o.time_tactics = false;
    o.poison_memory = true;
    SCOPED_TRACE(std::string(precision_name(c.plan)) + " plan, " + c.overrides.begin()->first +
                 "=" + precision_name(c.overrides.begin()->second));
    Got got = run(o, x);
    ASSERT_TRUE(got.y.defined());
    ASSERT_EQ(got.y.shape(), want.y.shape());
    EXPECT_LE(relative_l2(got.y, want.y), c.tol);
    int overridden = 0, converts = 0;
    for (const LayerProfile& l : got.layers) {
      const bool named = c.overrides.count(l.name) > 0;
      const bool marked = l.tactic.find(", overridden]") != std::string::npos;
      EXPECT_EQ(named, marked) << l.name << ": " << l.tactic;
      overridden += marked;
      converts += l.op == "Convert";
    }
    EXPECT_EQ(overridden, static_cast<int>(c.overrides.size()));
    EXPECT_GT(converts, 0) << "a dtype conversion around the overridden layer";
  }
}

}  // namespace
}  // namespace kiln::test
