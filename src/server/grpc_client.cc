#include <grpcpp/grpcpp.h>

#include "kiln_grpc_client.h"
#include "server/proto/grpc_service.grpc.pb.h"

namespace kiln::server {

namespace {

Status from_grpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return Status::ok();
  const std::string m = what + ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return invalid_argument(m);
    case grpc::StatusCode::NOT_FOUND: return not_found(m);
    case grpc::StatusCode::UNAVAILABLE: return unavailable(m);
    case grpc::StatusCode::CANCELLED: return cancelled(m);
    default: return internal_error(m);
  }
}

class Client final : public GrpcInferClient {
 public:
  Client(const std::string& url, std::string model, int channels) : model_(std::move(model)) {
    for (int i = 0; i < std::max(1, channels); ++i) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(-1);
      args.SetInt("kiln.channel", i);  // distinct arguments: a connection of its own
      stubs_.push_back(inference::GRPCInferenceService::NewStub(
          grpc::CreateCustomChannel(url, grpc::InsecureChannelCredentials(), args)));
    }
  }

  Result<std::vector<WireTensor>> inputs() override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    inference::ModelMetadataRequest q;
    q.set_name(model_);
    inference::ModelMetadataResponse r;
    KILN_RETURN_IF_ERROR(
        from_grpc(stubs_[0]->ModelMetadata(&ctx, q, &r), "model '" + model_ + "'"));
    std::vector<WireTensor> list;
    for (const auto& in : r.inputs())
      list.push_back({in.name(), in.datatype(), {in.shape().begin(), in.shape().end()}, ""});
    return list;
  }

  Status infer(const std::vector<WireTensor>& inputs, int channel) override {
    inference::ModelInferRequest q;
    q.set_model_name(model_);
    for (const WireTensor& t : inputs) {
      auto* in = q.add_inputs();
      in->set_name(t.name);
      in->set_datatype(t.datatype);
      for (int64_t d : t.shape) in->add_shape(d);
      q.add_raw_input_contents(t.bytes);
    }
    grpc::ClientContext ctx;
    inference::ModelInferResponse r;
    const size_t k = static_cast<size_t>(channel) % stubs_.size();
    return from_grpc(stubs_[k]->ModelInfer(&ctx, q, &r), "ModelInfer");
  }

 private:
  std::string model_;
  std::vector<std::unique_ptr<inference::GRPCInferenceService::Stub>> stubs_;
};

}  // namespace

Result<std::unique_ptr<GrpcInferClient>> GrpcInferClient::connect(const std::string& url,
                                                                  const std::string& model,
                                                                  int channels) {
  if (url.find(':') == std::string::npos)
    return invalid_argument("gRPC url '" + url + "': HOST:PORT");
  return std::unique_ptr<GrpcInferClient>(new Client(url, model, channels));
}

}  // namespace kiln::server
