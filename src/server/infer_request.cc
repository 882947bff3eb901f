#include "server/infer_request.h"

#include <algorithm>
#include <future>

#include "server/image_request.h"
#include "server/model_config.h"

namespace kiln::server {

namespace {

uint64_t ns(double us) { return static_cast<uint64_t>(us * 1000); }

}  // namespace

Status check_inputs(const inference::ModelConfig& c, const Outputs& inputs) {
  const bool batched = c.max_batch_size() > 0;
  for (const auto& [name, t] : inputs)
    if (std::none_of(c.input().begin(), c.input().end(),
                     [&](const auto& in) { return in.name() == name; }))
      return invalid_argument("input '" + name + "' is not one of the model's inputs");
  for (const auto& in : c.input()) {
    auto it = inputs.find(in.name());
    if (it == inputs.end()) {
      if (in.optional()) continue;
      return invalid_argument("input '" + in.name() + "' is missing");
    }
    const Tensor& t = it->second;
    if (in.data_type() == inference::TYPE_STRING) {  // decoded images: rows are what is left
      if (batched && (t.dim(0) < 1 || t.dim(0) > c.max_batch_size()))
        return invalid_argument("input '" + in.name() + "': " + std::to_string(t.dim(0)) +
                                " images, where the model takes 1 to max_batch_size " +
                                std::to_string(c.max_batch_size()));
      continue;
    }
    const DataType want = data_type_of(in.data_type());
    if (t.dtype() != want)
      return invalid_argument("input '" + in.name() + "': datatype " + dtype_name(t.dtype()) +
                              " where the model takes " + dtype_name(want));
    const size_t rank = static_cast<size_t>(in.dims_size()) + (batched ? 1 : 0);
    bool fits = static_cast<size_t>(t.rank()) == rank;
    for (int i = 0; fits && i < in.dims_size(); ++i) {
      const int64_t d = in.dims(i);
      fits = d < 0 || t.dim(i + (batched ? 1 : 0)) == d;
    }
    if (batched && fits && (t.dim(0) < 1 || t.dim(0) > c.max_batch_size()))
      return invalid_argument("input '" + in.name() + "': " + std::to_string(t.dim(0)) +
                              " rows, where the model takes 1 to max_batch_size " +
                              std::to_string(c.max_batch_size()));
    if (!fits) {
      std::string want_dims = batched ? "[N" : "[";
      for (int i = 0; i < in.dims_size(); ++i)
        want_dims += (i || batched ? "," : "") + std::to_string(in.dims(i));
      return invalid_argument("input '" + in.name() + "': shape " + shape_str(t.shape()) +
                              " where the model takes " + want_dims + "]");
    }
  }
  return Status::ok();
}

namespace {

// Records one request's figures in the server's statistics.
void record(ModelServer& server, const ServedModel& model, bool ok, const Status& why,
            std::chrono::steady_clock::time_point start, const RequestTiming* timing,
            uint64_t rows) {
  InferStats one;
  if (!ok)
    one.failures[why.code() == StatusCode::kUnavailable       ? "REJECTED"
                 : why.code() == StatusCode::kCancelled       ? "CANCELED"
                 : why.code() == StatusCode::kInvalidArgument ? "OTHER"
                                                              : "BACKEND"] = 1;
  const auto now = std::chrono::steady_clock::now();
  const uint64_t total = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count());
  (ok ? one.success_count : one.fail_count) = 1;
  (ok ? one.success_ns : one.fail_ns) = total;
  one.last_inference_ms =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  if (ok && timing) {
    const DeviceTiming& d = timing->device;
    // The input: rows joined, staging waited for and copied into, copied up; the output:
    // copied down and read out.
    one.input_join_ns = ns(timing->gather_us);
    one.input_staging_wait_ns = ns(d.stage_wait_ms * 1e3);
    one.input_staging_copy_ns = ns((d.stage_ms - d.stage_wait_ms) * 1e3);
    one.input_h2d_ns = ns(d.h2d_ms * 1e3);
    const double input_us = timing->gather_us + (d.stage_ms + d.h2d_ms) * 1e3,
                 output_us = (d.d2h_ms + d.finish_ms) * 1e3;
    one.queue_ns = ns(timing->queue_us);
    one.compute_input_ns = one.input_join_ns + one.input_staging_wait_ns +
                           one.input_staging_copy_ns + one.input_h2d_ns;
    one.compute_output_ns = ns(output_us);
    one.compute_infer_ns = ns(std::max(0.0, timing->compute_us - input_us - output_us));
    one.device_compute_ns = ns(d.compute_ms * 1e3);
    one.device_wait_ns = ns(d.wait_ms * 1e3);
    one.inference_count = rows;
  }
  server.record(model.name(), model.version(), one);
}

Status check_outputs(const inference::ModelConfig& c, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (std::none_of(c.output().begin(), c.output().end(),
                     [&](const auto& o) { return o.name() == name; }))
      return invalid_argument("requested output '" + name + "' is not one of the model's");
  return Status::ok();
}

}  // namespace

Result<Outputs> request_inputs(const ServedModel& m, const V2Request& r) {
  Outputs inputs = r.inputs;
  for (const auto& [name, t] : r.inputs)
    if (m.image_inputs().count(name))
      return invalid_argument("input '" + name + "' takes BYTES (encoded images), not " +
                              v2_datatype_name(t.dtype()));
  const bool batched = m.config().max_batch_size() > 0;
  for (const auto& [name, b] : r.bytes_inputs) {
    auto it = m.image_inputs().find(name);
    if (it == m.image_inputs().end()) {
      const bool known = std::any_of(m.config().input().begin(), m.config().input().end(),
                                     [&](const auto& in) { return in.name() == name; });
      return invalid_argument(
          "input '" + name + "' is BYTES, where " +
          (known ? "the model takes tensors (declare it TYPE_STRING in config.pbtxt for encoded "
                   "images)"
                 : "the model has no input of that name"));
    }
    // One image a row: [N] or [N, 1] where the model batches, [1] or [] where it does not.
    bool fits = std::all_of(b.shape.begin() + (b.shape.empty() ? 0 : 1), b.shape.end(),
                            [](int64_t d) { return d == 1; });
    if (!batched) fits = fits && b.elements.size() == 1;
    if (!fits || b.elements.empty())
      return invalid_argument("input '" + name + "': shape " + shape_str(b.shape) +
                              " where the model takes " + (batched ? "[N] or [N,1]" : "[1]") +
                              " encoded images");
    const auto rows = static_cast<int64_t>(b.elements.size());
    if (batched && rows > m.config().max_batch_size())  // before any of them is decoded
      return invalid_argument("input '" + name + "': " + std::to_string(rows) +
                              " images, where the model takes 1 to max_batch_size " +
                              std::to_string(m.config().max_batch_size()));
    std::vector<std::string_view> images(b.elements.begin(), b.elements.end());
    KILN_ASSIGN_OR_RETURN(Tensor x, decode_images(it->second, images, "input '" + name + "'"));
    inputs.emplace(name, std::move(x));
  }
  return inputs;
}

void record_unreadable(ModelServer& server, const ServedModel& model) {
  InferStats failed;
  failed.fail_count = 1;
  failed.failures["OTHER"] = 1;
  server.record(model.name(), model.version(), failed);
}

uint64_t submit_request(ModelServer& server, std::shared_ptr<ServedModel> model,
                        const V2Request& request, std::chrono::steady_clock::time_point start,
                        InferDone done) {
  const inference::ModelConfig& c = model->config();
  Result<Outputs> inputs = request_inputs(*model, request);
  Status checked = inputs.is_ok() ? check_inputs(c, *inputs) : inputs.status();
  if (checked.is_ok()) checked = check_outputs(c, request.outputs);
  if (!checked.is_ok()) {
    record(server, *model, false, checked, start, nullptr, 0);
    done(checked);
    return 0;
  }
  const uint64_t rows = c.max_batch_size() > 0 && !inputs->empty()
                            ? static_cast<uint64_t>(inputs->begin()->second.dim(0))
                            : 1;
  BatchRequest b{std::move(*inputs), request.priority, request.timeout_us, nullptr};
  b.on_result = [&server, model, wanted = request.outputs, start, rows, done](
                    Result<Outputs> out, const RequestTiming& timing) {
    if (!out.is_ok()) {
      // An input the model itself refuses passed the config's checks: the model's failure.
      const Status why = out.status().code() == StatusCode::kInvalidArgument
                             ? internal_error(out.status().message())
                             : out.status();
      record(server, *model, false, why, start, &timing, rows);
      done(out.status());
      return;
    }
    Outputs selected;
    for (auto& [name, t] : *out)
      if (wanted.empty() || std::count(wanted.begin(), wanted.end(), name))
        selected.emplace(name, t);
    record(server, *model, true, Status::ok(), start, &timing, rows);
    done(std::move(selected));
  };
  auto admitted = model->batcher().submit(std::move(b));
  if (!admitted.is_ok()) {
    record(server, *model, false, admitted.status(), start, nullptr, 0);
    done(admitted.status());
    return 0;
  }
  return admitted->id;
}

Result<Outputs> run_request(ModelServer& server, std::shared_ptr<ServedModel> model,
                            const V2Request& request, std::chrono::steady_clock::time_point start) {
  std::promise<Result<Outputs>> promise;
  std::future<Result<Outputs>> result = promise.get_future();
  submit_request(server, std::move(model), request, start,
                 [&promise](Result<Outputs> out) { promise.set_value(std::move(out)); });
  return result.get();
}

}  // namespace kiln::server
