// The planner's timed choice among the registry's Conv candidates on the GPU (cuDNN's legacy
// path, kiln's depthwise kernel; cuDNN's graph path only where asked for): with timing every
// candidate that accepts a layer is timed on its real shape, the plan shows each one's time and
// marks the one kept, and the result matches the reference; without timing the first candidate
// that prepares runs and nothing is timed.
#include <gtest/gtest.h>

#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

std::vector<float> normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// x [N,32,H,W] → 3×3 Conv 32 + Relu ("conv") → depthwise 3×3 ("dw") → y.
ModelBuilder two_convs() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 32, "H", "W"});
  b.initializer("w", {32, 32, 3, 3}, normal(32 * 32 * 9, 1, 0.08f));
  b.initializer("b", {32}, normal(32, 2, 0.1f));
  b.initializer("dw_w", {32, 1, 3, 3}, normal(32 * 9, 3, 0.3f));
  add_attr(b.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads",
           std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu");
  auto& dw = b.node("Conv", {"r", "dw_w"}, {"y"}, "dw");
  add_attr(dw, "group", int64_t{32});
  add_attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.output("y", kFloat, {"N", 32, "H", "W"});
  return b;
}

const PlanStepInfo* step_of(const PlanInfo& p, const std::string& name) {
  for (const PlanStepInfo& s : p.steps)
    if (s.kind == "kernel" && s.name == name) return &s;
  return nullptr;
}

TEST(ConvCandidates, PlannerTimesEveryCandidateAndKeepsTheFastest) {
  const ModelBuilder b = two_convs();
  const Tensor x = Tensor::from_floats({2, 32, 12, 10}, normal(2 * 32 * 120, 4, 1.f));
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  ASSERT_TRUE(want_engine.is_ok()) << want_engine.status().to_string();
  auto want = (*want_engine)->create_context()->run({{"x", x}});
  ASSERT_TRUE(want.is_ok());

  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.poison_memory = true;
  o.max_tactics = 2;
  auto engine = Engine::from_bytes(b.bytes(), o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  auto got = ctx->run({{"x", x}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_LE(relative_l2(got->at("y"), want->at("y")), 5e-3);
  auto plan = ctx->plan();
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const std::string text = plan->text();

  const PlanStepInfo* conv = step_of(*plan, "conv");
  const PlanStepInfo* dw = step_of(*plan, "dw");
  ASSERT_TRUE(conv && dw) << text;
  // The dense conv: cuDNN's legacy path alone (kiln's depthwise kernel declines it, and the
  // graph path runs only where cudnn_conv_path=graph asks for it), so there is nothing to time.
  EXPECT_LE(conv->timed.size(), 1u) << text;
  EXPECT_EQ(conv->tactic.rfind("cudnn ", 0), 0u) << text;
  EXPECT_EQ(conv->tactic.find("cudnn graph"), std::string::npos) << text;
  // The depthwise conv: kiln's kernel and cuDNN's legacy path, both timed, one kept.
  ASSERT_GE(dw->timed.size(), 2u) << text;
  EXPECT_EQ(dw->timed[0].rfind("kiln-depthwise: ", 0), 0u) << text;
  int chosen = 0;
  std::string chosen_backend;
  for (const std::string& t : dw->timed)
    if (t.find("(chosen)") != std::string::npos) {
      ++chosen;
      chosen_backend = t.substr(0, t.find(':'));
    }
  EXPECT_EQ(chosen, 1) << text;
  // The tactic is the chosen candidate's.
  EXPECT_EQ(dw->tactic.find("kiln depthwise") != std::string::npos,
            chosen_backend == "kiln-depthwise")
      << text;
  EXPECT_NE(text.find("    timed cudnn: "), std::string::npos) << text;

  // Without timing: the first candidate that prepares, nothing timed.
  o.time_tactics = false;
  auto untimed = Engine::from_bytes(b.bytes(), o);
  ASSERT_TRUE(untimed.is_ok()) << untimed.status().to_string();
  auto uctx = (*untimed)->create_context();
  auto ugot = uctx->run({{"x", x}});
  ASSERT_TRUE(ugot.is_ok()) << ugot.status().to_string();
  EXPECT_LE(relative_l2(ugot->at("y"), want->at("y")), 5e-3);
  auto uplan = uctx->plan();
  ASSERT_TRUE(uplan.is_ok());
  const PlanStepInfo* udw = step_of(*uplan, "dw");
  const PlanStepInfo* uconv = step_of(*uplan, "conv");
  ASSERT_TRUE(udw && uconv);
  EXPECT_TRUE(udw->timed.empty() && uconv->timed.empty()) << uplan->text();
  EXPECT_NE(udw->tactic.find("kiln depthwise"), std::string::npos) << uplan->text();
  EXPECT_EQ(uconv->tactic.rfind("cudnn ", 0), 0u) << uplan->text();
}

// A forced cuDNN path: the other path and kiln's depthwise kernel decline, with the reason.
TEST(ConvCandidates, AForcedPathLeavesOneCandidate) {
  const ModelBuilder b = two_convs();
  const Tensor x = Tensor::from_floats({1, 32, 9, 11}, normal(32 * 99, 5, 1.f));
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.max_tactics = 1;
  o.cudnn_conv_path = CudnnConvPath::kLegacy;
  auto engine = Engine::from_bytes(b.bytes(), o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  ASSERT_TRUE(ctx->run({{"x", x}}).is_ok());
  auto plan = ctx->plan();
  ASSERT_TRUE(plan.is_ok());
  const PlanStepInfo* dw = step_of(*plan, "dw");
  ASSERT_TRUE(dw);
  EXPECT_TRUE(dw->timed.empty()) << plan->text();
  ASSERT_FALSE(dw->declined.empty()) << plan->text();
  EXPECT_EQ(dw->declined[0], "kiln-depthwise: cudnn_conv_path=legacy asks for cuDNN")
      << plan->text();
  EXPECT_EQ(dw->tactic.rfind("cudnn ", 0), 0u) << plan->text();
}

}  // namespace
}  // namespace kiln::test
