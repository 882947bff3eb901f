// `kiln serve`'s entry, the one header of the server the CLI sees: a Triton-compatible model
// server over a model repository (src/server).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::server {

struct ServeCommand {
  std::string repository;
  std::string model_control = "none";  // none, poll or explicit
  double repository_poll_secs = 15;    // poll: how often the repository is read again
  std::vector<std::string> load_models;
  std::string http_host = "0.0.0.0";
  int http_port = 8000;
  int grpc_port = 8001;     // KServe v2 over gRPC (-1: none)
  int metrics_port = 8002;  // GET /metrics alone (-1: none; the HTTP port serves it too)
  size_t http_threads = 256;
  size_t max_body_bytes = size_t{256} << 20;
  int threads = 0;  // CPU instances: threads each
  // GPU instances join their batches in pinned host memory, which the engine copies to the GPU
  // by DMA without its own staging copy (one host copy of every batch fewer).
  bool pinned_batches = false;
};

// Loads the repository's models, serves KServe v2 over HTTP and gRPC until SIGTERM or SIGINT,
// then drains: readiness turns false, the listeners close, every admitted request is answered.
// Returns the process exit code (0 after a clean drain); errors are printed to stderr.
int serve(const ServeCommand& command);

}  // namespace kiln::server
