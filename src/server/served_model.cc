#include "server/served_model.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "server/infer_request.h"
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

bool is_plan_file(const std::string& path) {
  const std::string ext = ".kiln";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

}  // namespace

EngineOptions interface_options(const EngineOptions& o) {
  EngineOptions probe;
  probe.threads = 1;
  probe.optimize = o.optimize;
  probe.max_tensor_bytes = o.max_tensor_bytes;
  probe.input_format = o.input_format;
  probe.input_mean = o.input_mean;
  probe.input_std = o.input_std;
  return probe;
}

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

ShapeProfiles batch_profiles(const inference::ModelConfig& c,
                             const std::map<std::string, std::vector<int64_t>>& image_dims) {
  std::vector<int64_t> sizes = batch_sizes(batcher_options(c));
  const bool batched = c.max_batch_size() > 0;
  if (!batched) sizes = {0};
  ShapeProfiles profiles;
  for (int64_t size : sizes) {
    std::map<std::string, std::vector<int64_t>> profile;
    for (const auto& in : c.input()) {
      std::vector<int64_t> shape;
      if (batched) shape.push_back(size);
      auto image = image_dims.find(in.name());
      const std::vector<int64_t> dims =
          image != image_dims.end() ? image->second
                                    : std::vector<int64_t>(in.dims().begin(), in.dims().end());
      for (int64_t d : dims) {
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
  // The model's own inputs and outputs complete the config. A plan file's own options (its
  // shape profiles included) replace the caller's, so its one load is the engine; a model is
  // read by a CPU engine that only tells its interface.
  std::map<std::string, std::vector<int64_t>> image_dims;
  const bool plan_file = is_plan_file(version.model_file);
  std::shared_ptr<Engine> loaded;
  {
    auto probe =
        Engine::load(version.model_file, plan_file ? *options : interface_options(*options));
    if (!probe.is_ok()) return probe.status().with_context(what);
    if (plan_file) loaded = *probe;
    Status completed = complete_model_config(m->config_, model.name, **probe);
    if (!completed.is_ok()) return completed.with_context(what);
    // Inputs declared TYPE_STRING take encoded images, decoded into the engine's input.
    for (const auto& in : m->config_.input()) {
      if (in.data_type() != inference::TYPE_STRING) continue;
      for (const TensorInfo& t : (*probe)->inputs()) {
        if (t.name != in.name()) continue;
        auto layout = image_layout(model.name, t, (*probe)->metadata());
        if (!layout.is_ok()) return layout.status().with_context(what);
        m->image_inputs_[t.name] = *layout;
        image_dims[t.name].assign(t.dims.begin() + (m->config_.max_batch_size() > 0 ? 1 : 0),
                                  t.dims.end());
      }
    }
  }
  options->shape_profiles = batch_profiles(m->config_, image_dims);
  if (options->shape_profiles.empty())
    m->warnings_.push_back(
        "an input of any size (-1 in its dims): its plans are built for the "
        "shapes requests bring, while serving");
  if (!loaded) {
    auto engine = Engine::load(version.model_file, *options);
    if (!engine.is_ok()) return engine.status().with_context(what);
    loaded = *engine;
  }
  m->engine_ = loaded;
  KILN_ASSIGN_OR_RETURN(m->labels_, read_labels(model.dir, m->config_, *m->engine_));
  const std::vector<TensorInfo>& inputs = m->engine_->inputs();
  auto layout = inputs.size() == 1
                    ? image_layout(model.name, inputs[0], m->engine_->metadata())
                    : Result<ImageLayout>(invalid_argument(
                          "model '" + model.name + "' has " + std::to_string(inputs.size()) +
                          " inputs; the image endpoint feeds models of one"));
  if (layout.is_ok())
    m->classify_layout_ = *layout;
  else
    m->classify_status_ = layout.status();
  BatcherOptions b = batcher_options(m->config_);
  b.pinned_join = serve.pinned_batches && m->engine_->options().device == Device::kCuda;
  PipelineOptions p;
  p.contexts = b.instances;
  p.max_queued = static_cast<size_t>(b.instances);  // the batcher holds the queue
  auto pipeline = Pipeline::create(m->engine_, p);
  if (!pipeline.is_ok()) return pipeline.status().with_context(what);
  m->pipeline_ = std::move(*pipeline);
  Pipeline* pipe = m->pipeline_.get();
  m->batcher_ =
      std::make_unique<DynamicBatcher>(b, [pipe](const Outputs& batch, DeviceTiming* timing) {
        return pipe->submit(batch, timing).get();
      });
  for (const auto& sample : m->config_.model_warmup()) {
    Status warmed = m->warm_up(sample, model.dir);
    if (!warmed.is_ok()) return warmed.with_context(what);
  }
  return m;
}

namespace {

// One warmup input: `rows` rows (none where 0) of the sample's dims and data.
Result<Tensor> warmup_input(const inference::ModelWarmup::Input& in, const std::string& name,
                            int64_t rows, const std::string& dir) {
  const DataType dt = data_type_of(in.data_type());
  if (dt == DataType::kUndefined || dtype_size(dt) == 0)
    return invalid_argument("input '" + name + "': a data_type kiln cannot make");
  Shape shape;
  if (rows > 0) shape.push_back(rows);
  for (int64_t d : in.dims()) {
    if (d < 0) return invalid_argument("input '" + name + "': dims hold " + std::to_string(d));
    shape.push_back(d);
  }
  Tensor t = Tensor::zeros(dt, shape);
  if (in.has_random_data() && in.random_data()) {
    std::mt19937 gen(5);
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, u(gen));
  } else if (in.has_input_data_file()) {
    // Triton's layout: the file in the model's warmup/ folder, the raw bytes of every row.
    const std::string path = dir + "/warmup/" + in.input_data_file();
    std::ifstream f(path, std::ios::binary);
    if (!f) return not_found("input '" + name + "': cannot read " + path);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() != t.nbytes())
      return invalid_argument("input '" + name + "': " + path + " holds " +
                              std::to_string(bytes.size()) + " bytes where " + shape_str(shape) +
                              " takes " + std::to_string(t.nbytes()));
    std::memcpy(t.raw(), bytes.data(), bytes.size());
  }
  return t;
}

}  // namespace

Status ServedModel::warm_up(const inference::ModelWarmup& sample, const std::string& dir) {
  const std::string where = "model_warmup '" + sample.name() + "'";
  const int64_t rows = config_.max_batch_size() > 0 ? std::max<int64_t>(1, sample.batch_size()) : 0;
  Outputs inputs;
  for (const auto& [name, in] : sample.inputs()) {
    auto t = warmup_input(in, name, rows, dir);
    if (!t.is_ok()) return t.status().with_context(where);
    inputs.emplace(name, std::move(*t));
  }
  KILN_RETURN_IF_ERROR(check_inputs(config_, inputs).with_context(where));
  for (uint32_t i = 0; i < std::max<uint32_t>(1, sample.count()); ++i) {
    auto admitted = batcher_->submit(BatchRequest{inputs, 0, 0, nullptr});
    if (!admitted.is_ok()) return admitted.status().with_context(where);
    Result<Outputs> out = admitted->result.get();
    if (!out.is_ok()) return out.status().with_context(where);
  }
  return Status::ok();
}

ServedModel::~ServedModel() {
  if (batcher_) batcher_->drain();
}

Result<ImageLayout> ServedModel::classify_layout() const {
  if (!classify_status_.is_ok()) return classify_status_;
  return classify_layout_;
}

}  // namespace kiln::server
