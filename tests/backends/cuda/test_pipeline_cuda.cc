// The Pipeline on CUDA: 4 Contexts (4 streams) of one Engine, warmed one after the other, run
// 600 requests from 3 threads, batch 1 to 4, each equal to the same request run alone on a
// Context of its own (the same kernels: the tactics the first Context timed are cached for the
// others), none lost; a bad request fails alone. With the compute ordered across the streams
// and not, and with the Contexts spread over two Engines on GPU 0 (what --gpus 0,0 builds).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>
#include <thread>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/pipeline.h"

namespace kiln {
namespace {

std::string fashion_model() {
  const char* v = std::getenv("KILN_FASHION_MODEL");
  return v && *v ? v : std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
}

// A CUDA engine's options in `precision`, with or without the CUDA graph.
EngineOptions cuda_options(Precision precision, bool graph) {
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = precision;
  o.cuda_graph = graph;
  return o;
}

// Runs `body(engine, input name, output name)` on the Fashion-MNIST model as a CUDA fp16
// engine, without and then with the CUDA graph.
void with_fashion_fp16(
    const std::function<void(Engine&, const std::string&, const std::string&)>& body) {
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "cuda graph" : "no graph");
    const EngineOptions o = cuda_options(Precision::kFp16, graph);
    auto engine = Engine::load(fashion_model(), o);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    body(**engine, (*engine)->inputs()[0].name, (*engine)->outputs()[0].name);
  }
}

TEST(CudaPipeline, FourStreamsGiveTheResultsOfOneContextEach) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(precision_name(p));
    const EngineOptions o = cuda_options(p, true);
    auto engine = Engine::load(path, o);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    const std::string in = (*engine)->inputs()[0].name, out = (*engine)->outputs()[0].name;
    constexpr int kDistinct = 12;
    std::vector<Outputs> inputs(kDistinct), want(kDistinct);
    auto alone = (*engine)->create_context();
    for (int i = 0; i < kDistinct; ++i) {
      inputs[i] = {
          {in, test::random_tensor({1 + i % 4, 1, 28, 28}, 40 + static_cast<uint32_t>(i))}};
      auto r = alone->run(inputs[i]);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      want[i] = std::move(*r);
    }
    auto second = Engine::load(path, o);
    ASSERT_TRUE(second.is_ok()) << second.status().to_string();
    using Order = PipelineOptions::ComputeOrder;
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE(variant == 0   ? "ordered compute"
                   : variant == 1 ? "unordered"
                   : variant == 2 ? "two engines"
                                  : "order chosen by timing");
      PipelineOptions po{4, 8};
      po.order_round_seconds = 0.05;  // short rounds: the choice is not what is tested here
      po.compute_order = variant == 1   ? Order::kConcurrent
                         : variant == 3 ? Order::kTimed
                                        : Order::kOrdered;
      std::vector<std::shared_ptr<const Engine>> engines{*engine};
      if (variant == 2) engines.push_back(*second);
      auto pipeline = Pipeline::create(engines, po);
      ASSERT_TRUE(pipeline.is_ok()) << pipeline.status().to_string();
      for (int k = 0; k < 4; ++k) EXPECT_EQ((*pipeline)->context_device(k), 0);
      for (int b = 1; b <= 4; ++b) {
        auto warm = (*pipeline)->warm_up({{in, test::random_tensor({b, 1, 28, 28}, 1)}});
        ASSERT_TRUE(warm.is_ok()) << warm.to_string();
        const ComputeOrderTiming t = (*pipeline)->compute_order_timing();
        if (variant != 3) {
          EXPECT_EQ(t.rounds, 0);
          EXPECT_EQ((*pipeline)->compute_ordered(), variant != 1);
          continue;
        }
        // Timed each way, and the faster kept (each warm_up times again, for its shapes).
        EXPECT_EQ(t.rounds, 3);
        EXPECT_GT(t.ordered_per_s, 0);
        EXPECT_GT(t.concurrent_per_s, 0);
        EXPECT_EQ((*pipeline)->compute_ordered(), t.ordered_per_s >= t.concurrent_per_s);
      }
      const PipelineStats warmed = (*pipeline)->stats();  // warm_up's timing rounds included
      constexpr int kThreads = 3, kPerThread = 200;
      std::vector<std::vector<std::future<Result<Outputs>>>> futures(kThreads);
      std::vector<std::thread> submitters;
      for (int t = 0; t < kThreads; ++t)
        submitters.emplace_back([&, t] {
          for (int i = 0; i < kPerThread; ++i)
            futures[t].push_back((*pipeline)->submit(inputs[(t * 7 + i) % kDistinct]));
        });
      for (std::thread& s : submitters) s.join();
      for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < kPerThread; ++i) {
          Result<Outputs> r = futures[t][i].get();
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          const Tensor& w = want[(t * 7 + i) % kDistinct].at(out);
          ASSERT_EQ(r->at(out).shape(), w.shape());
          // A second Engine times its own tactics: in fp16 it may pick other kernels.
          const double tol = variant == 2 && p == Precision::kFp16 ? 5e-3 : 1e-6;
          ASSERT_LE(test::relative_l2(r->at(out), w), tol) << "thread " << t << " request " << i;
        }
      const PipelineStats s = (*pipeline)->stats();
      EXPECT_EQ(s.completed - warmed.completed, kThreads * kPerThread);
      EXPECT_EQ(s.failed, 0);
      int busy = 0;
      for (int64_t n : s.per_context) busy += n > 0;
      EXPECT_GE(busy, 2) << "the requests went to one context only";
      EXPECT_GT(s.upload_ms, 0);
      EXPECT_GT(s.compute_ms, 0);
      EXPECT_GT(s.download_ms, 0);
      EXPECT_GE(s.wait_ms, 0);
      // Without a compute order no run waits (warm_up's ordered rounds, counted in `warmed`,
      // did).
      if (!(*pipeline)->compute_ordered()) {
        EXPECT_EQ(s.wait_ms, warmed.wait_ms) << "no compute order, no wait";
      }
      // A bad request among good ones fails alone.
      auto bad = (*pipeline)->submit({{in, test::random_tensor({2, 3, 28, 28}, 9)}});
      auto good = (*pipeline)->submit(inputs[0]);
      EXPECT_FALSE(bad.get().is_ok());
      EXPECT_TRUE(good.get().is_ok());
    }
  }
}

// An input in pinned host memory is copied to the GPU in place (no staging copy): the results
// equal a pageable input's, run after run, alternating, with and without the CUDA graph.
TEST(CudaPinnedInput, GivesThePageableInputsResult) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  with_fashion_fp16([](Engine& engine, const std::string& in, const std::string& out) {
    const Tensor pageable = test::random_tensor({8, 1, 28, 28}, 77);
    auto pinned = pinned_tensor(pageable.dtype(), pageable.shape());
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    std::memcpy(pinned->raw(), pageable.raw(), pageable.nbytes());
    const Tensor other = test::random_tensor({8, 1, 28, 28}, 78);
    auto ctx = engine.create_context();
    auto want = ctx->run({{in, pageable}});
    auto want_other = ctx->run({{in, other}});
    ASSERT_TRUE(want.is_ok() && want_other.is_ok());
    for (int round = 0; round < 3; ++round) {
      auto got = ctx->run({{in, *pinned}});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_LE(test::relative_l2(got->at(out), want->at(out)), 1e-6) << "round " << round;
      auto t = ctx->last_device_timing();
      ASSERT_TRUE(t.is_ok());
      EXPECT_GT(t->h2d_ms, 0) << "the input copy is timed";
      EXPECT_GE(t->run_ms, t->stage_ms + t->finish_ms) << "host times within the run";
      EXPECT_GT(t->run_ms, 0);
      // A pageable input after it still goes through staging, and is not the pinned one.
      auto again = ctx->run({{in, other}});
      ASSERT_TRUE(again.is_ok());
      EXPECT_LE(test::relative_l2(again->at(out), want_other->at(out)), 1e-6);
    }
  });
}

// cuda_blocking_sync: a Context that sleeps on its waits gives the same results as one that
// spins, through a Pipeline of 4 ordered Contexts, with its device timing still measured.
TEST(CudaBlockingSync, GivesTheSpinningContextsResults) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  EngineOptions o = cuda_options(Precision::kFp16, true);
  o.time_tactics = false;  // both engines take the libraries' first choices: the same kernels
  auto spinning = Engine::load(path, o);
  o.cuda_blocking_sync = true;
  auto sleeping = Engine::load(path, o);
  ASSERT_TRUE(spinning.is_ok() && sleeping.is_ok());
  const std::string in = (*spinning)->inputs()[0].name, out = (*spinning)->outputs()[0].name;
  // Declared before the Pipeline, which writes them: a failed assertion destroys the Pipeline
  // (finishing its work) first.
  std::vector<DeviceTiming> timings(40);
  auto pipeline = Pipeline::create(*sleeping, PipelineOptions{4, 8});
  ASSERT_TRUE(pipeline.is_ok()) << pipeline.status().to_string();
  auto alone = (*spinning)->create_context();
  std::vector<std::pair<std::future<Result<Outputs>>, Outputs>> runs;
  for (int i = 0; i < 40; ++i) {
    const Tensor x = test::random_tensor({1 + i % 8, 1, 28, 28}, 300 + static_cast<uint32_t>(i));
    auto want = alone->run({{in, x}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    runs.emplace_back((*pipeline)->submit({{in, x}}, &timings[static_cast<size_t>(i)]),
                      std::move(*want));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    Result<Outputs> got = runs[i].first.get();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_LE(test::relative_l2(got->at(out), runs[i].second.at(out)), 1e-6) << "request " << i;
    EXPECT_GT(timings[i].compute_ms, 0) << "request " << i;
  }
}

// Context::time_compute (and profile_layers) repeat the last run's compute on its inputs, put
// back on the GPU (the arena reuses their slots), with and without the CUDA graph; after a run
// that took its input in place they refuse, naming why, and a later staged run makes them work
// again. The results are left as they were.
TEST(CudaTimeCompute, RepeatsTheLastRunsStagedInputs) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  with_fashion_fp16([](Engine& engine, const std::string& in, const std::string& out) {
    const Tensor x = test::random_tensor({8, 1, 28, 28}, 91);
    auto ctx = engine.create_context();
    EXPECT_FALSE(ctx->time_compute(2).is_ok()) << "before any run";
    auto want = ctx->run({{in, x}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    for (int round = 0; round < 2; ++round) {
      auto ms = ctx->time_compute(3);
      ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
      ASSERT_EQ(ms->size(), 3u);
      for (double t : *ms) EXPECT_GT(t, 0);
    }
    auto pinned = pinned_tensor(x.dtype(), x.shape());
    ASSERT_TRUE(pinned.is_ok()) << pinned.status().to_string();
    std::memcpy(pinned->raw(), x.raw(), x.nbytes());
    ASSERT_TRUE(ctx->run({{in, *pinned}}).is_ok());
    auto refused = ctx->time_compute(2);
    ASSERT_FALSE(refused.is_ok());
    EXPECT_NE(refused.status().message().find("in place"), std::string::npos)
        << refused.status().to_string();
    EXPECT_FALSE(ctx->profile_layers(1).is_ok()) << "the per-step profile repeats them too";
    auto again = ctx->run({{in, x}});
    ASSERT_TRUE(again.is_ok());
    EXPECT_LE(test::relative_l2(again->at(out), want->at(out)), 1e-6);
    EXPECT_TRUE(ctx->time_compute(2).is_ok());
    EXPECT_TRUE(ctx->profile_layers(1).is_ok());
    auto after = ctx->run({{in, x}});
    ASSERT_TRUE(after.is_ok());
    EXPECT_LE(test::relative_l2(after->at(out), want->at(out)), 1e-6);
  });
}

// Memory the caller registers (register_host_memory) is pinned where it lies: CUDA reports it
// as host memory it knows of, a tensor over it gives the pageable input's result (copied in
// place), a second registration of it is refused by name, and once the registration goes the
// memory is pageable again and still runs (through staging).
TEST(CudaHostMemoryRegistration, PinsTheCallersMemoryInPlace) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  const EngineOptions o = cuda_options(Precision::kFp32, true);
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string in = (*engine)->inputs()[0].name, out = (*engine)->outputs()[0].name;
  const Tensor x = test::random_tensor({8, 1, 28, 28}, 79);
  std::vector<float> mine(x.numel());
  std::memcpy(mine.data(), x.raw(), x.nbytes());
  const Tensor over = Tensor::borrow(mine.data(), x.dtype(), x.shape());
  auto ctx = (*engine)->create_context();
  auto want = ctx->run({{in, x}});
  ASSERT_TRUE(want.is_ok());
  {
    auto reg = register_host_memory(mine.data(), x.nbytes());
    ASSERT_TRUE(reg.is_ok()) << reg.status().to_string();
    EXPECT_TRUE(reg->pinned());
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    EXPECT_EQ(cuda_device_count(), count);
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, mine.data()), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeHost);
    auto twice = register_host_memory(mine.data(), x.nbytes());
    ASSERT_FALSE(twice.is_ok());
    EXPECT_NE(twice.status().message().find("already registered"), std::string::npos)
        << twice.status().to_string();
    for (int round = 0; round < 3; ++round) {
      mine[round] += 1.0f;  // the caller refills its buffer between runs
      Tensor changed = x.clone();
      changed.data<float>()[round] += 1.0f;
      auto expect = ctx->run({{in, changed}});
      auto got = ctx->run({{in, over}});
      ASSERT_TRUE(got.is_ok() && expect.is_ok()) << got.status().to_string();
      EXPECT_LE(test::relative_l2(got->at(out), expect->at(out)), 1e-6) << "round " << round;
      mine[round] -= 1.0f;
    }
  }
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, mine.data()) == cudaSuccess) {
    EXPECT_NE(attr.type, cudaMemoryTypeHost) << "unregistered when the registration went";
  }
  cudaGetLastError();
  auto again = ctx->run({{in, over}});
  ASSERT_TRUE(again.is_ok());
  EXPECT_LE(test::relative_l2(again->at(out), want->at(out)), 1e-6);
}

// Engine::for_gpu: the engine built again for a GPU (here the same one) gives the same
// results, with the same kernels chosen (the timings taken over, not measured again), and
// refuses a GPU that is not there.
TEST(CudaEngineForGpu, BuildsTheSameEngineOnAGpuOfTheSameModel) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  EngineOptions o = cuda_options(Precision::kFp16, false);
  o.shape_profiles = {{{"input", {8, 1, 28, 28}}}};
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  ASSERT_EQ((*engine)->inputs()[0].name, "input") << "the test names the model's input";
  auto other = (*engine)->for_gpu(0);
  ASSERT_TRUE(other.is_ok()) << other.status().to_string();
  EXPECT_EQ((*other)->options().device_index, 0);
  ASSERT_EQ((*engine)->report().plans.size(), 1u);
  ASSERT_EQ((*other)->report().plans.size(), 1u);
  // A tactic taken over reads "(0.0077 ms, cached)" where the measured one reads "(0.0077 ms)",
  // its time kept to fewer digits, and cuBLASLt's keeps its algorithm, not its rank among those
  // found ("#1 of 6"): the choices are compared without them.
  auto tactics = [](std::string text) {
    text = std::regex_replace(text, std::regex("[0-9.e+-]+ ms(, cached)?\\)"), "ms)");
    return std::regex_replace(text, std::regex("#[0-9]+ of [0-9]+ "), "");
  };
  const std::string built = (*engine)->report().plans[0].text();
  const std::string taken = (*other)->report().plans[0].text();
  EXPECT_EQ(built.find("cached)"), std::string::npos) << built;
  EXPECT_NE(taken.find("cached)"), std::string::npos) << "the timings taken over:\n" << taken;
  EXPECT_EQ(tactics(built), tactics(taken)) << "the same tactics, taken over";
  const Tensor x = test::random_tensor({8, 1, 28, 28}, 83);
  const std::string out = (*engine)->outputs()[0].name;
  auto a = (*engine)->create_context()->run({{"input", x}});
  auto b = (*other)->create_context()->run({{"input", x}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->at(out).to_floats(), b->at(out).to_floats());
  auto none = (*engine)->for_gpu(cuda_device_count());
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no GPU"), std::string::npos);
}

// copy_to_gpu: the input held in GPU memory gives the host input's result, run after run
// (copied device to device in place), leaves the caller's current GPU alone, and refuses a
// tensor already on a GPU and a GPU that is not there.
TEST(CudaCopyToGpu, InputsHeldOnTheGpuGiveTheHostInputsResult) {
  const std::string path = fashion_model();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  const EngineOptions o = cuda_options(Precision::kFp16, true);
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string in = (*engine)->inputs()[0].name, out = (*engine)->outputs()[0].name;
  const Tensor x = test::random_tensor({8, 1, 28, 28}, 81);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto on_gpu = copy_to_gpu(x, 0);
  ASSERT_TRUE(on_gpu.is_ok()) << on_gpu.status().to_string();
  EXPECT_EQ(on_gpu->gpu(), 0);
  EXPECT_EQ(on_gpu->shape(), x.shape());
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  std::vector<float> back(x.numel());
  ASSERT_EQ(cudaMemcpy(back.data(), on_gpu->raw(), x.nbytes(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(0, std::memcmp(back.data(), x.raw(), x.nbytes()));
  auto ctx = (*engine)->create_context();
  auto want = ctx->run({{in, x}});
  ASSERT_TRUE(want.is_ok());
  for (int round = 0; round < 3; ++round) {
    auto got = ctx->run({{in, *on_gpu}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_LE(test::relative_l2(got->at(out), want->at(out)), 1e-6) << "round " << round;
  }
  auto twice = copy_to_gpu(*on_gpu, 0);
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.status().message().find("already in the memory of GPU 0"), std::string::npos);
  EXPECT_FALSE(copy_to_gpu(x, cuda_device_count()).is_ok());
}

}  // namespace
}  // namespace kiln
