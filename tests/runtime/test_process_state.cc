// kiln changes no process-wide state that its caller owns: the calling thread's OpenMP thread
// count is the same after building and running a CPU engine (oneDNN's kernels run with the
// engine's own count, EngineOptions::threads) as before.
#include <gtest/gtest.h>
#include <omp.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/pipeline.h"

namespace kiln {
namespace {

std::map<std::string, Tensor> fashion_inputs(const Engine& e, int64_t batch) {
  std::vector<float> pixels(static_cast<size_t>(batch) * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 23) / 23.f;
  return {{e.inputs()[0].name, Tensor::from_floats({batch, 1, 28, 28}, pixels)}};
}

TEST(ProcessState, CallersOpenMpThreadCountIsKept) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " has not been trained";
  const int cores = omp_get_num_procs();
  // The caller's own setting, unlike any count the engines below ask for: 0 (all cores), 1, 2.
  const int mine = cores + 3;
  omp_set_num_threads(mine);
  for (int threads : {0, 1, 2}) {
    SCOPED_TRACE("EngineOptions::threads " + std::to_string(threads));
    EngineOptions o;
    o.threads = threads;
    auto engine = Engine::load(path, o);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    EXPECT_EQ(omp_get_max_threads(), mine) << "after the build";
    auto ctx = (*engine)->create_context();
    for (int64_t batch : {1, 3}) {
      auto out = ctx->run(fashion_inputs(**engine, batch));
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      EXPECT_EQ(omp_get_max_threads(), mine) << "after a run of batch " << batch;
    }
    auto profile = ctx->profile_layers(1);
    ASSERT_TRUE(profile.is_ok()) << profile.status().to_string();
    EXPECT_EQ(omp_get_max_threads(), mine) << "after profile_layers";
  }
  omp_set_num_threads(cores);
}

}  // namespace
}  // namespace kiln
