// Context::profile_layers on a CPU engine: one entry per node in execution order, timed over
// re-runs of the last inputs, and a clear error before any run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kiln/engine.h"

namespace kiln {
namespace {

TEST(CpuProfile, OneTimedEntryPerNodeAfterARun) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " has not been trained";
  for (const char* backend : {"auto", "reference"}) {
    SCOPED_TRACE(backend);
    EngineOptions o;
    o.backend = *parse_kernel_choice(backend);
    o.threads = 1;
    auto engine = Engine::load(path, o);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto ctx = (*engine)->create_context();
    auto before = ctx->profile_layers(2);
    ASSERT_FALSE(before.is_ok());
    EXPECT_NE(before.status().message().find("run()"), std::string::npos)
        << before.status().to_string();

    const TensorInfo& in = (*engine)->inputs()[0];
    std::vector<float> pixels(2 * 28 * 28);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 17) / 17.f;
    auto out = ctx->run({{in.name, Tensor::from_floats({2, 1, 28, 28}, pixels)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();

    auto layers = ctx->profile_layers(3);
    ASSERT_TRUE(layers.is_ok()) << layers.status().to_string();
    ASSERT_FALSE(layers->empty());
    double total = 0;
    for (const LayerProfile& l : *layers) {
      EXPECT_FALSE(l.name.empty());
      EXPECT_FALSE(l.op.empty());
      EXPECT_FALSE(l.tactic.empty()) << l.name;  // the backend that ran it
      EXPECT_TRUE(l.on_cpu);
      EXPECT_GE(l.ms, 0) << l.name;
      total += l.ms;
    }
    EXPECT_GT(total, 0);
    if (std::string(backend) == "reference") {
      // Reshape-like steps are views of their input's bytes (they do not run).
      for (const LayerProfile& l : *layers) {
        EXPECT_EQ(l.tactic, l.op == "Flatten" || l.op == "Reshape" ? "view" : "reference")
            << l.name;
      }
    } else {
      // A oneDNN kernel names the implementation it prepared (what `kiln inspect --plan`
      // and profiles show), e.g. "onednn brgconv:avx512_core" or "onednn jit:avx2".
      int named = 0;
      for (const LayerProfile& l : *layers)
        if (l.op == "Conv") {
          EXPECT_EQ(l.tactic.rfind("onednn ", 0), 0u) << l.name << ": " << l.tactic;
          named += l.tactic.size() > std::string("onednn ").size();
        }
      EXPECT_GT(named, 0);
    }
    // The context still runs normally afterwards, with the same answer.
    auto again = ctx->run({{in.name, Tensor::from_floats({2, 1, 28, 28}, pixels)}});
    ASSERT_TRUE(again.is_ok());
    for (const auto& [name, t] : *out)
      EXPECT_EQ(again->at(name).to_floats(), t.to_floats()) << name;
    EXPECT_FALSE(ctx->profile_layers(0).is_ok());
  }
}

}  // namespace
}  // namespace kiln
