// A KServe v2 gRPC client for `kiln perf` (the CLI sees src/server/public only): the model's
// input metadata, and ModelInfer calls with raw tensor contents, several in flight on one
// client.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::server {

struct WireTensor {
  std::string name;
  std::string datatype;        // "FP32", "UINT8"...
  std::vector<int64_t> shape;  // the metadata's: -1 for the batch axis
  std::string bytes;           // raw contents (requests)
};

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
