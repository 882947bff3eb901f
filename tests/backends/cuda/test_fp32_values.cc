// EngineOptions::fp32_values in a CUDA fp16 plan: a value that overflows fp16 (the fp16
// range guard's finding) is kept in fp32 by its writer and readers, and the output, inf in
// plain fp16, is finite and close to the float32 reference. The mapping itself is tested on
// the CPU (tests/runtime/test_fp32_values.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "kiln/fp16_range.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// x → Mul "up1" (×300) → t → Mul "up2" (×300) → u → Mul "down" (×0.001) → y. |u| reaches
// 9e4·|x|: beyond fp16's 65504 wherever |x| > 0.73; y is back inside fp16's range.
ModelBuilder overflowing_net() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, 4, 4});
  b.initializer("k_up", {1}, {300.f});
  b.initializer("k_down", {1}, {0.001f});
  b.node("Mul", {"x", "k_up"}, {"t"}, "up1");
  b.node("Mul", {"t", "k_up"}, {"u"}, "up2");
  b.node("Mul", {"u", "k_down"}, {"y"}, "down");
  b.output("y", kFloat, {"N", 8, 4, 4});
  return b;
}

// The same around a PRelu (no CUDA kernel: a CPU step in the CUDA plan) between the two
// scalings: u and v overflow fp16, and the CPU step must read and write them in float32.
ModelBuilder overflowing_net_with_cpu_step() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, 4, 4});
  b.initializer("k_up", {1}, {300.f});
  b.initializer("k_down", {1}, {0.001f});
  b.initializer("slope", {8, 1, 1}, {0.5f, 0.25f, 0.1f, 1.f, 0.75f, 0.2f, 0.3f, 0.9f});
  b.node("Mul", {"x", "k_up"}, {"t"}, "up1");
  b.node("Mul", {"t", "k_up"}, {"u"}, "up2");
  b.node("PRelu", {"u", "slope"}, {"v"}, "act");
  b.node("Mul", {"v", "k_down"}, {"y"}, "down");
  b.output("y", kFloat, {"N", 8, 4, 4});
  return b;
}

// x [2, 8, 4, 4] of standard normal values (seed), and the CPU fp32 engine's y for it.
struct CpuReference {
  Tensor x, y;
};
CpuReference cpu_reference(const std::string& bytes, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> xv(2 * 8 * 4 * 4);
  for (float& v : xv) v = d(gen);
  CpuReference r{Tensor::from_floats({2, 8, 4, 4}, xv), Tensor()};
  auto cpu = Engine::from_bytes(bytes, {});
  EXPECT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  if (!cpu.is_ok()) return r;
  auto want = (*cpu)->create_context()->run({{"x", r.x}});
  EXPECT_TRUE(want.is_ok()) << want.status().to_string();
  if (want.is_ok()) r.y = want->at("y");
  return r;
}

int64_t nonfinite(const Tensor& t) {
  int64_t n = 0;
  for (float v : t.to_floats()) n += !std::isfinite(v);
  return n;
}

TEST(CudaFp32Values, AnOverflowingValueKeptInFp32StaysFinite) {
  const std::string bytes = overflowing_net().bytes();
  auto cpu = Engine::from_bytes(bytes, {});
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  const CpuReference ref = cpu_reference(bytes, 5);
  ASSERT_TRUE(ref.y.defined());
  const Tensor& x = ref.x;
  // The guard names u, as the CLI's --precision fp16 runs do before they build.
  auto report = check_fp16_range(**cpu, {{{"x", x}}});
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  std::vector<std::string> values;
  for (const Fp16RangeFinding& f : report->findings) values.push_back(f.value);
  ASSERT_EQ(values, std::vector<std::string>{"u"});

  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "u kept in fp32" : "plain fp16");
    EngineOptions o;
    o.device = Device::kCuda;
    o.precision = Precision::kFp16;
    o.time_tactics = false;
    o.poison_memory = true;
    if (keep) o.fp32_values = values;
    auto e = Engine::from_bytes(bytes, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    auto got = (*e)->create_context()->run({{"x", x}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const Tensor& y = got->at("y");
    if (!keep) {
      EXPECT_GT(nonfinite(y), 0) << "fp16 should overflow in u";
      EXPECT_TRUE((*e)->report().fp32_kept.empty());
      continue;
    }
    EXPECT_EQ(nonfinite(y), 0);
    EXPECT_LE(relative_l2(y, ref.y), 2e-3);
    EXPECT_EQ((*e)->report().fp32_kept,
              (std::vector<std::string>{"node 'down' (Mul) in fp32: reads 'u'",
                                        "node 'up2' (Mul) in fp32: writes 'u'"}));
    EXPECT_EQ(
        (*e)->options().precision_overrides,
        (std::map<std::string, Precision>{{"down", Precision::kFp32}, {"up2", Precision::kFp32}}));
  }
}

TEST(CudaFp32Values, ACpuStepKeptInFp32ReadsAndWritesFloat32) {
  const std::string bytes = overflowing_net_with_cpu_step().bytes();
  const CpuReference ref = cpu_reference(bytes, 6);
  ASSERT_TRUE(ref.y.defined());
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.time_tactics = false;
  o.poison_memory = true;
  o.fp32_values = {"u", "v"};
  auto e = Engine::from_bytes(bytes, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = (*e)->create_context();
  auto got = ctx->run({{"x", ref.x}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(nonfinite(got->at("y")), 0);
  EXPECT_LE(relative_l2(got->at("y"), ref.y), 2e-3);
  // The PRelu did run on the CPU (else this tests nothing).
  auto layers = ctx->profile_layers(1);
  ASSERT_TRUE(layers.is_ok()) << layers.status().to_string();
  int cpu_steps = 0;
  for (const LayerProfile& l : *layers) cpu_steps += l.on_cpu && l.name == "act";
  EXPECT_EQ(cpu_steps, 1);
}

}  // namespace
}  // namespace kiln::test
