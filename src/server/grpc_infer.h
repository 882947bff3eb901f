// The gRPC inference messages of KServe v2 (grpc_service.proto's ModelInferRequest and
// ModelInferResponse) to and from kiln's protocol-neutral request (V2Request) and outputs.
#pragma once

#include <string>

#include "server/proto/grpc_service.pb.h"
#include "server/v2_json.h"

namespace kiln::server {

// A request's inputs (raw_input_contents, one per input in order, or the typed `contents`),
// requested outputs and parameters ("priority", "timeout" in microseconds). Errors
// (kInvalidArgument) name the input and what is wrong: an unknown datatype, a shape that does
// not match its bytes or values, raw contents for some inputs only, a negative dimension, an
// input given twice, FP16/BF16 without raw contents. The raw contents move into the inputs'
// tensors, without a copy: `request` keeps its other fields, and empty raw contents.
Result<V2Request> from_grpc(inference::ModelInferRequest& request);

// The response to `request` with `outputs`: each output's name, datatype and shape, and its
// bytes in raw_output_contents (row-major, in the order of `outputs`), as Triton answers.
void to_grpc(const std::string& model, int64_t version, const inference::ModelInferRequest& request,
             const Outputs& outputs, inference::ModelInferResponse* response);

}  // namespace kiln::server
