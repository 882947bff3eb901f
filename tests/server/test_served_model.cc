// A repository model loaded for serving (src/server/served_model.h) on the CPU: the shipped
// Fashion-MNIST net behind the dynamic batcher, answering concurrent requests of mixed sizes
// as the offline engine does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "server/model_config.h"
#include "server/served_model.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

Tensor images(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(rows) * 784);
  for (float& x : v) x = d(gen);
  return Tensor::from_floats({rows, 1, 28, 28}, v);
}

double relative_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.data<float>()[i] - b.data<float>()[i];
    num += d * d;
    den += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

class ServedFashion : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_served_" + std::to_string(getpid()));
    fs::create_directories(root_ / "fashion" / "1");
    fs::copy_file(std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx",
                  root_ / "fashion" / "1" / "model.onnx", fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(root_); }
  void config(const std::string& text) {
    std::ofstream(root_ / "fashion" / "config.pbtxt") << text;
  }
  Result<std::unique_ptr<ServedModel>> load() {
    RepositoryModel m = read_repository_model(root_.string(), "fashion");
    if (!m.status.is_ok()) return m.status;
    return ServedModel::load(m, m.versions.front(), {});
  }
  fs::path root_;
};

TEST_F(ServedFashion, AnswersConcurrentRequestsAsTheOfflineEngine) {
  config(R"pb(
    max_batch_size: 8
    dynamic_batching { max_queue_delay_microseconds: 2000 } instance_group
    [ { count: 2 kind: KIND_CPU }]
    parameters {
      key: "threads"
      value: { string_value: "1" }
    }
  )pb");
  auto served = load();
  ASSERT_TRUE(served.is_ok()) << served.status().to_string();
  ServedModel& m = **served;
  EXPECT_EQ(m.config().input(0).name(), "input");
  EXPECT_EQ(m.engine().options().shape_profiles.size(), 4u);  // batches of 1, 2, 4 and 8
  auto offline = Engine::load((root_ / "fashion" / "1" / "model.onnx").string(), {});
  ASSERT_TRUE(offline.is_ok());

  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c)
    clients.emplace_back([&, c] {
      auto ctx = (*offline)->create_context();
      for (int i = 0; i < 8; ++i) {
        const uint32_t seed = static_cast<uint32_t>(c * 100 + i);
        const int64_t rows = 1 + seed % 3;
        const Tensor x = images(rows, seed);
        auto admitted = m.batcher().submit({{{"input", x}}});
        if (!admitted.is_ok()) {
          ++wrong;
          continue;
        }
        auto got = admitted->result.get();
        auto want = ctx->run({{"input", x}});
        if (!got.is_ok() || !want.is_ok() || got->at("logits").shape() != Shape{rows, 10} ||
            relative_l2(got->at("logits"), want->at("logits")) > 1e-4)
          ++wrong;
      }
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const BatcherStats s = m.batcher().stats();
  EXPECT_EQ(s.completed, 48);
  EXPECT_LT(s.batches, 48);  // requests joined
  for (const auto& [rows, count] : s.batch_rows_histogram) EXPECT_LE(rows, 8);
}

TEST_F(ServedFashion, ConfigErrorsNameWhatIsWrong) {
  config(
      "max_batch_size: 8\nparameters { key: \"no_such_option\" value: { string_value: \"1\" } }");
  auto unknown = load();
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("no_such_option"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("model 'fashion' version 1"), std::string::npos)
      << unknown.status().message();
  config("max_batch_size: 8\nparameters { key: \"precision\" value: { string_value: \"fp7\" } }");
  auto bad_value = load();
  ASSERT_FALSE(bad_value.is_ok());
  EXPECT_NE(bad_value.status().message().find("precision"), std::string::npos);
  if (cuda_device_count() == 0) {
    config("instance_group [ { kind: KIND_GPU } ]");
    auto no_gpu = load();
    ASSERT_FALSE(no_gpu.is_ok());
    EXPECT_EQ(no_gpu.status().code(), StatusCode::kUnavailable);
  }
}

// model_warmup runs its samples before the model is ready (zero, random and file data, count
// times each); a sample that does not fit the config refuses the model, naming the sample.
TEST_F(ServedFashion, ModelWarmupRunsBeforeReadyAndBadSamplesRefuseTheModel) {
  fs::create_directories(root_ / "fashion" / "warmup");
  std::vector<float> pixels(2 * 784, 0.25f);
  std::ofstream(root_ / "fashion" / "warmup" / "two_images", std::ios::binary)
      .write(reinterpret_cast<const char*>(pixels.data()),
             static_cast<std::streamsize>(pixels.size() * sizeof(float)));
  const std::string input =
      "inputs { key: \"input\" value: { data_type: TYPE_FP32 dims: [1, 28, 28] ";
  config(
      "max_batch_size: 8\n"
      "model_warmup [ { name: \"zeros\" batch_size: 1 count: 3 " +
      input +
      "zero_data: true } } },\n"
      "  { name: \"random\" batch_size: 4 " +
      input +
      "random_data: true } } },\n"
      "  { name: \"file\" batch_size: 2 " +
      input + "input_data_file: \"two_images\" } } } ]\n");
  auto m = load();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->batcher().stats().batches, 5);  // 3 + 1 + 1
  EXPECT_EQ((*m)->batcher().stats().rows, 3 + 4 + 2);

  config(
      "max_batch_size: 8\n"
      "model_warmup [ { name: \"wrong\" batch_size: 1 inputs { key: \"input\" value: { "
      "data_type: TYPE_FP32 dims: [1, 14, 14] zero_data: true } } } ]\n");
  auto wrong = load();
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("model_warmup 'wrong'"), std::string::npos)
      << wrong.status().message();
  EXPECT_NE(wrong.status().message().find("[N,1,28,28]"), std::string::npos)
      << wrong.status().message();

  config(
      "max_batch_size: 8\n"
      "model_warmup [ { name: \"short\" batch_size: 3 " +
      input + "input_data_file: \"two_images\" } } } ]\n");
  auto short_file = load();
  ASSERT_FALSE(short_file.is_ok());
  EXPECT_NE(short_file.status().message().find("two_images holds 6272 bytes"), std::string::npos)
      << short_file.status().message();
}

// The engine that completes a config tells the inputs the served engine takes (its input format
// applied) without building what serving needs: here an int8 engine whose calibration data is
// missing, which the served engine's build reads and the interface's does not.
TEST(InterfaceOptions, TellTheInputsWithoutCalibrating) {
  const std::string model = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  EngineOptions o;
  o.precision = Precision::kInt8;
  o.calibration_data = "/nonexistent/calib.npy";
  o.input_format = InputFormat::kUint8Nchw;
  auto served = Engine::load(model, o);
  ASSERT_FALSE(served.is_ok());
  EXPECT_NE(served.status().message().find("calib"), std::string::npos)
      << served.status().message();
  auto probe = Engine::load(model, interface_options(o));
  ASSERT_TRUE(probe.is_ok()) << probe.status().message();
  ASSERT_EQ((*probe)->inputs().size(), 1u);
  EXPECT_EQ((*probe)->inputs()[0].dtype, DataType::kUInt8);
  EXPECT_EQ((*probe)->inputs()[0].dims, (std::vector<int64_t>{-1, 1, 28, 28}));
  EXPECT_EQ((*probe)->options().device, Device::kCpu);
  EXPECT_EQ((*probe)->options().precision, Precision::kFp32);
}

TEST(BatchProfiles, OnePerPaddedSize) {
  inference::ModelConfig c;
  c.set_max_batch_size(6);
  c.mutable_dynamic_batching();
  auto* in = c.add_input();
  in->set_name("x");
  in->add_dims(3);
  in->add_dims(5);
  ShapeProfiles p = batch_profiles(c);
  ASSERT_EQ(p.size(), 4u);  // 1, 2, 4, 6
  EXPECT_EQ(p[3].at("x"), (std::vector<int64_t>{6, 3, 5}));
  in->set_dims(1, -1);
  EXPECT_TRUE(batch_profiles(c).empty());
  c.set_max_batch_size(0);
  c.clear_dynamic_batching();
  in->set_dims(1, 5);
  p = batch_profiles(c);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].at("x"), (std::vector<int64_t>{3, 5}));
}

}  // namespace
}  // namespace kiln::server
