#include "runtime/cuda_runtime.h"

#include <algorithm>

#include "runtime/engine_impl.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/cuda_common.h"
#include "runtime/cuda_plan.h"
#endif

namespace kiln {

#if KILN_HAVE_CUDA

struct CudaEngineState {
  int device = 0;  // EngineOptions::device_index
  CudaPlanOptions plan_options;
  WeightStore weights;
  TacticCache tactics;
  std::string device_tag;
  std::string timing_cache;  // path, or empty
};

struct CudaContextState {
  int device = 0;  // the engine's
  std::unique_ptr<CudaStreamHandles> handles;
  // One plan per input shape, most recently used first, at most
  // EngineOptions::max_cached_plans; declared after `handles`: destroyed before them.
  std::vector<std::unique_ptr<CudaPlan>> plans;
  ContextStats stats;
};

Result<std::shared_ptr<CudaEngineState>> make_cuda_engine_state(
    const EngineOptions& options, const std::vector<std::pair<std::string, std::string>>& tactics) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return unsupported(std::string("--device cuda: no CUDA device is available (") +
                       (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")");
  if (options.device_index < 0 || options.device_index >= count)
    return invalid_argument("GPU " + std::to_string(options.device_index) +
                            " does not exist: CUDA shows " + std::to_string(count) + " device" +
                            (count == 1 ? " (0)" : "s (0 to " + std::to_string(count - 1) + ")") +
                            "; CUDA_VISIBLE_DEVICES selects which GPUs those are");
  KILN_CUDA(cudaSetDevice(options.device_index));
  auto st = std::make_shared<CudaEngineState>();
  st->device = options.device_index;
  PlanOptions& plan = st->plan_options.plan;
  plan.main = DeviceKind::kCuda;
  plan.precision = options.precision;
  plan.precision_overrides = options.precision_overrides;
  plan.max_tensor_bytes = options.max_tensor_bytes;
  plan.reuse_memory = options.reuse_memory;
  CudaDeviceOptions& dev = st->plan_options.device;
  dev.conv_path = options.cudnn_conv_path;
  dev.space_to_depth = options.space_to_depth;
  dev.time_tactics = options.time_tactics;
  dev.workspace_limit = static_cast<size_t>(effective_workspace_limit(options));
  dev.max_tactics = static_cast<size_t>(std::max(0, options.max_tactics));
  st->plan_options.cuda_graph = options.cuda_graph;
  st->plan_options.poison_memory = options.poison_memory;
  KILN_ASSIGN_OR_RETURN(st->device_tag, cuda_device_tag(st->device));
  st->timing_cache = options.timing_cache;
  if (!st->timing_cache.empty()) st->tactics.load(st->timing_cache, st->device_tag);
  for (const auto& [k, v] : tactics) st->tactics.put(k, v);
  return st;
}

// The context's state, created on first use (stream and handles on the engine's GPU).
static Status ensure_context(const CudaEngineState& es, std::shared_ptr<CudaContextState>& ctx) {
  KILN_CUDA(cudaSetDevice(es.device));  // the calling thread's current GPU may be another
  if (ctx) return Status::ok();
  auto made = std::make_shared<CudaContextState>();
  made->device = es.device;
  KILN_ASSIGN_OR_RETURN(made->handles, CudaStreamHandles::create());
  ctx = std::move(made);
  return Status::ok();
}

std::shared_ptr<CudaComputeOrder> make_cuda_compute_order() {
  return std::make_shared<CudaComputeOrder>();
}

Status cuda_join_compute_order(const Engine::Impl& engine, std::shared_ptr<CudaContextState>& ctx,
                               std::shared_ptr<CudaComputeOrder> order) {
  KILN_RETURN_IF_ERROR(ensure_context(*engine.cuda, ctx));
  ctx->handles->compute_order = std::move(order);
  return Status::ok();
}

void set_cuda_compute_order(CudaComputeOrder* order, bool on) {
  std::lock_guard<std::mutex> lock(order->mu);
  order->enabled = on;
}

Status cuda_run(const Engine::Impl& engine, std::shared_ptr<CudaContextState>& ctx,
                const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  CudaEngineState& es = *engine.cuda;
  KILN_RETURN_IF_ERROR(ensure_context(es, ctx));
  auto fits = [&](const std::unique_ptr<CudaPlan>& p) {
    if (p->input_shapes().size() != inputs.size()) return false;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (p->input_shapes()[i] != inputs[i].shape()) return false;
    return true;
  };
  auto& plans = ctx->plans;
  auto it = std::find_if(plans.begin(), plans.end(), fits);
  if (it != plans.end()) {
    std::rotate(plans.begin(), it, it + 1);  // most recently used first
    ++ctx->stats.plan_runs;
  } else {
    // Make room first, so the dropped plans' staging memory is free for the new one.
    const size_t limit = static_cast<size_t>(std::max(1, engine.options.max_cached_plans));
    while (plans.size() >= limit) plans.pop_back();
    size_t cached = es.tactics.size();
    KILN_ASSIGN_OR_RETURN(
        auto plan, CudaPlan::build(*engine.graph, engine.order, inputs, es.plan_options, es.weights,
                                   es.tactics, *ctx->handles));
    plans.insert(plans.begin(), std::move(plan));
    ++ctx->stats.plan_builds;
    if (!es.timing_cache.empty() && es.tactics.size() != cached)
      KILN_RETURN_IF_ERROR(es.tactics.save(es.timing_cache, es.device_tag));
  }
  ctx->stats.plans_cached = static_cast<int64_t>(plans.size());
  KILN_RETURN_IF_ERROR(plans.front()->run(inputs, outputs));
  // One arena for all of the Context's plans, sized for the largest (CudaSharedMemory).
  ctx->stats.arena_allocations = ctx->handles->memory.allocations;
  ctx->stats.arena_bytes = static_cast<int64_t>(ctx->handles->memory.arena_bytes);
  return Status::ok();
}

ContextStats cuda_stats(const CudaContextState* ctx) {
  if (!ctx) return ContextStats{};
  ContextStats s = ctx->stats;
  for (const auto& p : ctx->plans)
    for (const std::string& n : p->notes())
      if (std::find(s.notes.begin(), s.notes.end(), n) == s.notes.end()) s.notes.push_back(n);
  return s;
}

// The plan of the last run.
static Result<CudaPlan*> plan_of(const CudaContextState* ctx) {
  if (!ctx || ctx->plans.empty()) return invalid_argument("no CUDA run yet on this context");
  return ctx->plans.front().get();
}

Result<DeviceTiming> cuda_last_timing(const CudaContextState* ctx) {
  KILN_ASSIGN_OR_RETURN(CudaPlan * p, plan_of(ctx));
  const CudaTiming& t = p->last_timing();
  return DeviceTiming{t.h2d_ms, t.compute_ms, t.d2h_ms, t.wait_ms};
}

Result<std::vector<double>> cuda_time_compute(CudaContextState* ctx, int iterations) {
  KILN_ASSIGN_OR_RETURN(CudaPlan * p, plan_of(ctx));
  KILN_CUDA(cudaSetDevice(ctx->device));
  return p->time_compute(iterations);
}

Result<std::vector<LayerProfile>> cuda_profile_layers(CudaContextState* ctx, int iterations) {
  KILN_ASSIGN_OR_RETURN(CudaPlan * p, plan_of(ctx));
  KILN_CUDA(cudaSetDevice(ctx->device));
  KILN_ASSIGN_OR_RETURN(std::vector<double> ms, p->profile_steps(iterations));
  std::vector<LayerProfile> r = p->steps();
  for (size_t i = 0; i < ms.size() && i < r.size(); ++i) r[i].ms = ms[i];
  return r;
}

Result<DeviceMemoryInfo> cuda_device_memory(const CudaEngineState& e, const CudaContextState* ctx) {
  DeviceMemoryInfo m;
  m.weights = static_cast<int64_t>(e.weights.total_bytes());
  if (ctx && !ctx->plans.empty()) {
    const CudaMemoryReport& r = ctx->plans.front()->memory();
    m.arena = r.arena_bytes;
    m.arena_lower_bound = r.arena_lower_bound;
    m.workspace = r.workspace_bytes;
    m.pinned_host = r.staging_bytes;
  }
  return m;
}

bool cuda_uses_graph(const CudaContextState* ctx) {
  return ctx && !ctx->plans.empty() && ctx->plans.front()->uses_cuda_graph();
}

Result<PlanInfo> cuda_plan_info(const Engine::Impl& engine, const CudaContextState* ctx) {
  KILN_ASSIGN_OR_RETURN(CudaPlan * p, plan_of(ctx));
  return p->info(*engine.graph);
}

Result<std::string> cuda_current_device_tag(int device_index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device_index < 0 || device_index >= count)
    return invalid_argument("GPU " + std::to_string(device_index) + " does not exist");
  return cuda_device_tag(device_index);
}

std::vector<std::pair<std::string, std::string>> cuda_tactic_entries(const CudaEngineState& e) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& kv : e.tactics.entries()) r.push_back(kv);
  return r;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: none
    return 0;
  }
  return count;
}

Result<Tensor> copy_to_gpu(const Tensor& t, int gpu) {
  if (t.gpu() >= 0)
    return invalid_argument("copy_to_gpu: the tensor is already in the memory of GPU " +
                            std::to_string(t.gpu()));
  KILN_RETURN_IF_ERROR(check_cuda_device(gpu, "copy_to_gpu"));
  int previous = 0;
  KILN_CUDA(cudaGetDevice(&previous));
  KILN_CUDA(cudaSetDevice(gpu));
  void* p = nullptr;
  const size_t bytes = t.nbytes();
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e == cudaSuccess && bytes) e = cudaMemcpy(p, t.raw(), bytes, cudaMemcpyHostToDevice);
  cudaSetDevice(previous);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (p) cudaFree(p);
    return Status(StatusCode::kResourceExhausted, "copy_to_gpu: " + std::to_string(bytes) +
                                                      " bytes to GPU " + std::to_string(gpu) +
                                                      ": " + cudaGetErrorString(e));
  }
  return Tensor::on_gpu(p, t.dtype(), t.shape(), gpu, [](void* q) { cudaFree(q); });
}

Result<std::string> cuda_pci_bus_id(int device) {
  KILN_RETURN_IF_ERROR(check_cuda_device(device, "cuda_pci_bus_id"));
  char id[32] = {};
  KILN_CUDA(cudaDeviceGetPCIBusId(id, sizeof id, device));
  return std::string(id);
}

Result<Tensor> pinned_tensor(DataType dtype, Shape shape) {
  for (int64_t d : shape)
    if (d < 0) return invalid_argument("pinned_tensor: negative shape " + shape_str(shape));
  const int64_t n = shape_numel(shape);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // no GPU: an ordinary tensor
    return Tensor(dtype, std::move(shape));
  }
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return Status(StatusCode::kResourceExhausted,
                  "pinned_tensor: cannot pin " + std::to_string(bytes) + " bytes of host memory");
  }
  return Tensor::adopt(p, dtype, std::move(shape), [](void* q) { cudaFreeHost(q); });
}

#else  // no CUDA in this build

int cuda_device_count() { return 0; }

Result<Tensor> copy_to_gpu(const Tensor&, int gpu) {
  return unsupported("copy_to_gpu(GPU " + std::to_string(gpu) +
                     "): this kiln was built without CUDA");
}

Result<std::string> cuda_pci_bus_id(int device) {
  return unsupported("cuda_pci_bus_id(" + std::to_string(device) +
                     "): this kiln was built without CUDA");
}

Result<Tensor> pinned_tensor(DataType dtype, Shape shape) {
  for (int64_t d : shape)
    if (d < 0) return invalid_argument("pinned_tensor: negative shape " + shape_str(shape));
  return Tensor(dtype, std::move(shape));
}

struct CudaEngineState {};
struct CudaContextState {};

static Status no_cuda() {
  return unsupported(
      "--device cuda: this kiln build has no CUDA backend (built without the "
      "CUDA toolkit)");
}

std::shared_ptr<CudaComputeOrder> make_cuda_compute_order() { return nullptr; }
void set_cuda_compute_order(CudaComputeOrder*, bool) {}
Status cuda_join_compute_order(const Engine::Impl&, std::shared_ptr<CudaContextState>&,
                               std::shared_ptr<CudaComputeOrder>) {
  return no_cuda();
}

Result<std::shared_ptr<CudaEngineState>> make_cuda_engine_state(
    const EngineOptions&, const std::vector<std::pair<std::string, std::string>>&) {
  return no_cuda();
}
Status cuda_run(const Engine::Impl&, std::shared_ptr<CudaContextState>&, const std::vector<Tensor>&,
                std::vector<Tensor>&) {
  return no_cuda();
}
Result<DeviceTiming> cuda_last_timing(const CudaContextState*) { return no_cuda(); }
Result<std::vector<double>> cuda_time_compute(CudaContextState*, int) { return no_cuda(); }
Result<std::vector<LayerProfile>> cuda_profile_layers(CudaContextState*, int) { return no_cuda(); }
Result<DeviceMemoryInfo> cuda_device_memory(const CudaEngineState&, const CudaContextState*) {
  return no_cuda();
}
bool cuda_uses_graph(const CudaContextState*) { return false; }
Result<PlanInfo> cuda_plan_info(const Engine::Impl&, const CudaContextState*) { return no_cuda(); }
ContextStats cuda_stats(const CudaContextState*) { return {}; }
Result<std::string> cuda_current_device_tag(int) { return no_cuda(); }
std::vector<std::pair<std::string, std::string>> cuda_tactic_entries(const CudaEngineState&) {
  return {};
}

#endif

Status check_cuda_device(int device, const std::string& what) {
  const int count = cuda_device_count();
  if (device >= 0 && device < count) return Status::ok();
  return invalid_argument(what + ": no GPU " + std::to_string(device) + " (this machine has " +
                          std::to_string(count) + ")");
}

}  // namespace kiln
