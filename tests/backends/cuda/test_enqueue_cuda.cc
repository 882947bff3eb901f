// Context::enqueue on the GPU: many runs in flight on one Context, from pageable host memory,
// come back in order with run()'s outputs (fp32 and fp16, with and without the CUDA graph);
// outputs can stay on the GPU (converted to the graph's dtype there) or go into the caller's
// GPU or host buffers; value_stats sees every value on the GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
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
    auto enqueue_and_wait = [&](const OutputPlacement& place) -> Tensor {
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
      OutputPlacement place;
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
      OutputPlacement place;
      place.buffers[out] = *buffer;
      Tensor t = enqueue_and_wait(place);
      EXPECT_EQ(t.raw(), buffer->raw());
      EXPECT_EQ(gpu_floats(*buffer), w.to_floats());
    }
    {  // into a host buffer of the caller's
      Tensor buffer(w.dtype(), w.shape());
      OutputPlacement place;
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
