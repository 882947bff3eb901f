// ONNX shape inference, run node by node so kiln can check each node's inputs first.
//
// libonnx's inference functions trust their inputs: on a model that passes the checker but
// has, say, a rank-2 ConvTranspose weight or a zero stride, they read out of bounds or
// divide by zero (found by fuzzing). Running them one node at a time lets the importer
// check those preconditions against the shapes known so far (declared or inferred) and
// report a Status instead of crashing.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>

#include "kiln/status.h"

namespace kiln {

using TypeMap = std::unordered_map<std::string, onnx::TypeProto>;

// The type of every value of `graph` that is declared or could be inferred. Inference
// failures leave values untyped (not an error); a node whose attributes or input ranks
// break what the ONNX spec requires (the preconditions libonnx assumes) is an error.
Result<TypeMap> infer_value_types(const onnx::GraphProto& graph, int64_t opset);

}  // namespace kiln
