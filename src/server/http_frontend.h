// KServe v2 over HTTP (cpp-httplib, a thread pool of `threads` connections at once), in front
// of a ModelServer:
//
//   GET  v2/health/live, v2/health/ready                    200, or 400 when not ready
//   GET  v2                                                 server metadata
//   GET  v2/models/M[/versions/V]                           model metadata
//   GET  v2/models/M[/versions/V]/ready|config|stats        (config: the completed config.pbtxt
//                                                            as JSON)
//   GET  v2/models/stats                                    every model's statistics
//   POST v2/models/M[/versions/V]/infer                     JSON or binary tensors
//   POST v2/models/M[/versions/V]/classify[?top_k=5]        a JPEG or PNG: its top k classes
//                                                            (image_request.h)
//   POST v2/repository/index, v2/repository/models/M/load|unload
//   GET  metrics                                            Prometheus text (metrics.h)
//
// Errors are {"error": "..."}: 400 for a bad request, 404 for an unknown model, 413 for a body
// over max_body_bytes, 503 for a full queue or a model that is not available, 500 otherwise.
// cpp-httplib cannot tell a handler that its client went away: the request runs to its end and
// its answer is dropped.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "server/model_server.h"

namespace kiln::server {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 8000;       // 0: any free port (port() says which)
  size_t threads = 256;  // connections served at once
  size_t max_body_bytes = size_t{256} << 20;
  // Only GET /metrics (Prometheus text, metrics.h), as on a separate metrics port; the main
  // port serves /metrics too.
  bool metrics_only = false;
};

// The HTTP status of a Status (Triton's mapping).
int http_status(const Status& s);

class HttpFrontend {
 public:
  HttpFrontend(ModelServer& server, HttpOptions options);
  ~HttpFrontend();
  // Binds the port (an error names it where it is taken).
  Status bind();
  int port() const;
  // Serves until stop(); returns when the listener has closed.
  void serve();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::server
