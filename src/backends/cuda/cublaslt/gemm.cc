// Gemm through cuBLASLt: Y = act(alpha·A'·B' + beta·C + residual), A the activation [M, K]
// (or [K, M] with transA), B and C constants.
//
// B is packed at prepare as [N, K] in the activation dtype (the layout cuBLASLt's tensor-core
// kernels like best for a row-major A). A C that is one row (C of [N], [1, N] or a scalar)
// becomes beta·C as the bias of CUBLASLT_EPILOGUE_BIAS / RELU_BIAS; a full C ([M, N] or
// [M, 1]) is expanded to beta·C and passed as cuBLASLt's C with beta 1. A residual is
// cuBLASLt's C (beta 1; in place over D allowed), so the two cannot both be present. ReLU is
// cuBLASLt's epilogue; any other activation is one launch_epilogue after the matmul.
#include "ops/gemm.h"

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cublaslt/lt_matmul.h"
#include "backends/cuda/cudnn/conv_descs.h"
#include "backends/cuda/kernels/launch.h"

namespace kiln {
namespace {

class LtGemmKernel final : public CudaKernel {
 public:
  LtGemmKernel(const Node& node, int c_index)
      : name_(node.name),
        epilogue_(node.epilogue),
        c_(c_index),
        trans_a_(gemm_attrs(node).trans_a),
        trans_b_(gemm_attrs(node).trans_b),
        alpha_(gemm_attrs(node).alpha),
        beta_(gemm_attrs(node).beta) {}

  bool reads_on_host(int i) const override { return i == 1 || (c_ >= 0 && i == c_); }
  int inplace_input() const override { return epilogue_.residual_input; }
  size_t workspace_bytes() const override { return lt_.workspace_bytes(); }
  std::string tactic() const override { return lt_.tactic() + act_note_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int r = epilogue_.residual_input;
    const void* c = r >= 0 ? in[r]->data : full_c_;
    KILN_RETURN_IF_ERROR(lt_.run(run.cublaslt, in[0]->data, b_dev_, c, out[0]->data, run.workspace,
                                 lt_.workspace_bytes(), run.stream));
    if (!separate_act_) return Status::ok();
    return launch_epilogue(out_desc_, out[0]->data, nullptr, nullptr, epilogue_.act,
                           epilogue_.alpha, epilogue_.beta, run.stream);
  }

 private:
  std::string name_;
  Epilogue epilogue_;
  int c_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  TensorDesc out_desc_;
  const void* b_dev_ = nullptr;
  const void* full_c_ = nullptr;
  bool separate_act_ = false;
  std::string act_note_;
  LtMatmul lt_;
};

Status LtGemmKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                             CudaBuildContext& ctx) {
  if (in.size() < 2 || !in[0].present() || !in[1].value)
    return invalid_argument("Gemm needs A and a constant B");
  const TensorDesc& a = in[0];
  const Tensor& b = *in[1].value;
  if (!is_device_float(a.dtype)) return unsupported(std::string("Gemm on ") + dtype_name(a.dtype));
  if (a.shape.size() != 2 || b.rank() != 2)
    return invalid_argument("Gemm A " + shape_str(a.shape) + ", B " + shape_str(b.shape()) +
                            ": both must be rank 2");
  const int64_t m = a.shape[trans_a_ ? 1 : 0], k = a.shape[trans_a_ ? 0 : 1];
  const int64_t n = b.dim(trans_b_ ? 0 : 1);
  if (b.dim(trans_b_ ? 1 : 0) != k)
    return invalid_argument("Gemm inner dimensions differ: A " + shape_str(a.shape) + ", B " +
                            shape_str(b.shape()));
  const DataType dt = a.dtype;
  const std::string dn = dtype_name(dt);
  out_desc_ = TensorDesc{dt, {m, n}};
  out[0] = out_desc_;
  const int r = epilogue_.residual_input;
  if (r >= 0 &&
      (r >= static_cast<int>(in.size()) || in[r].shape != out_desc_.shape || in[r].dtype != dt))
    return invalid_argument("epilogue residual must match the output " + shape_str({m, n}));

  // B as [N, K]: op(B) = (B [N, K])ᵀ.
  const std::vector<float> bv = b.to_floats();
  std::vector<float> nk(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t x = 0; x < k; ++x) nk[j * k + x] = trans_b_ ? bv[j * k + x] : bv[x * n + j];
  std::vector<uint8_t> packed = encode_floats(nk, dt);
  KILN_ASSIGN_OR_RETURN(
      void* bd, ctx.weights->upload(name_ + "/B/" + dn + "/nk", packed.data(), packed.size()));
  b_dev_ = bd;

  LtProblem p;
  p.dtype = dt;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = trans_a_;
  p.trans_b = true;
  p.alpha = alpha_;
  p.relu = epilogue_.act == Activation::kRelu;
  if (c_ >= 0 && beta_ != 0.f) {
    const Tensor& c = *in[c_].value;
    const Shape& cs = c.shape();
    const bool row = cs.size() <= 1 || cs[0] == 1;
    if (cs.size() > 2 || (cs.size() >= 1 && cs.back() != 1 && cs.back() != n) ||
        (cs.size() == 2 && cs[0] != 1 && cs[0] != m))
      return invalid_argument("C " + shape_str(cs) + " does not broadcast to " + shape_str({m, n}));
    const std::vector<float> cv = c.to_floats();
    const int64_t col_stride = cs.empty() || cs.back() == 1 ? 0 : 1;
    const int64_t row_stride = cs.size() == 2 && cs[0] != 1 ? cs[1] : 0;
    std::vector<float> expanded(static_cast<size_t>((row ? 1 : m) * n));
    for (int64_t i = 0; i < (row ? 1 : m); ++i)
      for (int64_t j = 0; j < n; ++j)
        expanded[i * n + j] = beta_ * cv[i * row_stride + j * col_stride];
    std::vector<uint8_t> bytes = encode_floats(expanded, dt);
    const std::string key = name_ + (row ? "/bias/" : "/C/m" + std::to_string(m) + "/") + dn;
    KILN_ASSIGN_OR_RETURN(void* cd, ctx.weights->upload(key, bytes.data(), bytes.size()));
    if (row) {
      p.bias = cd;
    } else {
      if (r >= 0) return unsupported("Gemm with a full C matrix and a residual epilogue");
      full_c_ = cd;
      p.c_present = true;
      p.beta = 1.f;
    }
  }
  if (r >= 0) {
    p.c_present = true;
    p.beta = 1.f;
  }
  separate_act_ = epilogue_.act != Activation::kNone && epilogue_.act != Activation::kRelu;
  act_note_ = separate_act_ ? std::string(" + ") + activation_name(epilogue_.act) : "";
  return lt_.init(p, b_dev_, ctx)
      .with_context(name_ + " (Gemm " + shape_str(a.shape) + " x " + shape_str(b.shape()) + ", " +
                    dn + ")");
}

Result<std::unique_ptr<CudaKernel>> make_lt_gemm(const Node& node, Precision precision) {
  if (node.epilogue.int8())
    return unsupported("Gemm with 8-bit operands (fuse_int8_conv): no 8-bit CUDA Gemm yet");
  if (node.inputs.size() < 2 || !node.inputs[0] || !node.inputs[1])
    return unsupported("Gemm without A or B");
  if (!node.inputs[1]->is_constant()) return unsupported("Gemm B is not a constant");
  const DataType at = node.inputs[0]->dtype;
  if (!is_device_float(at))
    return unsupported(std::string("Gemm on ") + dtype_name(at) +
                       " (cuBLASLt: float32, float16 or bfloat16)");
  if (!dtype_is_float(node.inputs[1]->constant.dtype()))
    return unsupported("Gemm B is not a float tensor");
  int c = -1;
  if (node.inputs.size() > 2 && node.inputs[2] && node.epilogue.residual_input != 2) {
    c = 2;
    if (!node.inputs[2]->is_constant()) return unsupported("Gemm C is not a constant");
    const Shape& cs = node.inputs[2]->constant.shape();
    if (node.epilogue.residual_input >= 0 && cs.size() == 2 && cs[0] != 1 &&
        gemm_attrs(node).beta != 0.f)
      return unsupported("Gemm with a full C matrix and a residual epilogue");
  }
  return std::unique_ptr<CudaKernel>(new LtGemmKernel(node, c));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Gemm, make_lt_gemm);

}  // namespace kiln
