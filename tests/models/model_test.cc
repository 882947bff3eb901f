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
#include "models/fashion_data.h"
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

struct FashionNetCase {
  std::string model;  // models/<model>.onnx
  int int8_convs;     // its convs, all on oneDNN's 8-bit kernels
};

void PrintTo(const FashionNetCase& c, std::ostream* os) { *os << c.model; }

class Fashion8Bit : public testing::TestWithParam<FashionNetCase> {
 protected:
  void SetUp() override {
    name_ = GetParam().model;
    path_ = std::string(KILN_SOURCE_DIR) + "/models/" + name_ + ".onnx";
    ASSERT_TRUE(fs::exists(path_))
        << path_ << " is missing (train it: scripts/models/train_fashion_mnist.py)";
    const std::string error = test::load_fashion_splits(KILN_FASHION_MNIST_DIR, data_);
    ASSERT_TRUE(error.empty()) << error;
    auto fp32 = Engine::load(path_, {});
    ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
    fp32_ = *fp32;
    dir_ = fs::temp_directory_path() / ("kiln_" + name_ + "_8bit_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  EngineOptions options(Precision format, const std::string& method, int samples) const {
    EngineOptions o;
    o.precision = format;
    o.calibration_method = method;
    o.calibration_cache = (dir_ / (std::string(precision_name(format)) + "_" + method + "_" +
                                   std::to_string(samples) + ".calib"))
                              .string();
    return o;
  }
  // Calibrates on the first `samples` training images into options(...)'s cache.
  Result<CalibrationResult> calibrated(const EngineOptions& o, int samples) const {
    test::FashionSamples source(data_.train, 0, samples);
    return calibrate(*fp32_, source, o);
  }
  Result<double> accuracy(const EngineOptions& o, bool test) const {
    KILN_ASSIGN_OR_RETURN(auto engine, Engine::load(path_, o));
    auto ctx = engine->create_context();
    return test ? test::fashion_accuracy(*ctx, data_.test, data_.test_labels, 10000)
                : test::fashion_accuracy(*ctx, data_.val, data_.val_labels, 10000);
  }

  std::string name_, path_;
  test::FashionSplits data_;
  std::shared_ptr<Engine> fp32_;
  fs::path dir_;
};

const char* const kMethods[] = {"entropy", "minmax", "percentile=99.99"};

// Int8 (its convs on oneDNN's 8-bit kernels) and fp8 (simulated in float on the CPU) against
// fp32 on the Fashion-MNIST nets: the shipped demo net and the deeper ResNet-18-style one
// (trained with the last 10000 training images held out). Calibration: the first 512 training
// images. Each method is scored on a validation split held out of the training images (the
// last 10000), the best one is chosen there, and only that one is scored on the test set,
// once: within 0.5 point of fp32.
TEST_P(Fashion8Bit, WithinHalfAPointOfFp32) {
  auto fp32_val = accuracy({}, false);
  auto fp32_test = accuracy({}, true);
  ASSERT_TRUE(fp32_val.is_ok() && fp32_test.is_ok());
  for (const Precision format : {Precision::kInt8, Precision::kFp8}) {
    const std::string fmt = precision_name(format);
    std::string best;
    double best_val = -1;
    for (const std::string method : kMethods) {
      if (format == Precision::kFp8 && method == "entropy") continue;  // min-max for fp8
      const EngineOptions o = options(format, method, 512);
      auto r = calibrated(o, 512);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      auto engine = Engine::load(path_, o);
      ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
      EXPECT_TRUE((*engine)->report().quantization.float_layers.empty());
      // int8: the convs run on 8-bit operands (oneDNN's int8 kernels), not simulated in
      // float; the final Gemm is simulated. fp8 is simulated on the CPU.
      int on_codes = 0;
      for (const auto& layer : (*engine)->report().quantization.layers)
        on_codes += layer.runs == fmt;
      EXPECT_GE(on_codes, format == Precision::kInt8 ? GetParam().int8_convs : 0);
      auto acc = accuracy(o, false);
      ASSERT_TRUE(acc.is_ok()) << acc.status().to_string();
      std::printf(
          "[ model    ] %s %s %-16s validation %.4f (fp32 %.4f), calibrated in %.2f s (%s)\n",
          name_.c_str(), fmt.c_str(), method.c_str(), *acc, *fp32_val, r->seconds,
          r->method.c_str());
      if (*acc > best_val) best_val = *acc, best = method;
    }
    auto on_test = accuracy(options(format, best, 512), true);
    ASSERT_TRUE(on_test.is_ok());
    std::printf("[ model    ] %s test: fp32 %.4f, %s (%s, 512 samples) %.4f\n", name_.c_str(),
                *fp32_test, fmt.c_str(), best.c_str(), *on_test);
    EXPECT_GE(*on_test, *fp32_test - 0.005) << fmt;
  }
}

// The accuracy table of bench/results/int8.md: validation top-1 for int8 and fp8 × the
// methods × 128, 512 and 1000 calibration samples, bf16 where the CPU has it, and the test
// top-1 of the method each precision and sample count would choose on validation. A
// measurement of minutes, run where asked (KILN_ACCURACY_TABLE=1); the thresholds are the
// test above's.
TEST_P(Fashion8Bit, AccuracyTable) {
  if (!std::getenv("KILN_ACCURACY_TABLE"))
    GTEST_SKIP() << "a measurement: set KILN_ACCURACY_TABLE=1 to print the table";
  auto fp32_val = accuracy({}, false);
  auto fp32_test = accuracy({}, true);
  ASSERT_TRUE(fp32_val.is_ok() && fp32_test.is_ok());
  std::printf("| %s | method | samples | validation | test (chosen) |\n|---|---|---:|---:|---:|\n",
              name_.c_str());
  std::printf("| fp32 | | | %.4f | %.4f |\n", *fp32_val, *fp32_test);
  EngineOptions bf16;
  bf16.precision = Precision::kBf16;
  auto bf16_val = accuracy(bf16, false);
  if (bf16_val.is_ok())
    std::printf("| bf16 (oneDNN) | | | %.4f | %.4f |\n", *bf16_val, *accuracy(bf16, true));
  else
    std::printf("| bf16 | not on this CPU: %s | | | |\n", bf16_val.status().message().c_str());
  for (const Precision format : {Precision::kInt8, Precision::kFp8})
    for (const int samples : {128, 512, 1000}) {
      std::string best;
      double best_val = -1;
      for (const std::string method : kMethods) {
        if (format == Precision::kFp8 && method == "entropy") continue;  // min-max for fp8
        const EngineOptions o = options(format, method, samples);
        auto r = calibrated(o, samples);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        auto acc = accuracy(o, false);
        ASSERT_TRUE(acc.is_ok()) << acc.status().to_string();
        std::printf("| %s | %s | %d | %.4f | |\n", precision_name(format), r->method.c_str(),
                    samples, *acc);
        if (*acc > best_val) best_val = *acc, best = method;
      }
      auto on_test = accuracy(options(format, best, samples), true);
      ASSERT_TRUE(on_test.is_ok());
      std::printf("| %s | chosen: %s | %d | %.4f | %.4f |\n", precision_name(format), best.c_str(),
                  samples, best_val, *on_test);
    }
}

INSTANTIATE_TEST_SUITE_P(Nets, Fashion8Bit,
                         testing::Values(FashionNetCase{"fashion_mnist", 6},
                                         FashionNetCase{"fashion_resnet18", 20}),
                         [](const testing::TestParamInfo<FashionNetCase>& info) {
                           return info.param.model;
                         });

}  // namespace
}  // namespace kiln
