// Whole models against ONNX Runtime, and Fashion-MNIST accuracy on the real test set.
//
// The models, inputs and ONNX Runtime outputs come from scripts/models/prepare_test_models.sh
// (cache dir: $KILN_MODEL_CACHE, else models/cache in the source tree). A missing cache is a
// failure that says to run the script, never a silent pass or skip.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/calibration.h"
#include "kiln/engine.h"
#include "kiln/tensor_io.h"
#include "models/idx_reader.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using test::read_idx_gz;

std::string cache_dir() {
  if (const char* env = std::getenv("KILN_MODEL_CACHE"); env && *env) return env;
  return KILN_MODEL_CACHE_DIR;
}

const char* kPrepareHint =
    "run scripts/models/prepare_test_models.sh first (it exports the models and writes "
    "ONNX Runtime's reference outputs into the cache; set KILN_MODEL_CACHE to use another "
    "directory)";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct ModelCase {
  std::string model;
  int batch;
};

// Keeps gtest and ctest from printing the struct as raw bytes.
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.model << " batch " << c.batch; }

std::string case_name(const testing::TestParamInfo<ModelCase>& info) {
  return info.param.model + "_b" + std::to_string(info.param.batch);
}

class ModelVsOrt : public testing::TestWithParam<ModelCase> {};

// Runs the model in kiln on the cached input and compares with ONNX Runtime's output:
// relative L2 error ≤ 1e-4 over the whole output, and the same argmax in every row (one image's
// output) whose top two reference values are further apart than the largest difference seen
// in it.
TEST_P(ModelVsOrt, MatchesOnnxRuntime) {
  const ModelCase& c = GetParam();
  const std::string dir = cache_dir();
  const std::string model_path = dir + "/" + c.model + ".onnx";
  const std::string case_dir = dir + "/cases/" + c.model + "/b" + std::to_string(c.batch);
  for (const std::string& f : {model_path, case_dir + "/input.npy", case_dir + "/ref/logits.npy"})
    ASSERT_TRUE(fs::exists(f)) << f << " is missing: " << kPrepareHint;

  auto t0 = std::chrono::steady_clock::now();
  auto engine = Engine::load(model_path, {});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto input = read_npy(case_dir + "/input.npy");
  ASSERT_TRUE(input.is_ok()) << input.status().to_string();
  auto ref = read_npy(case_dir + "/ref/logits.npy");
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_EQ(input->dim(0), c.batch);
  double load_s = seconds_since(t0);

  auto ctx = (*engine)->create_context();
  t0 = std::chrono::steady_clock::now();
  auto outputs = ctx->run({{"input", *input}});
  double run_s = seconds_since(t0);
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  auto it = outputs->find("logits");
  ASSERT_NE(it, outputs->end()) << "no output 'logits'";
  const Tensor& out = it->second;
  ASSERT_EQ(out.dtype(), DataType::kFloat32);
  ASSERT_EQ(out.shape(), ref->shape())
      << shape_str(out.shape()) << " vs " << shape_str(ref->shape());
  ASSERT_GE(out.rank(), 2);

  const float* o = out.data<float>();
  const float* r = ref->data<float>();
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(o[i])) << "element " << i << " is " << o[i];
    diff2 += (double(o[i]) - r[i]) * (double(o[i]) - r[i]);
    ref2 += double(r[i]) * r[i];
  }
  ASSERT_GT(ref2, 0) << "reference output is all zeros";
  double rel = std::sqrt(diff2 / ref2);

  // A row is one image's output: its logits, or its whole map for a segmentation model.
  const int64_t rows = out.dim(0), cols = out.numel() / rows;
  int agree = 0, checked = 0;
  for (int64_t b = 0; b < rows; ++b) {
    const float* orow = o + b * cols;
    const float* rrow = r + b * cols;
    int64_t oa = 0, ra = 0;
    double max_diff = 0;
    for (int64_t j = 0; j < cols; ++j) {
      if (orow[j] > orow[oa]) oa = j;
      if (rrow[j] > rrow[ra]) ra = j;
      max_diff = std::max(max_diff, std::fabs(double(orow[j]) - rrow[j]));
    }
    double second = -INFINITY;
    for (int64_t j = 0; j < cols; ++j)
      if (j != ra) second = std::max(second, double(rrow[j]));
    if (rrow[ra] - second <= 2 * max_diff) continue;  // a near tie: either answer is right
    ++checked;
    if (oa == ra) ++agree;
    EXPECT_EQ(oa, ra) << "row " << b << ": kiln's argmax " << oa << ", ONNX Runtime's " << ra;
  }
  std::printf(
      "[ model    ] %s batch %d: relative L2 error %.3g, argmax %d/%d rows agree "
      "(%d near ties), load %.2f s, run %.2f s\n",
      c.model.c_str(), c.batch, rel, agree, checked, static_cast<int>(rows) - checked, load_s,
      run_s);
  EXPECT_LE(rel, 1e-4) << "relative L2 error against ONNX Runtime";
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelVsOrt,
    testing::Values(ModelCase{"fashion_mnist", 1}, ModelCase{"fashion_mnist", 4},
                    ModelCase{"mobilenet_v2", 1}, ModelCase{"mobilenet_v2", 4},
                    ModelCase{"resnet18", 1}, ModelCase{"resnet18", 4}, ModelCase{"resnet50", 1},
                    ModelCase{"resnet50", 4}, ModelCase{"efficientnet_b0", 1},
                    ModelCase{"efficientnet_b0", 4}, ModelCase{"lraspp_mobilenet_v3_large", 1},
                    ModelCase{"lraspp_mobilenet_v3_large", 4}),
    case_name);

// kiln runs the shipped Fashion-MNIST model over the whole 10k test set, normalized as in
// training, in batches of 500 (the batch axis is symbolic).
TEST(FashionMnist, TestSetAccuracyAtLeast90Percent) {
  const std::string data_dir = KILN_FASHION_MNIST_DIR;
  const std::string model_path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  ASSERT_TRUE(fs::exists(model_path))
      << model_path << " is missing (train it: scripts/models/train_fashion_mnist.py)";
  std::vector<uint8_t> images, labels;
  std::vector<int64_t> idims, ldims;
  std::string error;
  ASSERT_TRUE(read_idx_gz(data_dir + "/t10k-images-idx3-ubyte.gz", images, idims, error))
      << error << " (install Debian's dataset-fashion-mnist)";
  ASSERT_TRUE(read_idx_gz(data_dir + "/t10k-labels-idx1-ubyte.gz", labels, ldims, error)) << error;
  ASSERT_EQ(idims, (std::vector<int64_t>{10000, 28, 28}));
  ASSERT_EQ(ldims, (std::vector<int64_t>{10000}));

  auto engine = Engine::load(model_path, {});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();

  const int64_t total = idims[0];
  auto t0 = std::chrono::steady_clock::now();
  auto result = test::fashion_accuracy(*ctx, images, labels, total);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const double accuracy = *result;
  const auto correct = static_cast<int64_t>(accuracy * total + 0.5);
  std::printf("[ model    ] fashion_mnist: test accuracy %.4f (%lld/%lld) in %.1f s\n", accuracy,
              static_cast<long long>(correct), static_cast<long long>(total), seconds_since(t0));
  EXPECT_GE(accuracy, 0.90);
}

// Fashion-MNIST images [first, first + count) of `images`, normalized as in training.
class FashionSamples final : public CalibrationSource {
 public:
  FashionSamples(const std::vector<uint8_t>& images, int64_t first, int64_t count)
      : images_(images), first_(first), count_(count) {}
  Result<std::map<std::string, Tensor>> next(int max) override {
    const int64_t n = std::min<int64_t>(max, count_ - at_);
    if (n <= 0) return std::map<std::string, Tensor>{};
    Tensor x(DataType::kFloat32, {n, 1, 28, 28});
    const uint8_t* p = images_.data() + (first_ + at_) * 784;
    for (int64_t i = 0; i < n * 784; ++i) x.data<float>()[i] = (p[i] / 255.f - 0.2860f) / 0.3530f;
    at_ += n;
    return std::map<std::string, Tensor>{{"input", x}};
  }
  Status rewind() override {
    at_ = 0;
    return Status::ok();
  }
  std::string describe() const override { return "Fashion-MNIST training images"; }

 private:
  const std::vector<uint8_t>& images_;
  int64_t first_, count_, at_ = 0;
};

// Int8 (its convs on oneDNN's 8-bit kernels) against fp32 on the shipped Fashion-MNIST
// net. Calibration: the first 512 training images. Each method is scored on a validation
// split held out of the training images (the last 10000), the best one is chosen there, and
// only that one is scored on the test set, once: within 0.5 point of fp32.
TEST(FashionMnist, Int8WithinHalfAPointOfFp32) {
  const std::string data_dir = KILN_FASHION_MNIST_DIR;
  const std::string model_path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  std::vector<uint8_t> train, train_labels, test, test_labels;
  std::vector<int64_t> dims;
  std::string error;
  ASSERT_TRUE(read_idx_gz(data_dir + "/train-images-idx3-ubyte.gz", train, dims, error)) << error;
  ASSERT_TRUE(read_idx_gz(data_dir + "/train-labels-idx1-ubyte.gz", train_labels, dims, error))
      << error;
  ASSERT_TRUE(read_idx_gz(data_dir + "/t10k-images-idx3-ubyte.gz", test, dims, error)) << error;
  ASSERT_TRUE(read_idx_gz(data_dir + "/t10k-labels-idx1-ubyte.gz", test_labels, dims, error))
      << error;
  ASSERT_EQ(train.size(), 60000u * 784);
  const std::vector<uint8_t> val(train.begin() + 50000 * 784, train.end());
  const std::vector<uint8_t> val_labels(train_labels.begin() + 50000, train_labels.end());

  auto fp32 = Engine::load(model_path, {});
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  auto fp32_ctx = (*fp32)->create_context();
  auto fp32_val = test::fashion_accuracy(*fp32_ctx, val, val_labels, 10000);
  ASSERT_TRUE(fp32_val.is_ok());
  const fs::path dir =
      fs::temp_directory_path() / ("kiln_fashion_int8_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string best;
  double best_val = -1;
  for (const std::string method : {"entropy", "minmax", "percentile=99.99"}) {
    EngineOptions o;
    o.precision = Precision::kInt8;
    o.calibration_method = method;
    o.calibration_cache = (dir / (method + ".calib")).string();
    FashionSamples source(train, 0, 512);
    auto r = calibrate(**fp32, source, o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto int8 = Engine::load(model_path, o);
    ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
    EXPECT_TRUE((*int8)->report().quantization.float_layers.empty());
    // The convs run on 8-bit operands (oneDNN's int8 kernels), not simulated in float.
    int on_codes = 0;
    for (const auto& layer : (*int8)->report().quantization.layers)
      on_codes += layer.runs == "int8";
    EXPECT_GE(on_codes, 6);  // its 6 convs; the final Gemm is simulated
    auto ctx = (*int8)->create_context();
    auto acc = test::fashion_accuracy(*ctx, val, val_labels, 10000);
    ASSERT_TRUE(acc.is_ok()) << acc.status().to_string();
    std::printf(
        "[ model    ] fashion_mnist int8 %-16s validation %.4f (fp32 %.4f), "
        "calibrated in %.2f s\n",
        method.c_str(), *acc, *fp32_val, r->seconds);
    if (*acc > best_val) best_val = *acc, best = method;
  }
  EngineOptions o;
  o.precision = Precision::kInt8;
  o.calibration_method = best;
  o.calibration_cache = (dir / (best + ".calib")).string();
  auto int8 = Engine::load(model_path, o);
  ASSERT_TRUE(int8.is_ok());
  auto ctx = (*int8)->create_context();
  auto int8_test = test::fashion_accuracy(*ctx, test, test_labels, 10000);
  auto fp32_test = test::fashion_accuracy(*fp32_ctx, test, test_labels, 10000);
  ASSERT_TRUE(int8_test.is_ok() && fp32_test.is_ok());
  std::printf("[ model    ] fashion_mnist test: fp32 %.4f, int8 (%s, 512 samples) %.4f\n",
              *fp32_test, best.c_str(), *int8_test);
  EXPECT_GE(*int8_test, *fp32_test - 0.005);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
