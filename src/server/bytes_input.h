// BYTES tensors (the protocol's byte strings, here encoded images) as requests carry them: in
// binary data (HTTP's binary extension, gRPC's raw_input_contents) each element is a 4-byte
// little-endian length followed by its bytes; in JSON, strings; in gRPC's typed contents,
// bytes_contents.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln_grpc_client.h"

namespace kiln::server {

struct BytesInput {
  Shape shape;
  std::vector<std::string> elements;  // row-major, as many as the shape holds
};

// The `count` elements of `raw`. Errors name `where` and what is wrong: a length that runs past
// the data, fewer or more elements than the shape holds, bytes left over.
Result<std::vector<std::string>> split_bytes_elements(std::string_view raw, int64_t count,
                                                      const std::string& where);
// join_bytes_elements (the reverse) is public: kiln_grpc_client.h.

}  // namespace kiln::server
