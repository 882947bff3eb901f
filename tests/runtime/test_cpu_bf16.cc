// bf16 on the CPU: where oneDNN has native bfloat16 convolutions (AVX-512 BF16 or AMX), the
// convolutions and inner products read bfloat16 input and weights and write float32, within
// bfloat16's rounding of the fp32 engine, and per-node fp32 overrides bring a node back to
// fp32; elsewhere the build is refused, naming what the CPU lacks. The reference backend
// refuses bf16 on every CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cpu/dnnl_backend.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// x [2,16,12,12] → Conv 3×3 "conv1" (+ Relu) → Conv 1×1 "conv2" → Flatten → Gemm "fc" → y.
ModelBuilder small_net() {
  ModelBuilder b(17);
  b.input("x", kFloat, {2, 16, 12, 12});
  b.initializer("w1", {32, 16, 3, 3}, random_tensor({32, 16, 3, 3}, 21, -0.2f, 0.2f).to_floats());
  b.initializer("b1", {32}, random_tensor({32}, 22, -0.1f, 0.1f).to_floats());
  b.initializer("w2", {8, 32, 1, 1}, random_tensor({8, 32, 1, 1}, 23, -0.3f, 0.3f).to_floats());
  b.initializer("wf", {10, 8 * 12 * 12},
                random_tensor({10, 8 * 12 * 12}, 24, -0.05f, 0.05f).to_floats());
  add_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads",
           std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  b.node("Flatten", {"c2"}, {"f"}, "flatten");
  add_attr(b.node("Gemm", {"f", "wf"}, {"y"}, "fc"), "transB", int64_t{1});
  b.output("y", kFloat, {2, 10});
  return b;
}

Tensor input() {
  std::vector<float> v(2 * 16 * 12 * 12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.173f * static_cast<float>(i));
  return Tensor::from_floats({2, 16, 12, 12}, v);
}

Result<Tensor> run(const EngineOptions& o) {
  KILN_ASSIGN_OR_RETURN(auto engine, Engine::from_bytes(small_net().bytes(), o));
  KILN_ASSIGN_OR_RETURN(auto out, engine->create_context()->run({{"x", input()}}));
  return out.at("y");
}

TEST(CpuBf16, RunsWithinBf16RoundingWhereTheCpuHasItElseRefused) {
  EngineOptions bf16;
  bf16.precision = Precision::kBf16;
  const Status native = cpu_precision_status(Precision::kBf16);
  if (!native.is_ok()) {
    auto r = run(bf16);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(r.status().message().find("bf16 on the CPU needs bfloat16 instructions"),
              std::string::npos)
        << r.status().to_string();
    GTEST_SKIP() << "this CPU has no native bfloat16 convolution: refused as it should be";
  }
  auto want = run(EngineOptions{});
  auto got = run(bf16);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const double err = relative_l2(*got, *want);
  std::printf("[ bf16     ] relative L2 to the fp32 engine: %.3g\n", err);
  // Rounded to bfloat16 (8 bits of mantissa) on the way in: about 2^-9 per operand, never
  // fp32's 1e-7 (which would mean the precision was ignored).
  EXPECT_LE(err, 2e-2);
  EXPECT_GE(err, 1e-4) << "bf16 gave fp32's result: the precision was not applied";

  EngineOptions back = bf16;  // every node back in fp32: fp32's result
  back.precision_overrides = {
      {"conv1", Precision::kFp32}, {"conv2", Precision::kFp32}, {"fc", Precision::kFp32}};
  auto fp32 = run(back);
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  EXPECT_LE(relative_l2(*fp32, *want), 1e-5);
}

TEST(CpuBf16, TheReferenceBackendAndOtherPrecisionsAreRefused) {
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  ref.precision = Precision::kBf16;
  auto r = run(ref);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("the reference kernels compute in fp32 only"),
            std::string::npos)
      << r.status().to_string();
  EngineOptions half;
  half.precision_overrides = {{"conv1", Precision::kFp16}};
  auto h = run(half);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("conv1=fp16 needs a CUDA engine"), std::string::npos)
      << h.status().to_string();
}

}  // namespace
}  // namespace kiln::test
