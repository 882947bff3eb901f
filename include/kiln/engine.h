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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "kiln/report.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

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
  // What the build did: the model as imported, the optimizer's passes (see report.h).
  const EngineReport& report() const;
  // The graph the engine runs (after the optimizer, when it ran) in kiln's IR text, one node a
  // line; with EngineOptions::optimize off, the model as imported.
  std::string graph_text() const;

  std::unique_ptr<Context> create_context() const;

  // This CUDA engine built again on GPU `device_index`, with the same options: its weights
  // uploaded there and, where that GPU is the same model as this one's, this engine's layer
  // timings taken as they are (no layer timed again). For a Pipeline over several GPUs
  // (kiln bench --gpus). Errors: a CPU engine, an engine built from bytes it no longer has, no
  // such GPU.
  Result<std::shared_ptr<Engine>> for_gpu(int device_index) const;

  // Writes a plan file (.kiln) that Engine::load takes like an .onnx: the model, the build
  // options and the timing cache, tied to this GPU, driver libraries and kiln version.
  // CUDA engines only.
  Status save_plan(const std::string& path) const;

  struct Impl;  // the runtime's (src/runtime/engine_impl.h)
  explicit Engine(std::unique_ptr<Impl> impl);

 private:
  friend const Impl& engine_impl(const Engine& e);
  friend Impl& engine_impl(Engine& e);  // while it is built, before it is shared
  std::unique_ptr<Impl> impl_;
};

// A tensor in pinned (page-locked) host memory. A CUDA engine copies such an input to the GPU
// straight from it, by DMA, with no copy into its own staging buffer first: for inputs a caller
// fills again and again (a serving loop's buffers). Where kiln has no CUDA or the machine no
// GPU, an ordinary tensor; kResourceExhausted where the memory cannot be pinned.
Result<Tensor> pinned_tensor(DataType dtype, Shape shape);

// A copy of host tensor `t` in the memory of CUDA GPU `gpu` (Tensor::on_gpu; freed with its
// last copy): an input kept on the GPU, which a CUDA engine there copies device to device, in
// place. The calling thread's current GPU is left as it was. Errors: a tensor already on a
// GPU, no such GPU, no memory, a build without CUDA.
Result<Tensor> copy_to_gpu(const Tensor& t, int gpu);

// The CUDA GPUs this process sees (after CUDA_VISIBLE_DEVICES), numbered 0 to the count - 1 as
// EngineOptions::device_index takes them; 0 where kiln has no CUDA or the machine no GPU.
int cuda_device_count();
// The PCI bus id of CUDA GPU `device` ("0000:1B:00.0"), which names the same GPU to NVML and
// nvidia-smi whatever CUDA_VISIBLE_DEVICES renumbers; an error where there is no such GPU.
Result<std::string> cuda_pci_bus_id(int device);

// Host memory the caller owns, page-locked for as long as this registration lives
// (cudaHostRegister): a tensor over it (Tensor::borrow) is then copied to the GPU in place, by
// DMA, as a pinned_tensor is. Move-only; the memory must outlive it. Where kiln has no CUDA or
// the machine no GPU, nothing is pinned (pinned() is false) and tensors over the memory run as
// any other. Errors: a null pointer or no bytes, memory already registered, or memory that
// cannot be pinned.
class HostMemoryRegistration {
 public:
  HostMemoryRegistration() = default;
  HostMemoryRegistration(HostMemoryRegistration&& o) noexcept;
  HostMemoryRegistration& operator=(HostMemoryRegistration&& o) noexcept;
  HostMemoryRegistration(const HostMemoryRegistration&) = delete;
  HostMemoryRegistration& operator=(const HostMemoryRegistration&) = delete;
  ~HostMemoryRegistration();
  bool pinned() const { return data_ != nullptr; }
  size_t bytes() const { return bytes_; }

 private:
  friend Result<HostMemoryRegistration> register_host_memory(void* data, size_t bytes);
  void* data_ = nullptr;  // registered memory, or null
  size_t bytes_ = 0;
};
Result<HostMemoryRegistration> register_host_memory(void* data, size_t bytes);

// Whether `path` is a plan file Engine::save_plan wrote (Engine::load takes either).
bool is_plan_file(const std::string& path);

// Where Context::enqueue puts a run's outputs, and the stream it is ordered with.
struct EnqueueOptions {
  // The caller's tensors, by output name: the output is written into its tensor (host memory,
  // or the memory of the engine's GPU; the output's dtype and shape), which the run returns.
  std::map<std::string, Tensor> buffers;
  // On a GPU engine, the outputs not in `buffers` stay in the GPU's memory: GPU tensors
  // (Tensor::gpu()) the caller keeps, in the graph's dtypes. Ignored on the CPU.
  bool on_device = false;
  // On a GPU engine, a stream of the caller's on the engine's GPU (a cudaStream_t): the run
  // starts after the work given to it so far (inputs it writes may be read), and the work
  // given to it after enqueue returns starts after the run's outputs are written (a consumer
  // on that stream may read device-resident outputs without waiting on the host). The run
  // itself goes on the Context's own stream. An error on a CPU engine.
  void* stream = nullptr;
};

class Context {
 public:
  ~Context();
  // Runs the model. Every graph input must be given, with the declared dtype and a shape
  // that matches the declared one (symbolic dimensions take any size). The same as enqueue()
  // and then waiting for it, with the outputs in host memory.
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs);

  // Gives the device a run and returns without waiting for it. `on_done` gets the outputs
  // (or the error) once they are ready: on a GPU, on the CUDA runtime's callback thread, which
  // must not call CUDA or kiln (hand the result to a thread of yours); on the CPU, which
  // computes on the calling thread, before enqueue returns. Runs enqueued on one Context run
  // in order; the inputs must stay unchanged until `on_done`. An error found before anything
  // was given to the device (a bad input, a plan that cannot be built) is returned, and
  // `on_done` is not called. Once the input shapes have a plan, nothing on the way allocates
  // or waits for the device, except device-resident outputs (allocated in the stream's order)
  // and, before staging an input, the previous run's copy of it.
  using OnDone = std::function<void(Result<std::map<std::string, Tensor>>)>;
  Status enqueue(const std::map<std::string, Tensor>& inputs, OnDone on_done,
                 const EnqueueOptions& options = {});
  // Waits until every run enqueued on this Context is done.
  Status wait();

  // About the plan of the last run's shapes, on every device (an error before a run):
  // the last run()'s times: the copies in, the compute and the copies out (on the CPU, which
  // copies nothing, the compute only).
  Result<DeviceTiming> last_device_timing() const;
  // Runs the compute of the last run again `iterations` times on the last run's inputs, ms
  // per run: only the compute is timed (on CUDA the CUDA graph when enabled); the inputs are
  // put back before each run, untimed (on CUDA from a device copy, an error when the last run
  // took an input in place: pinned or GPU memory).
  Result<std::vector<double>> time_compute(int iterations);
  // Every step's mean time over `iterations` runs of the last run's inputs, steps run one by
  // one (the inputs put back as for time_compute, with the same error).
  Result<std::vector<LayerProfile>> profile_layers(int iterations);
  // The memory the last run's plan holds: its activation arena and workspace, the constants
  // (on the CPU the model's, oneDNN's reordered copies of weights not counted), the pinned
  // host staging of a GPU.
  Result<DeviceMemoryInfo> device_memory() const;
  // The plan of the last run's input shapes, as data: every step with its device, kernel and
  // operands (dtype, shape, layout, place in the arena), and the memory (an error before a
  // run).
  Result<PlanInfo> plan() const;
  // Whether the last run replayed a CUDA graph.
  bool uses_cuda_graph() const;
  // Plan builds, cache use and arena size so far.
  ContextStats stats() const;

  // Runs the model and returns the statistics of every float32 value a node writes, in
  // execution order (graph inputs and constants are not included), on any device: a value
  // the device holds in fp16 or bf16 is counted as it holds it.
  Result<std::vector<ValueStats>> value_stats(const std::map<std::string, Tensor>& inputs);

  struct Impl;
  explicit Context(std::unique_ptr<Impl> impl);

 private:
  friend Impl& context_impl(Context& c);
  // The error of planning the profiles at create_context(), once (then ok).
  Status take_unplanned();
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
