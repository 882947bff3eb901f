// Reads Fashion-MNIST's gzipped IDX files (Debian's dataset-fashion-mnist) for the tests.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace kiln::test {

inline  // Reads a gzipped IDX file of unsigned bytes; `dims` receives its shape.
    bool
    read_idx_gz(const std::string& path, std::vector<uint8_t>& data, std::vector<int64_t>& dims,
                std::string& error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open " + path;
    return false;
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  int n;
  while ((n = gzread(f, chunk, sizeof(chunk))) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  bool read_ok = n == 0;
  gzclose(f);
  if (!read_ok || bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    error = path + ": not a gzipped unsigned-byte IDX file";
    return false;
  }
  size_t rank = bytes[3];
  size_t offset = 4 + 4 * rank;
  if (bytes.size() < offset) {
    error = path + ": truncated header";
    return false;
  }
  int64_t count = 1;
  dims.clear();
  for (size_t i = 0; i < rank; ++i) {
    const uint8_t* p = &bytes[4 + 4 * i];
    dims.push_back((int64_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
    count *= dims.back();
  }
  if (bytes.size() - offset != static_cast<size_t>(count)) {
    error = path + ": size does not match its header";
    return false;
  }
  data.assign(bytes.begin() + offset, bytes.end());
  return true;
}

// Top-1 accuracy of a Fashion-MNIST classifier (input "input" [N,1,28,28], output "logits"
// [N,10]) over the first `count` test images, normalized as in training, in batches of 500.
inline Result<double> fashion_accuracy(Context& ctx, const std::vector<uint8_t>& images,
                                       const std::vector<uint8_t>& labels, int64_t count) {
  constexpr float kMean = 0.2860f, kStd = 0.3530f;
  constexpr int64_t kBatch = 500, kPixels = 28 * 28;
  int64_t correct = 0;
  for (int64_t start = 0; start < count; start += kBatch) {
    const int64_t n = std::min(kBatch, count - start);
    Tensor x(DataType::kFloat32, {n, 1, 28, 28});
    float* px = x.data<float>();
    for (int64_t i = 0; i < n * kPixels; ++i)
      px[i] = (images[start * kPixels + i] / 255.0f - kMean) / kStd;
    auto out = ctx.run({{"input", x}});
    if (!out.is_ok())
      return out.status().with_context("images " + std::to_string(start) + ".." +
                                       std::to_string(start + n));
    const Tensor& logits = out->at("logits");
    if (logits.shape() != Shape{n, 10})
      return internal_error("logits have shape " + shape_str(logits.shape()));
    for (int64_t b = 0; b < n; ++b) {
      const float* row = logits.data<float>() + b * 10;
      int64_t best = 0;
      for (int64_t j = 1; j < 10; ++j)
        if (row[j] > row[best]) best = j;
      correct += best == labels[start + b];
    }
  }
  return static_cast<double>(correct) / count;
}

}  // namespace kiln::test
