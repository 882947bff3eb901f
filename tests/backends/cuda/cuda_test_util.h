// Helpers for CUDA kernel tests: run one node's CUDA kernel on host inputs and compare with
// the reference kernel. Inputs are converted on the host (float32 -> the precision's
// activation dtype, 4-D float tensors -> the layout the kernel asks for), outputs are
// poisoned (all bytes 0xFF: NaN for floats) before the launch and converted back to float32
// in plain layout after, so an unwritten element shows as NaN.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "core/half.h"
#include "ops/op_registry.h"
#include "ops/op_test_util.h"

namespace kiln::test {

// Host-side layout/dtype conversion of a float32 tensor for upload.
inline std::vector<uint8_t> to_device_bytes(const Tensor& t, DataType dt, Layout layout) {
  std::vector<float> v = t.to_floats();
  if (layout == Layout::kNHWC && t.rank() == 4 && dtype_is_float(t.dtype())) {
    int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
    std::vector<float> o(v.size());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) o[(b * hw + p) * c + ch] = v[(b * c + ch) * hw + p];
    v.swap(o);
  }
  std::vector<uint8_t> bytes;
  if (!dtype_is_float(t.dtype())) {  // integer/bool tensors travel as they are
    bytes.resize(t.nbytes());
    std::memcpy(bytes.data(), t.raw(), t.nbytes());
  } else {
    const DataType to =
        dt == DataType::kFloat16 || dt == DataType::kBFloat16 ? dt : DataType::kFloat32;
    bytes.resize(v.size() * dtype_size(to));
    store_floats(v.data(), v.size(), to, bytes.data());
  }
  return bytes;
}

inline Tensor from_device_bytes(const std::vector<uint8_t>& bytes, const TensorDesc& d) {
  if (!dtype_is_float(d.dtype)) {
    // Integer outputs keep their dtype; one in NHWC (QuantizeLinear's codes) goes back to plain.
    Tensor t(d.dtype, d.shape);
    const size_t e = dtype_size(d.dtype);
    if (d.layout != Layout::kNHWC) {
      std::memcpy(t.raw(), bytes.data(), t.nbytes());
      return t;
    }
    const int64_t b = d.shape[0], c = d.shape[1], hw = d.shape[2] * d.shape[3];
    auto* o = static_cast<uint8_t*>(t.raw());
    for (int64_t x = 0; x < b; ++x)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p)
          std::memcpy(o + ((x * c + ch) * hw + p) * e, &bytes[((x * hw + p) * c + ch) * e], e);
    return t;
  }
  int64_t n = d.numel();
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    if (d.dtype == DataType::kFloat16 || d.dtype == DataType::kBFloat16) {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      v[i] = d.dtype == DataType::kFloat16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
    } else {
      std::memcpy(&v[i], &bytes[i * 4], 4);
    }
  }
  if (d.layout == Layout::kNHWC) {
    int64_t b = d.shape[0], c = d.shape[1], hw = d.shape[2] * d.shape[3];
    std::vector<float> o(v.size());
    for (int64_t x = 0; x < b; ++x)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) o[(x * c + ch) * hw + p] = v[(x * hw + p) * c + ch];
    v.swap(o);
  }
  return Tensor::from_floats(d.shape, v);
}

struct CudaNodeResult {
  std::vector<Tensor> outputs;  // float outputs as float32, plain layout
  std::string tactic;
  std::string backend;  // the candidate that ran
};

// A device buffer freed on scope exit.
struct DeviceBytes {
  void* p = nullptr;
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes(DeviceBytes&& o) noexcept : p(o.p) { o.p = nullptr; }
  ~DeviceBytes() { cudaFree(p); }
};

struct CudaRunOptions {
  // The layout offered for 4-D float inputs that are not constants; the kernel's
  // input_layouts() decides.
  Layout offered = Layout::kNHWC;
  bool time_tactics = true;
  // Candidates finalized and timed per library path (CudaBuildContext::max_tactics); -1: the
  // tests' default, 2 when timed (a choice still made) and 1 when not. Each cuDNN graph
  // candidate may compile a kernel at runtime: the whole library list took the GPU suite past
  // 7 minutes, and 3 candidates to 300 s on the H200.
  int max_tactics = -1;
  bool in_place = false;           // output 0 over input inplace_input() (which must be ≥ 0)
  TacticCache* tactics = nullptr;  // nullptr: a fresh cache
  // The candidate's backend ("cudnn-graph"); empty: the first that prepares, as the planner
  // asks them when it times nothing.
  std::string backend;
  // Offer float inputs as a graph input arrives (float32 plain) where the kernel's
  // takes_offered() accepts that, as the plan does.
  bool offer_raw = false;
  // EngineOptions::cudnn_conv_path, ::space_to_depth and ::cudnn_runtime_fusion.
  CudnnConvPath conv_path = CudnnConvPath::kAuto;
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;
  bool runtime_fusion = true;
};

// The outputs of `node` at its op's bound (OpDef::bound) when its shape rule cannot give them
// from what a plan knows of `inputs` (dtypes, shapes, the values of constants); empty when it
// can, or the op has no bound.
inline Result<std::vector<TensorDesc>> bound_outputs(const Node& node,
                                                     const std::vector<const Tensor*>& inputs) {
  const OpDef* def = OpRegistry::find(node.op);
  if (!def || !def->bound) return std::vector<TensorDesc>{};
  std::vector<TensorDesc> known(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    const Value* v = i < node.inputs.size() ? node.inputs[i] : nullptr;
    known[i] = TensorDesc{inputs[i]->dtype(), inputs[i]->shape(),
                          v && v->is_constant() ? &v->constant : nullptr};
  }
  std::vector<TensorDesc> out(node.outputs.size());
  if (infer_node(*def, node, known, out).is_ok()) return std::vector<TensorDesc>{};
  KILN_RETURN_IF_ERROR(def->bound(node, known, out).with_context(node.describe() + ": bound"));
  return out;
}

// A bounded kernel's descs: the bound for each output, then the int64 [1] extent.
inline Status check_bounded_descs(const std::vector<TensorDesc>& bound,
                                  const std::vector<TensorDesc>& out) {
  if (out.size() != bound.size() + 1 || out.back().dtype != DataType::kInt64 ||
      out.back().numel() != 1)
    return internal_error("a bounded kernel gives no int64 extent");
  for (size_t i = 0; i < bound.size(); ++i)
    if (out[i].present() && out[i].shape != bound[i].shape)
      return internal_error("bounded kernel: output " + std::to_string(i) + " is " +
                            shape_str(out[i].shape) + ", the op's bound " +
                            shape_str(bound[i].shape));
  return Status::ok();
}

// A bounded output's real shape: its bound with the op's bound axis `extent` long.
inline Result<Shape> real_shape(const Node& node, Shape bound, int64_t extent) {
  const size_t axis = static_cast<size_t>(OpRegistry::find(node.op)->bound_axis);
  if (axis >= bound.size() || extent < 0 || extent > bound[axis])
    return internal_error("bounded kernel: extent " + std::to_string(extent) +
                          " outside its bound " + shape_str(bound) + " on axis " +
                          std::to_string(axis));
  bound[axis] = extent;
  return bound;
}

// Prepares and enqueues `kernel` (made for `node`) on host inputs (nullptr for omitted ones).
// An op whose output shapes follow data the plan would not know runs bounded (bound_outputs):
// the outputs come back in their real shapes, without the extent.
inline Result<CudaNodeResult> run_cuda_kernel_with(CudaKernel* kernel, WeightStore& weights,
                                                   const Node& node,
                                                   const std::vector<const Tensor*>& inputs,
                                                   Precision precision, const CudaRunOptions& o) {
  // The offer: o.offered for 4-D float inputs that are not constants, as the plan asks.
  std::vector<Layout> offered(inputs.size(), Layout::kPlain);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = i < node.inputs.size() ? node.inputs[i] : nullptr;
    if (inputs[i] && !(v && v->is_constant()) && inputs[i]->rank() == 4 &&
        dtype_is_float(inputs[i]->dtype()))
      offered[i] = o.offered;
  }
  const std::vector<Layout> wanted = kernel->input_layouts(offered);

  TacticCache fresh;
  CudaBuildContext bctx;
  bctx.precision = precision;
  bctx.conv_path = o.conv_path;
  bctx.space_to_depth = o.space_to_depth;
  bctx.runtime_fusion = o.runtime_fusion;
  bctx.weights = &weights;
  bctx.tactics = o.tactics ? o.tactics : &fresh;
  bctx.time_tactics = o.time_tactics;
  bctx.max_tactics =
      o.max_tactics >= 0 ? static_cast<size_t>(o.max_tactics) : (o.time_tactics ? 2 : 1);
  KILN_CUDNN(cudnnCreate(&bctx.cudnn));
  std::unique_ptr<cudnnContext, decltype(&cudnnDestroy)> cudnn_guard(bctx.cudnn, cudnnDestroy);
  KILN_CUBLAS(cublasLtCreate(&bctx.cublaslt));
  std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> lt_guard(bctx.cublaslt,
                                                                        cublasLtDestroy);
  KILN_CUDA(cudaStreamCreate(&bctx.stream));
  std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> stream_guard(bctx.stream,
                                                                          cudaStreamDestroy);
  KILN_CUDNN(cudnnSetStream(bctx.cudnn, bctx.stream));

  std::vector<TensorDesc> in_desc(inputs.size());
  std::vector<TensorRef> in_dev(inputs.size());
  std::vector<DeviceBytes> in_bufs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t) continue;
    const Value* v = i < node.inputs.size() ? node.inputs[i] : nullptr;
    bool constant = v && v->is_constant();
    TensorDesc d;
    d.dtype = dtype_is_float(t->dtype()) ? bctx.act_dtype() : t->dtype();
    d.shape = t->shape();
    d.value = constant ? &v->constant : nullptr;
    Layout want = Layout::kPlain;
    if (!constant && t->rank() == 4 && dtype_is_float(t->dtype())) want = wanted[i];
    d.layout = want;
    const TensorDesc raw{DataType::kFloat32, t->shape()};
    if (o.offer_raw && !constant && dtype_is_float(t->dtype()) &&
        kernel->takes_offered(static_cast<int>(i), raw)) {
      d = raw;
      want = Layout::kPlain;
    }
    in_desc[i] = d;
    in_dev[i].desc = d;
    if (constant && kernel->reads_on_host(static_cast<int>(i))) continue;
    std::vector<uint8_t> bytes = to_device_bytes(*t, d.dtype, want);
    KILN_CUDA(cudaMalloc(&in_bufs[i].p, bytes.size() + 1));
    KILN_CUDA(cudaMemcpy(in_bufs[i].p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    in_dev[i].data = in_bufs[i].p;
  }
  // A node whose output shapes follow data not known here runs on its op's bound, as the
  // planner runs it (BuildContext::bounded): one more output, the int64 extent.
  const size_t n_out = node.outputs.size();
  KILN_ASSIGN_OR_RETURN(const std::vector<TensorDesc> bound, bound_outputs(node, inputs));
  bctx.bounded = !bound.empty();
  std::vector<TensorDesc> out_desc(n_out + (bctx.bounded ? 1 : 0));
  KILN_RETURN_IF_ERROR(kernel->prepare(in_desc, out_desc, bctx));
  if (bctx.bounded) KILN_RETURN_IF_ERROR(check_bounded_descs(bound, out_desc));

  CudaNodeResult result;
  result.tactic = kernel->tactic();
  std::vector<TensorRef> out_dev(out_desc.size());
  std::vector<DeviceBytes> out_bufs(out_desc.size());
  std::vector<TensorRef*> out_ptrs(out_desc.size(), nullptr);
  for (size_t i = 0; i < out_desc.size(); ++i) {
    if (!out_desc[i].present()) continue;
    out_dev[i].desc = out_desc[i];
    if (kernel->is_alias()) {
      out_dev[i].data = in_dev[0].data;
    } else if (i == 0 && o.in_place) {
      const int k = kernel->inplace_input();
      if (k < 0 || in_desc[k].nbytes() != out_desc[0].nbytes() ||
          in_desc[k].layout != out_desc[0].layout)
        return invalid_argument("kernel cannot run in place");
      out_dev[i].data = in_dev[k].data;
    } else {
      KILN_CUDA(cudaMalloc(&out_bufs[i].p, out_desc[i].nbytes() + 1));
      KILN_CUDA(cudaMemset(out_bufs[i].p, 0xFF, out_desc[i].nbytes() + 1));
      out_dev[i].data = out_bufs[i].p;
    }
    out_ptrs[i] = &out_dev[i];
  }
  DeviceBytes workspace;
  CudaRunContext run;
  run.stream = bctx.stream;
  run.cudnn = bctx.cudnn;
  run.cublaslt = bctx.cublaslt;
  run.workspace_bytes = kernel->workspace_bytes();
  if (run.workspace_bytes) {
    KILN_CUDA(cudaMalloc(&workspace.p, run.workspace_bytes));
    run.workspace = workspace.p;
  }
  std::vector<const TensorRef*> in_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) in_ptrs[i] = &in_dev[i];
  if (!kernel->is_alias()) KILN_RETURN_IF_ERROR(kernel->enqueue(in_ptrs, out_ptrs, run));
  KILN_CUDA(cudaStreamSynchronize(bctx.stream));
  int64_t extent = -1;  // a bounded kernel's real extent of its outputs
  if (bctx.bounded)
    KILN_CUDA(cudaMemcpy(&extent, out_dev[n_out].data, sizeof(extent), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n_out; ++i) {
    if (!out_ptrs[i]) {
      result.outputs.emplace_back();
      continue;
    }
    TensorDesc real = out_desc[i];
    if (bctx.bounded) {
      KILN_ASSIGN_OR_RETURN(real.shape, real_shape(node, real.shape, extent));
    }
    // A bounded output's real elements are the first of its buffer (row-major).
    std::vector<uint8_t> bytes(real.nbytes());
    KILN_CUDA(cudaMemcpy(bytes.data(), out_dev[i].data, bytes.size(), cudaMemcpyDeviceToHost));
    result.outputs.push_back(from_device_bytes(bytes, real));
  }
  return result;
}

// Creates, prepares and enqueues the CUDA kernel of `node` (o.backend's, or the first candidate
// that prepares) on host inputs (nullptr for omitted ones).
inline Result<CudaNodeResult> run_cuda_node_with(const Node& node,
                                                 const std::vector<const Tensor*>& inputs,
                                                 Precision precision, const CudaRunOptions& o) {
  // The call's own weights: nodes of different tests share names ("case_node"), and a weight
  // is keyed by its node's name. Declared before the kernels, so it outlives them.
  WeightStore weights;
  KILN_ASSIGN_OR_RETURN(auto kernels, make_cuda_kernels(node, precision));
  Status last = unsupported("no CUDA candidate of backend '" + o.backend + "'");
  for (auto& [backend, kernel] : kernels) {
    if (!o.backend.empty() && backend != o.backend) continue;
    auto r = run_cuda_kernel_with(kernel.get(), weights, node, inputs, precision, o);
    if (r.is_ok()) r->backend = backend;
    if (r.is_ok() || r.status().code() != StatusCode::kUnsupported) return r;
    last = r.status();
  }
  return last;
}

inline Result<CudaNodeResult> run_cuda_node(const Node& node,
                                            const std::vector<const Tensor*>& inputs,
                                            Precision precision, Layout offered = Layout::kNHWC) {
  CudaRunOptions o;
  o.offered = offered;
  return run_cuda_node_with(node, inputs, precision, o);
}

// Tolerance of relative_l2 per precision (DESIGN: fp32 ≤ 1e-5-ish per kernel, tf32 ~3e-4,
// fp16 ~1e-3 with fp32 accumulation).
inline double tolerance(Precision p) {
  switch (p) {
    case Precision::kFp32: return 1e-5;
    case Precision::kTf32: return 2e-3;
    case Precision::kFp16: return 5e-3;
    case Precision::kBf16: return 4e-2;  // 8 bits of mantissa: 8x fp16's rounding
    case Precision::kInt8:
    case Precision::kFp8: break;  // an engine's precision; kernels compute in fp16 (or codes)
  }
  return 0;
}

// Runs `node` through its CUDA kernel and the reference; expects every output within the
// precision's tolerance (and identical shapes; exact equality for integer outputs).
inline void expect_cuda_matches_reference(const Node& node, const std::vector<const Tensor*>& in,
                                          Precision p, Layout offered = Layout::kNHWC) {
  auto got = run_cuda_node(node, in, p, offered);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<Tensor> want;
  ASSERT_TRUE(run_reference(node, in, want).is_ok());
  ASSERT_EQ(got->outputs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].defined()) continue;
    ASSERT_EQ(got->outputs[i].shape(), want[i].shape()) << "output " << i;
    double err = relative_l2(got->outputs[i], want[i]);
    EXPECT_LE(err, dtype_is_float(want[i].dtype()) ? tolerance(p) : 0.0)
        << node.describe() << " output " << i << " (" << precision_name(p) << ", " << got->tactic
        << ")";
  }
}

}  // namespace kiln::test
