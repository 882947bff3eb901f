// The GPU as the runtime's device (backends/device.h): an engine's weights and timing cache,
// a Context's stream, handles and shared memory, staging for a plan's inputs and outputs,
// events, CUDA graph capture, the compute order of a Pipeline's Contexts, and the memory the
// public API hands out (GPU tensors, pinned and registered host memory).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_device.h"
#include "backends/device.h"

namespace kiln {

namespace {

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

struct CudaOrder final : ComputeOrder {
  std::shared_ptr<CudaComputeOrder> order = std::make_shared<CudaComputeOrder>();
  void set_enabled(bool on) override {
    std::lock_guard<std::mutex> lock(order->mu);
    order->enabled = on;
  }
};

class CudaEvents final : public DeviceEvents {
 public:
  CudaEvents(cudaStream_t stream, size_t n, bool blocking)
      : stream_(stream), ev_(n, nullptr), blocking_(blocking) {}
  ~CudaEvents() override {
    for (cudaEvent_t e : ev_)
      if (e) cudaEventDestroy(e);
  }
  Status create() {
    // Timing events; with blocking sync, wait() sleeps on them rather than spins.
    for (cudaEvent_t& e : ev_)
      KILN_CUDA(cudaEventCreateWithFlags(&e, blocking_ ? cudaEventBlockingSync : cudaEventDefault));
    return Status::ok();
  }
  Status record(size_t i, bool capturing) override {
    // Inside a stream capture the record becomes an event node of the graph.
    if (capturing) {
      KILN_CUDA(cudaEventRecordWithFlags(ev_[i], stream_, cudaEventRecordExternal));
    } else {
      KILN_CUDA(cudaEventRecord(ev_[i], stream_));
    }
    return Status::ok();
  }
  double elapsed_ms(size_t a, size_t b) const override {
    float ms = 0;
    return cudaEventElapsedTime(&ms, ev_[a], ev_[b]) == cudaSuccess ? ms : 0.0;
  }
  Status wait(size_t i) override {
    KILN_CUDA(cudaEventSynchronize(ev_[i]));
    return Status::ok();
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> ev_;
  bool blocking_;
};

struct CudaCaptured final : CapturedWork {
  cudaGraphExec_t exec = nullptr;
  ~CudaCaptured() override {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

// Pinned staging, one buffer per input and output of a plan.
class CudaIo final : public DeviceIo {
 public:
  explicit CudaIo(CudaStreamHandles& h) : h_(h) {}
  ~CudaIo() override {
    for (void* p : kept_) cudaFree(p);
    for (void* p : in_) cudaFreeHost(p);
    for (void* p : out_) cudaFreeHost(p);
  }
  Status allocate(const std::vector<size_t>& in_bytes, const std::vector<size_t>& out_bytes) {
    auto stage = [](const std::vector<size_t>& bytes, std::vector<void*>& bufs) -> Status {
      for (size_t n : bytes) {
        void* p = nullptr;
        KILN_CUDA(cudaHostAlloc(&p, n ? n : 1, cudaHostAllocDefault));
        bufs.push_back(p);
      }
      return Status::ok();
    };
    in_bytes_ = in_bytes;
    out_bytes_ = out_bytes;
    KILN_RETURN_IF_ERROR(stage(in_bytes, in_));
    KILN_RETURN_IF_ERROR(stage(out_bytes, out_));
    direct_.assign(in_.size(), nullptr);
    return Status::ok();
  }

  Status stage_input(size_t i, const Tensor& t) override {
    if (i == 0) {
      any_direct_ = false;
      kept_fresh_ = false;
    }
    direct_[i] = nullptr;
    const size_t n = in_bytes_[i];
    if (!n) return Status::ok();
    // GPU memory (Tensor::on_gpu; the Context refused other GPUs') and pinned host memory are
    // copied from in place.
    cudaPointerAttributes attr{};
    if (t.gpu() >= 0 || (cudaPointerGetAttributes(&attr, t.raw()) == cudaSuccess &&
                         attr.type == cudaMemoryTypeHost)) {
      direct_[i] = t.raw();
      any_direct_ = true;
      return Status::ok();
    }
    cudaGetLastError();  // memory CUDA does not know of: not an error
    staging_copy(*h_.copy_pool, in_[i], t.raw(), n);
    return Status::ok();
  }
  bool all_staged() const override { return !any_direct_; }

  Status copy_in(const std::vector<void*>& slots) override {
    for (size_t i = 0; i < slots.size(); ++i) {
      const void* src = direct_[i] ? direct_[i] : in_[i];
      // cudaMemcpyDefault: the source is pinned host memory or (a caller's) GPU memory.
      if (in_bytes_[i])
        KILN_CUDA(cudaMemcpyAsync(slots[i], src, in_bytes_[i], cudaMemcpyDefault, h_.stream));
    }
    return Status::ok();
  }
  Status copy_out(const std::vector<const void*>& slots) override {
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] && out_bytes_[i])
        KILN_CUDA(
            cudaMemcpyAsync(out_[i], slots[i], out_bytes_[i], cudaMemcpyDeviceToHost, h_.stream));
    return Status::ok();
  }
  const void* output(size_t i) const override { return out_[i]; }

  Status keep_inputs(const char* what, const std::vector<void*>& slots) override {
    if (any_direct_)
      return invalid_argument(std::string(what) +
                              " repeats the inputs the last run copied through its staging; that "
                              "run took an input in place (pinned or GPU memory), which may have "
                              "changed since");
    if (kept_fresh_) return Status::ok();
    kept_.resize(slots.size(), nullptr);
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!in_bytes_[i]) continue;
      if (!kept_[i]) KILN_CUDA(cudaMalloc(&kept_[i], in_bytes_[i]));
      KILN_CUDA(cudaMemcpyAsync(kept_[i], in_[i], in_bytes_[i], cudaMemcpyHostToDevice, h_.stream));
    }
    KILN_CUDA(cudaStreamSynchronize(h_.stream));
    kept_fresh_ = true;
    return Status::ok();
  }
  Status restore_inputs(const std::vector<void*>& slots) override {
    for (size_t i = 0; i < slots.size() && i < kept_.size(); ++i)
      if (kept_[i])
        KILN_CUDA(
            cudaMemcpyAsync(slots[i], kept_[i], in_bytes_[i], cudaMemcpyDeviceToDevice, h_.stream));
    return Status::ok();
  }

 private:
  CudaStreamHandles& h_;
  std::vector<size_t> in_bytes_, out_bytes_;
  std::vector<void*> in_, out_;
  std::vector<const void*> direct_;  // per input: the caller's bytes copied in place, or null
  bool any_direct_ = false;
  std::vector<void*> kept_;  // keep_inputs' device copies
  bool kept_fresh_ = false;
};

class CudaContextDevice final : public ContextDevice {
 public:
  CudaContextDevice(int device, std::unique_ptr<CudaStreamHandles> handles, WeightStore& weights,
                    TacticCache& tactics, const CudaDeviceOptions& options)
      : device_(device),
        h_(std::move(handles)),
        gpu_(*h_, weights, tactics, options),
        host_(make_host_plan_device()),
        blocking_sync_(options.blocking_sync) {}
  ~CudaContextDevice() override {
    if (CudaComputeOrder* order = h_->compute_order.get()) {
      std::lock_guard<std::mutex> lock(order->mu);
      if (order->last == compute_done_) order->last = nullptr;  // no later compute waits on it
    }
    if (compute_done_) cudaEventDestroy(compute_done_);
    if (sync_) cudaEventDestroy(sync_);
    for (cudaEvent_t e : caller_)
      if (e) cudaEventDestroy(e);
  }

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  PlanDevice& plan_device() override { return gpu_; }
  PlanDevice& host_plan_device() override { return *host_; }
  bool computes_in_host_memory() const override { return false; }
  int64_t arena_alignment() const override { return 256; }
  Status make_current() override {
    KILN_CUDA(cudaSetDevice(device_));
    return Status::ok();
  }

  Status reserve(const int64_t arena[kDeviceKinds],
                 const int64_t workspace[kDeviceKinds]) override {
    const size_t gpu = device_index(DeviceKind::kCuda), cpu = device_index(DeviceKind::kCpu);
    CudaSharedMemory& m = h_->memory;
    // +256 bytes so that an empty arena still has an address.
    KILN_RETURN_IF_ERROR(m.reserve(h_->stream, static_cast<size_t>(arena[gpu]) + 256,
                                   static_cast<size_t>(workspace[gpu]),
                                   static_cast<size_t>(arena[cpu]) + 256));
    mem_.arena[gpu] = m.arena;
    mem_.arena_bytes[gpu] = static_cast<int64_t>(m.arena_bytes);
    mem_.workspace[gpu] = m.workspace;
    mem_.workspace_bytes[gpu] = static_cast<int64_t>(m.workspace_bytes);
    mem_.arena[cpu] = m.host_arena;  // pinned: the host steps' values
    mem_.arena_bytes[cpu] = static_cast<int64_t>(m.host_arena_bytes);
    mem_.allocations = m.allocations;
    mem_.generation = m.generation;
    return Status::ok();
  }
  const ContextMemory& memory() const override { return mem_; }

  Result<std::unique_ptr<DeviceEvents>> make_events(size_t n) override {
    auto e = std::make_unique<CudaEvents>(h_->stream, n, blocking_sync_);
    KILN_RETURN_IF_ERROR(e->create());
    return std::unique_ptr<DeviceEvents>(std::move(e));
  }
  Status synchronize() override {
    if (!blocking_sync_) {
      KILN_CUDA(cudaStreamSynchronize(h_->stream));
      return Status::ok();
    }
    // The stream's work so far, waited for by sleeping on an event.
    if (!sync_)
      KILN_CUDA(cudaEventCreateWithFlags(&sync_, cudaEventBlockingSync | cudaEventDisableTiming));
    KILN_CUDA(cudaEventRecord(sync_, h_->stream));
    KILN_CUDA(cudaEventSynchronize(sync_));
    return Status::ok();
  }
  Status read(void* host, const void* device, size_t n) override {
    return gpu_.copy_to_host(host, device, n);
  }
  Status when_done(std::function<void()> done) override {
    auto* fn = new std::function<void()>(std::move(done));
    auto call = [](void* p) {
      auto* f = static_cast<std::function<void()>*>(p);
      (*f)();
      delete f;
    };
    const cudaError_t e = cudaLaunchHostFunc(h_->stream, call, fn);
    if (e != cudaSuccess) {
      delete fn;
      return cuda_status(e, "cudaLaunchHostFunc");
    }
    return Status::ok();
  }

  Status copy(void* dst, const void* src, size_t n) override {
    if (n) KILN_CUDA(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, h_->stream));
    return Status::ok();
  }
  Result<Tensor> allocate(DataType dtype, const Shape& shape) override {
    const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
    void* p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, bytes ? bytes : 1, h_->stream);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return Status(StatusCode::kResourceExhausted, "an output of " + shape_str(shape) +
                                                        " on GPU " + std::to_string(device_) +
                                                        ": " + cudaGetErrorString(e));
    }
    return Tensor::on_gpu(p, dtype, shape, device_, [](void* q) { cudaFree(q); });
  }

  Result<std::unique_ptr<DeviceIo>> make_io(const std::vector<size_t>& in_bytes,
                                            const std::vector<size_t>& out_bytes) override {
    auto io = std::make_unique<CudaIo>(*h_);
    KILN_RETURN_IF_ERROR(io->allocate(in_bytes, out_bytes));
    return std::unique_ptr<DeviceIo>(std::move(io));
  }
  Status fill(void* device, size_t n, uint8_t byte) override {
    KILN_CUDA(cudaMemsetAsync(device, byte, n, h_->stream));
    return Status::ok();
  }

  bool can_capture() const override { return true; }
  Status begin_capture() override {
    KILN_CUDA(cudaStreamBeginCapture(h_->stream, cudaStreamCaptureModeThreadLocal));
    return Status::ok();
  }
  Result<std::unique_ptr<CapturedWork>> end_capture(const Status& enqueued) override {
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(h_->stream, &graph);
    auto work = std::make_unique<CudaCaptured>();
    Status st = enqueued.with_context("capturing the CUDA graph");
    if (st.is_ok()) st = cuda_status(end, "cudaStreamEndCapture");
    if (st.is_ok())
      st = cuda_status(cudaGraphInstantiate(&work->exec, graph, 0), "cudaGraphInstantiate");
    if (graph) cudaGraphDestroy(graph);
    KILN_RETURN_IF_ERROR(st);
    return std::unique_ptr<CapturedWork>(std::move(work));
  }
  Status launch(CapturedWork& work) override {
    KILN_CUDA(cudaGraphLaunch(static_cast<CudaCaptured&>(work).exec, h_->stream));
    return Status::ok();
  }

  // One event each way, recorded again at every call (a wait takes the event's state when it
  // is enqueued).
  Status follow(void* stream) override {
    KILN_ASSIGN_OR_RETURN(cudaEvent_t e, caller_event(0));
    KILN_CUDA(cudaEventRecord(e, static_cast<cudaStream_t>(stream)));
    KILN_CUDA(cudaStreamWaitEvent(h_->stream, e, 0));
    return Status::ok();
  }
  Status precede(void* stream) override {
    KILN_ASSIGN_OR_RETURN(cudaEvent_t e, caller_event(1));
    KILN_CUDA(cudaEventRecord(e, h_->stream));
    KILN_CUDA(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), e, 0));
    return Status::ok();
  }
  Status join(std::shared_ptr<ComputeOrder> order) override {
    auto* cuda = dynamic_cast<CudaOrder*>(order.get());
    if (!cuda) return invalid_argument("a compute order of another device");
    h_->compute_order = cuda->order;
    if (!compute_done_) KILN_CUDA(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
    return Status::ok();
  }
  Result<bool> enter_compute() override {
    CudaComputeOrder* order = h_->compute_order.get();
    if (!order) return false;
    order_lock_ = std::unique_lock<std::mutex>(order->mu);
    const bool wait = order->enabled && order->last;
    if (wait) KILN_CUDA(cudaStreamWaitEvent(h_->stream, order->last, 0));
    return wait;
  }
  Status leave_compute() override {
    CudaComputeOrder* order = h_->compute_order.get();
    if (!order) return Status::ok();
    const cudaError_t e = cudaEventRecord(compute_done_, h_->stream);
    order->last = compute_done_;
    order_lock_.unlock();
    return cuda_status(e, "cudaEventRecord");
  }

 private:
  int device_;
  std::unique_ptr<CudaStreamHandles> h_;
  CudaPlanDevice gpu_;
  std::unique_ptr<PlanDevice> host_;
  ContextMemory mem_;
  Result<cudaEvent_t> caller_event(int i) {
    if (!caller_[i]) {
      KILN_CUDA(cudaSetDevice(device_));
      KILN_CUDA(cudaEventCreateWithFlags(&caller_[i], cudaEventDisableTiming));
    }
    return caller_[i];
  }

  cudaEvent_t compute_done_ = nullptr;  // recorded after each compute (the compute order)
  std::unique_lock<std::mutex> order_lock_;
  cudaEvent_t caller_[2] = {nullptr, nullptr};  // follow / precede a caller's stream
  bool blocking_sync_ = false;                  // EngineOptions::cuda_blocking_sync
  cudaEvent_t sync_ = nullptr;                  // synchronize()'s, with blocking sync
};

class CudaEngineDevice final : public EngineDevice {
 public:
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  Result<std::unique_ptr<ContextDevice>> make_context() override {
    KILN_CUDA(cudaSetDevice(device));
    KILN_ASSIGN_OR_RETURN(auto handles, CudaStreamHandles::create());
    return std::unique_ptr<ContextDevice>(
        new CudaContextDevice(device, std::move(handles), weights, tactics, options));
  }
  int64_t constant_bytes() const override { return static_cast<int64_t>(weights.total_bytes()); }
  Status plan_built() override {
    std::lock_guard<std::mutex> lock(save_mu);  // Contexts build plans on their own threads
    if (timing_cache.empty() || tactics.size() == saved) return Status::ok();
    saved = tactics.size();
    return tactics.save(timing_cache, device_tag);
  }
  std::vector<std::pair<std::string, std::string>> tactic_entries() const override {
    std::vector<std::pair<std::string, std::string>> r;
    for (const auto& kv : tactics.entries()) r.push_back(kv);
    return r;
  }
  std::shared_ptr<ComputeOrder> make_compute_order() const override {
    return std::make_shared<CudaOrder>();
  }
  bool capture_runs() const override { return cuda_graph; }

  int device = 0;
  CudaDeviceOptions options;
  bool cuda_graph = false;
  WeightStore weights;
  TacticCache tactics;
  std::string device_tag;
  std::string timing_cache;  // path, or empty
  size_t saved = 0;          // the timing cache's entries when last saved or loaded
  std::mutex save_mu;
};

class CudaProvider final : public DeviceProvider {
 public:
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  int count() const override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();  // no driver or no GPU: none
      return 0;
    }
    return count;
  }
  Result<std::string> tag(int index) const override {
    if (index < 0 || index >= count())
      return invalid_argument("GPU " + std::to_string(index) + " does not exist");
    return cuda_device_tag(index);
  }

  Result<std::unique_ptr<EngineDevice>> open(
      const EngineOptions& o,
      const std::vector<std::pair<std::string, std::string>>& tactics) const override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      return unsupported(std::string("--device cuda: no CUDA device is available (") +
                         (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")");
    if (o.device_index < 0 || o.device_index >= count)
      return invalid_argument("GPU " + std::to_string(o.device_index) +
                              " does not exist: CUDA shows " + std::to_string(count) + " device" +
                              (count == 1 ? " (0)" : "s (0 to " + std::to_string(count - 1) + ")") +
                              "; CUDA_VISIBLE_DEVICES selects which GPUs those are");
    KILN_CUDA(cudaSetDevice(o.device_index));
    auto d = std::make_unique<CudaEngineDevice>();
    d->device = o.device_index;
    d->options.conv_path = o.cudnn_conv_path;
    d->options.runtime_fusion = o.cudnn_runtime_fusion;
    d->options.space_to_depth = o.space_to_depth;
    d->options.time_tactics = o.time_tactics;
    d->options.workspace_limit = static_cast<size_t>(effective_workspace_limit(o));
    d->options.max_tactics = static_cast<size_t>(std::max(0, o.max_tactics));
    d->options.blocking_sync = o.cuda_blocking_sync;
    d->cuda_graph = o.cuda_graph;
    KILN_ASSIGN_OR_RETURN(d->device_tag, cuda_device_tag(d->device));
    d->timing_cache = o.timing_cache;
    if (!d->timing_cache.empty()) d->tactics.load(d->timing_cache, d->device_tag);
    for (const auto& [k, v] : tactics) d->tactics.put(k, v);
    d->saved = d->tactics.size();
    return std::unique_ptr<EngineDevice>(std::move(d));
  }

  Result<Tensor> copy_to_device(const Tensor& t, int gpu) const override {
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

  Result<Tensor> pinned_tensor(DataType dtype, Shape shape) const override {
    if (count() == 0) return Tensor(dtype, std::move(shape));  // no GPU: an ordinary tensor
    const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return Status(StatusCode::kResourceExhausted,
                    "pinned_tensor: cannot pin " + std::to_string(bytes) + " bytes of host memory");
    }
    return Tensor::adopt(p, dtype, std::move(shape), [](void* q) { cudaFreeHost(q); });
  }

  Result<bool> register_host(void* data, size_t bytes) const override {
    if (count() == 0) return false;  // no GPU: nothing to pin for
    const cudaError_t e = cudaHostRegister(data, bytes, cudaHostRegisterPortable);
    if (e == cudaSuccess) return true;
    cudaGetLastError();
    const std::string what = "register_host_memory: cannot pin " + std::to_string(bytes) +
                             " bytes at " + std::to_string(reinterpret_cast<uintptr_t>(data));
    if (e == cudaErrorHostMemoryAlreadyRegistered)
      return invalid_argument(what + ": the memory (or part of it) is already registered");
    return Status(StatusCode::kResourceExhausted, what + ": " + cudaGetErrorString(e));
  }
  void unregister_host(void* data) const override {
    if (cudaHostUnregister(data) != cudaSuccess) cudaGetLastError();
  }

  Result<std::string> bus_id(int device) const override {
    char id[32] = {};
    KILN_CUDA(cudaDeviceGetPCIBusId(id, sizeof id, device));
    return std::string(id);
  }
};

}  // namespace

KILN_REGISTER_DEVICE(CudaProvider);

}  // namespace kiln
