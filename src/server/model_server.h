// The models a server serves, whatever the protocol: read from the repository at start,
// loaded (each version's plans built before it is ready), found by name and version, loaded and
// unloaded on request (model control "explicit"), with their statistics. The HTTP and gRPC
// frontends are thin layers over it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/gpu_monitor.h"
#include "server/served_model.h"

namespace kiln::server {

struct ServerOptions {
  std::string repository;
  // "none": every model at start, no change after; "explicit": none at start (unless named in
  // load_models), then load and unload on request; "poll": every model at start, then what
  // changes in the repository follows at each poll() (kiln serve calls it every
  // --repository-poll-secs), and load and unload on request as with "explicit".
  std::string model_control = "none";
  std::vector<std::string> load_models;  // explicit: the models to load at start
  ServeOptions serve;
  // The GPU metrics (nv_gpu_*) read the GPUs this process can use through this NVML library;
  // "" for none. Without the library (no NVIDIA driver) the server runs without them.
  std::string nvml_library = "libnvidia-ml.so.1";
};

// One model version's standing, as the repository index reports it.
struct ModelState {
  std::string name;
  int64_t version = 0;  // 0 where no version was read
  std::string state;    // "READY", "UNAVAILABLE" or "LOADING"
  std::string reason;   // why it is unavailable
};

// Request statistics of a model version (Triton's: counts and summed nanoseconds).
struct InferStats {
  uint64_t success_count = 0, success_ns = 0;
  uint64_t fail_count = 0, fail_ns = 0;
  // Triton's split of a batch's run: compute_input is joining its rows, copying them into the
  // Context's staging buffers (the wait for them to be free included) and to the device;
  // compute_output copying the outputs back and reading them out; compute_infer the rest (the
  // compute, the wait for another instance's, the launch and the hand-offs), so that the
  // three sum to the whole run.
  uint64_t queue_ns = 0, compute_input_ns = 0, compute_infer_ns = 0, compute_output_ns = 0;
  // Of compute_infer, from the device's own timing: the compute, and its wait for another
  // instance's compute (the Pipeline's compute order).
  uint64_t device_compute_ns = 0, device_wait_ns = 0;
  // Of compute_input: the rows joined, the wait for the staging buffers, the copy into them
  // (host times), and the copy to the device (its own timing). They sum to compute_input.
  uint64_t input_join_ns = 0, input_staging_wait_ns = 0, input_staging_copy_ns = 0,
           input_h2d_ns = 0;
  uint64_t inference_count = 0;    // rows (images) answered
  uint64_t last_inference_ms = 0;  // since the epoch
  // Failures by Triton's reasons: REJECTED (a full queue), CANCELED, BACKEND (the model's own
  // error), OTHER (a bad request).
  std::map<std::string, uint64_t> failures;
};

// The most recent requests' latencies of a model version (microseconds), for the metrics'
// quantiles: a window of the last kWindow successes.
struct LatencyWindow {
  static constexpr size_t kWindow = 2048;
  std::vector<double> request_us, queue_us, compute_us;
  size_t next = 0;
  void add(double request, double queue, double compute);
};

class ModelServer {
 public:
  // Reads the repository and loads its models (per model_control); a model that fails to load
  // is UNAVAILABLE with its reason, and the others serve. An unreadable repository is an error.
  static Result<std::unique_ptr<ModelServer>> start(ServerOptions options);
  ~ModelServer();

  bool live() const { return true; }
  // Every model the server was asked to serve is loaded or failed (none is loading), and the
  // server is not draining.
  bool ready() const;

  // The version `version` ("" or "-1": the newest served) of model `name`: kNotFound for an
  // unknown model or version, kUnavailable for one that failed to load.
  Result<std::shared_ptr<ServedModel>> find(const std::string& name,
                                            const std::string& version = "") const;
  // Every model of the repository (ready_only: those READY), by name then version.
  std::vector<ModelState> index(bool ready_only = false) const;
  // Loads (or reloads) model `name` from the repository; unloads it. kInvalidArgument where the
  // model control does not allow it, kNotFound for a model the repository lacks.
  Status load(const std::string& name);
  Status unload(const std::string& name);
  // Model control "poll": reads the repository again and loads the models that appeared,
  // reloads those whose folder changed (model_fingerprint), and unloads those that went.
  // Returns what it did, a line per model ("loaded a", "reloaded b", "unloaded c", "failed d:
  // why"); an error under another model control, or where the repository cannot be read.
  Result<std::vector<std::string>> poll();
  // Readiness turns false (a load balancer sends no more); requests still arriving are served.
  void stop_admitting();
  // Stops admitting requests and finishes the ones admitted (every model's batcher drains).
  void drain();

  // Adds one request's figures (`one` holds that request alone) to the model version's.
  void record(const std::string& name, int64_t version, const InferStats& one);
  InferStats stats(const std::string& name, int64_t version) const;
  LatencyWindow latencies(const std::string& name, int64_t version) const;
  const ServerOptions& options() const { return options_; }
  // The GPUs whose readings /metrics reports (none without NVML), and why there are none.
  const std::vector<std::unique_ptr<GpuMonitor>>& gpus() const { return gpus_; }
  const std::string& gpus_note() const { return gpus_note_; }

 private:
  explicit ModelServer(ServerOptions options) : options_(std::move(options)) {}
  // A model read from the repository and loaded (or why not), not yet served.
  struct Loaded {
    std::map<int64_t, std::shared_ptr<ServedModel>> versions;
    Status status;
    std::string fingerprint;
  };
  // Reads model `name` from the repository and loads every version its policy serves. Holds no
  // lock: loading (plans built, kernels timed) can take minutes, and requests to the other
  // models go on meanwhile.
  Loaded load_model(const std::string& name) const;
  // Under the lock: serves `loaded` as model `name` (the versions it replaces drain as their
  // last holder lets go), or marks the model UNAVAILABLE with the reason. Returns its status.
  Status install_locked(const std::string& name, Loaded loaded);

  ServerOptions options_;
  mutable std::mutex mu_;
  // name → version → model; a model that failed keeps its reason in failed_.
  std::map<std::string, std::map<int64_t, std::shared_ptr<ServedModel>>> models_;
  std::map<std::string, std::string> failed_;
  std::map<std::string, std::string> fingerprints_;  // of each model as last loaded or failed
  std::map<std::pair<std::string, int64_t>, InferStats> stats_;
  std::map<std::pair<std::string, int64_t>, LatencyWindow> latencies_;
  bool draining_ = false;
  std::vector<std::unique_ptr<GpuMonitor>> gpus_;  // set at start, read-only after
  std::string gpus_note_;
};

}  // namespace kiln::server
