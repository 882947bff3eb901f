// Tensor files ↔ kiln Tensor: NumPy .npy files, and serialized ONNX TensorProtos (the ONNX
// backend test data's .pb files).
//
// .npy: reads format versions 1.0, 2.0 and 3.0 with little-endian (or byte-order-free) numeric
// dtypes: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, C order. Fortran order, big-endian data,
// object/structured/string arrays and truncated files are refused with a Status that says
// which. Writes version 1.0 (2.0 when the header does not fit in 64 KiB), C order.
#pragma once

#include <string>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

Result<Tensor> read_npy(const std::string& path);
// Parses the bytes of a whole .npy file; `what` names it in error messages.
Result<Tensor> parse_npy(const std::string& bytes, const std::string& what = "npy data");

Status write_npy(const std::string& path, const Tensor& t);
// The bytes write_npy would write; fails for dtypes .npy cannot hold (bfloat16, string).
Result<std::string> encode_npy(const Tensor& t);

// Reads a serialized TensorProto file (the ONNX test-data `.pb` format): raw_data or typed
// fields; string tensors and unknown types are refused with a clear error.
Result<Tensor> read_tensor_pb(const std::string& path);

}  // namespace kiln
