// Context::enqueue on the GPU: many runs in flight on one Context, from pageable host memory,
// come back in order with run()'s outputs (fp32 and fp16, with and without the CUDA graph);
// outputs can stay on the GPU (converted to the graph's dtype there) or go into the caller's
// GPU or host buffers; a run is ordered with a caller's stream both ways; value_stats sees every
// value on the GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"

namespace kiln {
namespace {

std::string fashion_model() {
  const char* v = std::getenv("KILN_FASHION_MODEL");
  return v && *v ? v : std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
}

std::shared_ptr<Engine> load(Precision p, bool graph) {
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = p;
  o.cuda_graph = graph;
  auto e = Engine::load(fashion_model(), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::vector<float> gpu_floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(cudaMemcpy(v.data(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(CudaEnqueue, ManyRunsInFlightComeBackInOrderWithRunsOutputs) {
  if (!std::filesystem::exists(fashion_model())) GTEST_SKIP() << "no Fashion-MNIST model";
  for (Precision p : {Precision::kFp32, Precision::kFp16})
    for (bool graph : {false, true}) {
      SCOPED_TRACE(std::string(precision_name(p)) + (graph ? " graph" : ""));
      auto engine = load(p, graph);
      ASSERT_NE(engine, nullptr);
      const std::string in = engine->inputs()[0].name, out = engine->outputs()[0].name;
      constexpr int kRuns = 24;
      std::vector<Tensor> inputs;
      std::vector<std::vector<float>> want;
      auto alone = engine->create_context();
      for (int i = 0; i < kRuns; ++i) {
        inputs.push_back(
            test::random_tensor({1 + i % 3, 1, 28, 28}, 70 + static_cast<uint32_t>(i)));
        auto r = alone->run({{in, inputs.back()}});
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        want.push_back(r->at(out).to_floats());
      }
      auto ctx = engine->create_context();
      std::mutex mu;
      std::vector<int> order;
      std::vector<std::vector<float>> got(kRuns);
      std::atomic<int> failed{0};
      for (int i = 0; i < kRuns; ++i) {
        const Status st =
            ctx->enqueue({{in, inputs[i]}}, [&, i](Result<std::map<std::string, Tensor>> r) {
              std::lock_guard<std::mutex> lock(mu);
              order.push_back(i);
              if (!r.is_ok()) {
                ++failed;
                return;
              }
              got[i] = r->at(out).to_floats();
            });
        ASSERT_TRUE(st.is_ok()) << st.to_string();
      }
      ASSERT_TRUE(ctx->wait().is_ok());
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_EQ(order.size(), static_cast<size_t>(kRuns));
      for (int i = 0; i < kRuns; ++i) EXPECT_EQ(order[i], i);
      EXPECT_EQ(failed.load(), 0);
      for (int i = 0; i < kRuns; ++i) EXPECT_EQ(got[i], want[i]) << "run " << i;
    }
}

// The caller's stream writes the input (after a queue of other work) and reads the output: the
// run waits for the first and the read for the run, with nothing waited for on the host.
TEST(CudaEnqueue, RunsAreOrderedWithTheCallersStream) {
  if (!std::filesystem::exists(fashion_model())) GTEST_SKIP() << "no Fashion-MNIST model";
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    auto engine = load(Precision::kFp16, graph);
    ASSERT_NE(engine, nullptr);
    const std::string in = engine->inputs()[0].name, out = engine->outputs()[0].name;
    auto ctx = engine->create_context();
    const Tensor x0 = test::random_tensor({3, 1, 28, 28}, 301);
    const Tensor x1 = test::random_tensor({3, 1, 28, 28}, 302);
    auto want = ctx->run({{in, x1}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    const std::vector<float> w = want->at(out).to_floats();
    auto gpu_in = copy_to_gpu(x0, 0);
    auto pinned_in = pinned_tensor(DataType::kFloat32, x1.shape());
    auto pinned_out = pinned_tensor(DataType::kFloat32, want->at(out).shape());
    Tensor nan_out(DataType::kFloat32, want->at(out).shape());
    for (int64_t i = 0; i < nan_out.numel(); ++i) nan_out.data<float>()[i] = std::nanf("");
    auto gpu_out = copy_to_gpu(nan_out, 0);
    ASSERT_TRUE(gpu_in.is_ok() && pinned_in.is_ok() && pinned_out.is_ok() && gpu_out.is_ok());
    std::memcpy(pinned_in->raw(), x1.raw(), x1.nbytes());
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    void* busy = nullptr;
    constexpr size_t kBusy = size_t{256} << 20;
    ASSERT_EQ(cudaMalloc(&busy, kBusy), cudaSuccess);
    for (int round = 0; round < 3; ++round) {
      // Work that keeps the stream busy for milliseconds, then the input written behind it.
      for (int k = 0; k < 40; ++k) ASSERT_EQ(cudaMemsetAsync(busy, k, kBusy, s), cudaSuccess);
      ASSERT_EQ(
          cudaMemcpyAsync(gpu_in->raw(), pinned_in->raw(), x1.nbytes(), cudaMemcpyHostToDevice, s),
          cudaSuccess);
      EnqueueOptions o;
      o.stream = s;
      o.buffers[out] = *gpu_out;
      std::atomic<int> done{0};
      ASSERT_TRUE(ctx->enqueue(
                         {{in, *gpu_in}}, [&](auto r) { done += r.is_ok() ? 1 : 100; }, o)
                      .is_ok());
      // Read on the caller's stream, before the run is known to be done.
      ASSERT_EQ(cudaMemcpyAsync(pinned_out->raw(), gpu_out->raw(), pinned_out->nbytes(),
                                cudaMemcpyDeviceToHost, s),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(pinned_out->to_floats(), w) << "round " << round;
      ASSERT_TRUE(ctx->wait().is_ok());
      EXPECT_EQ(done.load(), 1);
      // Put the old input and NaN outputs back for the next round.
      ASSERT_EQ(cudaMemcpy(gpu_in->raw(), x0.raw(), x0.nbytes(), cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(gpu_out->raw(), nan_out.raw(), nan_out.nbytes(), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    cudaFree(busy);
    cudaStreamDestroy(s);
  }
}

TEST(CudaEnqueue, OutputsStayOnTheGpuOrGoIntoTheCallersBuffers) {
  if (!std::filesystem::exists(fashion_model())) GTEST_SKIP() << "no Fashion-MNIST model";
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(precision_name(p));
    auto engine = load(p, true);
    ASSERT_NE(engine, nullptr);
    const std::string in = engine->inputs()[0].name, out = engine->outputs()[0].name;
    auto ctx = engine->create_context();
    const Tensor x = test::random_tensor({3, 1, 28, 28}, 91);
    auto want = ctx->run({{in, x}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    const Tensor& w = want->at(out);
    auto enqueue_and_wait = [&](const EnqueueOptions& place) -> Tensor {
      Tensor result;
      const Status st = ctx->enqueue(
          {{in, x}},
          [&](Result<std::map<std::string, Tensor>> r) {
            EXPECT_TRUE(r.is_ok()) << r.status().to_string();
            if (r.is_ok()) result = r->at(out);
          },
          place);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_TRUE(ctx->wait().is_ok());
      return result;
    };
    {  // kept on the GPU, in float32
      EnqueueOptions place;
      place.on_device = true;
      Tensor t = enqueue_and_wait(place);
      ASSERT_TRUE(t.defined());
      EXPECT_EQ(t.gpu(), 0);
      EXPECT_EQ(t.shape(), w.shape());
      EXPECT_EQ(gpu_floats(t), w.to_floats());
    }
    {  // into a GPU buffer of the caller's, poisoned first
      std::vector<float> nan(static_cast<size_t>(w.numel()), std::nanf(""));
      auto buffer = copy_to_gpu(Tensor::from_floats(w.shape(), nan), 0);
      ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
      EnqueueOptions place;
      place.buffers[out] = *buffer;
      Tensor t = enqueue_and_wait(place);
      EXPECT_EQ(t.raw(), buffer->raw());
      EXPECT_EQ(gpu_floats(*buffer), w.to_floats());
    }
    {  // into a host buffer of the caller's
      Tensor buffer(w.dtype(), w.shape());
      EnqueueOptions place;
      place.buffers[out] = buffer;
      Tensor t = enqueue_and_wait(place);
      EXPECT_EQ(t.raw(), buffer.raw());
      EXPECT_EQ(buffer.to_floats(), w.to_floats());
    }
  }
}

TEST(CudaValueStats, SeesEveryValueOnTheGpu) {
  if (!std::filesystem::exists(fashion_model())) GTEST_SKIP() << "no Fashion-MNIST model";
  auto engine = load(Precision::kFp16, false);
  ASSERT_NE(engine, nullptr);
  const std::string in = engine->inputs()[0].name, out = engine->outputs()[0].name;
  auto ctx = engine->create_context();
  const Tensor x = test::random_tensor({2, 1, 28, 28}, 5);
  auto stats = ctx->value_stats({{in, x}});
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  ASSERT_GE(stats->size(), 3u);
  bool saw_output = false;
  for (const ValueStats& s : *stats) {
    EXPECT_GT(s.count, 0) << s.value;
    EXPECT_GT(s.nonzero, 0) << s.value;
    EXPECT_EQ(s.nonfinite, 0) << s.value;
    if (s.value != out) continue;
    saw_output = true;
    auto r = ctx->run({{in, x}});
    ASSERT_TRUE(r.is_ok());
    double max_abs = 0;
    for (float v : r->at(out).to_floats()) max_abs = std::max<double>(max_abs, std::fabs(v));
    EXPECT_NEAR(s.max_abs, max_abs, 1e-6 * max_abs) << s.value;
  }
  EXPECT_TRUE(saw_output);
}

}  // namespace
}  // namespace kiln
