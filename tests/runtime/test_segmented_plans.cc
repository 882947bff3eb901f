// Graphs whose shapes follow their data, planned in segments (runtime/plan.h) on the host:
// NonZero and NonMaxSuppression run on buffers of their bound and only their extent is read
// back; TopK with a k computed from the data reads k back and is planned with it known. Each
// is checked against the reference kernels run node by node, on one Context over inputs whose
// counts differ, with the plans it builds counted and its plan's text saying what it reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "backends/dnnl_test_net.h"
#include "ops/op_registry.h"

namespace kiln::test {
namespace {

Value* typed(Graph& g, const std::string& name, DataType dt) {
  Value* v = g.add_value(name);
  v->dtype = dt;
  return v;
}

std::shared_ptr<Engine> build(std::unique_ptr<Graph> g, KernelChoice backend,
                              EngineOptions o = EngineOptions()) {
  o.backend = backend;
  o.optimize = false;
  o.threads = 2;
  auto e = build_engine(std::move(g), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

// One node's outputs from the reference kernel alone.
std::vector<Tensor> reference(OpKind op, const Attributes& attrs,
                              const std::vector<const Tensor*>& in, size_t outputs = 1) {
  Graph g;
  std::vector<Value*> ins, outs;
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(in[i] ? g.add_value("i") : nullptr);
  for (size_t i = 0; i < outputs; ++i) outs.push_back(g.add_value("o"));
  Node* n = g.add_node(op, "n", ins, outs, attrs);
  std::vector<Tensor> out;
  const Status s = run_reference(*n, in, out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

// x [2,3,5] with `zeros` of its 30 elements zero, at random places.
Tensor with_zeros(int zeros, uint32_t seed) {
  Tensor t = random_tensor({2, 3, 5}, seed, 0.5f, 2.f);
  std::vector<int> idx(30);
  for (int i = 0; i < 30; ++i) idx[i] = i;
  std::shuffle(idx.begin(), idx.end(), std::mt19937(seed));
  for (int i = 0; i < zeros; ++i) t.data<float>()[idx[i]] = 0.f;
  return t;
}

// x → NonZero → nz (an output) and → Transpose → nzT (an output): the NonZero runs on its
// bound [3, 30]; with only_output, nothing reads it but the graph's output.
std::unique_ptr<Graph> non_zero_graph(bool only_output) {
  auto g = std::make_unique<Graph>();
  Value* x = f32_value(*g, "x", {2, 3, 5});
  g->inputs().push_back(x);
  Value* nz = typed(*g, "nz", DataType::kInt64);
  g->add_node(OpKind::NonZero, "nonzero", {x}, {nz});
  g->outputs().push_back(nz);
  if (!only_output) {
    Value* t = typed(*g, "nzT", DataType::kInt64);
    g->add_node(OpKind::Transpose, "transpose", {nz}, {t});
    g->outputs().push_back(t);
  }
  return g;
}

TEST(SegmentedPlans, NonZeroToAnOutputIsPlannedOnceAtItsBound) {
  for (KernelChoice backend : {KernelChoice::kReference, KernelChoice::kAuto}) {
    auto engine = build(non_zero_graph(true), backend);
    ASSERT_NE(engine, nullptr);
    auto ctx = engine->create_context();
    for (int zeros : {0, 7, 29, 30, 3}) {
      SCOPED_TRACE("zeros " + std::to_string(zeros));
      Tensor x = with_zeros(zeros, 10 + zeros);
      auto got = ctx->run({{"x", x}});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      const Tensor want = reference(OpKind::NonZero, {}, {&x})[0];
      ASSERT_EQ(got->at("nz").shape(), (Shape{3, 30 - zeros}));
      EXPECT_EQ(got->at("nz").to_int64s(), want.to_int64s());
    }
    // The segment and its one continuation (the rest does not depend on the count).
    EXPECT_EQ(ctx->stats().plan_builds, 2);
    auto info = ctx->plan();
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    ASSERT_EQ(info->read_backs.size(), 1u);
    EXPECT_EQ(info->read_backs[0].what, "NonZero 'nonzero' extent");
    EXPECT_NE(info->text().find("read back NonZero 'nonzero' extent"), std::string::npos)
        << info->text();
  }
}

TEST(SegmentedPlans, NonZeroReadByANodeIsPlannedPerCount) {
  auto engine = build(non_zero_graph(false), KernelChoice::kAuto);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  Attributes none;
  for (int zeros : {4, 11, 4, 30}) {
    SCOPED_TRACE("zeros " + std::to_string(zeros));
    Tensor x = with_zeros(zeros, 40 + zeros);
    auto got = ctx->run({{"x", x}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const Tensor nz = reference(OpKind::NonZero, {}, {&x})[0];
    const Tensor t = reference(OpKind::Transpose, none, {&nz})[0];
    EXPECT_EQ(got->at("nz").to_int64s(), nz.to_int64s());
    ASSERT_EQ(got->at("nzT").shape(), (Shape{30 - zeros, 3}));
    EXPECT_EQ(got->at("nzT").to_int64s(), t.to_int64s());
  }
  // The segment, and a rest for each of the counts 26, 19 and 0 (26 again reuses its own).
  EXPECT_EQ(ctx->stats().plan_builds, 4);
}

Attributes top_k_attrs() {
  Attributes a;
  a.set("axis", int64_t{1});
  return a;
}

// y = TopK(x [3,12], k, axis 1) with k = Cast(ReduceMax(s)) computed from a float input s [1].
std::unique_ptr<Graph> top_k_graph() {
  auto g = std::make_unique<Graph>();
  Value* x = f32_value(*g, "x", {3, 12});
  Value* s = f32_value(*g, "s", {1});
  g->inputs() = {x, s};
  Value* m = typed(*g, "m", DataType::kFloat32);
  Attributes keep;
  keep.set("keepdims", int64_t{1});
  g->add_node(OpKind::ReduceMax, "max", {s}, {m}, keep);
  Value* k = typed(*g, "k", DataType::kInt64);
  Attributes to;
  to.set("to", static_cast<int64_t>(DataType::kInt64));
  g->add_node(OpKind::Cast, "cast", {m}, {k}, to);
  Value* vals = typed(*g, "values", DataType::kFloat32);
  Value* idx = typed(*g, "indices", DataType::kInt64);
  g->add_node(OpKind::TopK, "topk", {x, k}, {vals, idx}, top_k_attrs());
  g->outputs() = {vals, idx};
  return g;
}

// TopK of the computed k: k is read back and TopK planned with it known, once per k.
TEST(SegmentedPlans, TopKOfAComputedKReadsKBack) {
  const Attributes top = top_k_attrs();
  auto g = top_k_graph();
  EngineOptions o;
  o.shape_profiles = {{{"x", {3, 12}}, {"s", {1}}}};
  auto engine = build(std::move(g), KernelChoice::kAuto, o);
  ASSERT_NE(engine, nullptr);
  // Planned ahead, the profile's plan stops where k is read.
  ASSERT_EQ(engine->report().plans.size(), 1u);
  const PlanInfo& ahead = engine->report().plans[0];
  EXPECT_FALSE(ahead.unfinished.empty());
  EXPECT_NE(ahead.text().find("the rest is planned once it is read"), std::string::npos)
      << ahead.text();
  auto ctx = engine->create_context();
  for (int64_t kk : {5, 1, 12, 5}) {
    SCOPED_TRACE("k " + std::to_string(kk));
    Tensor xv = random_tensor({3, 12}, 70 + static_cast<uint32_t>(kk));
    Tensor sv = Tensor::from_floats({1}, {static_cast<float>(kk) + 0.25f});
    auto got = ctx->run({{"x", xv}, {"s", sv}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    Tensor kt = Tensor::from_int64s({1}, {kk});
    auto want = reference(OpKind::TopK, top, {&xv, &kt}, 2);
    ASSERT_EQ(got->at("values").shape(), (Shape{3, kk}));
    expect_near(got->at("values"), want[0], 0);
    EXPECT_EQ(got->at("indices").to_int64s(), want[1].to_int64s());
  }
  EXPECT_EQ(ctx->stats().plan_builds, 4);  // the segment, and the rest for k = 5, 1, 12
  auto info = ctx->plan();
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  ASSERT_EQ(info->read_backs.size(), 1u);
  EXPECT_EQ(info->read_backs[0].what, "value 'k'");
  EXPECT_EQ(info->read_backs[0].after_steps, 2u);  // ReduceMax, Cast
}

// The rests of a segment are cached per k, at most max_cached_plans of them, the least recently
// used dropped first.
TEST(SegmentedPlans, ContinuationsAreBoundedLeastRecentlyUsedFirst) {
  EngineOptions o;
  o.max_cached_plans = 2;
  auto engine = build(top_k_graph(), KernelChoice::kReference, o);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  auto run = [&](int64_t k) {
    auto got = ctx->run({{"x", random_tensor({3, 12}, 9)},
                         {"s", Tensor::from_floats({1}, {static_cast<float>(k)})}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->at("values").shape(), (Shape{3, k}));
  };
  run(1), run(2), run(1);  // the segment, the rests for 1 and 2; 1 again cached
  EXPECT_EQ(ctx->stats().plan_builds, 3);
  EXPECT_EQ(ctx->stats().plan_runs, 1);
  run(3);  // drops 2, the least recently used
  run(1);  // still cached
  EXPECT_EQ(ctx->stats().plan_builds, 4);
  run(2);  // planned again
  EXPECT_EQ(ctx->stats().plan_builds, 5);
  EXPECT_EQ(ctx->stats().plan_runs, 2);
}

// boxes [1,N,4], scores [1,1,N] → NonMaxSuppression (at most 50 per class) → selected, an
// output: whatever it selects (1, 5 or many boxes), the rest is planned once, at the bound.
TEST(SegmentedPlans, NonMaxSuppressionSelectsAnyCountWithoutPlanningAgain) {
  const int64_t n = 64;
  auto g = std::make_unique<Graph>();
  Value* boxes = f32_value(*g, "boxes", {1, n, 4});
  Value* scores = f32_value(*g, "scores", {1, 1, n});
  g->inputs() = {boxes, scores};
  Value* max_out = g->add_constant("max_out", Tensor::from_int64s({1}, {50}));
  Value* iou = g->add_constant("iou", Tensor::from_floats({1}, {0.5f}));
  Value* thr = typed(*g, "thr", DataType::kFloat32);
  g->add_node(OpKind::Identity, "thr_of", {g->add_constant("t", Tensor::from_floats({1}, {0.f}))},
              {thr});
  Value* sel = typed(*g, "selected", DataType::kInt64);
  g->add_node(OpKind::NonMaxSuppression, "nms", {boxes, scores, max_out, iou, thr}, {sel});
  g->outputs() = {sel};
  auto engine = build(std::move(g), KernelChoice::kAuto);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> pos(0, 32), size(2, 10), u(0, 1);
  for (float keep : {0.98f, 0.9f, 0.3f, 0.f}) {  // the share of boxes scored below 0
    SCOPED_TRACE("keep " + std::to_string(keep));
    Tensor b(DataType::kFloat32, {1, n, 4}), s(DataType::kFloat32, {1, 1, n});
    for (int64_t i = 0; i < n; ++i) {
      const float y = pos(gen), x = pos(gen);
      float* r = b.data<float>() + 4 * i;
      r[0] = y, r[1] = x, r[2] = y + size(gen), r[3] = x + size(gen);
      s.data<float>()[i] = u(gen) < keep ? -1.f : u(gen);
    }
    auto got = ctx->run({{"boxes", b}, {"scores", s}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    Tensor mo = Tensor::from_int64s({1}, {50});
    Tensor io = Tensor::from_floats({1}, {0.5f}), th = Tensor::from_floats({1}, {0.f});
    const Tensor want = reference(OpKind::NonMaxSuppression, {}, {&b, &s, &mo, &io, &th})[0];
    EXPECT_GT(want.shape()[0], 0);
    ASSERT_EQ(got->at("selected").shape(), want.shape());
    EXPECT_EQ(got->at("selected").to_int64s(), want.to_int64s());
  }
  EXPECT_EQ(ctx->stats().plan_builds, 2);
}

// A NonMaxSuppression whose maximum count is computed at run time has no bound until it is
// known: the maximum is read back, then the node runs at its bound.
TEST(SegmentedPlans, NonMaxSuppressionOfAComputedMaximumReadsItBack) {
  auto g = std::make_unique<Graph>();
  Value* boxes = f32_value(*g, "boxes", {1, 6, 4});
  Value* scores = f32_value(*g, "scores", {1, 1, 6});
  Value* m = f32_value(*g, "m", {1});
  g->inputs() = {boxes, scores, m};
  Value* max_out = typed(*g, "max_out", DataType::kInt64);
  Attributes to;
  to.set("to", static_cast<int64_t>(DataType::kInt64));
  g->add_node(OpKind::Cast, "cast", {m}, {max_out}, to);
  Value* sel = typed(*g, "selected", DataType::kInt64);
  g->add_node(OpKind::NonMaxSuppression, "nms", {boxes, scores, max_out}, {sel});
  g->outputs() = {sel};
  auto engine = build(std::move(g), KernelChoice::kReference);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  Tensor b = Tensor::from_floats({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                             0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101});
  Tensor s = Tensor::from_floats({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
  for (float mv : {2.f, 6.f}) {
    auto got = ctx->run({{"boxes", b}, {"scores", s}, {"m", Tensor::from_floats({1}, {mv})}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    Tensor mo = Tensor::from_int64s({1}, {static_cast<int64_t>(mv)});
    const Tensor want = reference(OpKind::NonMaxSuppression, {}, {&b, &s, &mo})[0];
    EXPECT_EQ(got->at("selected").to_int64s(), want.to_int64s());
  }
  auto info = ctx->plan();
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  // The maximum (not the boxes nor the scores), then, at its bound, the selection's extent.
  ASSERT_EQ(info->read_backs.size(), 2u) << info->text();
  EXPECT_EQ(info->read_backs[0].what, "value 'max_out'");
  EXPECT_EQ(info->read_backs[1].what, "NonMaxSuppression 'nms' extent");
}

}  // namespace
}  // namespace kiln::test
