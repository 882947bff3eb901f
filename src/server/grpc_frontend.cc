#include "server/grpc_frontend.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "server/grpc_infer.h"
#include "server/infer_request.h"
#include "server/proto/grpc_service.grpc.pb.h"
#include "server/v2_status.h"

namespace kiln::server {

namespace {

grpc::Status grpc_status(const Status& s) {
  if (s.is_ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
    case StatusCode::kOutOfRange: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case StatusCode::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted: code = grpc::StatusCode::UNAVAILABLE; break;
    case StatusCode::kCancelled: code = grpc::StatusCode::CANCELLED; break;
    default: break;
  }
  return grpc::Status(code, s.message());
}

// Answers a unary RPC at once.
grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* ctx, const Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc_status(s));
  return reactor;
}

// Repository control (a load builds a model's plans, for seconds to minutes; an unload drains
// its queue) runs on threads of its own rather than on gRPC's callback threads, which serve
// every other call. Each job answers its RPC when done; join() waits for all of them.
class ControlThreads {
 public:
  ~ControlThreads() { join(); }
  grpc::ServerUnaryReactor* answer_later(grpc::CallbackServerContext* ctx,
                                         std::function<Status()> work) {
    auto* reactor = ctx->DefaultReactor();
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard<std::mutex> lock(mu_);
    reap_locked();
    jobs_.push_back({std::thread([reactor, work = std::move(work), done] {
                       reactor->Finish(grpc_status(work()));
                       done->store(true);
                     }),
                     done});
    return reactor;
  }
  void join() {
    std::vector<Job> jobs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs.swap(jobs_);
    }
    for (Job& j : jobs) j.thread.join();
  }

 private:
  struct Job {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap_locked() {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::mutex mu_;
  std::vector<Job> jobs_;
};

// One ModelInfer call in flight. It is deleted when gRPC is done with it (OnDone) and the
// handler that submitted it has returned, whichever comes last: the batcher may answer before
// submit_request returns.
class InferCall final : public grpc::ServerUnaryReactor {
 public:
  explicit InferCall(std::shared_ptr<ServedModel> model) : model_(std::move(model)) {}

  // The batcher's id of the admitted request (0: refused); a cancel that came first acts now.
  void admitted(uint64_t id) {
    bool cancel_now = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id_ = id;
      cancel_now = cancelled_ && id != 0;
    }
    if (cancel_now) model_->batcher().cancel(id);
    release();
  }

  void OnCancel() override {
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      id = id_;
    }
    if (id != 0) model_->batcher().cancel(id);  // false where it already runs: it finishes
  }
  void OnDone() override { release(); }

 private:
  void release() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }
  std::shared_ptr<ServedModel> model_;
  std::mutex mu_;
  uint64_t id_ = 0;
  bool cancelled_ = false;
  std::atomic<int> refs_{2};  // the handler's, gRPC's
};

// One ModelStreamInfer call: requests are read one after another and each is admitted as it
// arrives; each answer (or its error, as error_message, the stream going on) is written as its
// batch finishes, in the order answers come. The stream ends (OK) once the client has
// finished writing and every answer is written. A client that goes away cancels its requests
// still queued. Deleted when gRPC is done with it and no answer is pending. gRPC's Start*
// and Finish are called outside the lock.
class StreamCall final : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                                        inference::ModelStreamInferResponse> {
 public:
  explicit StreamCall(ModelServer& server) : server_(server) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock<std::mutex> lock(mu_);
      reading_ = false;
      return act(lock, false);
    }
    admit(request_);
    StartRead(&request_);
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writes_.pop_front();
    if (!ok) broken_ = true;  // the client is gone: the rest is dropped
    if (broken_) writes_.clear();
    act(lock, !writes_.empty());
  }
  void OnCancel() override {
    std::vector<std::shared_ptr<Entry>> queued;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken_ = true;
      queued.assign(queued_.begin(), queued_.end());
    }
    for (const auto& e : queued) e->model->batcher().cancel(e->id);
  }
  void OnDone() override { release(); }

 private:
  struct Entry {  // one admitted request
    std::shared_ptr<ServedModel> model;
    uint64_t id = 0;
    bool done = false;
  };

  void admit(inference::ModelInferRequest& q) {
    const auto t0 = std::chrono::steady_clock::now();
    auto model = server_.find(q.model_name(), q.model_version());
    if (!model.is_ok()) return answer(q.id(), model.status());
    auto request = from_grpc(q);
    if (!request.is_ok()) {
      record_unreadable(server_, **model);
      return answer(q.id(), request.status());
    }
    auto entry = std::make_shared<Entry>();
    entry->model = *model;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++pending_;
    }
    const std::string id = q.id();
    const uint64_t admitted =
        submit_request(server_, entry->model, *request, t0, [this, entry, id](Result<Outputs> out) {
          inference::ModelStreamInferResponse r;
          if (out.is_ok()) {
            inference::ModelInferRequest named;
            named.set_id(id);
            to_grpc(entry->model->name(), entry->model->version(), named, *out,
                    r.mutable_infer_response());
          } else {
            r.set_error_message(out.status().message());
            r.mutable_infer_response()->set_id(id);
          }
          std::unique_lock<std::mutex> lock(mu_);
          --pending_;
          entry->done = true;
          queued_.erase(entry);
          if (gone_ && pending_ == 0) {  // gRPC is done with the stream: the last answer goes
            lock.unlock();
            delete this;
            return;
          }
          enqueue(std::move(r), lock);
        });
    std::lock_guard<std::mutex> lock(mu_);
    if (admitted != 0 && !entry->done) {
      entry->id = admitted;
      queued_.insert(entry);
    }
  }
  // An answer that never reached a model.
  void answer(const std::string& id, const Status& s) {
    inference::ModelStreamInferResponse r;
    r.set_error_message(s.message());
    r.mutable_infer_response()->set_id(id);
    std::unique_lock<std::mutex> lock(mu_);
    enqueue(std::move(r), lock);
  }
  // Under the lock: queues `r` (one write at a time), then acts.
  void enqueue(inference::ModelStreamInferResponse r, std::unique_lock<std::mutex>& lock) {
    bool start = false;
    if (!broken_ && !finished_) {
      writes_.push_back(std::move(r));
      start = writes_.size() == 1;
    }
    act(lock, start);
  }
  // Takes the lock's decision and acts on it unlocked: starts writing the front answer, or
  // finishes the stream where nothing is left to read, answer or write.
  void act(std::unique_lock<std::mutex>& lock, bool write_front) {
    const bool finish =
        !write_front && !finished_ && pending_ == 0 && writes_.empty() && (!reading_ || broken_);
    if (finish) finished_ = true;
    const bool broken = broken_;
    inference::ModelStreamInferResponse* front = write_front ? &writes_.front() : nullptr;
    lock.unlock();
    if (front) StartWrite(front);
    if (finish)
      Finish(broken ? grpc::Status(grpc::StatusCode::CANCELLED, "the client went away")
                    : grpc::Status::OK);
  }
  // gRPC is done with the stream (OnDone): deleted now, or by the last pending answer.
  void release() {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone_ = true;
      last = pending_ == 0;
    }
    if (last) delete this;
  }

  ModelServer& server_;
  inference::ModelInferRequest request_;
  std::mutex mu_;
  std::deque<inference::ModelStreamInferResponse> writes_;  // front: being written
  std::set<std::shared_ptr<Entry>> queued_;  // admitted, not yet answered (for cancel)
  int pending_ = 0;                          // admitted, not yet answered
  bool reading_ = true, broken_ = false, finished_ = false, gone_ = false;
};

// ModelInfer's messages, made here on the heap (not on an arena gRPC owns), so that a request's
// raw contents (a whole batch of pixels, say) can move into its tensors instead of being copied.
class InferMessages final
    : public grpc::MessageAllocator<inference::ModelInferRequest, inference::ModelInferResponse> {
  struct Holder final
      : grpc::MessageHolder<inference::ModelInferRequest, inference::ModelInferResponse> {
    Holder() {
      set_request(&request);
      set_response(&response);
    }
    void Release() override { delete this; }
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
  };

 public:
  grpc::MessageHolder<inference::ModelInferRequest, inference::ModelInferResponse>*
  AllocateMessages() override {
    return new Holder();
  }
};

class Service final : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit Service(ModelServer& server) : server_(server) {
    SetMessageAllocatorFor_ModelInfer(&messages_);
  }

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* ctx,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* r) override {
    r->set_live(server_.live());
    return answer(ctx, Status::ok());
  }
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* ctx,
                                        const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* r) override {
    r->set_ready(server_.ready());
    return answer(ctx, Status::ok());
  }
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* ctx,
                                       const inference::ModelReadyRequest* q,
                                       inference::ModelReadyResponse* r) override {
    r->set_ready(server_.find(q->name(), q->version()).is_ok() && server_.ready());
    return answer(ctx, Status::ok());
  }
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* ctx,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* r) override {
    *r = server_metadata();
    return answer(ctx, Status::ok());
  }
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* ctx,
                                          const inference::ModelMetadataRequest* q,
                                          inference::ModelMetadataResponse* r) override {
    auto m = server_.find(q->name(), q->version());
    if (m.is_ok()) *r = model_metadata(**m, server_.index(true));
    return answer(ctx, m.status());
  }
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* ctx,
                                        const inference::ModelConfigRequest* q,
                                        inference::ModelConfigResponse* r) override {
    auto m = server_.find(q->name(), q->version());
    if (m.is_ok()) *r->mutable_config() = (*m)->config();
    return answer(ctx, m.status());
  }
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* ctx,
                                            const inference::ModelStatisticsRequest* q,
                                            inference::ModelStatisticsResponse* r) override {
    auto stats = model_statistics(server_, q->name(), q->version());
    if (stats.is_ok()) *r = std::move(*stats);
    return answer(ctx, stats.status());
  }
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* ctx,
                                            const inference::RepositoryIndexRequest* q,
                                            inference::RepositoryIndexResponse* r) override {
    *r = repository_index(server_, q->ready());
    return answer(ctx, Status::ok());
  }
  // Loading builds the model's plans (seconds): it holds one of gRPC's threads meanwhile.
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* ctx,
                                                const inference::RepositoryModelLoadRequest* q,
                                                inference::RepositoryModelLoadResponse*) override {
    const std::string name = q->model_name();
    return control_.answer_later(ctx, [this, name] { return server_.load(name); });
  }
  grpc::ServerUnaryReactor* RepositoryModelUnload(
      grpc::CallbackServerContext* ctx, const inference::RepositoryModelUnloadRequest* q,
      inference::RepositoryModelUnloadResponse*) override {
    const std::string name = q->model_name();
    return control_.answer_later(ctx, [this, name] { return server_.unload(name); });
  }
  // Waits for the loads and unloads still running (after the server stopped taking calls).
  void join_control() { control_.join(); }

  grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
  ModelStreamInfer(grpc::CallbackServerContext*) override {
    return new StreamCall(server_);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx,
                                       const inference::ModelInferRequest* q,
                                       inference::ModelInferResponse* r) override {
    const auto t0 = std::chrono::steady_clock::now();
    auto model = server_.find(q->model_name(), q->model_version());
    if (!model.is_ok()) return answer(ctx, model.status());
    // Ours (InferMessages), so its raw contents may move into the request's tensors.
    auto request = from_grpc(*const_cast<inference::ModelInferRequest*>(q));
    if (!request.is_ok()) {
      record_unreadable(server_, **model);
      return answer(ctx, request.status());
    }
    auto* call = new InferCall(*model);
    const std::string name = (*model)->name();
    const int64_t version = (*model)->version();
    const uint64_t id = submit_request(
        server_, *model, *request, t0, [call, q, r, name, version](Result<Outputs> out) {
          if (out.is_ok()) to_grpc(name, version, *q, *out, r);
          call->Finish(grpc_status(out.status()));  // the last touch: gRPC may delete it now
        });
    call->admitted(id);
    return call;
  }

 private:
  ModelServer& server_;
  ControlThreads control_;
  InferMessages messages_;  // outlives the server's calls: the Service is the server's
};

}  // namespace

struct GrpcFrontend::Impl {
  ModelServer& server;
  GrpcOptions options;
  Service service;
  std::unique_ptr<grpc::Server> grpc_server;
  int port = -1;

  Impl(ModelServer& s, GrpcOptions o) : server(s), options(std::move(o)), service(s) {}
};

GrpcFrontend::GrpcFrontend(ModelServer& server, GrpcOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

GrpcFrontend::~GrpcFrontend() { stop(); }

Status GrpcFrontend::start() {
  Impl& i = *impl_;
  grpc::ServerBuilder builder;
  const std::string address = i.options.host + ":" + std::to_string(i.options.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &i.port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<size_t>(i.options.max_message_bytes, static_cast<size_t>(INT32_MAX))));
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&i.service);
  i.grpc_server = builder.BuildAndStart();
  if (!i.grpc_server || i.port <= 0)
    return unavailable("gRPC: cannot listen on " + address + " (taken, or not an address here)");
  return Status::ok();
}

int GrpcFrontend::port() const { return impl_->port; }

void GrpcFrontend::stop() {
  if (!impl_->grpc_server) return;
  // Calls in flight are answered; one still open after drain_timeout (a stream its client keeps
  // open) is cancelled, so that a drain always ends.
  impl_->grpc_server->Shutdown(std::chrono::system_clock::now() + impl_->options.drain_timeout);
  impl_->grpc_server->Wait();
  impl_->service.join_control();
  impl_->grpc_server.reset();
}

}  // namespace kiln::server
