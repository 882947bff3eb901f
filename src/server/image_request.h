// The image endpoint's pieces: an encoded image (JPEG or PNG) made into a classifier's input as
// `kiln run` makes it (decoded, resized whole to the input's height and width, RGB or luminance
// for 1 channel, (pixel / 255 − mean) / std with the model's kiln.mean / kiln.std, else
// ImageNet's for 3 channels), and the top k classes of its first output.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/pipeline.h"
#include "server/proto/model_config.pb.h"

namespace kiln::server {

// The one input of an image model as a batch of one: float32 [1, C, H, W]. Errors: a model
// whose input is not one float32 [C, H, W] image (C 1 or 3), a corrupt or unknown image (named).
Result<Outputs> image_input(const inference::ModelConfig& c,
                            const std::map<std::string, std::string>& metadata,
                            std::string_view bytes);

struct ClassScore {
  int64_t index = 0;
  std::string label;  // empty where the model has none
  double score = 0;   // a probability: softmax of the row unless it already is one
};

// The k best classes of row 0 of `output` ([1, classes] or [1, classes, 1, 1]).
std::vector<ClassScore> top_classes(const Tensor& output, int k,
                                    const std::vector<std::string>& labels);

}  // namespace kiln::server
