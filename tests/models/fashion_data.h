// Fashion-MNIST's splits and calibration samples for the accuracy tests, on the CPU and the GPU.
//
// The splits: calibration comes from the start of the training images, validation is their
// last 10000 (which the deeper net never trained on), and the test set is t10k. Where the full
// training split is not at hand (the GPU machine gets a small bundle), the files
// train-calib-val-{images-idx3,labels-idx1}-ubyte.gz hold exactly what the tests read from it:
// its first 512 images, then its last 10000 (scripts/gpu/fashion_calib_val.py writes them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kiln/calibration.h"
#include "models/idx_reader.h"

namespace kiln::test {

struct FashionSplits {
  std::vector<uint8_t> train, train_labels, val, val_labels, test, test_labels;
};

// Reads the splits from `dir`; empty on success, else what is missing. `train` holds at least
// the first 512 training images.
inline std::string load_fashion_splits(const std::string& dir, FashionSplits& s) {
  constexpr int64_t kPixels = 784, kVal = 10000, kHead = 512;
  std::vector<int64_t> dims;
  std::string error;
  if (!read_idx_gz(dir + "/t10k-images-idx3-ubyte.gz", s.test, dims, error) ||
      !read_idx_gz(dir + "/t10k-labels-idx1-ubyte.gz", s.test_labels, dims, error))
    return error + " (install Debian's dataset-fashion-mnist)";
  std::vector<uint8_t> images, labels;
  const bool full = std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz");
  const std::string stem = dir + (full ? "/train-" : "/train-calib-val-");
  if (!read_idx_gz(stem + "images-idx3-ubyte.gz", images, dims, error) ||
      !read_idx_gz(stem + "labels-idx1-ubyte.gz", labels, dims, error))
    return error + " (install Debian's dataset-fashion-mnist)";
  const int64_t count = static_cast<int64_t>(labels.size());
  if (static_cast<int64_t>(images.size()) != count * kPixels ||
      count != (full ? 60000 : kHead + kVal))
    return stem + "*: " + std::to_string(count) + " images, not " +
           (full ? "the 60000 of the training split" : "its first 512 and last 10000");
  const int64_t val_start = count - kVal;
  s.train.assign(images.begin(), images.begin() + val_start * kPixels);
  s.train_labels.assign(labels.begin(), labels.begin() + val_start);
  s.val.assign(images.begin() + val_start * kPixels, images.end());
  s.val_labels.assign(labels.begin() + val_start, labels.end());
  return "";
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

// Images [first, first + count) as a TensorFlow-style net reads them: NHWC [n, 28, 28, 3] of raw
// 0-255 pixels, the grey image in each channel (models/fashion_tf_style.onnx).
inline Tensor fashion_nhwc_pixels(const std::vector<uint8_t>& images, int64_t first,
                                  int64_t count) {
  Tensor x(DataType::kFloat32, {count, 28, 28, 3});
  float* p = x.data<float>();
  for (int64_t i = 0; i < count * 784; ++i)
    p[3 * i] = p[3 * i + 1] = p[3 * i + 2] = images[first * 784 + i];
  return x;
}

// The number of rows of `logits` [n, classes] whose largest element is at the label.
inline int64_t count_correct(const Tensor& logits, const uint8_t* labels) {
  const int64_t n = logits.shape()[0], classes = logits.shape()[1];
  int64_t correct = 0;
  for (int64_t b = 0; b < n; ++b) {
    const float* row = logits.data<float>() + b * classes;
    correct += std::max_element(row, row + classes) - row == labels[b];
  }
  return correct;
}

}  // namespace kiln::test
