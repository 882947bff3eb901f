// Dropout's one rule, shared by its reference kernel and the backends that run it as a view.
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// OK when a Dropout with these ratio and training_mode inputs (nullptr or empty: absent) is
// the identity: not training, or training with ratio 0 (it then drops nothing and scales by
// 1). kUnsupported otherwise: kiln runs inference, and random dropping has no reference result.
Status check_dropout_is_identity(const Tensor* ratio, const Tensor* training_mode);

}  // namespace kiln
