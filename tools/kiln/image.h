// Image files → model input tensors, and top-k printing for classifiers.
//
// Preprocessing (what `kiln run` does with a JPEG/PNG input):
//   decode (kiln::decode_image: JPEG by libturbojpeg, PNG by stb_image) to 8-bit RGB;
//   resize to H×W with a bilinear (triangle) filter, aspect ratio not kept;
//   convert to the model's channels: RGB for 3, luminance 0.299R+0.587G+0.114B for 1;
//   scale to [0,1], then (x - mean[c]) / std[c];
//   lay out as float32 NCHW, batch 1.
// mean/std defaults: the model's metadata kiln.mean / kiln.std when present, else the
// ImageNet values (0.485,0.456,0.406 / 0.229,0.224,0.225) for 3 channels and 0 / 1 for 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/images.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cli {

using kiln::Image;  // decoded by kiln::decode_image (kiln/images.h)

// Whether `bytes` start like a JPEG or a PNG file.
bool looks_like_image(const std::string& bytes);
// An error when the file's extension (.png, .jpg, .jpeg) names an image format its bytes are
// not, naming the format and the first bytes; ok for other names.
Status check_image_name(const std::string& path, const std::string& bytes);

struct Preprocess {
  int height = 224, width = 224;
  int channels = 3;         // 1 or 3
  std::vector<float> mean;  // 1 or `channels` values
  std::vector<float> std;
};

// The defaults described above for a model with `channels` input channels.
Status default_normalization(int channels, const std::map<std::string, std::string>& metadata,
                             Preprocess* p);
// Decoded RGB image → float32 [1, channels, height, width].
Result<Tensor> image_to_tensor(const Image& rgb, const Preprocess& p);

// Top-k of the first batch item of a classifier output. Applies softmax unless the values
// already form a probability vector (all in [0,1], summing to 1).
struct TopK {
  std::vector<std::pair<int64_t, double>> entries;  // (class, probability)
  bool softmax_applied = false;
};
TopK top_k(const Tensor& output, int k);

}  // namespace kiln::cli
