// The public entry point: build an Engine from an ONNX model, run it through Contexts.
//
//   auto engine = kiln::Engine::load("model.onnx", {});
//   auto ctx = (*engine)->create_context();
//   auto outputs = ctx->run({{"input", tensor}});
//
// An Engine is immutable after load() and safe to share across threads. A Context owns
// everything mutable of one execution stream (intermediate tensors, scratch) and must be
// used by one thread at a time; create one per thread. An Engine must outlive its Contexts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;
class Context;

// A graph input or output as the model declares it. A dimension of -1 is symbolic
// (`dim_params` names it, e.g. "batch") or unknown.
struct TensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
  bool has_shape = false;
};

struct ModelStats {
  std::map<std::string, int64_t> op_counts;
  int64_t num_nodes = 0;
  int64_t num_parameters = 0;  // elements in initializers
  int64_t parameter_bytes = 0;
  double flops_per_image = 0;  // multiply-add = 2 FLOPs; symbolic batch taken as 1
};

// GPU times of one run, from CUDA events: host->device copies, the device compute, and
// device->host copies.
struct DeviceTiming {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
};

// One step of a device plan and its mean time in a profile.
struct LayerProfile {
  std::string name;    // the node's name (or what a conversion converts)
  std::string op;      // op kind; "CPU:<op>" for a node that fell back to the CPU
  std::string tactic;  // the chosen implementation (on the CPU: the backend's name)
  bool on_cpu = false;
  double ms = 0;
};

// What one run put in one float value (a node's output), for range checks and calibration.
struct ValueStats {
  std::string value;  // the value's name
  std::string node;   // its producer
  std::string op;
  int64_t count = 0;              // elements
  int64_t nonzero = 0;            // elements that are not 0
  int64_t below_fp16_normal = 0;  // non-zero elements with |x| < 2^-14 (fp16's smallest normal)
  int64_t nonfinite = 0;          // inf or NaN
  double max_abs = 0;             // over the finite elements
};

// Device memory a Context's current plan holds (bytes).
struct DeviceMemoryInfo {
  int64_t arena = 0;              // every activation, one reused allocation
  int64_t arena_lower_bound = 0;  // peak of live activation bytes: no arena can be smaller
  int64_t workspace = 0;          // library scratch, shared by the layers
  int64_t weights = 0;            // the engine's uploaded constants, shared by its contexts
  int64_t pinned_host = 0;        // host staging for inputs and outputs
  int64_t device_total() const { return arena + workspace + weights; }
};

// What a Context's runtime has done. A run whose input shapes (and, on the CPU, small inputs'
// values) a cached plan was built for neither builds nor allocates anything but its outputs.
// CPU plans share one arena sized for the largest; each CUDA plan holds its own arena (and
// CUDA graph), so arena_bytes is their sum there.
struct ContextStats {
  int64_t plan_builds = 0;        // plans built: a new input shape, or a plan its data refused
  int64_t plan_runs = 0;          // runs through a cached plan
  int64_t plans_cached = 0;       // plans held now (at most EngineOptions::max_cached_plans)
  int64_t arena_allocations = 0;  // times an activation arena was allocated or grown
  int64_t arena_bytes = 0;        // the arenas' size now
};

class Engine {
 public:
  ~Engine();
  static Result<std::shared_ptr<Engine>> load(const std::string& path, const EngineOptions& opts);
  static Result<std::shared_ptr<Engine>> from_bytes(const std::string& bytes,
                                                    const EngineOptions& opts,
                                                    const std::string& base_dir = ".");

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const EngineOptions& options() const;
  // Op counts, parameters and FLOPs per image, from the graph's inferred shapes.
  ModelStats stats() const;
  // The model's metadata_props (key → value).
  const std::map<std::string, std::string>& metadata() const;
  const Graph& graph() const;

  std::unique_ptr<Context> create_context() const;

  // Writes a plan file (.kiln) that Engine::load takes like an .onnx: the model, the build
  // options and the timing cache, tied to this GPU, driver libraries and kiln version.
  // CUDA engines only.
  Status save_plan(const std::string& path) const;

  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Context {
 public:
  ~Context();
  // Runs the model. Every graph input must be given, with the declared dtype and a shape
  // that matches the declared one (symbolic dimensions take any size).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs);

  // CUDA engines only (an error on the CPU), about the plan of the last run's shapes:
  // GPU times of the last run().
  Result<DeviceTiming> last_device_timing() const;
  // Runs the device compute of the last run again `iterations` times, with the inputs
  // already on the device and no host copies (the CUDA graph when enabled); ms per run.
  Result<std::vector<double>> time_compute(int iterations);
  // Every step's mean time over `iterations` runs of the last run's inputs: device time per
  // step on CUDA (steps launched one by one), each node's kernel time on the CPU.
  Result<std::vector<LayerProfile>> profile_layers(int iterations);
  Result<DeviceMemoryInfo> device_memory() const;
  // Whether the last run replayed a CUDA graph.
  bool uses_cuda_graph() const;
  // Plan builds, cache use and arena size so far.
  ContextStats stats() const;

  // CPU engines only: runs the model and returns the statistics of every float32 value a
  // node writes, in execution order (graph inputs and constants are not included).
  Result<std::vector<ValueStats>> value_stats(const std::map<std::string, Tensor>& inputs);

  struct Impl;
  explicit Context(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
