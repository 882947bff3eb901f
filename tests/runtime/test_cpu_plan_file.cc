// Plan files of CPU engines: saved with the oneDNN choices they timed (conv algorithms and
// layouts, reorder times) and the CPU's instruction sets; loaded on the same kind of CPU they
// plan the same steps without timing and give the same bits; another CPU, another device or a
// damaged choice is refused with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/engine.h"
#include "ops/op_test_util.h"
#include "runtime/plan_file.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

class CpuPlanFile : public ::testing::TestWithParam<CpuLayout> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_cpu_plan_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(static_cast<int>(GetParam())));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_P(CpuPlanFile, SavedPlanLoadsAlikeAndGivesTheSameBits) {
  auto probe = Engine::load(kModel, EngineOptions{});
  ASSERT_TRUE(probe.is_ok()) << probe.status().to_string();
  const TensorInfo in = (*probe)->inputs()[0];
  Shape shape = in.dims;
  shape[0] = 3;
  EngineOptions o;
  o.threads = 1;
  o.cpu_layout = GetParam();
  o.shape_profiles = {{{in.name, shape}}};
  auto engine = Engine::load(kModel, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string file = path("m.kiln");
  ASSERT_TRUE((*engine)->save_plan(file).is_ok());

  auto parsed = parse_plan(slurp(file), file);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->device_tag.rfind("cpu ", 0), 0u) << parsed->device_tag;
  int convs = 0;
  for (const auto& [key, value] : parsed->tactics) convs += key.rfind("onednn conv ", 0) == 0;
  EXPECT_GT(convs, 0) << "the oneDNN conv choices are saved";
  ASSERT_EQ(parsed->plans.size(), 1u);

  EngineOptions run_opts;
  run_opts.threads = 1;
  auto loaded = Engine::load(file, run_opts);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->report().plans.at(0).structure(), parsed->plans[0]);
  const Tensor x = random_tensor(shape, 17);
  auto a = (*engine)->create_context()->run({{in.name, x}});
  auto b = (*loaded)->create_context()->run({{in.name, x}});
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  for (const auto& [name, t] : *a) {
    const Tensor& u = b->at(name);
    ASSERT_EQ(t.shape(), u.shape());
    EXPECT_EQ(std::memcmp(t.raw(), u.raw(), t.nbytes()), 0) << name;
  }

  // Another kind of CPU: refused, naming both.
  PlanFile other = *parsed;
  other.device_tag = "cpu avx9000";
  write(path("other.kiln"), serialize_plan(other));
  auto refused = Engine::load(path("other.kiln"), run_opts);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("was built for cpu avx9000; this machine has cpu "),
            std::string::npos)
      << refused.status().to_string();
  // Another device.
  EngineOptions cuda = run_opts;
  cuda.device = Device::kCuda;
  auto wrong_device = Engine::load(file, cuda);
  ASSERT_FALSE(wrong_device.is_ok());
  EXPECT_NE(wrong_device.status().message().find("is a CPU plan file; run it with --device cpu"),
            std::string::npos)
      << wrong_device.status().to_string();
  // A choice that does not read.
  PlanFile damaged = *parsed;
  for (auto& [key, value] : damaged.tactics)
    if (key.rfind("onednn conv ", 0) == 0) value = "7 garbage";
  write(path("damaged.kiln"), serialize_plan(damaged));
  auto bad = Engine::load(path("damaged.kiln"), run_opts);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("cannot read '7 garbage'"), std::string::npos)
      << bad.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Layouts, CpuPlanFile,
                         ::testing::Values(CpuLayout::kAuto, CpuLayout::kValue),
                         [](const auto& info) { return std::string(cpu_layout_name(info.param)); });

}  // namespace
}  // namespace kiln::test
