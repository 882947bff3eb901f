// A CUDA engine on graphs whose shapes follow their data, planned in segments: scores computed
// on the GPU feed a NonMaxSuppression (at its bound, its extent read back), whose selection the
// GPU reads again (the rest planned per count), and a TopK whose k the graph computes (k read
// back). Each run on one Context matches the reference engine, in fp32 and fp16, with memory
// poisoned; the plans built are counted, the plan's text says what it reads back, and every
// kernel runs on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

constexpr int64_t kBoxes = 40;

// logits [1,1,N] → Sigmoid → scores; NonMaxSuppression(boxes [1,N,4], scores, 20, 0.5, 0.5)
// → selected [n,3] (an output) → Cast float → Mul 2 → doubled [n,3]; kin [1] → ReduceMax →
// Cast int64 → k; TopK(scores, k, axis 2) → top [1,1,k], top_i.
ModelBuilder detection_tail() {
  ModelBuilder b(13);
  b.input("boxes", kFloat, {1, kBoxes, 4});
  b.input("logits", kFloat, {1, 1, kBoxes});
  b.input("kin", kFloat, {1});
  b.initializer_ints("max_out", {1}, {20});
  b.initializer("iou", {1}, {0.5f});
  b.initializer("thr", {1}, {0.5f});
  b.initializer("two", {}, {2.f});
  b.node("Sigmoid", {"logits"}, {"scores"}, "sigmoid");
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou", "thr"}, {"selected"}, "nms");
  add_attr(b.node("Cast", {"selected"}, {"self"}, "to_float"), "to", int64_t{kFloat});
  b.node("Mul", {"self", "two"}, {"doubled"}, "double");
  add_attr(b.node("ReduceMax", {"kin"}, {"kmax"}, "kmax"), "keepdims", int64_t{1});
  add_attr(b.node("Cast", {"kmax"}, {"k"}, "to_int"), "to", int64_t{kInt64});
  add_attr(b.node("TopK", {"scores", "k"}, {"top", "top_i"}, "topk"), "axis", int64_t{2});
  b.output_any("selected", kInt64, 2);
  b.output_any("doubled", kFloat, 2);
  b.output_any("top", kFloat, 3);
  b.output_any("top_i", kInt64, 3);
  return b;
}

// Boxes on an integer grid (exact in fp16), logits far from 0 (scores far from the threshold),
// `high` of them above it.
std::map<std::string, Tensor> inputs_of(int high, float k, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pos(0, 24), size(2, 8);
  std::vector<float> boxes(kBoxes * 4), logits(kBoxes);
  for (int64_t i = 0; i < kBoxes; ++i) {
    const float y = pos(gen), x = pos(gen);
    boxes[4 * i] = y, boxes[4 * i + 1] = x;
    boxes[4 * i + 2] = y + size(gen), boxes[4 * i + 3] = x + size(gen);
    logits[i] = (i < high ? 1.f : -1.f) * (1.f + static_cast<float>(i % 7) * 0.37f);
  }
  std::shuffle(logits.begin(), logits.end(), gen);
  return {{"boxes", Tensor::from_floats({1, kBoxes, 4}, boxes)},
          {"logits", Tensor::from_floats({1, 1, kBoxes}, logits)},
          {"kin", Tensor::from_floats({1}, {k})}};
}

TEST(CudaSegmentedPlans, DetectionTailMatchesTheReference) {
  const ModelBuilder b = detection_tail();
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  ASSERT_TRUE(want_engine.is_ok()) << want_engine.status().to_string();
  auto want_ctx = (*want_engine)->create_context();
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    EngineOptions o;
    o.device = Device::kCuda;
    o.precision = *parse_precision(precision);
    o.time_tactics = false;
    o.poison_memory = true;
    auto engine = Engine::from_bytes(b.bytes(), o);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto ctx = (*engine)->create_context();
    const std::pair<int, float> runs[] = {{1, 3.f}, {12, 3.f}, {40, 7.f}, {12, 40.f}, {0, 1.f}};
    for (const auto& [high, k] : runs) {
      SCOPED_TRACE("high " + std::to_string(high) + " k " + std::to_string(k));
      const auto in = inputs_of(high, k, 3 + high);
      auto want = want_ctx->run(in);
      auto got = ctx->run(in);
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      for (const char* name : {"selected", "top_i"}) {
        ASSERT_EQ(got->at(name).shape(), want->at(name).shape()) << name;
        EXPECT_EQ(got->at(name).to_int64s(), want->at(name).to_int64s()) << name;
      }
      for (const char* name : {"doubled", "top"}) {
        ASSERT_EQ(got->at(name).shape(), want->at(name).shape()) << name;
        EXPECT_LE(relative_l2(got->at(name), want->at(name)), 2e-3) << name;
      }
    }
    // The first segment, then the rest per count read and per k (the two read-backs in
    // either order): at least three segments, at most one per run after the first.
    const ContextStats stats = ctx->stats();
    EXPECT_GE(stats.plan_builds, 3);
    EXPECT_LE(stats.plan_builds, 1 + 2 * 5);
    auto info = ctx->plan();
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    EXPECT_NE(info->text().find("read back NonMaxSuppression 'nms' extent"), std::string::npos)
        << info->text();
    EXPECT_NE(info->text().find("read back value 'k'"), std::string::npos) << info->text();
    // Every kernel on the GPU: only the extent and k come back to the host.
    for (const PlanStepInfo& s : info->steps)
      if (s.kind == "kernel") EXPECT_EQ(s.device, "cuda") << s.op << " " << s.name;
  }
}

// logits → Sigmoid → NonMaxSuppression (at most 60 per class, score threshold 0.5) → selected,
// an output: runs selecting 1, 5 and 50 boxes on one Context build no plan after the first
// run (the rest is planned once, at the bound), and match the reference.
TEST(CudaSegmentedPlans, NmsOfAnyCountBuildsNoPlanAfterTheFirstRun) {
  ModelBuilder b(13);
  b.input("boxes", kFloat, {1, kBoxes * 2, 4});
  b.input("logits", kFloat, {1, 1, kBoxes * 2});
  b.initializer_ints("max_out", {1}, {60});
  b.initializer("iou", {1}, {0.5f});
  b.initializer("thr", {1}, {0.5f});
  b.node("Sigmoid", {"logits"}, {"scores"}, "sigmoid");
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou", "thr"}, {"selected"}, "nms");
  b.output_any("selected", kInt64, 2);
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.time_tactics = false;
  o.poison_memory = true;
  auto engine = Engine::from_bytes(b.bytes(), o);
  ASSERT_TRUE(want_engine.is_ok() && engine.is_ok()) << engine.status().to_string();
  auto want_ctx = (*want_engine)->create_context();
  auto ctx = (*engine)->create_context();
  int64_t builds_after_first = -1;
  for (int64_t count : {1, 5, 50}) {
    SCOPED_TRACE(std::to_string(count) + " detections");
    // Disjoint boxes on a grid, `count` of them scored above the threshold.
    std::vector<float> boxes, logits;
    for (int64_t i = 0; i < kBoxes * 2; ++i) {
      const float y = static_cast<float>(i / 10) * 4, x = static_cast<float>(i % 10) * 4;
      boxes.insert(boxes.end(), {y, x, y + 3, x + 3});
      logits.push_back(i < count ? 1.f + static_cast<float>(i % 5) * 0.5f : -2.f);
    }
    std::map<std::string, Tensor> in = {
        {"boxes", Tensor::from_floats({1, kBoxes * 2, 4}, boxes)},
        {"logits", Tensor::from_floats({1, 1, kBoxes * 2}, logits)}};
    auto want = want_ctx->run(in);
    auto got = ctx->run(in);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got->at("selected").shape(), (Shape{count, 3}));
    EXPECT_EQ(got->at("selected").to_int64s(), want->at("selected").to_int64s());
    if (builds_after_first < 0) builds_after_first = ctx->stats().plan_builds;
  }
  EXPECT_EQ(ctx->stats().plan_builds, builds_after_first);
  EXPECT_EQ(ctx->stats().plan_runs, 2);
}

// NonMaxSuppression whose thresholds are graph inputs (as ONNX's node tests give them): not
// known at build, so the kernel, which reads them on the host, declines; the plan reads them
// back first and plans the rest with them known (per value), every kernel on the GPU.
TEST(CudaSegmentedPlans, NmsThresholdsGivenAsInputsAreReadBack) {
  ModelBuilder b(13);
  b.input("boxes", kFloat, {1, kBoxes, 4});
  b.input("scores", kFloat, {1, 1, kBoxes});
  b.input("iou", kFloat, {1});
  b.input("thr", kFloat, {1});
  b.initializer_ints("max_out", {1}, {20});
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou", "thr"}, {"selected"}, "nms");
  b.output_any("selected", kInt64, 2);
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  EngineOptions o;
  o.device = Device::kCuda;
  o.time_tactics = false;
  o.poison_memory = true;
  auto engine = Engine::from_bytes(b.bytes(), o);
  ASSERT_TRUE(want_engine.is_ok() && engine.is_ok()) << engine.status().to_string();
  auto want_ctx = (*want_engine)->create_context();
  auto ctx = (*engine)->create_context();
  for (const auto& [iou, thr] : {std::pair{0.5f, 0.3f}, {0.2f, 0.6f}, {0.5f, 0.3f}}) {
    SCOPED_TRACE("iou " + std::to_string(iou) + " score threshold " + std::to_string(thr));
    auto in = inputs_of(20, 3.f, 7);
    std::vector<float> scores(kBoxes);
    for (int64_t i = 0; i < kBoxes; ++i)
      scores[i] = 1.f / (1.f + std::exp(-in.at("logits").data<float>()[i]));
    const std::map<std::string, Tensor> feed = {
        {"boxes", in.at("boxes")},
        {"scores", Tensor::from_floats({1, 1, kBoxes}, scores)},
        {"iou", Tensor::from_floats({1}, {iou})},
        {"thr", Tensor::from_floats({1}, {thr})}};
    auto want = want_ctx->run(feed);
    auto got = ctx->run(feed);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_GT(want->at("selected").numel(), 0);
    ASSERT_EQ(got->at("selected").shape(), want->at("selected").shape());
    EXPECT_EQ(got->at("selected").to_int64s(), want->at("selected").to_int64s());
    auto info = ctx->plan();
    ASSERT_TRUE(info.is_ok());
    for (const PlanStepInfo& st : info->steps)
      if (st.kind == "kernel") EXPECT_EQ(st.device, "cuda") << st.op << " " << st.name;
  }
}

}  // namespace
}  // namespace kiln::test
