#include "server/served_model.h"

#include <fstream>
#include <sstream>

#include "server/model_config.h"

namespace kiln::server {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) items.push_back(item);
  return items;
}

// The first output's class names (ServedModel::labels).
Result<std::vector<std::string>> read_labels(const std::string& dir,
                                             const inference::ModelConfig& c,
                                             const Engine& engine) {
  std::vector<std::string> labels;
  if (c.output_size() > 0 && !c.output(0).label_filename().empty()) {
    const std::string path = dir + "/" + c.output(0).label_filename();
    std::ifstream in(path);
    if (!in)
      return invalid_argument("output '" + c.output(0).name() + "': label_filename " + path +
                              " cannot be read");
    for (std::string line; std::getline(in, line);) labels.push_back(line);
    return labels;
  }
  auto it = engine.metadata().find("kiln.labels");
  if (it != engine.metadata().end()) labels = split(it->second, ',');
  return labels;
}

}  // namespace

Result<EngineOptions> engine_options(const inference::ModelConfig& c, const ServeOptions& serve) {
  EngineOptions o;
  o.threads = serve.threads;
  using Group = inference::ModelInstanceGroup;
  const Group::Kind kind =
      c.instance_group_size() > 0 ? c.instance_group(0).kind() : Group::KIND_AUTO;
  if (kind == Group::KIND_GPU && cuda_device_count() == 0)
    return unavailable("instance_group asks for KIND_GPU and this machine has no CUDA GPU");
  o.device = kind == Group::KIND_CPU || (kind == Group::KIND_AUTO && cuda_device_count() == 0)
                 ? Device::kCpu
                 : Device::kCuda;
  if (o.device == Device::kCuda && c.instance_group_size() > 0 &&
      c.instance_group(0).gpus_size() > 0)
    o.device_index = c.instance_group(0).gpus(0);
  for (const auto& [name, value] : c.parameters()) {
    const OptionInfo* info = find_option(name);
    if (!info)
      return invalid_argument("config parameter '" + name +
                              "' is not a kiln option (see kiln --help for the options)");
    std::vector<std::string> texts = info->list ? split(value.string_value(), ';')
                                                : std::vector<std::string>{value.string_value()};
    KILN_RETURN_IF_ERROR(set_option(o, name, texts, "config parameter '" + name + "'"));
  }
  return o;
}

ShapeProfiles batch_profiles(const inference::ModelConfig& c) {
  std::vector<int64_t> sizes = batch_sizes(batcher_options(c));
  const bool batched = c.max_batch_size() > 0;
  if (!batched) sizes = {0};
  ShapeProfiles profiles;
  for (int64_t size : sizes) {
    std::map<std::string, std::vector<int64_t>> profile;
    for (const auto& in : c.input()) {
      std::vector<int64_t> shape;
      if (batched) shape.push_back(size);
      for (int64_t d : in.dims()) {
        if (d < 0) return {};
        shape.push_back(d);
      }
      profile[in.name()] = shape;
    }
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

Result<std::unique_ptr<ServedModel>> ServedModel::load(const RepositoryModel& model,
                                                       const ModelVersion& version,
                                                       const ServeOptions& serve) {
  const std::string what = "model '" + model.name + "' version " + std::to_string(version.version);
  if (!model.status.is_ok()) return model.status;
  std::unique_ptr<ServedModel> m(new ServedModel());
  m->name_ = model.name;
  m->version_ = version.version;
  m->config_ = model.config;
  m->warnings_ = model.warnings;
  auto options = engine_options(m->config_, serve);
  if (!options.is_ok()) return options.status().with_context(what);
  // The model's own inputs and outputs complete the config (an import, no plan).
  {
    auto probe = Engine::load(version.model_file, *options);
    if (!probe.is_ok()) return probe.status().with_context(what);
    Status completed = complete_model_config(m->config_, model.name, **probe);
    if (!completed.is_ok()) return completed.with_context(what);
  }
  options->shape_profiles = batch_profiles(m->config_);
  if (options->shape_profiles.empty())
    m->warnings_.push_back(
        "an input of any size (-1 in its dims): its plans are built for the "
        "shapes requests bring, while serving");
  auto engine = Engine::load(version.model_file, *options);
  if (!engine.is_ok()) return engine.status().with_context(what);
  m->engine_ = *engine;
  KILN_ASSIGN_OR_RETURN(m->labels_, read_labels(model.dir, m->config_, *m->engine_));
  BatcherOptions b = batcher_options(m->config_);
  PipelineOptions p;
  p.contexts = b.instances;
  p.max_queued = static_cast<size_t>(b.instances);  // the batcher holds the queue
  auto pipeline = Pipeline::create(m->engine_, p);
  if (!pipeline.is_ok()) return pipeline.status().with_context(what);
  m->pipeline_ = std::move(*pipeline);
  Pipeline* pipe = m->pipeline_.get();
  m->batcher_ = std::make_unique<DynamicBatcher>(
      b, [pipe](const Outputs& batch) { return pipe->submit(batch).get(); });
  return m;
}

ServedModel::~ServedModel() {
  if (batcher_) batcher_->drain();
}

}  // namespace kiln::server
