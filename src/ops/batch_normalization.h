// BatchNormalization's mode rule, shared by the reference kernel and the CUDA one.
#pragma once

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

// kiln runs inference-mode BatchNormalization only: kUnsupported for training_mode=1,
// spatial=0, or any requested running/saved statistic output.
Status check_batch_norm_mode(const Node& node);

}  // namespace kiln
