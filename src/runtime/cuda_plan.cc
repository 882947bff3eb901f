// CudaPlan: the runtime's plan on a CUDA Context (copies, steps, CUDA graph capture and
// replay, timing).
#if KILN_HAVE_CUDA

#include "runtime/cuda_plan.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_common.h"

namespace kiln {

namespace {

// Records `e` so that it also works inside a stream capture (as an event node).
Status record(cudaEvent_t e, cudaStream_t s, bool capturing) {
  if (capturing) {
    KILN_CUDA(cudaEventRecordWithFlags(e, s, cudaEventRecordExternal));
  } else {
    KILN_CUDA(cudaEventRecord(e, s));
  }
  return Status::ok();
}

// Copies into pinned staging on the context's copy threads when the tensor is large: one
// thread's memcpy moves only ~6 GB/s, so a batch of 256 fp32 images (154 MB) took longer to
// stage than to send over PCIe (55 GB/s) and to run.
void staging_copy(ThreadPool& pool, void* dst, const void* src, size_t n) {
  constexpr size_t kChunk = size_t{8} << 20;
  const size_t parts = std::min<size_t>(n / kChunk, static_cast<size_t>(pool.workers()) + 1);
  if (parts <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  const size_t per = (n + parts - 1) / parts;
  auto copy = [&](size_t t) {
    const size_t begin = t * per, len = std::min(per, n - std::min(n, begin));
    if (len)
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, len);
  };
  pool.parallel_for(parts, copy);
}

// Ends the capture begun on `stream` and instantiates what it recorded into `*exec`.
// `enqueued` is how enqueueing went during the capture; the capture is ended either way so
// the stream is usable again.
Status finish_capture(cudaStream_t stream, const Status& enqueued, cudaGraphExec_t* exec) {
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  Status st = enqueued.with_context("capturing the CUDA graph");
  if (st.is_ok()) st = cuda_status(end, "cudaStreamEndCapture");
  if (st.is_ok()) st = cuda_status(cudaGraphInstantiate(exec, graph, 0), "cudaGraphInstantiate");
  if (graph) cudaGraphDestroy(graph);
  return st;
}

float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.f;
}

}  // namespace

struct CudaPlan::Impl {
  CudaPlanOptions options;
  CudaStreamHandles* handles = nullptr;
  std::unique_ptr<CudaPlanDevice> device;
  std::unique_ptr<PlanDevice> host;
  PlanDevices devices;
  Plan plan;
  std::vector<LayerProfile> infos;
  CudaMemoryReport memory;
  CudaTiming timing;

  // The Context's shared memory (CudaSharedMemory) as bound at `bound_generation`.
  uint64_t bound_generation = 0;
  bool bound = false;
  // Pinned host staging, one per input and output.
  std::vector<void*> in_staging, out_staging;
  std::vector<const void*> direct;  // per input: the caller's pinned bytes in this run, or null
  bool last_direct = false;         // the last run copied an input in place
  // start, inputs copied, compute started (after any wait for the compute order), compute
  // done, outputs copied
  cudaEvent_t ev[5] = {};

  // keep_inputs' device copy of the last run's staged inputs, one buffer per input (made on
  // its first use; `timed_inputs_fresh` until the next run changes the staging).
  std::vector<void*> timed_inputs;
  bool timed_inputs_fresh = false;

  cudaGraphExec_t graph_exec = nullptr;    // whole run (copies + compute)
  cudaGraphExec_t compute_exec = nullptr;  // compute only
  bool ran_once = false;

  Status enqueue_steps() { return run_plan_steps(plan, devices, 0, plan.steps.size()); }
  // The compute: the captured CUDA graph (captured on first use) where the plan may use one,
  // else the steps one by one.
  Status enqueue_compute();
  // Copies the inputs in: input i from `direct[i]` (pinned host memory the caller holds) where
  // set, else from its staging buffer.
  Status enqueue_copies_in(const std::vector<const void*>& direct = {});
  Status enqueue_copies_out();
  // time_compute and profile_steps repeat the last run's compute. The input slots share the
  // arena with later tensors, so once a run ends its inputs are no longer there: computing on
  // what is left would time (and heat the GPU with) other data than the caller's.
  // keep_inputs copies the last run's staged inputs to the device once (an error when that run
  // took an input in place, which may have changed since); restore_inputs puts them back
  // before each repeat, device to device (keeping the GPU as busy as a stream of runs does).
  Status keep_inputs(const char* what);
  Status restore_inputs();
  // Points the plan at the Context's shared memory, growing it when the plan needs more;
  // drops the CUDA graphs captured over an older arena.
  Status bind();
  void drop_graphs();
  ~Impl();
};

Status CudaPlan::Impl::enqueue_copies_in(const std::vector<const void*>& direct) {
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    const int s = plan.input_slots[i];
    const void* src = i < direct.size() && direct[i] ? direct[i] : in_staging[i];
    // cudaMemcpyDefault: the source is pinned host memory or (a caller's) GPU memory.
    KILN_CUDA(cudaMemcpyAsync(plan.data(s), src, plan.slots[s].desc.nbytes(), cudaMemcpyDefault,
                              handles->stream));
  }
  return Status::ok();
}

Status CudaPlan::Impl::keep_inputs(const char* what) {
  if (last_direct)
    return invalid_argument(std::string(what) +
                            " repeats the inputs the last run copied through its staging; that "
                            "run took an input in place (pinned or GPU memory), which may have "
                            "changed since");
  if (timed_inputs_fresh) return Status::ok();
  timed_inputs.resize(plan.input_slots.size(), nullptr);
  for (size_t i = 0; i < plan.input_slots.size(); ++i) {
    const size_t n = plan.slots[plan.input_slots[i]].desc.nbytes();
    if (!n) continue;
    if (!timed_inputs[i]) KILN_CUDA(cudaMalloc(&timed_inputs[i], n));
    KILN_CUDA(cudaMemcpyAsync(timed_inputs[i], in_staging[i], n, cudaMemcpyHostToDevice,
                              handles->stream));
  }
  KILN_CUDA(cudaStreamSynchronize(handles->stream));
  timed_inputs_fresh = true;
  return Status::ok();
}

Status CudaPlan::Impl::restore_inputs() {
  for (size_t k = 0; k < plan.input_slots.size(); ++k) {
    const int s = plan.input_slots[k];
    if (timed_inputs[k])
      KILN_CUDA(cudaMemcpyAsync(plan.data(s), timed_inputs[k], plan.slots[s].desc.nbytes(),
                                cudaMemcpyDeviceToDevice, handles->stream));
  }
  return Status::ok();
}

Status CudaPlan::Impl::enqueue_compute() {
  cudaStream_t stream = handles->stream;
  if (options.cuda_graph && ran_once && !plan.has_fallback) {
    if (!compute_exec) {
      KILN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      KILN_RETURN_IF_ERROR(finish_capture(stream, enqueue_steps(), &compute_exec));
    }
    KILN_CUDA(cudaGraphLaunch(compute_exec, stream));
    return Status::ok();
  }
  return enqueue_steps();
}

Status CudaPlan::Impl::enqueue_copies_out() {
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const int s = plan.output_slots[i];
    KILN_CUDA(cudaMemcpyAsync(out_staging[i], plan.data(s), plan.slots[s].desc.nbytes(),
                              cudaMemcpyDeviceToHost, handles->stream));
  }
  return Status::ok();
}

void CudaPlan::Impl::drop_graphs() {
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  if (compute_exec) cudaGraphExecDestroy(compute_exec);
  graph_exec = compute_exec = nullptr;
}

Status CudaPlan::Impl::bind() {
  CudaSharedMemory& m = handles->memory;
  const size_t gpu = device_index(DeviceKind::kCuda), cpu = device_index(DeviceKind::kCpu);
  // +256 bytes so that an empty arena still has an address.
  KILN_RETURN_IF_ERROR(m.reserve(static_cast<size_t>(plan.arena_bytes[gpu]) + 256,
                                 plan.workspace_bytes[gpu],
                                 static_cast<size_t>(plan.arena_bytes[cpu]) + 256));
  if (bound && bound_generation == m.generation) return Status::ok();
  drop_graphs();
  void* arena[kDeviceKinds] = {};
  void* workspace[kDeviceKinds] = {};
  arena[gpu] = m.arena;
  arena[cpu] = m.host_arena;
  workspace[gpu] = m.workspace;
  bind_plan(plan, arena, workspace);
  bound_generation = m.generation;
  bound = true;
  return Status::ok();
}

CudaPlan::Impl::~Impl() {
  drop_graphs();
  if (CudaComputeOrder* order = handles ? handles->compute_order.get() : nullptr) {
    std::lock_guard<std::mutex> lock(order->mu);
    if (order->last == ev[3]) order->last = nullptr;  // no later compute waits on it
  }
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  for (void* p : timed_inputs) cudaFree(p);
  for (void* p : in_staging) cudaFreeHost(p);
  for (void* p : out_staging) cudaFreeHost(p);
}

Result<std::unique_ptr<CudaPlan>> CudaPlan::build(const Graph& graph,
                                                  const std::vector<const Node*>& order,
                                                  const std::vector<Tensor>& inputs,
                                                  const CudaPlanOptions& options,
                                                  WeightStore& weights, TacticCache& tactics,
                                                  CudaStreamHandles& handles) {
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  p.options = options;
  p.options.plan.main = DeviceKind::kCuda;
  p.handles = &handles;
  p.device = std::make_unique<CudaPlanDevice>(handles, weights, tactics, options.device);
  p.host = make_host_plan_device();
  p.devices.by_kind[device_index(DeviceKind::kCuda)] = p.device.get();
  p.devices.by_kind[device_index(DeviceKind::kCpu)] = p.host.get();
  std::vector<TensorDesc> descs;
  for (const Tensor& t : inputs) descs.push_back(TensorDesc{t.dtype(), t.shape()});
  KILN_RETURN_IF_ERROR(build_plan(graph, order, descs, p.options.plan, p.devices, p.plan));
  for (const PlanStep& s : p.plan.steps) p.infos.push_back(s.info);
  const size_t gpu = device_index(DeviceKind::kCuda), cpu = device_index(DeviceKind::kCpu);
  p.memory.arena_bytes = p.plan.arena_bytes[gpu];
  p.memory.arena_lower_bound = p.plan.arena_lower_bound[gpu];
  p.memory.workspace_bytes = static_cast<int64_t>(p.plan.workspace_bytes[gpu]);
  p.memory.staging_bytes = p.plan.arena_bytes[cpu];

  // Device memory: the Context's shared arenas and workspace, grown for this plan now, so the
  // build's cost is all paid here.
  KILN_RETURN_IF_ERROR(p.bind());
  // Pinned staging, one buffer per graph input and output.
  auto stage = [&](const std::vector<int>& slots, std::vector<void*>& staging) -> Status {
    for (int s : slots) {
      void* ptr = nullptr;
      const size_t n = p.plan.slots[s].desc.nbytes();
      KILN_CUDA(cudaHostAlloc(&ptr, n ? n : 1, cudaHostAllocDefault));
      staging.push_back(ptr);
      p.memory.staging_bytes += static_cast<int64_t>(n);
    }
    return Status::ok();
  };
  KILN_RETURN_IF_ERROR(stage(p.plan.input_slots, p.in_staging));
  KILN_RETURN_IF_ERROR(stage(p.plan.output_slots, p.out_staging));
  for (cudaEvent_t& e : p.ev) KILN_CUDA(cudaEventCreate(&e));
  return std::unique_ptr<CudaPlan>(new CudaPlan(std::move(impl)));
}

CudaPlan::CudaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaPlan::~CudaPlan() = default;

Status CudaPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  Impl& p = *impl_;
  KILN_RETURN_IF_ERROR(p.bind());  // another plan may have grown the shared memory
  cudaStream_t stream = p.handles->stream;
  const Plan& plan = p.plan;
  if (inputs.size() != plan.input_slots.size())
    return internal_error("plan run with " + std::to_string(inputs.size()) + " inputs");
  // An input in pinned host memory (pinned_tensor) is copied to the GPU straight from where
  // the caller holds it; any other goes through the plan's pinned staging buffer first.
  p.direct.assign(inputs.size(), nullptr);
  p.timed_inputs_fresh = false;
  bool any_direct = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& d = plan.slots[plan.input_slots[i]].desc;
    if (inputs[i].shape() != d.shape || inputs[i].dtype() != d.dtype)
      return internal_error("plan built for input shape " + shape_str(d.shape) + ", given " +
                            shape_str(inputs[i].shape()));
    if (!d.nbytes()) continue;
    // GPU memory of this GPU (Tensor::on_gpu; Context::run refused other GPUs') is copied
    // device to device, in place, as pinned memory is.
    cudaPointerAttributes attr{};
    if (inputs[i].gpu() >= 0 || (cudaPointerGetAttributes(&attr, inputs[i].raw()) == cudaSuccess &&
                                 attr.type == cudaMemoryTypeHost)) {
      p.direct[i] = inputs[i].raw();
      any_direct = true;
      continue;
    }
    cudaGetLastError();  // memory CUDA does not know of: not an error
    staging_copy(*p.handles->copy_pool, p.in_staging[i], inputs[i].raw(), d.nbytes());
  }
  const int64_t arena_bytes = plan.arena_bytes[device_index(DeviceKind::kCuda)];
  // Poisoned before the graph or the steps, in stream order (never part of a capture).
  if (p.options.poison_memory && arena_bytes > 0)
    KILN_CUDA(cudaMemsetAsync(plan.arena[device_index(DeviceKind::kCuda)], 0xFF,
                              static_cast<size_t>(arena_bytes), stream));
  p.last_direct = any_direct;
  CudaComputeOrder* order = p.handles->compute_order.get();
  bool waited = false;  // for another Context's compute (the compute order)
  if (any_direct || order) {
    // The whole-run graph copies from the staging buffers, and holds no wait for another
    // stream's compute: here only the compute is a graph.
    KILN_RETURN_IF_ERROR(record(p.ev[0], stream, false));
    KILN_RETURN_IF_ERROR(p.enqueue_copies_in(p.direct));
    KILN_RETURN_IF_ERROR(record(p.ev[1], stream, false));
    std::unique_lock<std::mutex> lock;
    if (order) {
      lock = std::unique_lock<std::mutex>(order->mu);
      waited = order->enabled && order->last;
      if (waited) KILN_CUDA(cudaStreamWaitEvent(stream, order->last, 0));
    }
    KILN_RETURN_IF_ERROR(record(p.ev[2], stream, false));
    KILN_RETURN_IF_ERROR(p.enqueue_compute());
    KILN_RETURN_IF_ERROR(record(p.ev[3], stream, false));
    if (order) {
      order->last = p.ev[3];
      lock.unlock();
    }
    KILN_RETURN_IF_ERROR(p.enqueue_copies_out());
    KILN_RETURN_IF_ERROR(record(p.ev[4], stream, false));
  } else if (p.graph_exec) {
    KILN_CUDA(cudaGraphLaunch(p.graph_exec, stream));
  } else {
    // Capture the whole run once the plan has run eagerly (libraries load their modules on
    // first use, which must not happen inside a capture). Host steps synchronize: a plan
    // with any is never captured.
    bool capture = p.options.cuda_graph && p.ran_once && !plan.has_fallback;
    if (capture) KILN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Status st = [&]() -> Status {
      KILN_RETURN_IF_ERROR(record(p.ev[0], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_copies_in());
      KILN_RETURN_IF_ERROR(record(p.ev[1], stream, capture));
      KILN_RETURN_IF_ERROR(record(p.ev[2], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_steps());
      KILN_RETURN_IF_ERROR(record(p.ev[3], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_copies_out());
      return record(p.ev[4], stream, capture);
    }();
    if (capture) {
      KILN_RETURN_IF_ERROR(finish_capture(stream, st, &p.graph_exec));
      KILN_CUDA(cudaGraphLaunch(p.graph_exec, stream));
    } else {
      KILN_RETURN_IF_ERROR(st);
    }
  }
  KILN_CUDA(cudaStreamSynchronize(stream));
  p.ran_once = true;
  p.timing.h2d_ms = elapsed(p.ev[0], p.ev[1]);
  // No wait enqueued, none reported: the two events around it can still be apart by a time
  // slice that another process took on the GPU.
  p.timing.wait_ms = waited ? elapsed(p.ev[1], p.ev[2]) : 0.0;
  p.timing.compute_ms = elapsed(p.ev[2], p.ev[3]);
  p.timing.d2h_ms = elapsed(p.ev[3], p.ev[4]);
  outputs.clear();
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const TensorDesc& d = plan.slots[plan.output_slots[i]].desc;
    outputs.push_back(tensor_from_bytes(p.out_staging[i], d.dtype, d.shape, plan.output_dtypes[i]));
  }
  return Status::ok();
}

Result<std::vector<double>> CudaPlan::time_compute(int iterations) {
  Impl& p = *impl_;
  KILN_RETURN_IF_ERROR(p.bind());  // another plan may have grown the shared memory
  cudaStream_t stream = p.handles->stream;
  if (!p.ran_once) return internal_error("time_compute before the first run");
  KILN_RETURN_IF_ERROR(p.keep_inputs("time_compute"));
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    KILN_RETURN_IF_ERROR(p.restore_inputs());
    KILN_CUDA(cudaEventRecord(p.ev[0], stream));
    KILN_RETURN_IF_ERROR(p.enqueue_compute());
    KILN_CUDA(cudaEventRecord(p.ev[1], stream));
    KILN_CUDA(cudaEventSynchronize(p.ev[1]));
    ms.push_back(elapsed(p.ev[0], p.ev[1]));
  }
  return ms;
}

Result<std::vector<double>> CudaPlan::profile_steps(int iterations) {
  Impl& p = *impl_;
  KILN_RETURN_IF_ERROR(p.bind());  // another plan may have grown the shared memory
  cudaStream_t stream = p.handles->stream;
  if (!p.ran_once) return internal_error("profile_steps before the first run");
  KILN_RETURN_IF_ERROR(p.keep_inputs("profile_steps"));
  const size_t n = p.plan.steps.size();
  std::vector<cudaEvent_t> ev(n + 1);
  for (auto& e : ev) KILN_CUDA(cudaEventCreate(&e));
  std::vector<double> total(n, 0.0);
  Status st = [&]() -> Status {
    for (int it = 0; it < iterations; ++it) {
      KILN_RETURN_IF_ERROR(p.restore_inputs());
      KILN_CUDA(cudaEventRecord(ev[0], stream));
      for (size_t k = 0; k < n; ++k) {
        KILN_RETURN_IF_ERROR(run_plan_steps(p.plan, p.devices, k, k + 1));
        KILN_CUDA(cudaEventRecord(ev[k + 1], stream));
      }
      KILN_CUDA(cudaStreamSynchronize(stream));
      for (size_t k = 0; k < n; ++k) total[k] += elapsed(ev[k], ev[k + 1]);
    }
    return Status::ok();
  }();
  for (auto& e : ev) cudaEventDestroy(e);
  KILN_RETURN_IF_ERROR(st);
  for (double& t : total) t /= iterations > 0 ? iterations : 1;
  return total;
}

const CudaTiming& CudaPlan::last_timing() const { return impl_->timing; }
const std::vector<LayerProfile>& CudaPlan::steps() const { return impl_->infos; }
PlanInfo CudaPlan::info(const Graph& graph) const { return plan_info(impl_->plan, graph); }
const std::vector<std::string>& CudaPlan::notes() const { return impl_->plan.notes; }
const CudaMemoryReport& CudaPlan::memory() const { return impl_->memory; }
// The whole run replays a graph, or (with inputs in pinned memory) its compute does.
bool CudaPlan::uses_cuda_graph() const {
  return impl_->graph_exec != nullptr || (impl_->compute_exec != nullptr && impl_->last_direct);
}
const std::vector<Shape>& CudaPlan::input_shapes() const { return impl_->plan.input_shapes; }

}  // namespace kiln

#endif  // KILN_HAVE_CUDA
