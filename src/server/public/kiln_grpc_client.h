// A KServe v2 gRPC client for `kiln perf` (the CLI sees src/server/public only): the model's
// input metadata, and ModelInfer calls with raw tensor contents, several in flight on one
// client; and the binary form of BYTES tensors (encoded images), for gRPC and HTTP alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/status.h"

namespace kiln::server {

struct WireTensor {
  std::string name;
  std::string datatype;        // "FP32", "UINT8"... ("BYTES": join_bytes_elements)
  std::vector<int64_t> shape;  // the metadata's: -1 for the batch axis
  std::string bytes;           // raw contents (requests)
};

// The raw contents of a BYTES tensor of `elements`: each one's length (4 bytes,
// little-endian), then its bytes.
std::string join_bytes_elements(const std::vector<std::string_view>& elements);

class GrpcInferClient {
 public:
  // A client of `url` (HOST:PORT) for model `model`; `channels` connections share its calls.
  static Result<std::unique_ptr<GrpcInferClient>> connect(const std::string& url,
                                                          const std::string& model,
                                                          int channels = 1);
  virtual ~GrpcInferClient() = default;
  // The model's inputs (ModelMetadata): names, datatypes, shapes.
  virtual Result<std::vector<WireTensor>> inputs() = 0;
  // Sends ModelInfer with `inputs` (raw contents) on channel `channel % channels` and waits for
  // the answer: ok, or the server's status as an error (UNAVAILABLE: kUnavailable...).
  virtual Status infer(const std::vector<WireTensor>& inputs, int channel) = 0;
};

}  // namespace kiln::server
