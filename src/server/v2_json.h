// The KServe v2 (Open Inference Protocol) REST inference messages: a JSON request's tensors
// (data nested or flat, every datatype) and the binary tensor data extension
// (Inference-Header-Content-Length: the JSON header's length, then the binary tensors in order;
// "binary_data_size" on an input, "binary_data" on a requested output), and the response.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "server/bytes_input.h"

namespace kiln::server {

// The protocol's datatype names ("FP32", "UINT8"...) and back; BYTES (and kinds kiln lacks) has
// no tensor dtype: an error naming the datatype.
Result<DataType> v2_datatype(const std::string& name);
const char* v2_datatype_name(DataType dt);

// The element count of `shape`, checked before anything is allocated for it: an error naming
// `where` for a negative dimension or a count past 2^48.
Result<int64_t> element_count(const Shape& shape, const std::string& where);

struct V2Request {
  std::string id;
  Outputs inputs;
  std::map<std::string, BytesInput> bytes_inputs;  // BYTES inputs (encoded images)
  std::vector<std::string> outputs;                // requested by name (empty: every output)
  std::map<std::string, bool> binary;              // output → returned as binary data
  bool binary_default = false;  // "binary_data_output" in the request's parameters
  uint32_t priority = 0;
  uint64_t timeout_us = 0;
};

// Parses an inference request: `body` holds the JSON header, and where `header_length` is given
// (the Inference-Header-Content-Length header), the binary tensors after it. Errors
// (kInvalidArgument) name the input and what is wrong: malformed JSON, an unknown datatype,
// a shape that does not match the data, binary data that runs short or is left over.
Result<V2Request> parse_v2_request(const std::string& body, int64_t header_length = -1);

struct V2Response {
  std::string body;
  int64_t header_length = -1;  // where binary outputs follow the JSON (else -1)
};

// The response to `request` with `outputs` (the model's, filtered to the requested ones): JSON
// data flat in row-major order, or binary where asked.
V2Response v2_response(const std::string& model, int64_t version, const V2Request& request,
                       const Outputs& outputs);

}  // namespace kiln::server
