// Whole models on the GPU against kiln's fp32 CPU result (fp32/tf32 within 1e-3, fp16 within
// 1e-2 relative L2, wider where PyTorch's own error is wider: tolerance_for), CUDA-graph replay and
// shape changes and plan files (the Fashion-MNIST accuracy: test_accuracy_cuda.cc).
//
// Models come from $KILN_MODEL_DIR (default models/cache: scripts/models/
// prepare_test_models.sh writes them); the Fashion-MNIST test set from
// $KILN_FASHION_MNIST_DIR (default /usr/share/datasets/fashion-mnist). A missing model is
// reported as a skipped test, never as a pass.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "runtime/plan_file.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string model_path(const std::string& name) {
  if (name == "fashion_mnist")
    return env_or("KILN_FASHION_MODEL",
                  std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx");
  return env_or("KILN_MODEL_DIR", std::string(KILN_SOURCE_DIR) + "/models/cache") + "/" + name +
         ".onnx";
}

Shape input_shape(const std::string& name, int64_t batch) {
  if (name == "fashion_mnist") return {batch, 1, 28, 28};
  return {batch, 3, 224, 224};
}

Tensor random_input(const Shape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(shape_numel(s));
  for (float& x : v) x = d(gen);
  return Tensor::from_floats(s, v);
}

Result<std::map<std::string, Tensor>> run_once(const std::string& path, const EngineOptions& o,
                                               const Tensor& x) {
  KILN_ASSIGN_OR_RETURN(auto engine, Engine::load(path, o));
  auto ctx = engine->create_context();
  return ctx->run({{engine->inputs()[0].name, x}});
}

// The fp32 truth: kiln's CPU engine (oneDNN; itself checked against the reference kernels
// and ONNX Runtime within 1e-5, far inside these tolerances, and minutes faster than the
// single-threaded reference loops on ResNet-50), computed once per model and input (each
// model is checked in three precisions against the same input).
Result<std::map<std::string, Tensor>> reference_result(const std::string& path, const Tensor& x,
                                                       uint32_t seed) {
  static std::map<std::string, std::map<std::string, Tensor>> cache;
  const std::string key = path + "#" + shape_str(x.shape()) + "#" + std::to_string(seed);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  EngineOptions o;
  KILN_ASSIGN_OR_RETURN(auto r, run_once(path, o, x));
  cache.emplace(key, r);
  return r;
}

struct ModelCase {
  std::string model;
  std::string precision;
};

// fp32 and tf32 within 1e-3, fp16 within 1e-2 of the fp32 CPU reference result, except where
// the model itself amplifies rounding beyond that. On these seeded random-weight networks
// PyTorch 2.11's own fp16 is 2.6e-2 (ResNet-50) and 2.0e-2 (MobileNetV2) from its fp32, and
// its tf32 1.1e-3 (ResNet-18), 1.8e-2 and 9.9e-3 (scripts/gpu/torch_precision_error.py,
// bench/results/gpu.md). There kiln must do as well as that yardstick: its fp16 bound, and
// its tf32 one with 10% room (tensor-core TF32 rounds the same way, so kiln's error lands on
// PyTorch's: 1.14e-3, 1.80e-2 and 9.6e-3 measured).
double tolerance_for(const ModelCase& c) {
  if (c.precision == "fp16") {
    if (c.model == "resnet50") return 2.6e-2;
    if (c.model == "mobilenet_v2") return 2.0e-2;
    return 1e-2;
  }
  // bf16 keeps 8 bits of mantissa to fp16's 11: 8x fp16's rounding, so 8x its bound.
  if (c.precision == "bf16") {
    if (c.model == "resnet50") return 8 * 2.6e-2;
    if (c.model == "mobilenet_v2") return 8 * 2.0e-2;
    return 8e-2;
  }
  if (c.precision == "tf32") {
    if (c.model == "resnet18") return 1.1e-3 * 1.1;
    if (c.model == "resnet50") return 1.8e-2 * 1.1;
    if (c.model == "mobilenet_v2") return 9.9e-3 * 1.1;
  }
  return 1e-3;
}

class CudaModel : public testing::TestWithParam<ModelCase> {};

TEST_P(CudaModel, MatchesCpuFp32) {
  const ModelCase& c = GetParam();
  std::string path = model_path(c.model);
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  Tensor x = random_input(input_shape(c.model, 2), 7);
  auto want = reference_result(path, x, 7);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = *parse_precision(c.precision);
  o.cuda_graph = true;
  // KILN_TEST_NO_TACTICS=1: the libraries' first choice instead of timing every layer (the
  // timing dominates this test's run time).
  // Timed in fp16, the precision engines are built for, with at most 2 candidates per layer
  // and path (the kernel tests time the others); the libraries' first choice in fp32/tf32.
  o.time_tactics = env_or("KILN_TEST_NO_TACTICS", "0") != "1" && c.precision == "fp16";
  o.max_tactics = 2;
  o.poison_memory = true;
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  const std::string in = (*engine)->inputs()[0].name;
  const double tol = tolerance_for(c);
  // Run 1 is eager, run 2 captures the CUDA graph, run 3 replays it: all must agree.
  for (int run = 0; run < 3; ++run) {
    auto got = ctx->run({{in, x}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    for (const auto& [name, t] : *want) {
      double err = test::relative_l2(got->at(name), t);
      std::printf("[ model    ] %s %s run %d output %s: relative L2 %.3g\n", c.model.c_str(),
                  c.precision.c_str(), run, name.c_str(), err);
      EXPECT_LE(err, tol) << c.model << " " << c.precision << " run " << run;
    }
  }
  EXPECT_TRUE(ctx->uses_cuda_graph());
  // A new batch size builds a new plan on the same context.
  Tensor x3 = random_input(input_shape(c.model, 3), 8);
  auto want3 = reference_result(path, x3, 8);
  ASSERT_TRUE(want3.is_ok());
  auto got3 = ctx->run({{in, x3}});
  ASSERT_TRUE(got3.is_ok()) << got3.status().to_string();
  for (const auto& [name, t] : *want3) EXPECT_LE(test::relative_l2(got3->at(name), t), tol);
  auto mem = ctx->device_memory();
  ASSERT_TRUE(mem.is_ok());
  EXPECT_GT(mem->arena, 0);
  EXPECT_GE(mem->arena, mem->arena_lower_bound);
  EXPECT_GT(mem->weights, 0);
}

std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> r;
  for (const char* m : {"fashion_mnist", "resnet18", "resnet50", "mobilenet_v2"})
    for (const char* p : {"fp32", "tf32", "fp16", "bf16"}) r.push_back({m, p});
  return r;
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModel, testing::ValuesIn(model_cases()),
                         [](const testing::TestParamInfo<ModelCase>& i) {
                           return i.param.model + "_" + i.param.precision;
                         });

// Plan files: a saved plan loads and gives the same result without re-timing; a damaged
// plan or one for another device is refused with an error saying so.
TEST(CudaPlanFile, SaveLoadAndRefusals) {
  std::string path = model_path("fashion_mnist");
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.space_to_depth = SpaceToDepth::kOff;  // recorded in the plan: the load must keep it
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  Tensor x = random_input({4, 1, 28, 28}, 3);
  auto ctx = (*engine)->create_context();
  auto first = ctx->run({{"input", x}});
  ASSERT_TRUE(first.is_ok());
  std::string plan = testing::TempDir() + "/fashion.kiln";
  ASSERT_TRUE((*engine)->save_plan(plan).is_ok());

  EngineOptions plain;  // what the plan recorded replaces the caller's build options
  plain.device = Device::kCuda;
  auto loaded = Engine::load(plan, plain);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->options().precision, Precision::kFp16);
  EXPECT_EQ((*loaded)->options().space_to_depth, SpaceToDepth::kOff);
  auto again = (*loaded)->create_context()->run({{"input", x}});
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_LE(test::relative_l2(again->at("logits"), first->at("logits")), 1e-6);

  std::string bytes;
  {
    std::ifstream f(plan, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto parsed = parse_plan(bytes, plan);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  PlanFile other = *parsed;
  other.device_tag = "Some Other GPU sm_80 cudnn 90000 cudart 12000";
  std::string other_path = testing::TempDir() + "/other.kiln";
  std::ofstream(other_path, std::ios::binary) << serialize_plan(other);
  auto refused = Engine::load(other_path, o);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("was built for Some Other GPU"), std::string::npos)
      << refused.status().message();

  bytes[bytes.size() / 2] ^= 0x5A;
  std::string bad_path = testing::TempDir() + "/bad.kiln";
  std::ofstream(bad_path, std::ios::binary) << bytes;
  auto damaged = Engine::load(bad_path, o);
  ASSERT_FALSE(damaged.is_ok());
  EXPECT_NE(damaged.status().message().find("damaged"), std::string::npos)
      << damaged.status().message();
}

// Plans as data: an engine with shape profiles builds their plans with the engine and
// reports them (steps, devices, layouts, memory); a plan file records them with the profiles,
// and loading it builds the same plans again without timing. A file whose saved plan this
// build does not reproduce is refused, naming the line that differs.
TEST(CudaPlanFile, ProfilesPlansAreSavedAndRebuiltAlike) {
  std::string path = model_path("fashion_mnist");
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.shape_profiles = {{{"input", {1, 1, 28, 28}}}, {{"input", {8, 1, 28, 28}}}};
  auto engine = Engine::load(path, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::vector<PlanInfo>& plans = (*engine)->report().plans;
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[1].input_shapes.at("input"), (std::vector<int64_t>{8, 1, 28, 28}));
  ASSERT_FALSE(plans[1].steps.empty());
  int convs = 0;
  for (const PlanStepInfo& s : plans[1].steps) {
    EXPECT_EQ(s.device, "cuda") << s.name;
    convs += s.op == "Conv";
  }
  EXPECT_GT(convs, 0);
  EXPECT_GT(plans[1].arena_bytes.at("cuda"), plans[0].arena_bytes.at("cuda"));
  EXPECT_NE(plans[1].text().find("float16"), std::string::npos) << plans[1].text();
  // A context's plan of the same shapes is the profile's.
  auto ctx = (*engine)->create_context();
  ASSERT_TRUE(ctx->run({{"input", random_input({8, 1, 28, 28}, 5)}}).is_ok());
  auto now = ctx->plan();
  ASSERT_TRUE(now.is_ok()) << now.status().to_string();
  EXPECT_EQ(now->structure(), plans[1].structure());
  EXPECT_EQ(ctx->stats().plan_builds, 2);  // the profiles', none for this run

  const std::string file = testing::TempDir() + "/profiles.kiln";
  ASSERT_TRUE((*engine)->save_plan(file).is_ok());
  EngineOptions plain;
  plain.device = Device::kCuda;
  auto loaded = Engine::load(file, plain);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  ASSERT_EQ((*loaded)->options().shape_profiles, o.shape_profiles);
  ASSERT_EQ((*loaded)->report().plans.size(), 2u);
  EXPECT_EQ((*loaded)->report().plans[1].structure(), plans[1].structure());

  std::string bytes;
  {
    std::ifstream f(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto parsed = parse_plan(bytes, file);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->plans.size(), 2u);
  PlanFile other = *parsed;
  other.plans[1].replace(other.plans[1].find("float16"), 7, "float32");
  const std::string other_path = testing::TempDir() + "/other_plan.kiln";
  std::ofstream(other_path, std::ios::binary) << serialize_plan(other);
  auto refused = Engine::load(other_path, plain);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("shape profile 2 builds a different plan"),
            std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace kiln
