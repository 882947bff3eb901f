// Test helper for the library-backed kernels (cuDNN Conv, cuBLASLt Gemm/MatMul): like
// run_cuda_node, but with a caller-owned TacticCache, a choice of timing or heuristics, and
// optionally the output written in place over the kernel's inplace_input().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_test_util.h"

namespace kiln::test {

struct LibRunOptions {
  bool time_tactics = true;
  bool in_place = false;  // output 0 over input inplace_input() (which must be ≥ 0)
};

inline Result<CudaNodeResult> run_lib_kernel(const Node& node,
                                             const std::vector<const Tensor*>& inputs,
                                             Precision precision, TacticCache& tactics,
                                             LibRunOptions opt = {}) {
  CudaKernelFactory factory = CudaKernelRegistry::find(node.op);
  if (!factory) return unsupported(std::string("no CUDA kernel for ") + op_name(node.op));
  KILN_ASSIGN_OR_RETURN(auto kernel, factory(node, precision));
  static WeightStore* weights = new WeightStore();  // lives for the test process
  CudaBuildContext bctx;
  bctx.precision = precision;
  bctx.weights = weights;
  bctx.tactics = &tactics;
  bctx.time_tactics = opt.time_tactics;
  KILN_CUDNN(cudnnCreate(&bctx.cudnn));
  std::unique_ptr<cudnnContext, decltype(&cudnnDestroy)> cudnn_guard(bctx.cudnn, cudnnDestroy);
  KILN_CUBLAS(cublasLtCreate(&bctx.cublaslt));
  std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> lt_guard(bctx.cublaslt,
                                                                        cublasLtDestroy);
  KILN_CUDA(cudaStreamCreate(&bctx.stream));
  std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> stream_guard(bctx.stream,
                                                                          cudaStreamDestroy);
  KILN_CUDNN(cudnnSetStream(bctx.cudnn, bctx.stream));

  std::vector<DevDesc> in_desc(inputs.size());
  std::vector<DevTensor> in_dev(inputs.size());
  std::vector<DeviceBytes> in_bufs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (!t) continue;
    const Value* v = node.input(i);
    const bool constant = v && v->is_constant();
    DevDesc d;
    d.dtype = dtype_is_float(t->dtype()) ? bctx.act_dtype() : t->dtype();
    d.shape = t->shape();
    d.value = constant ? &v->constant : nullptr;
    d.layout = !constant && t->rank() == 4 && dtype_is_float(t->dtype())
                   ? kernel->input_layout(static_cast<int>(i), Layout::kNHWC)
                   : Layout::kPlain;
    in_desc[i] = d;
    in_dev[i].desc = d;
    if (constant && kernel->reads_on_host(static_cast<int>(i))) continue;
    std::vector<uint8_t> bytes = to_device_bytes(*t, d.dtype, d.layout);
    KILN_CUDA(cudaMalloc(&in_bufs[i].p, bytes.size() + 1));
    KILN_CUDA(cudaMemcpy(in_bufs[i].p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    in_dev[i].data = in_bufs[i].p;
  }
  std::vector<DevDesc> out_desc(node.outputs.size());
  KILN_RETURN_IF_ERROR(kernel->prepare(in_desc, out_desc, bctx));
  CudaNodeResult result;
  result.tactic = kernel->tactic();

  DevTensor out;
  out.desc = out_desc[0];
  DeviceBytes out_buf;
  if (opt.in_place) {
    const int k = kernel->inplace_input();
    if (k < 0 || in_desc[k].nbytes() != out.desc.nbytes() || in_desc[k].layout != out.desc.layout)
      return invalid_argument("kernel cannot run in place");
    out.data = in_dev[k].data;
  } else {
    KILN_CUDA(cudaMalloc(&out_buf.p, out.desc.nbytes() + 1));
    KILN_CUDA(cudaMemset(out_buf.p, 0xFF, out.desc.nbytes() + 1));
    out.data = out_buf.p;
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
  std::vector<const DevTensor*> in_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) in_ptrs[i] = &in_dev[i];
  KILN_RETURN_IF_ERROR(kernel->enqueue(in_ptrs, {&out}, run));
  KILN_CUDA(cudaStreamSynchronize(bctx.stream));
  std::vector<uint8_t> bytes(out.desc.nbytes());
  KILN_CUDA(cudaMemcpy(bytes.data(), out.data, bytes.size(), cudaMemcpyDeviceToHost));
  result.outputs.push_back(from_device_bytes(bytes, out.desc));
  return result;
}

// run_lib_kernel against the reference, within the precision's tolerance.
inline void expect_lib_kernel_matches(const Node& node, const std::vector<const Tensor*>& in,
                                      Precision p, TacticCache& tactics, LibRunOptions opt = {},
                                      std::string* tactic = nullptr) {
  auto got = run_lib_kernel(node, in, p, tactics, opt);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<Tensor> want;
  ASSERT_TRUE(run_reference(node, in, want).is_ok());
  ASSERT_EQ(got->outputs[0].shape(), want[0].shape());
  EXPECT_LE(relative_l2(got->outputs[0], want[0]), tolerance(p))
      << node.describe() << " (" << precision_name(p) << ", " << got->tactic << ")";
  if (tactic) *tactic = got->tactic;
}

}  // namespace kiln::test
