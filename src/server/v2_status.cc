#include "server/v2_status.h"

#include "server/model_config.h"
#include "server/v2_json.h"

namespace kiln::server {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using json = nlohmann::json;

template <typename Dims>
void add_tensor(
    google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>* list,
    const std::string& name, inference::DataType t, const Dims& dims, bool batched) {
  auto* e = list->Add();
  e->set_name(name);
  const DataType dt = data_type_of(t);
  e->set_datatype(dt == DataType::kUndefined ? "BYTES" : v2_datatype_name(dt));
  if (batched) e->add_shape(-1);
  for (int64_t d : dims) e->add_shape(d);
}

void set_duration(inference::StatisticDuration* d, uint64_t count, uint64_t ns) {
  d->set_count(count);
  d->set_ns(ns);
}

// One value of field `f` (index i of a repeated one) as JSON.
json field_value(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_BOOL: return rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return rep ? r->GetRepeatedEnum(m, f, i)->name() : r->GetEnum(m, f)->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return proto_json(rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f));
  }
  return nullptr;
}

}  // namespace

inference::ServerMetadataResponse server_metadata() {
  inference::ServerMetadataResponse r;
  r.set_name("kiln");
  r.set_version(KILN_VERSION);
  for (const char* e :
       {"binary_tensor_data", "model_repository", "statistics", "model_configuration"})
    r.add_extensions(e);
  return r;
}

inference::ModelMetadataResponse model_metadata(const ServedModel& m,
                                                const std::vector<ModelState>& index) {
  inference::ModelMetadataResponse r;
  const inference::ModelConfig& c = m.config();
  r.set_name(m.name());
  for (const ModelState& s : index)
    if (s.name == m.name() && s.state == "READY") r.add_versions(std::to_string(s.version));
  const std::string platform = c.platform().empty() ? c.backend() : c.platform();
  r.set_platform(platform.empty() ? "kiln" : platform);
  const bool batched = c.max_batch_size() > 0;
  for (const auto& i : c.input())
    add_tensor(r.mutable_inputs(), i.name(), i.data_type(), i.dims(), batched);
  for (const auto& o : c.output())
    add_tensor(r.mutable_outputs(), o.name(), o.data_type(), o.dims(), batched);
  return r;
}

inference::ModelStatistics model_statistics(ModelServer& server, ServedModel& m) {
  const InferStats s = server.stats(m.name(), m.version());
  const BatcherStats b = m.batcher().stats();
  inference::ModelStatistics r;
  r.set_name(m.name());
  r.set_version(std::to_string(m.version()));
  r.set_last_inference(s.last_inference_ms);
  r.set_inference_count(s.inference_count);
  r.set_execution_count(static_cast<uint64_t>(b.batches));
  inference::InferStatistics* st = r.mutable_inference_stats();
  set_duration(st->mutable_success(), s.success_count, s.success_ns);
  set_duration(st->mutable_fail(), s.fail_count, s.fail_ns);
  set_duration(st->mutable_queue(), s.success_count, s.queue_ns);
  set_duration(st->mutable_compute_input(), s.success_count, s.compute_input_ns);
  set_duration(st->mutable_compute_infer(), s.success_count, s.compute_infer_ns);
  set_duration(st->mutable_compute_output(), s.success_count, s.compute_output_ns);
  for (const auto& [rows, count] : b.batch_rows_histogram) {
    inference::InferBatchStatistics* bs = r.add_batch_stats();
    bs->set_batch_size(static_cast<uint64_t>(rows));
    set_duration(bs->mutable_compute_infer(), static_cast<uint64_t>(count), 0);
  }
  return r;
}

Result<inference::ModelStatisticsResponse> model_statistics(ModelServer& server,
                                                            const std::string& name,
                                                            const std::string& version) {
  inference::ModelStatisticsResponse r;
  if (!name.empty()) {
    KILN_ASSIGN_OR_RETURN(auto m, server.find(name, version));
    *r.add_model_stats() = model_statistics(server, *m);
    return r;
  }
  for (const ModelState& s : server.index(true)) {
    auto m = server.find(s.name, std::to_string(s.version));
    if (m.is_ok()) *r.add_model_stats() = model_statistics(server, **m);
  }
  return r;
}

inference::RepositoryIndexResponse repository_index(ModelServer& server, bool ready_only) {
  inference::RepositoryIndexResponse r;
  for (const ModelState& s : server.index(ready_only)) {
    auto* e = r.add_models();
    e->set_name(s.name);
    if (s.version) e->set_version(std::to_string(s.version));
    e->set_state(s.state);
    e->set_reason(s.reason);
  }
  return r;
}

json proto_json(const Message& m) {
  json out = json::object();
  const Reflection* r = m.GetReflection();
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int k = 0; k < d->field_count(); ++k) {
    const FieldDescriptor* f = d->field(k);
    if (f->is_map()) {
      json obj = json::object();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(m, f, i);
        const FieldDescriptor* key = entry.GetDescriptor()->field(0);
        const FieldDescriptor* value = entry.GetDescriptor()->field(1);
        const json k = field_value(entry, key, 0);
        obj[k.is_string() ? k.get<std::string>() : k.dump()] = field_value(entry, value, 0);
      }
      out[f->name()] = obj;
    } else if (f->is_repeated()) {
      json list = json::array();
      for (int i = 0; i < r->FieldSize(m, f); ++i) list.push_back(field_value(m, f, i));
      out[f->name()] = list;
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE || f->containing_oneof()) {
      if (r->HasField(m, f)) out[f->name()] = field_value(m, f, 0);
    } else if (f->cpp_type() != FieldDescriptor::CPPTYPE_STRING || !r->GetString(m, f).empty()) {
      out[f->name()] = field_value(m, f, 0);
    }
  }
  return out;
}

}  // namespace kiln::server
