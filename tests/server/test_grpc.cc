// KServe v2 over gRPC (src/server/grpc_frontend.h) on loopback, through a client stub generated
// from kiln's own grpc_service.proto: every RPC, raw and typed tensor contents, the status codes
// of bad requests, batching under concurrency, cancellation of queued work, and overload. (The
// Python test, test_grpc_client.py, speaks to it through a separately written .proto.)
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "serve_test_repository.h"
#include "server/grpc_frontend.h"
#include "server/proto/grpc_service.grpc.pb.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

class Grpc : public testing::Test {
 protected:
  void SetUp() override {
    root_ = testing_repo::write_repository("grpc");
    auto s = testing_repo::start_server(root_);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(*s);
    GrpcOptions g;
    g.host = "127.0.0.1";
    g.port = 0;
    g.max_message_bytes = 1 << 20;
    grpc_ = std::make_unique<GrpcFrontend>(*server_, g);
    ASSERT_TRUE(grpc_->start().is_ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = GRPCInferenceService::NewStub(channel_);
    auto offline = Engine::load((root_ / "fashion" / "1" / "model.onnx").string(), {});
    ASSERT_TRUE(offline.is_ok());
    offline_ = *offline;
  }
  void TearDown() override {
    stub_.reset();
    if (grpc_) grpc_->stop();
    grpc_.reset();
    server_.reset();
    fs::remove_all(root_);
  }

  // A request for `rows` images from seed `first`, as raw bytes or typed fp32 contents.
  static ModelInferRequest request(const std::string& model, uint32_t first, int64_t rows,
                                   bool raw = true) {
    ModelInferRequest q;
    q.set_model_name(model);
    q.set_id("r" + std::to_string(first));
    auto* in = q.add_inputs();
    in->set_name("input");
    in->set_datatype("FP32");
    for (int64_t d : {rows, int64_t{1}, int64_t{28}, int64_t{28}}) in->add_shape(d);
    const std::vector<float> x = testing_repo::images(first, rows);
    if (raw)
      q.add_raw_input_contents(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
    else
      for (float v : x) in->mutable_contents()->add_fp32_contents(v);
    return q;
  }
  static std::vector<float> logits(const ModelInferResponse& r) {
    std::vector<float> v;
    for (int i = 0; i < r.outputs_size(); ++i) {
      if (r.outputs(i).name() != "logits") continue;
      const std::string& bytes = r.raw_output_contents(i);
      v.resize(bytes.size() / sizeof(float));
      std::memcpy(v.data(), bytes.data(), bytes.size());
    }
    return v;
  }
  static void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
  }
  grpc::Status infer(const ModelInferRequest& q, ModelInferResponse* r, int deadline_ms = 30000) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    return stub_->ModelInfer(&ctx, q, r);
  }
  inference::ModelStatistics stats(const std::string& model) {
    grpc::ClientContext ctx;
    inference::ModelStatisticsRequest q;
    q.set_name(model);
    inference::ModelStatisticsResponse r;
    EXPECT_TRUE(stub_->ModelStatistics(&ctx, q, &r).ok());
    return r.model_stats_size() ? r.model_stats(0) : inference::ModelStatistics{};
  }

  fs::path root_;
  std::unique_ptr<ModelServer> server_;
  std::unique_ptr<GrpcFrontend> grpc_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
  std::shared_ptr<Engine> offline_;
};

TEST_F(Grpc, HealthMetadataConfigIndex) {
  {
    grpc::ClientContext c;
    inference::ServerLiveResponse r;
    ASSERT_TRUE(stub_->ServerLive(&c, {}, &r).ok());
    EXPECT_TRUE(r.live());
  }
  {
    grpc::ClientContext c;
    inference::ServerReadyResponse r;
    ASSERT_TRUE(stub_->ServerReady(&c, {}, &r).ok());
    EXPECT_TRUE(r.ready());
  }
  for (const auto& [name, ready] :
       {std::pair{"fashion", true}, {"broken", false}, {"none", false}}) {
    grpc::ClientContext c;
    inference::ModelReadyRequest q;
    q.set_name(name);
    inference::ModelReadyResponse r;
    ASSERT_TRUE(stub_->ModelReady(&c, q, &r).ok());
    EXPECT_EQ(r.ready(), ready) << name;
  }
  {
    grpc::ClientContext c;
    inference::ServerMetadataResponse r;
    ASSERT_TRUE(stub_->ServerMetadata(&c, {}, &r).ok());
    EXPECT_EQ(r.name(), "kiln");
    EXPECT_FALSE(r.version().empty());
    EXPECT_GE(r.extensions_size(), 3);
  }
  {
    grpc::ClientContext c;
    inference::ModelMetadataRequest q;
    q.set_name("fashion");
    inference::ModelMetadataResponse r;
    ASSERT_TRUE(stub_->ModelMetadata(&c, q, &r).ok());
    EXPECT_EQ(r.name(), "fashion");
    ASSERT_EQ(r.versions_size(), 1);
    EXPECT_EQ(r.versions(0), "1");
    ASSERT_EQ(r.inputs_size(), 1);
    EXPECT_EQ(r.inputs(0).name(), "input");
    EXPECT_EQ(r.inputs(0).datatype(), "FP32");
    EXPECT_EQ(std::vector<int64_t>(r.inputs(0).shape().begin(), r.inputs(0).shape().end()),
              (std::vector<int64_t>{-1, 1, 28, 28}));
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(r.outputs(0).name(), "logits");
  }
  {
    grpc::ClientContext c;
    inference::ModelConfigRequest q;
    q.set_name("fashion");
    inference::ModelConfigResponse r;
    ASSERT_TRUE(stub_->ModelConfig(&c, q, &r).ok());
    EXPECT_EQ(r.config().max_batch_size(), 8);
    EXPECT_EQ(r.config().dynamic_batching().max_queue_delay_microseconds(), 1000u);
  }
  for (const auto& [name, code] : {std::pair{"none", grpc::StatusCode::NOT_FOUND},
                                   {"broken", grpc::StatusCode::UNAVAILABLE}}) {
    grpc::ClientContext c;
    inference::ModelMetadataRequest q;
    q.set_name(name);
    inference::ModelMetadataResponse r;
    const grpc::Status s = stub_->ModelMetadata(&c, q, &r);
    EXPECT_EQ(s.error_code(), code) << name << ": " << s.error_message();
  }
  {
    grpc::ClientContext c;
    inference::RepositoryIndexResponse r;
    ASSERT_TRUE(stub_->RepositoryIndex(&c, {}, &r).ok());
    ASSERT_EQ(r.models_size(), 5);
    EXPECT_EQ(r.models(0).name(), "broken");
    EXPECT_EQ(r.models(0).state(), "UNAVAILABLE");
    EXPECT_NE(r.models(0).reason().find("sequence_batching"), std::string::npos);
    EXPECT_EQ(r.models(2).name(), "fashion");
    EXPECT_EQ(r.models(2).state(), "READY");
    EXPECT_EQ(r.models(2).version(), "1");
  }
}

// Raw contents and typed fp32_contents give the offline engine's logits; the id comes back, and
// only the requested outputs.
TEST_F(Grpc, InferRawAndTypedContents) {
  for (bool raw : {true, false}) {
    ModelInferRequest q = request("fashion", 7, 3, raw);
    q.add_outputs()->set_name("logits");
    ModelInferResponse r;
    const grpc::Status s = infer(q, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.model_name(), "fashion");
    EXPECT_EQ(r.model_version(), "1");
    EXPECT_EQ(r.id(), "r7");
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(r.outputs(0).datatype(), "FP32");
    EXPECT_EQ(std::vector<int64_t>(r.outputs(0).shape().begin(), r.outputs(0).shape().end()),
              (std::vector<int64_t>{3, 10}));
    expect_close(logits(r), testing_repo::offline_logits(*offline_, 7, 3));
  }
  const inference::ModelStatistics s = stats("fashion");
  EXPECT_EQ(s.inference_stats().success().count(), 2u);
  EXPECT_EQ(s.inference_count(), 6u);
  EXPECT_GE(s.execution_count(), 1u);
}

// Each bad request gets the protocol's code and a message naming what is wrong; the server
// answers the next good one.
TEST_F(Grpc, BadRequestsGetClearErrors) {
  struct Case {
    const char* what;
    std::function<void(ModelInferRequest&)> spoil;
    grpc::StatusCode code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"unknown model", [](ModelInferRequest& q) { q.set_model_name("nothing"); },
       grpc::StatusCode::NOT_FOUND, "nothing"},
      {"unknown version", [](ModelInferRequest& q) { q.set_model_version("9"); },
       grpc::StatusCode::NOT_FOUND, "9"},
      {"unavailable model", [](ModelInferRequest& q) { q.set_model_name("broken"); },
       grpc::StatusCode::UNAVAILABLE, "broken"},
      {"wrong datatype", [](ModelInferRequest& q) { q.mutable_inputs(0)->set_datatype("FP64"); },
       grpc::StatusCode::INVALID_ARGUMENT, "bytes of raw_input_contents"},
      {"unknown datatype", [](ModelInferRequest& q) { q.mutable_inputs(0)->set_datatype("FP8"); },
       grpc::StatusCode::INVALID_ARGUMENT, "FP8"},
      {"wrong shape", [](ModelInferRequest& q) { q.mutable_inputs(0)->set_shape(2, 14); },
       grpc::StatusCode::INVALID_ARGUMENT, "raw_input_contents"},
      {"shape the model does not take",
       [](ModelInferRequest& q) {
         q.mutable_inputs(0)->set_shape(2, 56);
         q.mutable_inputs(0)->set_shape(3, 14);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "[N,1,28,28]"},
      {"huge shape",
       [](ModelInferRequest& q) { q.mutable_inputs(0)->set_shape(0, int64_t{1} << 40); },
       grpc::StatusCode::INVALID_ARGUMENT, "more elements"},
      {"negative dimension", [](ModelInferRequest& q) { q.mutable_inputs(0)->set_shape(0, -1); },
       grpc::StatusCode::INVALID_ARGUMENT, "negative"},
      {"unknown input", [](ModelInferRequest& q) { q.mutable_inputs(0)->set_name("image"); },
       grpc::StatusCode::INVALID_ARGUMENT, "'image'"},
      {"raw contents for some inputs",
       [](ModelInferRequest& q) {
         auto* extra = q.add_inputs();
         extra->set_name("second");
         extra->set_datatype("FP32");
         extra->add_shape(1);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "raw_input_contents for 2 inputs"},
      {"fp16 as typed contents",
       [](ModelInferRequest& q) {
         q.clear_raw_input_contents();
         q.mutable_inputs(0)->set_datatype("FP16");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "only as raw_input_contents"},
      {"too few typed values",
       [](ModelInferRequest& q) {
         q.clear_raw_input_contents();
         q.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.f);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "1 values in contents"},
      {"unknown output", [](ModelInferRequest& q) { q.add_outputs()->set_name("boxes"); },
       grpc::StatusCode::INVALID_ARGUMENT, "'boxes'"},
      {"rows over max_batch_size", [](ModelInferRequest& q) { q = request("fashion", 1, 9); },
       grpc::StatusCode::INVALID_ARGUMENT, "max_batch_size 8"},
      {"bad priority",
       [](ModelInferRequest& q) { (*q.mutable_parameters())["priority"].set_string_param("high"); },
       grpc::StatusCode::INVALID_ARGUMENT, "priority"},
      {"message over the limit", [](ModelInferRequest& q) { q = request("fashion", 1, 400); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, ""},
  };
  for (const Case& c : cases) {
    ModelInferRequest q = request("fashion", 1, 2);
    c.spoil(q);
    ModelInferResponse r;
    const grpc::Status s = infer(q, &r);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(c.says), std::string::npos)
        << c.what << ": " << s.error_message();
  }
  ModelInferResponse r;
  ASSERT_TRUE(infer(request("fashion", 3, 1), &r).ok());
  expect_close(logits(r), testing_repo::offline_logits(*offline_, 3, 1));
}

// 64 clients at once, 1 to 3 rows each: every answer is the offline engine's for its own rows,
// and the requests ran in fewer batches than requests.
TEST_F(Grpc, ConcurrentRequestsBatchAndAnswerRight) {
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 64; ++c)
    clients.emplace_back([&, c] {
      const int64_t rows = 1 + c % 3;
      ModelInferResponse r;
      const grpc::Status s = infer(request("fashion", 100 + c * 4, rows), &r);
      if (!s.ok()) return;
      const auto got = logits(r);
      const auto want = testing_repo::offline_logits(*offline_, 100 + c * 4, rows);
      bool same = got.size() == want.size();
      for (size_t i = 0; same && i < got.size(); ++i)
        same = std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i]));
      if (same) ++right;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(right.load(), 64);
  const inference::ModelStatistics s = stats("fashion");
  EXPECT_EQ(s.inference_stats().success().count(), 64u);
  std::printf("[ batching ] 64 gRPC requests ran in %llu batches\n",
              static_cast<unsigned long long>(s.execution_count()));
  EXPECT_LT(s.execution_count(), 64u);
}

// A client whose deadline passes, or which cancels, while its request waits in the queue takes
// the request out: it never runs, and the statistics count a cancelled failure.
TEST_F(Grpc, CancelledClientsTakeTheirRequestsOutOfTheQueue) {
  ModelInferResponse r;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status late = infer(request("patient", 1, 1), &r, /*deadline_ms=*/300);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << late.error_message();
  {
    grpc::ClientContext ctx;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ctx.TryCancel();
    });
    const grpc::Status s = stub_->ModelInfer(&ctx, request("patient", 2, 1), &r);
    canceller.join();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  }
  inference::ModelStatistics s;
  for (int i = 0; i < 100 && s.inference_stats().fail().count() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s = stats("patient");
  }
  EXPECT_EQ(s.inference_stats().fail().count(), 2u);
  EXPECT_EQ(s.execution_count(), 0u);  // neither ran
  // Well before the 5 s queue delay.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
}

// 24 clients at once against a queue of 4: the surplus is refused at once with UNAVAILABLE
// "Exceeds maximum queue size"; every request admitted is answered.
TEST_F(Grpc, OverloadRefusesAtOnceAndLosesNothingAdmitted) {
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 24; ++c)
    clients.emplace_back([&, c] {
      for (int i = 0; i < 4; ++i) {
        ModelInferResponse r;
        const grpc::Status s = infer(request("deep", 200 + c * 4 + i, 1), &r);
        if (s.ok() && logits(r).size() == 10)
          ++ok;
        else if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
                 s.error_message().find("Exceeds maximum queue size") != std::string::npos)
          ++refused;
        else
          ++other;
      }
    });
  for (auto& t : clients) t.join();
  std::printf("[ overload ] 96 gRPC requests: %d answered, %d refused\n", ok.load(),
              refused.load());
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok + refused, 96);
  EXPECT_GT(refused.load(), 0);
  EXPECT_GT(ok.load(), 0);
  const inference::ModelStatistics s = stats("deep");
  EXPECT_EQ(s.inference_stats().success().count(), static_cast<uint64_t>(ok.load()));
  EXPECT_EQ(s.inference_stats().fail().count(), static_cast<uint64_t>(refused.load()));
}

// ModelStreamInfer: 12 requests on one stream (one of them bad) get 12 answers, each found
// by its id: the right logits, or for the bad one an error_message naming what is wrong; the
// stream ends OK after the client's WritesDone.
TEST_F(Grpc, StreamInferAnswersEachRequestByItsId) {
  grpc::ClientContext ctx;
  auto stream = stub_->ModelStreamInfer(&ctx);
  for (uint32_t i = 0; i < 12; ++i) {
    ModelInferRequest q = request(i == 5 ? "nothing" : "fashion", 300 + i, 1 + i % 2);
    q.set_id("s" + std::to_string(i));
    ASSERT_TRUE(stream->Write(q));
  }
  ASSERT_TRUE(stream->WritesDone());
  std::map<std::string, inference::ModelStreamInferResponse> answers;
  inference::ModelStreamInferResponse r;
  while (stream->Read(&r)) answers[r.infer_response().id()] = r;
  const grpc::Status end = stream->Finish();
  EXPECT_TRUE(end.ok()) << end.error_message();
  ASSERT_EQ(answers.size(), 12u);
  for (uint32_t i = 0; i < 12; ++i) {
    const auto& a = answers["s" + std::to_string(i)];
    if (i == 5) {
      EXPECT_NE(a.error_message().find("nothing"), std::string::npos) << a.error_message();
      continue;
    }
    EXPECT_TRUE(a.error_message().empty()) << a.error_message();
    expect_close(logits(a.infer_response()),
                 testing_repo::offline_logits(*offline_, 300 + i, 1 + i % 2));
  }
}

// A stream whose client cancels while its request waits in the queue: the request is taken
// out and never runs.
TEST_F(Grpc, StreamCancelTakesQueuedRequestsOut) {
  grpc::ClientContext ctx;
  auto stream = stub_->ModelStreamInfer(&ctx);
  ModelInferRequest q = request("patient", 1, 1);
  ASSERT_TRUE(stream->Write(q));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ctx.TryCancel();
  inference::ModelStreamInferResponse r;
  while (stream->Read(&r)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  inference::ModelStatistics s;
  for (int i = 0; i < 100 && s.inference_stats().fail().count() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s = stats("patient");
  }
  EXPECT_EQ(s.inference_stats().fail().count(), 1u);
  EXPECT_EQ(s.execution_count(), 0u);
}

// A stream its client keeps open does not hold a drain up past drain_timeout.
TEST_F(Grpc, StopEndsAnOpenStreamAfterTheDrainTimeout) {
  grpc_->stop();
  GrpcOptions g;
  g.host = "127.0.0.1";
  g.port = 0;
  g.drain_timeout = std::chrono::seconds(1);
  grpc_ = std::make_unique<GrpcFrontend>(*server_, g);
  ASSERT_TRUE(grpc_->start().is_ok());
  auto stub = GRPCInferenceService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_->port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto stream = stub->ModelStreamInfer(&ctx);
  ModelInferRequest q = request("fashion", 1, 1);
  ASSERT_TRUE(stream->Write(q));
  inference::ModelStreamInferResponse r;
  ASSERT_TRUE(stream->Read(&r));  // answered; the stream stays open
  const auto t0 = std::chrono::steady_clock::now();
  grpc_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  while (stream->Read(&r)) {
  }
  EXPECT_FALSE(stream->Finish().ok());
}

TEST_F(Grpc, RepositoryLoadUnload) {
  auto call = [&](bool load, const std::string& name) {
    grpc::ClientContext c;
    if (load) {
      inference::RepositoryModelLoadRequest q;
      q.set_model_name(name);
      inference::RepositoryModelLoadResponse r;
      return stub_->RepositoryModelLoad(&c, q, &r);
    }
    inference::RepositoryModelUnloadRequest q;
    q.set_model_name(name);
    inference::RepositoryModelUnloadResponse r;
    return stub_->RepositoryModelUnload(&c, q, &r);
  };
  ModelInferResponse r;
  ASSERT_TRUE(call(false, "fashion").ok());
  EXPECT_EQ(infer(request("fashion", 1, 1), &r).error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(call(true, "fashion").ok());
  EXPECT_TRUE(infer(request("fashion", 1, 1), &r).ok());
  const grpc::Status missing = call(true, "nothing");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(missing.error_message().find("no model 'nothing'"), std::string::npos);
}

// Loads run off gRPC's callback threads: while one is in flight the server answers other calls,
// and a load still running when the server stops is answered before stop() returns.
TEST_F(Grpc, ALoadInFlightDoesNotHoldOtherCallsAndIsAnsweredAtStop) {
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<inference::RepositoryModelLoadRequest> requests(4);
  std::vector<inference::RepositoryModelLoadResponse> responses(4);
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0, ok = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].set_model_name("fashion");  // reloads, each building the model again
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    stub_->async()->RepositoryModelLoad(contexts.back().get(), &requests[i], &responses[i],
                                        [&](grpc::Status st) {
                                          std::lock_guard<std::mutex> lock(mu);
                                          ++answered;
                                          ok += st.ok();
                                          cv.notify_all();
                                        });
  }
  // Other calls go on meanwhile.
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext c;
    inference::ServerLiveRequest q;
    inference::ServerLiveResponse r;
    ASSERT_TRUE(stub_->ServerLive(&c, q, &r).ok());
    EXPECT_TRUE(r.live());
  }
  const auto t0 = std::chrono::steady_clock::now();
  grpc_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return answered == 4; }));
  EXPECT_EQ(ok, 4);
}

}  // namespace
}  // namespace kiln::server
