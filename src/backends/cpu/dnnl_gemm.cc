// oneDNN Gemm as an inner product: Y[M, N] = A[M, K] · B' + C, fp32, transA = 0, alpha =
// beta = 1, B a constant (packed once per prepared shape), C absent or a per-column bias
// ([N] or [1, N]); the node's epilogue as post-ops. Other Gemms stay on the reference.

#include "backends/cpu/dnnl_inner_product.h"
#include "ops/gemm.h"

namespace kiln::dnnl_cpu {

namespace {

class DnnlGemmKernel final : public InnerProductKernel {
 public:
  using InnerProductKernel::InnerProductKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& as = in[0].shape;
    const Tensor& b = node_.inputs[1]->constant;
    const bool trans_b = gemm_attrs(node_).trans_b;
    if (as.size() != 2 || b.rank() != 2) return false;
    const int64_t m = as[0], k = as[1], n = trans_b ? b.dim(0) : b.dim(1);
    if ((trans_b ? b.dim(1) : b.dim(0)) != k) return false;
    const int bi = bias_input();
    if (bi >= 0) {
      const Shape& cs = in[bi].shape;
      const bool row =
          (cs.size() == 1 && cs[0] == n) || (cs.size() == 2 && cs[0] == 1 && cs[1] == n);
      if (!row) return false;
    }
    return ip_.prepare(m, k, n, b.data<float>(), trans_b, bi >= 0, node_.epilogue, bf16());
  }

  int bias_input() const override { return bias_index(node_); }
};

}  // namespace

static bool gemm_supported(const Node& node) {
  if (node.op != OpKind::Gemm || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Value* b = node.inputs[1];
  if (!is_f32(node.inputs[0]) || !is_f32(b) || !b->is_constant() || !is_f32(node.outputs[0]))
    return false;
  if (b->constant.dtype() != DataType::kFloat32 || b->constant.rank() != 2) return false;
  const GemmAttrs ga = gemm_attrs(node);
  if (ga.trans_a || ga.alpha != 1.f) return false;
  const int bi = bias_index(node);
  if (bi >= 0 && (!is_f32(node.inputs[bi]) || ga.beta != 1.f)) return false;
  const int r = node.epilogue.residual_input;
  if (r >= 0 && (r >= static_cast<int>(node.inputs.size()) || !is_f32(node.inputs[r])))
    return false;
  return true;
}

static std::unique_ptr<Kernel> make_gemm_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlGemmKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(gemm, gemm_supported, make_gemm_kernel, OpKind::Gemm);

}  // namespace kiln::dnnl_cpu
