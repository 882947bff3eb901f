#include "server/http_frontend.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/image_request.h"
#include "server/infer_request.h"
#include "server/live_page.h"
#include "server/metrics.h"
#include "server/model_config.h"
#include "server/v2_json.h"
#include "server/v2_status.h"

namespace kiln::server {

namespace {

using json = nlohmann::json;

const char* kModelPath = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

void reply_error(httplib::Response& res, const Status& s) {
  res.status = http_status(s);
  res.set_content(json{{"error", s.message()}}.dump(), "application/json");
}

void reply_json(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(j.dump(), "application/json");
}

std::string version_of(const httplib::Request& req) {
  return req.matches.size() > 2 ? req.matches[2].str() : "";
}

}  // namespace

int http_status(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
    case StatusCode::kOutOfRange:
    case StatusCode::kCancelled: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted: return 503;
    default: return 500;
  }
}

struct HttpFrontend::Impl {
  ModelServer& server;
  HttpOptions options;
  httplib::Server http;
  int port = -1;
  int listen_fd = -1;

  Impl(ModelServer& s, HttpOptions o) : server(s), options(std::move(o)) {}

  void infer(const httplib::Request& req, httplib::Response& res);
  void classify(const httplib::Request& req, httplib::Response& res);
  void routes();
};

void HttpFrontend::Impl::infer(const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = server.find(req.matches[1].str(), version_of(req));
  if (!model.is_ok()) return reply_error(res, model.status());
  int64_t header_length = -1;
  if (req.has_header("Inference-Header-Content-Length")) {
    const std::string v = req.get_header_value("Inference-Header-Content-Length");
    char* end = nullptr;
    header_length = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || header_length < 0)
      return reply_error(
          res, invalid_argument("Inference-Header-Content-Length '" + v + "' is not a byte count"));
  }
  auto request = parse_v2_request(req.body, header_length);
  if (!request.is_ok()) {
    record_unreadable(server, **model);
    return reply_error(res, request.status());
  }
  Result<Outputs> result = run_request(server, *model, *request, t0);
  if (!result.is_ok()) return reply_error(res, result.status());
  V2Response r = v2_response((*model)->name(), (*model)->version(), *request, *result);
  res.status = 200;
  if (r.header_length >= 0) {
    res.set_header("Inference-Header-Content-Length", std::to_string(r.header_length));
    res.set_content(std::move(r.body), "application/octet-stream");
  } else {
    res.set_content(std::move(r.body), "application/json");
  }
}

// POST an image (JPEG or PNG bytes), get the top k classes (?top_k=5).
void HttpFrontend::Impl::classify(const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = server.find(req.matches[1].str(), version_of(req));
  if (!model.is_ok()) return reply_error(res, model.status());
  int k = 5;
  if (req.has_param("top_k")) {
    const std::string v = req.get_param_value("top_k");
    char* end = nullptr;
    const long parsed = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || parsed < 1 || parsed > 1000)
      return reply_error(res, invalid_argument("top_k '" + v + "': 1 to 1000"));
    k = static_cast<int>(parsed);
  }
  ServedModel& m = **model;
  auto layout = m.classify_layout();
  if (!layout.is_ok()) return reply_error(res, layout.status());
  auto inputs = image_input(*layout, req.body);
  if (!inputs.is_ok()) return reply_error(res, inputs.status());
  V2Request request;
  request.inputs = std::move(*inputs);
  auto out = run_request(server, *model, request, t0);
  if (!out.is_ok()) return reply_error(res, out.status());
  const std::string first = m.config().output(0).name();
  json classes = json::array();
  for (const ClassScore& c : top_classes(out->at(first), k, m.labels()))
    classes.push_back({{"index", c.index}, {"label", c.label}, {"score", c.score}});
  reply_json(res, {{"model_name", m.name()},
                   {"model_version", std::to_string(m.version())},
                   {"output", first},
                   {"classes", classes}});
}

void HttpFrontend::Impl::routes() {
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_metrics(server), "text/plain; version=0.0.4");
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 413   ? "the request body is over the server's limit"
                             : res.status == 404 ? "no such endpoint"
                                                 : "the request could not be served";
    res.set_content(json{{"error", what}}.dump(), "application/json");
  });
  if (options.metrics_only) return;
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = live_page();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
  http.Get("/v2/health/live",
           [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  http.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    res.status = server.ready() ? 200 : 400;
  });
  http.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    reply_json(res, proto_json(server_metadata()));
  });
  http.Get("/v2/models/stats", [this](const httplib::Request&, httplib::Response& res) {
    reply_json(res, proto_json(*model_statistics(server, "", "")));
  });
  http.Get(std::string(kModelPath) + "/ready",
           [this](const httplib::Request& req, httplib::Response& res) {
             auto m = server.find(req.matches[1].str(), version_of(req));
             res.status = m.is_ok() && server.ready() ? 200 : 400;
           });
  http.Get(std::string(kModelPath) + "/config",
           [this](const httplib::Request& req, httplib::Response& res) {
             auto m = server.find(req.matches[1].str(), version_of(req));
             if (!m.is_ok()) return reply_error(res, m.status());
             std::string text;
             google::protobuf::util::JsonPrintOptions o;
             o.preserve_proto_field_names = true;
             (void)google::protobuf::util::MessageToJsonString((*m)->config(), &text, o);
             res.set_content(text, "application/json");
           });
  http.Get(std::string(kModelPath) + "/stats",
           [this](const httplib::Request& req, httplib::Response& res) {
             auto stats = model_statistics(server, req.matches[1].str(), version_of(req));
             if (!stats.is_ok()) return reply_error(res, stats.status());
             reply_json(res, proto_json(*stats));
           });
  http.Get(kModelPath, [this](const httplib::Request& req, httplib::Response& res) {
    auto m = server.find(req.matches[1].str(), version_of(req));
    if (!m.is_ok()) return reply_error(res, m.status());
    reply_json(res, proto_json(model_metadata(**m, server.index(true))));
  });
  http.Post(std::string(kModelPath) + "/infer",
            [this](const httplib::Request& req, httplib::Response& res) { infer(req, res); });
  http.Post(std::string(kModelPath) + "/classify",
            [this](const httplib::Request& req, httplib::Response& res) { classify(req, res); });
  http.Post("/v2/repository/index", [this](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
    const bool ready = body.is_object() && body.value("ready", false);
    reply_json(res, proto_json(repository_index(server, ready))["models"]);
  });
  http.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
            [this](const httplib::Request& req, httplib::Response& res) {
              const std::string name = req.matches[1].str();
              Status s = req.matches[2].str() == "load" ? server.load(name) : server.unload(name);
              if (!s.is_ok()) return reply_error(res, s);
              res.status = 200;
            });
}

HttpFrontend::HttpFrontend(ModelServer& server, HttpOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {
  const size_t threads = std::max<size_t>(1, impl_->options.threads);
  impl_->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl_->http.set_payload_max_length(impl_->options.max_body_bytes);
  // Debian's cpp-httplib listens with a backlog of 5: connections past it wait out a SYN
  // retry (a second) under load. The listening socket is kept here, and bind() listens again
  // with the system's limit.
  impl_->http.set_socket_options([i = impl_.get()](socket_t sock) {
    httplib::default_socket_options(sock);
    i->listen_fd = sock;
  });
  impl_->routes();
}

HttpFrontend::~HttpFrontend() { stop(); }

Status HttpFrontend::bind() {
  Impl& i = *impl_;
  if (i.options.port == 0) {
    i.port = i.http.bind_to_any_port(i.options.host);
  } else {
    i.port = i.http.bind_to_port(i.options.host, i.options.port) ? i.options.port : -1;
  }
  if (i.port < 0)
    return unavailable("HTTP: cannot listen on " + i.options.host + ":" +
                       std::to_string(i.options.port) + " (taken, or not an address here)");
  if (i.listen_fd >= 0 && ::listen(i.listen_fd, SOMAXCONN) != 0)
    return unavailable("HTTP: cannot widen the listen backlog of port " + std::to_string(i.port));
  return Status::ok();
}

int HttpFrontend::port() const { return impl_->port; }

void HttpFrontend::serve() { impl_->http.listen_after_bind(); }

void HttpFrontend::stop() { impl_->http.stop(); }

}  // namespace kiln::server
