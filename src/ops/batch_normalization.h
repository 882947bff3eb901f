// BatchNormalization's attributes and mode rule, shared by the reference kernel, the passes
// and every backend.
#pragma once

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

// With ONNX's defaults.
struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool training_mode = false;
};
inline BatchNormAttrs batch_norm_attrs(const Node& n) {
  BatchNormAttrs a;
  a.epsilon = n.attrs.get_float("epsilon", a.epsilon);
  a.training_mode = n.attrs.get_int("training_mode", 0) != 0;
  return a;
}

// kiln runs inference-mode BatchNormalization only: kUnsupported for training_mode=1,
// spatial=0, or any requested running/saved statistic output.
Status check_batch_norm_mode(const Node& node);

}  // namespace kiln
