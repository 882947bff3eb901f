// NormalizeImage: kiln's own op (never in a model file), made by the normalize_image_inputs
// pass for 8-bit image inputs (EngineOptions::input_format):
//
//   y[n, c, h, w] = x[n, c, h, w] · scale[c] + bias[c]   (channels_last 0: x is [N, C, H, W])
//   y[n, c, h, w] = x[n, h, w, c] · scale[c] + bias[c]   (channels_last 1: x is [N, H, W, C])
//
// x is uint8; y is float32 [N, C, H, W] (a device keeps it in its activation dtype). The
// attributes: channels_last (int), scale and bias (floats, C each). With scale = 1/(255·std)
// and bias = −mean/std it is (x/255 − mean)/std in one pass, where the nodes it stands for
// (Transpose, Cast, Mul, Add) took four.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct NormalizeImageParams {
  bool channels_last = false;
  std::vector<float> scale, bias;  // C each
  int64_t n = 0, c = 0, h = 0, w = 0;
  Shape out;  // [N, C, H, W]
};

// The node's attributes checked against its input's dtype and shape.
Result<NormalizeImageParams> normalize_image_params(const Node& node, DataType x_dtype,
                                                    const Shape& x);

}  // namespace kiln
