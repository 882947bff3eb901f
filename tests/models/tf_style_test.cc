// The TensorFlow-style net (models/fashion_tf_style.onnx, scripts/models/train_tf_style_net.py):
// NHWC input of raw 0-255 pixels, the normalization folded into the first conv, dilated
// depthwise convs, a dense second output. kiln's fp32 engine gives its training accuracy; a
// reduced precision's error is measured on images like the real ones (the validation split),
// its layers over budget are named, and keeping them in fp32 brings the outputs back within it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kiln/engine.h"
#include "kiln/precision_report.h"
#include "models/fashion_data.h"
#include "models/precision_fallback_check.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class TfStyleNet : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(KILN_SOURCE_DIR) + "/models/fashion_tf_style.onnx";
    ASSERT_TRUE(fs::exists(path_))
        << path_ << " is missing (train it: scripts/models/train_tf_style_net.py)";
    const std::string error = test::load_fashion_splits(KILN_FASHION_MNIST_DIR, data_);
    ASSERT_TRUE(error.empty()) << error;
    auto fp32 = Engine::load(path_, {});
    ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
    fp32_ = *fp32;
    for (int b = 0; b < 4; ++b)  // held aside: validation images
      samples_.push_back({{"image", test::fashion_nhwc_pixels(data_.val, 64 * b, 64)}});
  }
  // Top-1 on the 10000 test images.
  static Result<double> accuracy(const Engine& e, const test::FashionSplits& d) {
    auto ctx = e.create_context();
    int64_t correct = 0;
    for (int64_t start = 0; start < 10000; start += 500) {
      KILN_ASSIGN_OR_RETURN(auto out,
                            ctx->run({{"image", test::fashion_nhwc_pixels(d.test, start, 500)}}));
      correct += test::count_correct(out.at("logits"), d.test_labels.data() + start);
    }
    return correct / 10000.0;
  }

  std::string path_;
  test::FashionSplits data_;
  std::shared_ptr<Engine> fp32_;
  std::vector<std::map<std::string, Tensor>> samples_;
};

TEST_F(TfStyleNet, Fp32GivesItsTrainingAccuracy) {
  auto acc = accuracy(*fp32_, data_);
  ASSERT_TRUE(acc.is_ok()) << acc.status().to_string();
  const double trained = std::stod(fp32_->metadata().at("kiln.test_accuracy"));
  std::printf("[ model    ] fashion_tf_style fp32: test top-1 %.4f (PyTorch %.4f)\n", *acc,
              trained);
  EXPECT_NEAR(*acc, trained, 0.0015);
  auto out = fp32_->create_context()->run(samples_[0]);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->at("maps").shape(), (Shape{64, 28, 28, 10}));
}

// bf16 on oneDNN (8 bits of mantissa): the layers where its error comes in are named, and
// the fallback by measured error keeps them in fp32 until every layer is within the budget.
TEST_F(TfStyleNet, Bf16ErrorIsNamedAndKeptWithinBudget) {
  EngineOptions bf16;
  bf16.precision = Precision::kBf16;
  auto reduced = Engine::load(path_, bf16);
  if (!reduced.is_ok()) GTEST_SKIP() << "bf16: " << reduced.status().message();
  EngineOptions kept = bf16;
  kept.precision_overrides = test::expect_named_and_kept(path_, bf16, *fp32_, samples_, 0.008);
  auto engine = Engine::load(path_, kept);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto fp32 = accuracy(*fp32_, data_), reduced_kept = accuracy(**engine, data_);
  ASSERT_TRUE(fp32.is_ok() && reduced_kept.is_ok());
  std::printf("[ model    ] fashion_tf_style test top-1: fp32 %.4f, bf16 with layers kept %.4f\n",
              *fp32, *reduced_kept);
  EXPECT_NEAR(*reduced_kept, *fp32, 0.005);
}

}  // namespace
}  // namespace kiln
