// `kiln serve --model-repository DIR [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002]
// [--model-control none|poll|explicit] [--load-model NAME...]`: a Triton-compatible model server
// (KServe v2 over HTTP and gRPC) with a dynamic batcher per model; SIGTERM drains it
// (kiln_serve.h).
#include "cli_common.h"
#include "kiln_serve.h"

namespace kiln::cli {

namespace {

int run(const server::ServeCommand& c, const GlobalOptions& global) {
  server::ServeCommand command = c;
  command.threads = global.engine.threads;
  if (command.model_control != "none" && command.model_control != "poll" &&
      command.model_control != "explicit")
    return usage_error("--model-control " + command.model_control + ": none, poll or explicit");
  if (!command.load_models.empty() && command.model_control != "explicit")
    return usage_error("--load-model takes effect with --model-control explicit");
  return server::serve(command);
}

}  // namespace

Command add_serve_command(CLI::App& root, const GlobalOptions& global) {
  auto c = std::make_shared<server::ServeCommand>();
  CLI::App* app = root.add_subcommand(
      "serve",
      "serve a model repository (Triton's layout) over KServe v2 HTTP and gRPC, with dynamic "
      "batching; SIGTERM drains");
  app->add_option("--model-repository", c->repository,
                  "DIR/<model>/config.pbtxt and DIR/<model>/<version>/model.onnx|model.kiln")
      ->required();
  app->add_option("--http-host", c->http_host, "the address to listen on (HTTP and gRPC)")
      ->capture_default_str();
  app->add_option("--http-port", c->http_port, "the HTTP port (0: any free one, printed)")
      ->capture_default_str();
  app->add_option("--grpc-port", c->grpc_port,
                  "the gRPC port (inference.GRPCInferenceService; -1: none; 0: any free one)")
      ->capture_default_str();
  app->add_option("--metrics-port", c->metrics_port,
                  "Prometheus metrics (GET /metrics) on their own port (-1: none; 0: any free "
                  "one; the HTTP port serves them too)")
      ->capture_default_str();
  app->add_option("--http-threads", c->http_threads,
                  "connections served at once (cpp-httplib holds a thread per connection)")
      ->capture_default_str();
  app->add_option("--max-body-bytes", c->max_body_bytes, "the largest request body (larger: 413)")
      ->capture_default_str();
  app->add_option("--model-control", c->model_control,
                  "none (load every model at start), poll (and follow the repository's changes) or "
                  "explicit (load and unload through "
                  "v2/repository)")
      ->capture_default_str();
  app->add_option("--repository-poll-secs", c->repository_poll_secs,
                  "poll model control: seconds between reads of the repository (changed models "
                  "reload, new ones load, removed ones unload)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_flag("--pinned-batches", c->pinned_batches,
                "GPU models: join batches in pinned host memory, copied to the GPU by DMA without "
                "the engine's staging copy");
  app->add_option("--load-model", c->load_models,
                  "explicit model control: a model to load at start (repeatable)");
  return {app, [c, &global] { return run(*c, global); }};
}

}  // namespace kiln::cli
