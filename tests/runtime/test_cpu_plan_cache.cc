// The Context's plan cache on the CPU (runtime/context_plans.h): one Context alternating batch
// sizes builds one plan per size and then runs them without building or allocating again, with the
// results of a fresh Context; the cache keeps at most max_cached_plans; small inputs are part of
// the key; a shape computed from the data itself rebuilds where it changes; a failed run leaves the
// Context usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "backends/dnnl_test_net.h"

namespace kiln::test {
namespace {

// x[N,3,12,12] → conv 16 → conv 32 + residual-free → maxpool → conv 16 → GlobalAveragePool:
// a symbolic batch through oneDNN and reference kernels.
std::shared_ptr<Engine> conv_net(EngineOptions o = EngineOptions()) {
  Net n;
  Value* x = n.input("x", {1, 3, 12, 12});
  x->dims[0] = Dim{-1, "N"};
  Value* a = n.conv(x, 16, 3, {1, 16, 12, 12});
  Value* b = n.conv(a, 32, 3, {1, 32, 12, 12});
  Value* p = n.pool(OpKind::MaxPool, b, {1, 32, 6, 6}, pool_attrs(2, 2, 0));
  Value* c = n.conv(p, 16, 3, {1, 16, 6, 6}, true, nullptr);
  Value* y = n.pool(OpKind::GlobalAveragePool, c, {1, 16, 1, 1}, {});
  n.g->outputs() = {y};
  o.optimize = false;
  o.threads = 2;
  auto e = build_engine(std::move(n.g), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

// z = Reshape(y, shape) as the graph's output, built unoptimized: the context of the tests
// whose shapes come from values.
std::unique_ptr<Context> reshape_context(std::unique_ptr<Graph> g, Value* y, Value* shape,
                                         std::shared_ptr<Engine>& keep) {
  Value* z = g->add_value("z");
  z->dtype = DataType::kFloat32;
  g->add_node(OpKind::Reshape, "reshape", {y, shape}, {z});
  g->outputs() = {z};
  EngineOptions o;
  o.optimize = false;
  auto engine = build_engine(std::move(g), o);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  if (!engine.is_ok()) return nullptr;
  keep = std::move(engine).value();
  return keep->create_context();
}

std::map<std::string, Tensor> input_of(int64_t batch) {
  return {{"x", random_tensor({batch, 3, 12, 12}, 11 + static_cast<uint32_t>(batch))}};
}

TEST(CpuPlanCache, AlternatingBatchesBuildOncePerShapeAndAllocateNothingAfter) {
  auto engine = conv_net();
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  const std::vector<int64_t> batches{1, 8, 32};
  std::map<int64_t, std::vector<double>> ms;
  std::map<int64_t, Tensor> first;
  ContextStats after_builds;
  for (int round = 0; round < 4; ++round)
    for (int64_t b : batches) {
      const auto in = input_of(b);
      const auto t0 = std::chrono::steady_clock::now();
      auto out = ctx->run(in);
      const double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const Tensor& y = out->begin()->second;
      ASSERT_EQ(y.shape(), (Shape{b, 16, 1, 1}));
      if (round == 0) {
        first[b] = y;
      } else {
        // The same plan gives the same bits; the output is the caller's own tensor, not
        // overwritten by the runs after it.
        ASSERT_EQ(std::memcmp(y.raw(), first[b].raw(), y.nbytes()), 0) << "batch " << b;
        ms[b].push_back(t);
      }
    }
  after_builds = ctx->stats();
  EXPECT_EQ(after_builds.plan_builds, 3);
  EXPECT_EQ(after_builds.plans_cached, 3);
  EXPECT_EQ(after_builds.plan_runs, 9);
  // Grown for 1, then 8, then 32, never after: one arena sized for the largest.
  EXPECT_EQ(after_builds.arena_allocations, 3);
  EXPECT_GT(after_builds.arena_bytes, 0);
  for (const auto& [b, t] : first) {
    // What the first runs returned stays intact, and equals a fresh Context's result.
    auto fresh = engine->create_context()->run(input_of(b));
    ASSERT_TRUE(fresh.is_ok());
    const Tensor& y = fresh->begin()->second;
    EXPECT_EQ(std::memcmp(y.raw(), t.raw(), y.nbytes()), 0) << "batch " << b;
  }
  // Against the reference backend (a different summation order).
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto ref_engine = conv_net(ref);
  ASSERT_NE(ref_engine, nullptr);
  auto ref_ctx = ref_engine->create_context();
  for (int64_t b : batches) {
    auto want = ref_ctx->run(input_of(b));
    ASSERT_TRUE(want.is_ok());
    expect_near(first[b], want->begin()->second, 1e-4, 1e-4);
  }
  // Run times of each cached plan after switching, reported, not asserted (timed tests do not
  // assert speed).
  for (auto& [b, t] : ms) {
    std::sort(t.begin(), t.end());
    std::printf("[ timing   ] batch %2lld: median %.3f ms over %zu cached runs (min %.3f)\n",
                static_cast<long long>(b), t[t.size() / 2], t.size(), t.front());
  }
}

TEST(CpuPlanCache, KeepsAtMostMaxCachedPlans) {
  EngineOptions o;
  o.max_cached_plans = 2;
  auto engine = conv_net(o);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  for (int round = 0; round < 2; ++round)
    for (int64_t b : {1, 2, 3}) ASSERT_TRUE(ctx->run(input_of(b)).is_ok());
  // Least recently used first out: 1, 2, 3 cycling through two places never hits.
  EXPECT_EQ(ctx->stats().plan_builds, 6);
  EXPECT_EQ(ctx->stats().plans_cached, 2);
  ASSERT_TRUE(ctx->run(input_of(3)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 6);
  EXPECT_EQ(ctx->stats().plan_runs, 1);
}

// y[4,6] reshaped to a shape read from x's first two elements (cast to int64): the same input
// shapes with other data give another output shape. The plan stops before the Reshape and
// reads the shape back; the rest is planned per shape read, and the same data again runs the
// cached segments.
TEST(CpuPlanCache, ShapesFromTheDataRebuildWhereTheyChange) {
  auto g = std::make_unique<Graph>();
  Value* x = f32_value(*g, "x", {1, 32});
  Value* y = f32_value(*g, "y", {4, 6});
  g->inputs() = {x, y};
  auto i64 = [&](const std::vector<int64_t>& v) {
    return g->add_constant("c", Tensor::from_int64s({static_cast<int64_t>(v.size())}, v));
  };
  Value* s = f32_value(*g, "s", {1, 2});
  g->add_node(OpKind::Slice, "slice", {x, i64({0}), i64({2}), i64({1})}, {s});
  Value* si = g->add_value("si");
  si->dtype = DataType::kInt64;
  Attributes to;
  to.set("to", int64_t{7});  // INT64
  g->add_node(OpKind::Cast, "cast", {s}, {si}, to);
  Value* flat = g->add_value("flat");
  flat->dtype = DataType::kInt64;
  g->add_node(OpKind::Reshape, "flat", {si, i64({2})}, {flat});
  std::shared_ptr<Engine> engine;
  auto ctx = reshape_context(std::move(g), y, flat, engine);
  ASSERT_NE(ctx, nullptr);
  const Tensor yt = random_tensor({4, 6}, 3);
  auto run = [&](float a, float b) -> Shape {
    Tensor xt = random_tensor({1, 32}, 4);
    xt.data<float>()[0] = a;
    xt.data<float>()[1] = b;
    auto out = ctx->run({{"x", xt}, {"y", yt}});
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    if (!out.is_ok()) return {};
    const Tensor& r = out->at("z");
    EXPECT_EQ(std::memcmp(r.raw(), yt.raw(), yt.nbytes()), 0);
    return r.shape();
  };
  EXPECT_EQ(run(3, 8), (Shape{3, 8}));
  EXPECT_EQ(run(6, 4), (Shape{6, 4}));
  EXPECT_EQ(ctx->stats().plan_builds, 3);  // the segment, the rest for [3,8] and for [6,4]
  EXPECT_EQ(run(6, 4), (Shape{6, 4}));
  EXPECT_EQ(run(2, 12), (Shape{2, 12}));
  EXPECT_EQ(ctx->stats().plan_builds, 4);
  EXPECT_EQ(ctx->stats().plan_runs, 1);
  // A shape the data makes impossible fails that run with the shape rule's error, and the
  // Context goes on.
  Tensor bad = random_tensor({1, 32}, 5);
  bad.data<float>()[0] = 5;
  bad.data<float>()[1] = 5;
  auto r = ctx->run({{"x", bad}, {"y", yt}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("reshape"), std::string::npos) << r.status().to_string();
  EXPECT_EQ(run(2, 12), (Shape{2, 12}));
}

// Inputs of at most 16 elements are part of the key: a shape input given by the caller
// selects its own plan.
TEST(CpuPlanCache, SmallInputsArePartOfTheKey) {
  auto g = std::make_unique<Graph>();
  Value* y = f32_value(*g, "y", {4, 6});
  Value* shape = g->add_value("shape");
  shape->dtype = DataType::kInt64;
  shape->has_shape = true;
  shape->dims = {Dim{2, ""}};
  g->inputs() = {y, shape};
  std::shared_ptr<Engine> engine;
  auto ctx = reshape_context(std::move(g), y, shape, engine);
  ASSERT_NE(ctx, nullptr);
  const Tensor yt = random_tensor({4, 6}, 3);
  for (int round = 0; round < 2; ++round)
    for (const auto& s : std::vector<std::vector<int64_t>>{{3, 8}, {12, 2}}) {
      auto out = ctx->run({{"y", yt}, {"shape", Tensor::from_int64s({2}, s)}});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      EXPECT_EQ(out->at("z").shape(), (Shape{s[0], s[1]}));
    }
  EXPECT_EQ(ctx->stats().plan_builds, 2);
  EXPECT_EQ(ctx->stats().plan_runs, 2);
}

// Shape profiles: the build runs each once; every Context is created with their plans, so
// running them builds nothing; only_profile_shapes refuses any other shape, naming the
// profiles; a bad profile fails the build, saying which and why.
TEST(ShapeProfiles, ContextsStartWithTheProfilesPlans) {
  EngineOptions o;
  o.shape_profiles = {{{"x", {1, 3, 12, 12}}}, {{"x", {8, 3, 12, 12}}}};
  auto engine = conv_net(o);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  EXPECT_EQ(ctx->stats().plan_builds, 2);
  for (int64_t b : {8, 1, 8}) ASSERT_TRUE(ctx->run(input_of(b)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 2);
  EXPECT_EQ(ctx->stats().plan_runs, 3);
  // Not listed: built on first use, then cached like the others.
  ASSERT_TRUE(ctx->run(input_of(3)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 3);

  o.only_profile_shapes = true;
  auto strict = conv_net(o);
  ASSERT_NE(strict, nullptr);
  auto sctx = strict->create_context();
  auto r = sctx->run(input_of(3));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = r.status().message();
  for (const char* want : {"x=[3,3,12,12]", "x=[1,3,12,12]; x=[8,3,12,12]", "only_profile_shapes"})
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  EXPECT_TRUE(sctx->run(input_of(8)).is_ok());
  EXPECT_EQ(sctx->stats().plan_builds, 2);
}

// The profiles' plans stay, however many there are: max_cached_plans bounds the plans of other
// shapes only. (A server's batch sizes 1, 2, 4 ... 256 are 9 profiles, one more than the
// default 8: the profile least recently run was dropped and rebuilt while serving.)
TEST(ShapeProfiles, ProfilePlansAreNeverDropped) {
  EngineOptions o;
  o.max_cached_plans = 2;
  for (int64_t b : {1, 2, 3, 4, 5}) o.shape_profiles.push_back({{"x", {b, 3, 12, 12}}});
  auto engine = conv_net(o);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  EXPECT_EQ(ctx->stats().plan_builds, 5);
  for (int round = 0; round < 2; ++round)
    for (int64_t b : {1, 2, 3, 4, 5}) ASSERT_TRUE(ctx->run(input_of(b)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 5) << "a profile's plan was dropped and built again";
  EXPECT_EQ(ctx->stats().plans_cached, 5);
  // Other shapes: at most max_cached_plans of them beside the profiles.
  for (int64_t b : {6, 7, 9}) ASSERT_TRUE(ctx->run(input_of(b)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 8);
  EXPECT_EQ(ctx->stats().plans_cached, 7);
  ASSERT_TRUE(ctx->run(input_of(7)).is_ok());  // still cached
  ASSERT_TRUE(ctx->run(input_of(1)).is_ok());  // a profile: still cached
  EXPECT_EQ(ctx->stats().plan_builds, 8);
  ASSERT_TRUE(ctx->run(input_of(6)).is_ok());  // the oldest other shape: dropped, built again
  EXPECT_EQ(ctx->stats().plan_builds, 9);
}

TEST(ShapeProfiles, BadProfilesFailTheBuild) {
  struct Case {
    std::map<std::string, std::vector<int64_t>> profile;
    const char* says;
  };
  const Case cases[] = {
      {{{"y", {1, 3, 12, 12}}}, "shape profile 1: unknown input 'y'"},
      {{{"x", {1, 4, 12, 12}}}, "expected shape [N,3,12,12]"},
      {{{"x", {1, 3, 12}}}, "expected shape"},
      {{}, "input 'x' has the symbolic shape [N,3,12,12]: give it a shape"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    Net n;
    Value* x = n.input("x", {1, 3, 12, 12});
    x->dims[0] = Dim{-1, "N"};
    n.g->outputs() = {n.conv(x, 4, 3, {1, 4, 12, 12})};
    EngineOptions o;
    o.optimize = false;
    o.shape_profiles = {c.profile};
    auto e = build_engine(std::move(n.g), o);
    ASSERT_FALSE(e.is_ok());
    EXPECT_NE(e.status().message().find(c.says), std::string::npos) << e.status().to_string();
  }
}

// The Context's timing and memory methods on the CPU: the last run's time, the compute again
// through the cached plan (no new plan, no allocation), and the plan's arena and the model's
// constants; before a run, errors.
TEST(CpuContext, TimingAndMemoryOfTheLastRun) {
  auto engine = conv_net();
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  EXPECT_FALSE(ctx->last_device_timing().is_ok());
  EXPECT_FALSE(ctx->time_compute(2).is_ok());
  ASSERT_TRUE(ctx->run(input_of(8)).is_ok());
  auto t = ctx->last_device_timing();
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_GT(t->compute_ms, 0);
  EXPECT_EQ(t->h2d_ms, 0);
  EXPECT_EQ(t->d2h_ms, 0);
  EXPECT_EQ(t->stage_ms, 0) << "the CPU reads the inputs where they are";
  EXPECT_GE(t->run_ms, t->finish_ms);
  EXPECT_GT(t->run_ms, 0);
  const ContextStats before = ctx->stats();
  auto ms = ctx->time_compute(3);
  ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
  ASSERT_EQ(ms->size(), 3u);
  for (double v : *ms) EXPECT_GT(v, 0);
  EXPECT_EQ(ctx->stats().plan_builds, before.plan_builds);
  EXPECT_EQ(ctx->stats().arena_allocations, before.arena_allocations);
  EXPECT_EQ(ctx->stats().plan_runs, before.plan_runs);  // the compute alone, not runs
  auto m = ctx->device_memory();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->arena, ctx->stats().arena_bytes);
  EXPECT_GT(m->arena_lower_bound, 0);
  EXPECT_LE(m->arena_lower_bound, m->arena);
  EXPECT_GT(m->weights, 0);
  EXPECT_EQ(m->workspace, 0);
}

// Reshape-like steps are views in a cached plan: their output is their input's bytes, which
// then live until the last reader of either. a = Relu(x); b = Flatten(a); c = Sigmoid(b);
// d = Reshape(c) to a's shape; e = a + d (a read after b's reader). The arena then holds a and
// c (2 × 4 KiB), where copies would have held a, b and c at once; the results equal the
// reference backend's, run after run.
TEST(CpuPlanCache, ReshapesAreViewsOfTheirInput) {
  auto build = [](const std::string& backend) {
    auto g = std::make_unique<Graph>();
    Value* x = f32_value(*g, "x", {1, 16, 8, 8});
    auto node = [&](OpKind op, std::vector<Value*> in, const Shape& s, Attributes a = {}) {
      Value* y = f32_value(*g, "v" + std::to_string(g->nodes().size()), s);
      g->add_node(op, "n" + std::to_string(g->nodes().size()), std::move(in), {y}, std::move(a));
      return y;
    };
    Value* a = node(OpKind::Relu, {x}, {1, 16, 8, 8});
    Value* b = node(OpKind::Flatten, {a}, {1, 1024});
    Value* c = node(OpKind::Sigmoid, {b}, {1, 1024});
    Value* shape = g->add_constant("shape", Tensor::from_int64s({4}, {1, 16, 8, 8}));
    Value* d = node(OpKind::Reshape, {c, shape}, {1, 16, 8, 8});
    Value* e = node(OpKind::Add, {a, d}, {1, 16, 8, 8});
    g->inputs() = {x};
    g->outputs() = {e};
    EngineOptions o;
    o.optimize = false;
    o.backend = *parse_kernel_choice(backend);
    auto engine = build_engine(std::move(g), o);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    return std::move(engine).value();
  };
  auto engine = build("auto"), reference = build("reference");
  auto ctx = engine->create_context();
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::map<std::string, Tensor> in = {{"x", random_tensor({1, 16, 8, 8}, seed, -2.f, 2.f)}};
    auto got = ctx->run(in);
    auto want = reference->create_context()->run(in);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    expect_near(got->at("v4"), want->at("v4"), 1e-6, 1e-5);
  }
  EXPECT_EQ(ctx->stats().plan_builds, 1);
  EXPECT_EQ(ctx->stats().arena_bytes, 2 * 16 * 8 * 8 * 4);
}

// Plans as data on the CPU: the profiles' plans are in the engine's report, a Context's plan
// of the last run is the same data, and there is none before a run.
TEST(ShapeProfiles, PlansAreReportedAsData) {
  EngineOptions o;
  o.shape_profiles = {{{"x", {1, 3, 12, 12}}}, {{"x", {8, 3, 12, 12}}}};
  auto engine = conv_net(o);
  ASSERT_NE(engine, nullptr);
  const std::vector<PlanInfo>& plans = engine->report().plans;
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].input_shapes.at("x"), (std::vector<int64_t>{1, 3, 12, 12}));
  EXPECT_TRUE(plans[0].read_backs.empty());
  EXPECT_TRUE(plans[0].unfinished.empty());
  // conv, conv, maxpool, conv, GlobalAveragePool: one kernel step each, on the host.
  ASSERT_EQ(plans[1].steps.size(), 5u) << plans[1].text();
  for (const PlanStepInfo& s : plans[1].steps) {
    EXPECT_EQ(s.kind, "kernel");
    EXPECT_EQ(s.device, "cpu");
    EXPECT_FALSE(s.outputs.empty());
  }
  EXPECT_EQ(plans[1].steps[0].op, "Conv");
  EXPECT_NE(plans[1].steps[0].inputs[0].find("external"), std::string::npos);
  EXPECT_GT(plans[1].arena_bytes.at("cpu"), plans[0].arena_bytes.at("cpu"));
  auto ctx = engine->create_context();
  ASSERT_TRUE(ctx->run(input_of(8)).is_ok());
  auto now = ctx->plan();
  ASSERT_TRUE(now.is_ok()) << now.status().to_string();
  EXPECT_EQ(now->text(), plans[1].text());
  auto fresh = conv_net()->create_context();
  auto none = fresh->plan();
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no run yet"), std::string::npos);
}

// Shape ranges: opt is planned at build; a shape inside the range builds on first use and is
// cached; with only_profile_shapes shapes inside run and others are refused, naming the range;
// a bad range fails the build saying what is wrong.
TEST(ShapeRanges, OptIsPlannedAtBuildAndTheRangeBoundsStrictRuns) {
  EngineOptions o;
  o.shape_ranges = {{"x", ShapeRange{{1, 3, 12, 12}, {4, 3, 12, 12}, {8, 3, 12, 12}}}};
  auto engine = conv_net(o);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_context();
  EXPECT_EQ(ctx->stats().plan_builds, 1);
  ASSERT_TRUE(ctx->run(input_of(4)).is_ok());
  EXPECT_EQ(ctx->stats().plan_builds, 1);
  ASSERT_TRUE(ctx->run(input_of(2)).is_ok());
  ASSERT_TRUE(ctx->run(input_of(16)).is_ok());  // outside: planned like any other shape
  EXPECT_EQ(ctx->stats().plan_builds, 3);

  o.only_profile_shapes = true;
  auto strict = conv_net(o);
  ASSERT_NE(strict, nullptr);
  auto sctx = strict->create_context();
  for (int64_t b : {1, 5, 8}) EXPECT_TRUE(sctx->run(input_of(b)).is_ok()) << b;
  auto r = sctx->run(input_of(9));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("x from [1,3,12,12] to [8,3,12,12]"), std::string::npos)
      << r.status().to_string();
}

TEST(ShapeRanges, BadRangesFailTheBuild) {
  struct Case {
    std::string input;
    ShapeRange range;
    const char* says;
  };
  const Case cases[] = {
      {"y", {{1, 3, 12, 12}, {1, 3, 12, 12}, {1, 3, 12, 12}}, "the model has no such input"},
      {"x", {{4, 3, 12, 12}, {2, 3, 12, 12}, {8, 3, 12, 12}}, "dimension 0 needs 0 <= min <="},
      {"x", {{1, 3, 12}, {1, 3, 12, 12}, {1, 3, 12, 12}}, "differ in rank"},
      {"x", {{1, 3, 12}, {1, 3, 12}, {1, 3, 12}}, "rank 3, the input has rank 4"},
      {"x", {{1, 2, 12, 12}, {1, 3, 12, 12}, {1, 3, 12, 12}}, "dimension 1 of the input is 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    EngineOptions o;
    o.shape_ranges = {{c.input, c.range}};
    Net n;
    Value* x = n.input("x", {1, 3, 12, 12});
    x->dims[0] = Dim{-1, "N"};
    n.g->outputs() = {n.conv(x, 4, 3, {1, 4, 12, 12})};
    o.optimize = false;
    auto e = build_engine(std::move(n.g), o);
    ASSERT_FALSE(e.is_ok());
    EXPECT_NE(e.status().message().find(c.says), std::string::npos) << e.status().to_string();
  }
}

}  // namespace
}  // namespace kiln::test
