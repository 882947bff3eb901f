// KServe v2 over gRPC (the inference.GRPCInferenceService of grpc_service.proto), in front of a
// ModelServer, on gRPC's callback API: no thread waits on a request. ModelInfer admits its
// request to the model's batcher and returns; the batcher's thread answers when the batch has
// run. A client that cancels or goes away (or whose deadline passes) takes its request out of
// the queue where it still waits there (ServerContext cancellation → DynamicBatcher::cancel).
//
// Status codes, as Triton maps them: INVALID_ARGUMENT for a bad request, NOT_FOUND for an
// unknown model, UNAVAILABLE for a full queue ("Exceeds maximum queue size") or a model that is
// not available, CANCELLED, INTERNAL otherwise. RPCs that kiln does not declare (shared
// memory, tracing) answer UNIMPLEMENTED. ModelStreamInfer admits each request of the stream as
// it arrives and writes each answer as it comes (an error as error_message, the stream going
// on).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "server/model_server.h"

namespace kiln::server {

struct GrpcOptions {
  std::string host = "0.0.0.0";
  int port = 8001;  // 0: any free port (port() says which)
  size_t max_message_bytes = size_t{256} << 20;
  std::chrono::seconds drain_timeout{30};  // stop(): how long calls in flight may go on
};

class GrpcFrontend {
 public:
  GrpcFrontend(ModelServer& server, GrpcOptions options);
  ~GrpcFrontend();
  // Binds the port and starts serving on gRPC's own threads (an error names a taken port).
  Status start();
  int port() const;
  // Stops taking RPCs and waits for those in flight to be answered (those still open after
  // drain_timeout are cancelled).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::server
