// One version of a repository model, loaded for serving: its Engine, built with the plans of
// every batch size the batcher pads to (no plan is built and no kernel timed while serving), a
// Pipeline of one Context per instance, and the dynamic batcher in front of it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/pipeline.h"
#include "server/dynamic_batcher.h"
#include "server/image_request.h"
#include "server/model_repository.h"

namespace kiln::server {

struct ServeOptions {
  int threads = 0;  // CPU instances: threads each (0: the engine's default)
  // GPU instances join their batches in pinned host memory (BatcherOptions::pinned_join).
  bool pinned_batches = false;
};

// The engine options a config asks for: the device of its first instance group (KIND_GPU, with
// its first GPU; KIND_CPU; KIND_AUTO or none: a GPU where there is one), and kiln's own options
// in `parameters` by name (options.def: "precision": "fp16", "calibration_cache": ...; a list
// option's items separated by ';'). An unknown name or a bad value is an error naming it.
Result<EngineOptions> engine_options(const inference::ModelConfig& c, const ServeOptions& serve);

// The options of an engine that only tells a model's inputs, outputs and metadata, as an engine
// built with `o` takes and gives them (its input format applied): on the CPU in fp32, with no
// shape profiles, so that it takes no GPU memory, times nothing and calibrates nothing.
EngineOptions interface_options(const EngineOptions& o);

// The shape profiles of the batch sizes a batcher of `c` pads to (one profile per size), or of
// the configured dims where the model does not batch. Empty where a dimension is -1: those
// plans are built for the shapes requests bring.
// `image_dims`: the engine's dims (without the batch) of the inputs the config declares
// TYPE_STRING (encoded images, decoded before the batch is made).
ShapeProfiles batch_profiles(const inference::ModelConfig& c,
                             const std::map<std::string, std::vector<int64_t>>& image_dims = {});

class ServedModel {
 public:
  // Loads `version` of `model` (whose status must be ok): the config completed from the model,
  // the engine with its plans, the Pipeline and the batcher, then runs its model_warmup
  // samples. Errors name the model and version (and the warmup sample).
  static Result<std::unique_ptr<ServedModel>> load(const RepositoryModel& model,
                                                   const ModelVersion& version,
                                                   const ServeOptions& serve);
  ~ServedModel();  // drains the batcher first

  const std::string& name() const { return name_; }
  int64_t version() const { return version_; }
  const inference::ModelConfig& config() const { return config_; }
  const Engine& engine() const { return *engine_; }
  DynamicBatcher& batcher() { return *batcher_; }
  // The instances' Pipeline: its requests, device times and plan builds so far.
  PipelineStats pipeline_stats() const { return pipeline_->stats(); }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The class names of the first output: its label_filename (one a line, in the model's
  // folder), else the model's kiln.labels metadata (comma separated); empty where neither.
  const std::vector<std::string>& labels() const { return labels_; }
  // The inputs the config declares TYPE_STRING: encoded images, and how the engine takes them.
  const std::map<std::string, ImageLayout>& image_inputs() const { return image_inputs_; }
  // How the image endpoint feeds the model (its one input), or why it cannot.
  Result<ImageLayout> classify_layout() const;

 private:
  ServedModel() = default;
  // Runs one model_warmup sample `count` times (at least once) through the batcher: zero data,
  // random data (uniform in [0, 1)), or the raw bytes of input_data_file in the model's
  // warmup/ folder (Triton's layout), with batch_size rows (at least 1) where the model batches.
  // Its inputs must fit the config; its runs are counted in the batcher's statistics.
  Status warm_up(const inference::ModelWarmup& sample, const std::string& dir);
  std::string name_;
  int64_t version_ = 0;
  inference::ModelConfig config_;
  std::vector<std::string> warnings_;
  std::vector<std::string> labels_;
  std::map<std::string, ImageLayout> image_inputs_;
  Status classify_status_;
  ImageLayout classify_layout_;
  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<DynamicBatcher> batcher_;
};

}  // namespace kiln::server
