#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "kiln_serve.h"
#include "server/grpc_frontend.h"
#include "server/http_frontend.h"
#include "server/model_server.h"

namespace kiln::server {

namespace {

void print_models(const ModelServer& s) {
  for (const ModelState& m : s.index()) {
    if (m.state == "READY")
      std::fprintf(stderr, "kiln serve: %s version %lld READY\n", m.name.c_str(),
                   static_cast<long long>(m.version));
    else
      std::fprintf(stderr, "kiln serve: %s UNAVAILABLE: %s\n", m.name.c_str(), m.reason.c_str());
  }
}

}  // namespace

int serve(const ServeCommand& c) {
  // SIGTERM and SIGINT are taken by a thread of their own (sigwait), not a handler: blocked here,
  // before any other thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServerOptions o;
  o.repository = c.repository;
  o.model_control = c.model_control;
  o.load_models = c.load_models;
  o.serve.threads = c.threads;
  o.serve.pinned_batches = c.pinned_batches;
  auto server = ModelServer::start(o);
  if (!server.is_ok()) {
    std::fprintf(stderr, "kiln serve: %s\n", server.status().message().c_str());
    return 1;
  }
  print_models(**server);
  if (!(*server)->gpus_note().empty())
    std::fprintf(stderr, "kiln serve: %s\n", (*server)->gpus_note().c_str());
  HttpOptions h;
  h.host = c.http_host;
  h.port = c.http_port;
  h.threads = c.http_threads;
  h.max_body_bytes = c.max_body_bytes;
  HttpFrontend http(**server, h);
  Status bound = http.bind();
  if (!bound.is_ok()) {
    std::fprintf(stderr, "kiln serve: %s\n", bound.message().c_str());
    return 1;
  }
  std::unique_ptr<GrpcFrontend> grpc;
  if (c.grpc_port >= 0) {
    GrpcOptions g;
    g.host = c.http_host;
    g.port = c.grpc_port;
    g.max_message_bytes = c.max_body_bytes;
    grpc = std::make_unique<GrpcFrontend>(**server, g);
    Status started = grpc->start();
    if (!started.is_ok()) {
      std::fprintf(stderr, "kiln serve: %s\n", started.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "kiln serve: gRPC on %s:%d\n", c.http_host.c_str(), grpc->port());
  }
  std::unique_ptr<HttpFrontend> metrics;
  std::thread metrics_thread;
  if (c.metrics_port >= 0) {
    HttpOptions m = h;
    m.port = c.metrics_port;
    m.threads = 4;
    m.metrics_only = true;
    metrics = std::make_unique<HttpFrontend>(**server, m);
    Status bound_metrics = metrics->bind();
    if (!bound_metrics.is_ok()) {
      std::fprintf(stderr, "kiln serve: metrics: %s\n", bound_metrics.message().c_str());
      return 1;
    }
    metrics_thread = std::thread([&] { metrics->serve(); });
    std::fprintf(stderr, "kiln serve: metrics on %s:%d\n", c.http_host.c_str(), metrics->port());
  }
  // --model-control poll: the repository read again every repository_poll_secs.
  std::mutex poll_mu;
  std::condition_variable poll_cv;
  bool poll_stop = false;
  std::thread poller;
  if (c.model_control == "poll")
    poller = std::thread([&] {
      std::unique_lock<std::mutex> lock(poll_mu);
      while (!poll_cv.wait_for(lock, std::chrono::duration<double>(c.repository_poll_secs),
                               [&] { return poll_stop; })) {
        lock.unlock();
        auto changed = (*server)->poll();
        if (!changed.is_ok())
          std::fprintf(stderr, "kiln serve: poll: %s\n", changed.status().message().c_str());
        else
          for (const std::string& line : *changed)
            std::fprintf(stderr, "kiln serve: poll: %s\n", line.c_str());
        lock.lock();
      }
    });
  std::fprintf(stderr, "kiln serve: HTTP on %s:%d\n", c.http_host.c_str(), http.port());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "kiln serve: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    {
      std::lock_guard<std::mutex> lock(poll_mu);
      poll_stop = true;
    }
    poll_cv.notify_all();
    (*server)->stop_admitting();  // readiness false
    http.stop();                  // the listener closes; requests in flight run on
    if (grpc) grpc->stop();       // new calls are refused; those in flight are answered
  });
  http.serve();  // returns once the handlers in flight have answered
  waiter.join();
  if (poller.joinable()) poller.join();
  (*server)->drain();
  if (metrics) {
    metrics->stop();
    metrics_thread.join();
  }
  std::fprintf(stderr, "kiln serve: stopped\n");
  return 0;
}

}  // namespace kiln::server
