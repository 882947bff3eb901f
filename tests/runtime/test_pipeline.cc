// The Pipeline (kiln/pipeline.h) on CPU engines: 1000 requests from 4 threads over 4 Contexts
// give the synchronous results, each once, none lost; a bad request fails alone; bad options
// are refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/dnnl_test_net.h"
#include "kiln/pipeline.h"

namespace kiln::test {
namespace {

// x[N,3,12,12] → conv 8 → maxpool → conv 16 → GlobalAveragePool, a symbolic batch.
std::shared_ptr<Engine> small_net(EngineOptions o = EngineOptions()) {
  Net n;
  Value* x = n.input("x", {1, 3, 12, 12});
  x->dims[0] = Dim{-1, "N"};
  Value* a = n.conv(x, 8, 3, {1, 8, 12, 12});
  Value* p = n.pool(OpKind::MaxPool, a, {1, 8, 6, 6}, pool_attrs(2, 2, 0));
  Value* c = n.conv(p, 16, 3, {1, 16, 6, 6});
  Value* y = n.pool(OpKind::GlobalAveragePool, c, {1, 16, 1, 1}, {});
  n.g->outputs() = {y};
  o.threads = 1;
  auto e = build_engine(std::move(n.g), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

TEST(Pipeline, ThousandRequestsOverFourContextsGiveTheSynchronousResults) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  const std::string out = engine->outputs()[0].name;
  // 30 distinct inputs of batch 1 to 3, and their results on one Context, one at a time.
  constexpr int kDistinct = 30;
  std::vector<Outputs> inputs(kDistinct), want(kDistinct);
  auto sync = engine->create_context();
  for (int i = 0; i < kDistinct; ++i) {
    inputs[i] = {{"x", random_tensor({1 + i % 3, 3, 12, 12}, 100 + static_cast<uint32_t>(i))}};
    auto r = sync->run(inputs[i]);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    want[i] = std::move(*r);
  }

  auto pipeline = Pipeline::create(engine, PipelineOptions{4, 16});
  ASSERT_TRUE(pipeline.is_ok()) << pipeline.status().to_string();
  constexpr int kThreads = 4, kPerThread = 250;
  std::vector<std::vector<std::future<Result<Outputs>>>> futures(kThreads);
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t)
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        futures[t].push_back((*pipeline)->submit(inputs[(t * kPerThread + i) % kDistinct]));
    });
  for (std::thread& s : submitters) s.join();
  int ok = 0;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(futures[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      Result<Outputs> r = futures[t][i].get();  // in order, per submitter
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const Tensor& w = want[(t * kPerThread + i) % kDistinct].at(out);
      const Tensor& g = r->at(out);
      ASSERT_EQ(g.shape(), w.shape());
      ASSERT_EQ(g.to_floats(), w.to_floats()) << "thread " << t << " request " << i;
      ++ok;
    }
  }
  EXPECT_EQ(ok, kThreads * kPerThread);
  const PipelineStats s = (*pipeline)->stats();
  EXPECT_EQ(s.submitted, kThreads * kPerThread);
  EXPECT_EQ(s.completed, kThreads * kPerThread);
  EXPECT_EQ(s.failed, 0);
  ASSERT_EQ(s.per_context.size(), 4u);
  int64_t sum = 0;
  for (int64_t n : s.per_context) sum += n;
  EXPECT_EQ(sum, kThreads * kPerThread);
}

TEST(Pipeline, ABadRequestFailsAloneAndTheRestRun) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto pipeline = Pipeline::create(engine, PipelineOptions{2, 4});
  ASSERT_TRUE(pipeline.is_ok());
  std::vector<std::future<Result<Outputs>>> f;
  for (int i = 0; i < 20; ++i) {
    const Shape s = i == 7 ? Shape{1, 4, 12, 12} : Shape{1, 3, 12, 12};  // 7: wrong channels
    f.push_back((*pipeline)->submit({{"x", random_tensor(s, static_cast<uint32_t>(i))}}));
  }
  f.push_back((*pipeline)->submit({{"y", random_tensor({1, 3, 12, 12}, 1)}}));  // unknown name
  for (int i = 0; i < 21; ++i) {
    Result<Outputs> r = f[i].get();
    if (i == 7) {
      ASSERT_FALSE(r.is_ok());
      EXPECT_NE(r.status().message().find("expected shape"), std::string::npos)
          << r.status().message();
    } else if (i == 20) {
      ASSERT_FALSE(r.is_ok());
      EXPECT_NE(r.status().message().find("unknown input 'y'"), std::string::npos)
          << r.status().message();
    } else {
      EXPECT_TRUE(r.is_ok()) << i << ": " << r.status().to_string();
    }
  }
  const PipelineStats s = (*pipeline)->stats();
  EXPECT_EQ(s.completed, 21);
  EXPECT_EQ(s.failed, 2);
}

// submit(inputs, &timing): the run's device timing reaches the caller with its result (on the
// CPU the compute alone); a request that fails before it runs leaves the timing as it was.
TEST(Pipeline, SubmitWithTimingGivesTheRunsDeviceTiming) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto pipeline = Pipeline::create(engine, PipelineOptions{2, 4});
  ASSERT_TRUE(pipeline.is_ok());
  DeviceTiming t;
  t.d2h_ms = -1;  // a CPU run copies nothing: it must come back as 0
  Result<Outputs> r = (*pipeline)->submit({{"x", random_tensor({3, 3, 12, 12}, 4)}}, &t).get();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_GT(t.compute_ms, 0);
  EXPECT_EQ(t.h2d_ms, 0);
  EXPECT_EQ(t.d2h_ms, 0);
  DeviceTiming bad;
  bad.compute_ms = -2;
  EXPECT_FALSE((*pipeline)->submit({{"x", random_tensor({1, 4, 12, 12}, 5)}}, &bad).get().is_ok());
  EXPECT_EQ(bad.compute_ms, -2);
}

// PipelineStats::plan_builds: the profiles' plans of every Context at creation, unchanged while
// requests bring those shapes, one more for a shape outside them.
TEST(Pipeline, PlanBuildsCountTheProfilesThenNewShapes) {
  EngineOptions o;
  o.shape_profiles = {{{"x", {1, 3, 12, 12}}}, {{"x", {2, 3, 12, 12}}}};
  std::shared_ptr<Engine> engine = small_net(o);
  ASSERT_TRUE(engine);
  auto pipeline = Pipeline::create(engine, PipelineOptions{2, 4});
  ASSERT_TRUE(pipeline.is_ok());
  EXPECT_EQ((*pipeline)->stats().plan_builds, 4);  // 2 profiles × 2 Contexts
  std::vector<std::future<Result<Outputs>>> f;
  for (int i = 0; i < 20; ++i)
    f.push_back((*pipeline)->submit({{"x", random_tensor({1 + i % 2, 3, 12, 12}, 9)}}));
  for (auto& r : f) ASSERT_TRUE(r.get().is_ok());
  EXPECT_EQ((*pipeline)->stats().plan_builds, 4);
  ASSERT_TRUE((*pipeline)->submit({{"x", random_tensor({3, 3, 12, 12}, 9)}}).get().is_ok());
  EXPECT_EQ((*pipeline)->stats().plan_builds, 5);
}

// Overload: try_submit from 4 threads into 2 Contexts and a queue of 4 refuses at once
// (kUnavailable) what does not fit, and every request it admitted gets its synchronous result;
// the stats count both.
TEST(Pipeline, TrySubmitRefusesWhatDoesNotFitAndLosesNothingAdmitted) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  const std::string out = engine->outputs()[0].name;
  const Outputs in = {{"x", random_tensor({2, 3, 12, 12}, 77)}};
  auto want = engine->create_context()->run(in);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto pipeline = Pipeline::create(engine, PipelineOptions{2, 4});
  ASSERT_TRUE(pipeline.is_ok()) << pipeline.status().to_string();
  constexpr int kThreads = 4, kPerThread = 200;
  std::vector<std::vector<std::future<Result<Outputs>>>> admitted(kThreads);
  std::atomic<int> refused{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t)
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Result<Pipeline::Submitted> r = (*pipeline)->try_submit(in);
        if (r.is_ok()) {
          admitted[t].push_back(std::move(r->result));
          continue;
        }
        EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
        ++refused;
      }
    });
  for (std::thread& s : submitters) s.join();
  int64_t ok = 0;
  for (auto& per_thread : admitted)
    for (auto& f : per_thread) {
      Result<Outputs> r = f.get();
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_EQ(r->at(out).to_floats(), want->at(out).to_floats());
      ++ok;
    }
  EXPECT_GT(refused.load(), 0) << "800 requests at once must overflow a queue of 4";
  EXPECT_GT(ok, 0);
  EXPECT_EQ(ok + refused.load(), kThreads * kPerThread);
  const PipelineStats s = (*pipeline)->stats();
  EXPECT_EQ(s.submitted, ok);
  EXPECT_EQ(s.completed, ok);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.refused, refused.load());
}

// A request still queued is cancelled (kCancelled, counted); the ones before it run.
TEST(Pipeline, AQueuedRequestCanBeCancelled) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto pipeline = Pipeline::create(engine, PipelineOptions{1, 64});
  ASSERT_TRUE(pipeline.is_ok());
  // Large requests, so the one Context is busy while the last ones wait.
  const Outputs big = {{"x", random_tensor({64, 3, 12, 12}, 3)}};
  std::vector<Pipeline::Submitted> queued;
  for (int i = 0; i < 40; ++i) {
    auto r = (*pipeline)->try_submit(big);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    queued.push_back(std::move(*r));
  }
  const bool cancelled = (*pipeline)->cancel(queued.back().id);
  EXPECT_FALSE((*pipeline)->cancel(queued.back().id)) << "cancelled once";
  for (size_t i = 0; i + 1 < queued.size(); ++i) EXPECT_TRUE(queued[i].result.get().is_ok()) << i;
  Result<Outputs> last = queued.back().result.get();
  const PipelineStats s = (*pipeline)->stats();
  if (cancelled) {
    ASSERT_FALSE(last.is_ok());
    EXPECT_EQ(last.status().code(), StatusCode::kCancelled) << last.status().to_string();
    EXPECT_EQ(s.cancelled, 1);
    EXPECT_EQ(s.failed, 1);
  } else {
    // The Context reached it first (a machine much faster than the 39 runs before it).
    EXPECT_TRUE(last.is_ok());
    EXPECT_EQ(s.cancelled, 0);
  }
  EXPECT_EQ(s.completed, 40);
}

// On the CPU there is no compute order to choose: warm_up times nothing, and may be called for
// several shapes until a request is submitted.
TEST(Pipeline, WarmUpOnTheCpuTimesNoComputeOrder) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto pipeline = Pipeline::create(engine, PipelineOptions{2, 4});
  ASSERT_TRUE(pipeline.is_ok());
  for (int b = 1; b <= 2; ++b)
    ASSERT_TRUE((*pipeline)->warm_up({{"x", random_tensor({b, 3, 12, 12}, 5)}}).is_ok());
  EXPECT_EQ((*pipeline)->compute_order_timing().rounds, 0);
  EXPECT_FALSE((*pipeline)->compute_ordered());
  EXPECT_EQ((*pipeline)->stats().submitted, 0);
  ASSERT_TRUE((*pipeline)->submit({{"x", random_tensor({1, 3, 12, 12}, 6)}}).get().is_ok());
  auto late = (*pipeline)->warm_up({{"x", random_tensor({1, 3, 12, 12}, 5)}});
  ASSERT_FALSE(late.is_ok());
  EXPECT_NE(late.message().find("submitted already"), std::string::npos) << late.to_string();
}

TEST(Pipeline, BadOptionsAreRefused) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto none = Pipeline::create(engine, PipelineOptions{0, 4});
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("contexts must be 1 to 256"), std::string::npos);
  EXPECT_FALSE(Pipeline::create(engine, PipelineOptions{2, 0}).is_ok());
  for (double seconds : {-1.0, 61.0, std::nan("")}) {
    PipelineOptions o;
    o.order_round_seconds = seconds;
    auto bad = Pipeline::create(engine, o);
    ASSERT_FALSE(bad.is_ok()) << seconds;
    EXPECT_NE(bad.status().message().find("order_round_seconds must be 0 to 60"), std::string::npos)
        << bad.status().message();
  }
  EXPECT_FALSE(Pipeline::create(nullptr, PipelineOptions{}).is_ok());
  EXPECT_FALSE(
      Pipeline::create(std::vector<std::shared_ptr<const Engine>>{}, PipelineOptions{}).is_ok());
}

// Contexts spread over several Engines (kiln bench --gpus): each request's result is its own,
// the Contexts alternate between the Engines, and the stage times add up. Engines that take
// different inputs are refused.
TEST(Pipeline, ContextsSpreadOverEnginesGiveTheSynchronousResults) {
  std::shared_ptr<Engine> a = small_net(), b = small_net();
  ASSERT_TRUE(a && b);
  auto pipeline = Pipeline::create({a, b, a}, PipelineOptions{3, 6});
  ASSERT_TRUE(pipeline.is_ok()) << pipeline.status().to_string();
  for (int k = 0; k < 3; ++k) EXPECT_EQ((*pipeline)->context_device(k), -1) << "CPU contexts";
  auto alone = a->create_context();
  std::vector<Outputs> inputs;
  std::vector<std::future<Result<Outputs>>> futures;
  for (int i = 0; i < 60; ++i) {
    inputs.push_back({{"x", random_tensor({1 + i % 3, 3, 12, 12}, 500 + i)}});
    futures.push_back((*pipeline)->submit(inputs.back()));
  }
  for (int i = 0; i < 60; ++i) {
    auto got = futures[i].get();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto want = alone->run(inputs[i]);
    ASSERT_TRUE(want.is_ok());
    ASSERT_EQ(got->begin()->second.to_floats(), want->begin()->second.to_floats()) << i;
  }
  const PipelineStats s = (*pipeline)->stats();
  EXPECT_EQ(s.completed, 60);
  EXPECT_GT(s.compute_ms, 0) << "a CPU run counts as compute";
  EXPECT_EQ(s.upload_ms, 0);

  Net n;
  Value* x = n.input("other", {1, 3, 12, 12});
  n.g->outputs() = {n.pool(OpKind::GlobalAveragePool, x, {1, 3, 1, 1}, {})};
  auto other = build_engine(std::move(n.g), EngineOptions());
  ASSERT_TRUE(other.is_ok());
  auto mixed = Pipeline::create({a, *other}, PipelineOptions{2, 4});
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("different inputs"), std::string::npos);
}

// pinned_tensor: pinned where there is a GPU, an ordinary tensor elsewhere; either way a CPU
// engine runs it like any other.
TEST(PinnedTensor, IsATensorEveryEngineTakes) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  const Tensor x = random_tensor({2, 3, 12, 12}, 4);
  auto p = pinned_tensor(x.dtype(), x.shape());
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->nbytes(), x.nbytes());
  std::memcpy(p->raw(), x.raw(), x.nbytes());
  auto ctx = engine->create_context();
  auto a = ctx->run({{"x", x}}), b = ctx->run({{"x", *p}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const std::string out = engine->outputs()[0].name;
  EXPECT_EQ(a->at(out).to_floats(), b->at(out).to_floats());
  EXPECT_FALSE(pinned_tensor(DataType::kFloat32, {2, -1}).is_ok());
}

// cuda_device_count and cuda_pci_bus_id agree: every GPU counted has a bus id
// ("domain:bus:device.function"), the one past the last has none, and the error says how many there
// are.
TEST(CudaDevices, CountAndPciBusIdsAgree) {
  const int n = cuda_device_count();
  ASSERT_GE(n, 0);
  for (int i = 0; i < n; ++i) {
    auto id = cuda_pci_bus_id(i);
    ASSERT_TRUE(id.is_ok()) << id.status().to_string();
    EXPECT_NE(id->find(':'), std::string::npos) << *id;
    EXPECT_NE(id->find('.'), std::string::npos) << *id;
  }
  auto none = cuda_pci_bus_id(n);
  ASSERT_FALSE(none.is_ok());
  EXPECT_FALSE(cuda_pci_bus_id(-1).is_ok());
  // copy_to_gpu refuses a GPU CUDA does not show, naming it.
  auto past = copy_to_gpu(random_tensor({2, 3}, 1), n);
  ASSERT_FALSE(past.is_ok());
  EXPECT_NE(past.status().message().find("GPU " + std::to_string(n)), std::string::npos)
      << past.status().to_string();
}

// Engine::for_gpu is for CUDA engines: a CPU engine is refused by name.
TEST(EngineForGpu, RefusesACpuEngine) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  auto other = engine->for_gpu(0);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("a CPU engine has no GPU"), std::string::npos)
      << other.status().to_string();
}

// register_host_memory: the caller's memory, registered (pinned where there is a GPU); a tensor
// over it runs as any other; nothing to register is refused by name.
TEST(HostMemoryRegistration, LeavesTheCallersMemoryRunnableAndRefusesNothing) {
  std::shared_ptr<Engine> engine = small_net();
  ASSERT_TRUE(engine);
  const Tensor x = random_tensor({2, 3, 12, 12}, 5);
  std::vector<float> mine(x.numel());
  std::memcpy(mine.data(), x.raw(), x.nbytes());
  {
    auto reg = register_host_memory(mine.data(), x.nbytes());
    ASSERT_TRUE(reg.is_ok()) << reg.status().to_string();
    EXPECT_EQ(reg->bytes(), x.nbytes());
    // Pinned exactly where CUDA sees a GPU.
    EXPECT_EQ(reg->pinned(), cuda_device_count() > 0);
    HostMemoryRegistration moved = std::move(*reg);
    EXPECT_FALSE(reg->pinned());
    auto ctx = engine->create_context();
    auto a = ctx->run({{"x", x}});
    auto b = ctx->run({{"x", Tensor::borrow(mine.data(), x.dtype(), x.shape())}});
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    const std::string out = engine->outputs()[0].name;
    EXPECT_EQ(a->at(out).to_floats(), b->at(out).to_floats());
  }
  auto null = register_host_memory(nullptr, 16);
  ASSERT_FALSE(null.is_ok());
  EXPECT_NE(null.status().message().find("a null pointer"), std::string::npos);
  auto none = register_host_memory(mine.data(), 0);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no bytes"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
