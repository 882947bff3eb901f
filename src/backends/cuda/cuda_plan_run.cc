// CudaPlan: running a built plan (copies, steps, CUDA graph capture and replay, timing).
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/cuda/cublaslt/lt_loader.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_plan_impl.h"
#include "backends/cuda/kernels/launch.h"
#include "ops/op_registry.h"

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

Status CudaPlan::Impl::enqueue_copies_in() {
  for (size_t i = 0; i < input_slots.size(); ++i) {
    const PlanSlot& s = slots[input_slots[i]];
    KILN_CUDA(cudaMemcpyAsync(data(input_slots[i]), in_staging[i], s.desc.nbytes(),
                              cudaMemcpyHostToDevice, handles->stream));
  }
  return Status::ok();
}

Status CudaPlan::Impl::enqueue_copies_out() {
  for (size_t i = 0; i < output_slots.size(); ++i) {
    const PlanSlot& s = slots[output_slots[i]];
    KILN_CUDA(cudaMemcpyAsync(out_staging[i], data(output_slots[i]), s.desc.nbytes(),
                              cudaMemcpyDeviceToHost, handles->stream));
  }
  return Status::ok();
}

Status CudaPlan::Impl::enqueue_step(size_t k) {
  PlanStep& st = steps[k];
  cudaStream_t stream = handles->stream;
  if (st.kind == StepKind::kConvert) {
    TensorRef src{slots[st.in[0]].desc, data(st.in[0])};
    TensorRef dst{slots[st.out[0]].desc, data(st.out[0])};
    return launch_convert(src, dst, stream).with_context(st.info.name);
  }
  if (st.kind == StepKind::kKernel) {
    if (st.kernel->is_alias()) return Status::ok();
    std::vector<TensorRef> in(st.in.size()), out(st.out.size());
    std::vector<const TensorRef*> ip(st.in.size(), nullptr);
    std::vector<TensorRef*> op(st.out.size(), nullptr);
    for (size_t i = 0; i < st.in.size(); ++i) {
      if (st.in[i] < 0) continue;
      in[i] = TensorRef{slots[st.in[i]].desc, data(st.in[i])};
      ip[i] = &in[i];
    }
    for (size_t i = 0; i < st.out.size(); ++i) {
      if (st.out[i] < 0) continue;
      out[i] = TensorRef{slots[st.out[i]].desc, data(st.out[i])};
      op[i] = &out[i];
    }
    CudaRunContext run;
    run.stream = stream;
    run.cudnn = handles->cudnn;
    run.cublaslt = handles->cublaslt;
    run.workspace = workspace;
    run.workspace_bytes = workspace_bytes;
    return st.kernel->execute(ip, op, run).with_context(st.node->describe());
  }
  // A CPU step: bring the inputs to the host, run the reference kernel, send the outputs
  // back. Synchronous (so a plan with CPU steps is never captured in a CUDA graph). Every copy
  // is ordered on the plan's own stream: a plain cudaMemcpy runs on the default stream, which
  // the plan's non-blocking stream does not wait for, and from pageable memory it returns
  // before its DMA has landed, so the next kernel could read the output half written.
  const Node& n = *st.node;
  std::vector<Tensor> host_in(st.in.size());
  std::vector<const Tensor*> ins(st.in.size(), nullptr);
  std::vector<std::vector<uint8_t>> down(st.in.size());
  for (size_t i = 0; i < st.in.size(); ++i) {
    if (st.host_in[i] || st.in[i] < 0) continue;
    down[i].resize(slots[st.in[i]].desc.nbytes());
    KILN_CUDA(cudaMemcpyAsync(down[i].data(), data(st.in[i]), down[i].size(),
                              cudaMemcpyDeviceToHost, stream));
  }
  KILN_CUDA(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < st.in.size(); ++i) {
    if (st.host_in[i]) {
      ins[i] = st.host_in[i];
      continue;
    }
    if (st.in[i] < 0) continue;
    const TensorDesc& d = slots[st.in[i]].desc;
    host_in[i] = tensor_from_bytes(down[i].data(), d.dtype, d.shape, st.host_in_dtypes[i]);
    ins[i] = &host_in[i];
  }
  std::vector<Tensor> outs;
  KILN_RETURN_IF_ERROR(run_reference(n, ins, outs));
  std::vector<std::vector<uint8_t>> up(st.out.size());
  for (size_t i = 0; i < st.out.size(); ++i) {
    if (st.out[i] < 0) continue;
    const TensorDesc& d = slots[st.out[i]].desc;
    up[i] = host_bytes_as(outs[i], d.dtype);
    if (up[i].size() != d.nbytes())
      return internal_error(n.describe() + ": CPU output " + std::to_string(i) + " has " +
                            std::to_string(up[i].size()) + " bytes, the plan expects " +
                            std::to_string(d.nbytes()));
    KILN_CUDA(cudaMemcpyAsync(data(st.out[i]), up[i].data(), up[i].size(), cudaMemcpyHostToDevice,
                              stream));
  }
  // The host buffers must outlive their copies.
  KILN_CUDA(cudaStreamSynchronize(stream));
  return Status::ok();
}

Status CudaPlan::Impl::enqueue_steps(size_t first, size_t last) {
  for (size_t k = first; k < last; ++k) KILN_RETURN_IF_ERROR(enqueue_step(k));
  return Status::ok();
}

Status CudaPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  Impl& p = *impl_;
  KILN_RETURN_IF_ERROR(p.bind());  // another plan may have grown the shared memory
  cudaStream_t stream = p.handles->stream;
  if (inputs.size() != p.input_slots.size())
    return internal_error("plan run with " + std::to_string(inputs.size()) + " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& d = p.slots[p.input_slots[i]].desc;
    if (inputs[i].shape() != d.shape || inputs[i].dtype() != d.dtype)
      return internal_error("plan built for input shape " + shape_str(d.shape) + ", given " +
                            shape_str(inputs[i].shape()));
    if (d.nbytes())
      staging_copy(*p.handles->copy_pool, p.in_staging[i], inputs[i].raw(), d.nbytes());
  }
  // Poisoned before the graph or the steps, in stream order (never part of a capture).
  if (p.options.poison_memory && p.memory.arena_bytes > 0)
    KILN_CUDA(cudaMemsetAsync(p.arena, 0xFF, static_cast<size_t>(p.memory.arena_bytes), stream));
  if (p.graph_exec) {
    KILN_CUDA(cudaGraphLaunch(p.graph_exec, stream));
  } else {
    // Capture the whole run once the plan has run eagerly (libraries load their modules on
    // first use, which must not happen inside a capture).
    bool capture = p.options.cuda_graph && p.ran_once && !p.has_cpu_steps;
    if (capture) KILN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Status st = [&]() -> Status {
      KILN_RETURN_IF_ERROR(record(p.ev[0], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_copies_in());
      KILN_RETURN_IF_ERROR(record(p.ev[1], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_steps(0, p.steps.size()));
      KILN_RETURN_IF_ERROR(record(p.ev[2], stream, capture));
      KILN_RETURN_IF_ERROR(p.enqueue_copies_out());
      return record(p.ev[3], stream, capture);
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
  p.timing.compute_ms = elapsed(p.ev[1], p.ev[2]);
  p.timing.d2h_ms = elapsed(p.ev[2], p.ev[3]);
  outputs.clear();
  for (size_t i = 0; i < p.output_slots.size(); ++i) {
    const TensorDesc& d = p.slots[p.output_slots[i]].desc;
    outputs.push_back(tensor_from_bytes(p.out_staging[i], d.dtype, d.shape, p.output_dtypes[i]));
  }
  return Status::ok();
}

Result<std::vector<double>> CudaPlan::time_compute(int iterations) {
  Impl& p = *impl_;
  KILN_RETURN_IF_ERROR(p.bind());  // another plan may have grown the shared memory
  cudaStream_t stream = p.handles->stream;
  if (!p.ran_once) return internal_error("time_compute before the first run");
  if (p.options.cuda_graph && !p.has_cpu_steps && !p.compute_exec) {
    KILN_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    KILN_RETURN_IF_ERROR(
        finish_capture(stream, p.enqueue_steps(0, p.steps.size()), &p.compute_exec));
  }
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    KILN_CUDA(cudaEventRecord(p.ev[0], stream));
    if (p.compute_exec) {
      KILN_CUDA(cudaGraphLaunch(p.compute_exec, stream));
    } else {
      KILN_RETURN_IF_ERROR(p.enqueue_steps(0, p.steps.size()));
    }
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
  std::vector<cudaEvent_t> ev(p.steps.size() + 1);
  for (auto& e : ev) KILN_CUDA(cudaEventCreate(&e));
  std::vector<double> total(p.steps.size(), 0.0);
  Status st = [&]() -> Status {
    for (int it = 0; it < iterations; ++it) {
      KILN_CUDA(cudaEventRecord(ev[0], stream));
      for (size_t k = 0; k < p.steps.size(); ++k) {
        KILN_RETURN_IF_ERROR(p.enqueue_step(k));
        KILN_CUDA(cudaEventRecord(ev[k + 1], stream));
      }
      KILN_CUDA(cudaStreamSynchronize(stream));
      for (size_t k = 0; k < p.steps.size(); ++k) total[k] += elapsed(ev[k], ev[k + 1]);
    }
    return Status::ok();
  }();
  for (auto& e : ev) cudaEventDestroy(e);
  KILN_RETURN_IF_ERROR(st);
  for (double& t : total) t /= iterations > 0 ? iterations : 1;
  return total;
}

Result<std::unique_ptr<CudaStreamHandles>> CudaStreamHandles::create() {
  auto h = std::make_unique<CudaStreamHandles>();
  KILN_CUDA(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking));
  KILN_CUDNN(cudnnCreate(&h->cudnn));
  KILN_CUDNN(cudnnSetStream(h->cudnn, h->stream));
  KILN_RETURN_IF_ERROR(load_cublaslt());
  KILN_CUBLAS(cublasLtCreate(&h->cublaslt));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  h->copy_pool = std::make_unique<ThreadPool>(static_cast<int>(std::min(hw, 16u)) - 1);
  return h;
}

CudaStreamHandles::~CudaStreamHandles() {
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cudnn) cudnnDestroy(cudnn);
  if (stream) cudaStreamDestroy(stream);
}

Result<std::string> cuda_device_tag(int device) {
  cudaDeviceProp prop{};
  KILN_CUDA(cudaGetDeviceProperties(&prop, device));
  int rt = 0;
  KILN_CUDA(cudaRuntimeGetVersion(&rt));
  return std::string(prop.name) + " sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         " cudnn " + std::to_string(cudnnGetVersion()) + " cudart " + std::to_string(rt);
}

Result<int64_t> cuda_device_used_bytes() {
  size_t free_b = 0, total_b = 0;
  KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<int64_t>(total_b - free_b);
}

}  // namespace kiln
