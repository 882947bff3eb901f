// EngineOptions::precision_overrides checked at build on the CPU: a name that is no node of
// the optimized graph (unknown, or merged away by the optimizer) is an error saying which;
// the CPU takes fp32 overrides (what it computes anyway) and refuses fp16/tf32 (bf16:
// tests/runtime/test_cpu_bf16.cc). The CUDA side
// (a layer in fp32 inside an fp16 plan) is tests/backends/cuda/test_precision_overrides.cc.
#include <gtest/gtest.h>

#include <random>

#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// x [1,4,6,6] → Conv "conv1" → Relu "relu1" (fused into conv1) → Conv "conv2" → y.
ModelBuilder two_convs() {
  ModelBuilder b(17);
  b.input("x", kFloat, {1, 4, 6, 6});
  b.initializer("w1", {4, 4, 3, 3}, random_tensor({4, 4, 3, 3}, 11, -0.3f, 0.3f).to_floats());
  b.initializer("w2", {2, 4, 1, 1}, random_tensor({2, 4, 1, 1}, 12, -0.3f, 0.3f).to_floats());
  add_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"y"}, "conv2");
  b.output("y", kFloat, {1, 2, 6, 6});
  return b;
}

Result<std::shared_ptr<Engine>> build(const std::map<std::string, Precision>& overrides) {
  EngineOptions o;
  o.precision_overrides = overrides;
  return Engine::from_bytes(two_convs().bytes(), o);
}

TEST(PrecisionOverrides, NamesAreCheckedAgainstTheOptimizedGraph) {
  auto unknown = build({{"conv9", Precision::kFp32}});
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("the model has no node 'conv9'"), std::string::npos)
      << unknown.status().to_string();

  auto fused = build({{"relu1", Precision::kFp32}});
  ASSERT_FALSE(fused.is_ok());
  EXPECT_NE(fused.status().message().find("node 'relu1' was fused into 'conv1' (conv1 + relu1 "
                                          "→ Conv[Relu]): override 'conv1' instead"),
            std::string::npos)
      << fused.status().to_string();
}

TEST(PrecisionOverrides, TheCpuTakesFp32AndRefusesTheRest) {
  auto half = build({{"conv1", Precision::kFp16}});
  ASSERT_FALSE(half.is_ok());
  EXPECT_EQ(half.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(half.status().message().find("conv1=fp16 needs a CUDA engine"), std::string::npos)
      << half.status().to_string();

  auto plain = build({});
  auto fp32 = build({{"conv1", Precision::kFp32}, {"conv2", Precision::kFp32}});
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  std::vector<float> xv(144);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37f * static_cast<float>(i));
  Tensor x = Tensor::from_floats({1, 4, 6, 6}, xv);
  auto a = (*plain)->create_context()->run({{"x", x}});
  auto b = (*fp32)->create_context()->run({{"x", x}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  expect_near(b->at("y"), a->at("y"), 0);
}

}  // namespace
}  // namespace kiln::test
