// Encoded images (JPEG or PNG) made into a model's input, for the image endpoint and for BYTES
// inputs, as `kiln run` makes them: decoded, resized whole to the input's height and width, RGB
// or luminance for 1 channel; for float32 inputs (pixel / 255 − mean) / std with the model's
// kiln.mean / kiln.std, else ImageNet's for 3 channels; for uint8 NHWC inputs the pixels. And
// the top k classes of a classifier's first output.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/engine.h"
#include "kiln/pipeline.h"

namespace kiln::server {

// How a model takes images (its engine input, batch first): float32 [N, C, H, W] with C 1 or
// 3, as `kiln run` makes it, or uint8 [N, H, W, C] pixels (input_format uint8-nhwc).
struct ImageLayout {
  std::string input;  // the input's name
  bool uint8_nhwc = false;
  int channels = 0, height = 0, width = 0;
  std::vector<float> mean, sd;  // float32 inputs: kiln.mean / kiln.std, else ImageNet's for 3
};
// An error naming the model where its input is neither form (or its sizes are not fixed).
Result<ImageLayout> image_layout(const std::string& model, const TensorInfo& input,
                                 const std::map<std::string, std::string>& metadata);

// Encoded images (JPEG or PNG) decoded, resized whole and laid out as `layout` says, one row
// each. A corrupt or unknown image is an error naming `where` and the image's index.
Result<Tensor> decode_images(const ImageLayout& layout, const std::vector<std::string_view>& images,
                             const std::string& where);

// The image endpoint's input: `bytes` as a batch of one, under the input's name.
Result<Outputs> image_input(const ImageLayout& layout, std::string_view bytes);

struct ClassScore {
  int64_t index = 0;
  std::string label;  // empty where the model has none
  double score = 0;   // a probability: softmax of the row unless it already is one
};

// The k best classes of row 0 of `output` ([1, classes] or [1, classes, 1, 1]).
std::vector<ClassScore> top_classes(const Tensor& output, int k,
                                    const std::vector<std::string>& labels);

}  // namespace kiln::server
