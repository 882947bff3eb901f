// ONNX TensorProto ↔ kiln Tensor.
#pragma once

#include <string>

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/tensor_io.h"  // read_tensor_pb

namespace onnx {
class TensorProto;
}

namespace kiln {

// Converts a TensorProto (raw_data, typed fields or external data found under
// `base_dir`). String tensors and unknown types are refused with a clear error.
// `take_raw`: when it is proto's own raw_data (proto.mutable_raw_data() of a proto the
// caller discards afterwards), the bytes are moved into the Tensor instead of copied.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                                 std::string* take_raw = nullptr);

}  // namespace kiln
