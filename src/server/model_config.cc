#include "server/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>

namespace kiln::server {

namespace {

namespace pb = google::protobuf;

// Collects the parser's errors and warnings as "where:line:column: message".
class Collector final : public pb::io::ErrorCollector {
 public:
  explicit Collector(std::string where) : where_(std::move(where)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    errors.push_back(at(line, column) + message);
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    warnings.push_back(at(line, column) + message + " (ignored)");
  }
  std::vector<std::string> errors, warnings;

 private:
  std::string at(int line, int column) const {
    return where_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
  }
  std::string where_;
};

Status field_error(const std::string& field, const std::string& what) {
  return invalid_argument("config field '" + field + "': " + what);
}

Status check_dims(const std::string& field, const pb::RepeatedField<int64_t>& dims) {
  for (int64_t d : dims)
    if (d == 0 || d < -1)
      return field_error(
          field, "dimension " + std::to_string(d) + " (each is positive, or -1 for any size)");
  return Status::ok();
}

Status check_batching(const inference::ModelConfig& c) {
  if (!c.has_dynamic_batching()) return Status::ok();
  const inference::ModelDynamicBatching& d = c.dynamic_batching();
  if (c.max_batch_size() == 0)
    return field_error("dynamic_batching",
                       "needs max_batch_size above 0 (0: the model's "
                       "inputs have no batch dimension)");
  for (int s : d.preferred_batch_size())
    if (s < 1 || s > c.max_batch_size())
      return field_error("dynamic_batching.preferred_batch_size",
                         std::to_string(s) + " is outside 1.." +
                             std::to_string(c.max_batch_size()) + " (max_batch_size)");
  if (d.priority_levels() > 0 &&
      (d.default_priority_level() < 1 || d.default_priority_level() > d.priority_levels()))
    return field_error("dynamic_batching.default_priority_level",
                       std::to_string(d.default_priority_level()) +
                           " is not one of the levels 1.." + std::to_string(d.priority_levels()));
  for (const auto& [level, policy] : d.priority_queue_policy())
    if (level < 1 || level > std::max<uint64_t>(1, d.priority_levels()))
      return field_error("dynamic_batching.priority_queue_policy",
                         "level " + std::to_string(level) + " is not one of the model's levels");
  return Status::ok();
}

QueuePolicy queue_policy(const inference::ModelQueuePolicy& p) {
  QueuePolicy q;
  q.timeout_action = p.timeout_action() == inference::ModelQueuePolicy::DELAY
                         ? QueuePolicy::TimeoutAction::kDelay
                         : QueuePolicy::TimeoutAction::kReject;
  q.default_timeout_us = p.default_timeout_microseconds();
  q.allow_timeout_override = p.allow_timeout_override();
  q.max_queue_size = p.max_queue_size();
  return q;
}

}  // namespace

Result<ParsedConfig> parse_model_config(const std::string& text, const std::string& where) {
  ParsedConfig parsed;
  Collector collector(where);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(text, &parsed.config)) {
    std::string message =
        collector.errors.empty() ? where + ": not a model configuration" : collector.errors.front();
    return invalid_argument(message);
  }
  parsed.warnings = std::move(collector.warnings);
  return parsed;
}

Status check_model_config(const inference::ModelConfig& c, std::vector<std::string>* warnings) {
  if (c.has_sequence_batching())
    return field_error("sequence_batching",
                       "kiln serve batches stateless requests only (a "
                       "sequence batcher keeps state per sequence)");
  if (c.has_ensemble_scheduling())
    return field_error("ensemble_scheduling",
                       "kiln serve runs one model per request, not "
                       "pipelines of models");
  for (const std::string& p : {c.platform(), c.backend()})
    if (!p.empty() && p != "onnxruntime_onnx" && p != "onnxruntime" && p != "kiln")
      return field_error(c.platform() == p ? "platform" : "backend",
                         "'" + p +
                             "': kiln serve runs ONNX models and kiln plans "
                             "(onnxruntime_onnx, onnxruntime or kiln)");
  if (c.max_batch_size() < 0)
    return field_error("max_batch_size", std::to_string(c.max_batch_size()) + " is negative");
  for (const auto& in : c.input()) {
    KILN_RETURN_IF_ERROR(check_dims("input " + in.name() + " dims", in.dims()));
    if (in.has_reshape() || in.is_shape_tensor() || in.allow_ragged_batch())
      warnings->push_back("input '" + in.name() +
                          "': reshape, is_shape_tensor and allow_ragged_batch are not supported "
                          "(ignored)");
  }
  for (const auto& out : c.output())
    KILN_RETURN_IF_ERROR(check_dims("output " + out.name() + " dims", out.dims()));
  KILN_RETURN_IF_ERROR(check_batching(c));
  for (const auto& g : c.instance_group()) {
    if (g.kind() == inference::ModelInstanceGroup::KIND_MODEL)
      return field_error("instance_group.kind",
                         "KIND_MODEL: kiln places instances itself "
                         "(KIND_GPU, KIND_CPU or KIND_AUTO)");
    if (g.count() < 0)
      return field_error("instance_group.count", std::to_string(g.count()) + " is negative");
    if (g.kind() == inference::ModelInstanceGroup::KIND_CPU && g.gpus_size() > 0)
      return field_error("instance_group.gpus", "a KIND_CPU group names no GPUs");
  }
  if (c.version_policy().has_latest() && c.version_policy().latest().num_versions() == 0)
    return field_error("version_policy.latest.num_versions", "0 serves no version");
  return Status::ok();
}

DataType data_type_of(inference::DataType t) {
  switch (t) {
    case inference::TYPE_BOOL: return DataType::kBool;
    case inference::TYPE_UINT8: return DataType::kUInt8;
    case inference::TYPE_UINT16: return DataType::kUInt16;
    case inference::TYPE_UINT32: return DataType::kUInt32;
    case inference::TYPE_UINT64: return DataType::kUInt64;
    case inference::TYPE_INT8: return DataType::kInt8;
    case inference::TYPE_INT16: return DataType::kInt16;
    case inference::TYPE_INT32: return DataType::kInt32;
    case inference::TYPE_INT64: return DataType::kInt64;
    case inference::TYPE_FP16: return DataType::kFloat16;
    case inference::TYPE_FP32: return DataType::kFloat32;
    case inference::TYPE_FP64: return DataType::kFloat64;
    case inference::TYPE_BF16: return DataType::kBFloat16;
    default: return DataType::kUndefined;
  }
}

inference::DataType config_type_of(DataType t) {
  for (int i = inference::DataType_MIN; i <= inference::DataType_MAX; ++i)
    if (inference::DataType_IsValid(i) && data_type_of(static_cast<inference::DataType>(i)) == t &&
        t != DataType::kUndefined)
      return static_cast<inference::DataType>(i);
  return inference::TYPE_INVALID;
}

namespace {

// The dims a config states for a model tensor: without the batch dimension where the model
// batches; symbolic dimensions as -1.
std::vector<int64_t> config_dims(const TensorInfo& t, bool batched) {
  std::vector<int64_t> dims;
  for (size_t i = batched ? 1 : 0; i < t.dims.size(); ++i)
    dims.push_back(t.dims[i] > 0 ? t.dims[i] : -1);
  return dims;
}

bool first_dim_symbolic(const TensorInfo& t) {
  return t.has_shape && !t.dims.empty() && t.dims[0] <= 0;
}

// Checks the tensors a config declares against the model's (`kind` "input" or "output"), and
// adds the ones it leaves out.
template <class Declared, class Add>
Status match_tensors(const std::string& kind, const Declared& declared,
                     const std::vector<TensorInfo>& model, bool batched, Add add) {
  for (const auto& d : declared) {
    auto it = std::find_if(model.begin(), model.end(),
                           [&](const TensorInfo& t) { return t.name == d.name(); });
    if (it == model.end())
      return field_error(kind + " " + d.name(), "the model has no " + kind + " of that name");
    const DataType want = data_type_of(d.data_type());
    const bool image_bytes = d.data_type() == inference::TYPE_STRING;  // encoded images
    if (!image_bytes && want != it->dtype)
      return field_error(kind + " " + d.name() + " data_type",
                         std::string(inference::DataType_Name(d.data_type())) +
                             " where the model's " + kind + " is " + dtype_name(it->dtype));
    const std::vector<int64_t> dims = config_dims(*it, batched);
    if (!image_bytes && it->has_shape && d.dims_size() > 0) {
      bool same = static_cast<size_t>(d.dims_size()) == dims.size();
      for (size_t i = 0; same && i < dims.size(); ++i)
        same = d.dims(static_cast<int>(i)) == dims[i] || dims[i] == -1;
      if (!same)
        return field_error(kind + " " + d.name() + " dims",
                           "they do not match the model's " + shape_str(it->dims) +
                               (batched ? " (without its batch dimension)" : ""));
    }
  }
  for (const TensorInfo& t : model) {
    const bool listed = std::any_of(declared.begin(), declared.end(),
                                    [&](const auto& d) { return d.name() == t.name; });
    if (!listed) add(t, config_dims(t, batched));
  }
  return Status::ok();
}

}  // namespace

Status complete_model_config(inference::ModelConfig& c, const std::string& model_name,
                             const Engine& engine) {
  if (c.name().empty()) c.set_name(model_name);
  if (c.name() != model_name)
    return field_error("name",
                       "'" + c.name() + "' where the model's folder is '" + model_name + "'");
  const bool all_symbolic =
      !engine.inputs().empty() &&
      std::all_of(engine.inputs().begin(), engine.inputs().end(), first_dim_symbolic);
  const bool declared = c.input_size() > 0 || c.output_size() > 0;
  if (c.max_batch_size() == 0 && !declared && all_symbolic) {
    c.set_max_batch_size(8);
    if (c.scheduling_choice_case() == inference::ModelConfig::SCHEDULING_CHOICE_NOT_SET)
      c.mutable_dynamic_batching();
  }
  if (c.max_batch_size() > 0 && !all_symbolic)
    return field_error("max_batch_size", std::to_string(c.max_batch_size()) +
                                             ": the model's inputs have no symbolic first "
                                             "(batch) dimension; use 0");
  const bool batched = c.max_batch_size() > 0;
  KILN_RETURN_IF_ERROR(match_tensors("input", c.input(), engine.inputs(), batched,
                                     [&](const TensorInfo& t, std::vector<int64_t> dims) {
                                       auto* in = c.add_input();
                                       in->set_name(t.name);
                                       in->set_data_type(config_type_of(t.dtype));
                                       for (int64_t d : dims) in->add_dims(d);
                                     }));
  return match_tensors("output", c.output(), engine.outputs(), batched,
                       [&](const TensorInfo& t, std::vector<int64_t> dims) {
                         auto* out = c.add_output();
                         out->set_name(t.name);
                         out->set_data_type(config_type_of(t.dtype));
                         for (int64_t d : dims) out->add_dims(d);
                       });
}

BatcherOptions batcher_options(const inference::ModelConfig& c) {
  BatcherOptions o;
  o.max_batch_size = c.max_batch_size();
  if (c.has_dynamic_batching()) {
    const inference::ModelDynamicBatching& d = c.dynamic_batching();
    o.preferred_batch_sizes.assign(d.preferred_batch_size().begin(),
                                   d.preferred_batch_size().end());
    o.max_queue_delay_us = d.max_queue_delay_microseconds();
    o.preserve_ordering = d.preserve_ordering();
    o.priority_levels = static_cast<uint32_t>(d.priority_levels());
    o.default_priority_level = static_cast<uint32_t>(d.default_priority_level());
    o.default_policy = queue_policy(d.default_queue_policy());
    for (const auto& [level, p] : d.priority_queue_policy())
      o.priority_policies[static_cast<uint32_t>(level)] = queue_policy(p);
  } else {
    o.join_requests = false;  // no dynamic batching: each request runs as it comes
  }
  int instances = 0;
  for (const auto& g : c.instance_group()) instances += std::max(1, g.count());
  o.instances = std::max(1, instances);
  return o;
}

}  // namespace kiln::server
