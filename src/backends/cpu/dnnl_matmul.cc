// oneDNN MatMul by a constant matrix as an inner product: A [..., K] · B [K, N] → Y [..., N],
// fp32, A's leading dims flattened into the inner product's rows (a Linear layer on a rank-4
// activation, as in ConvNeXt's MLPs and every transformer). B is packed once per prepared
// shape; the epilogue's bias (a Linear layer's, bias[n]) is the inner product's bias, the
// residual a sum post-op and the activation an eltwise one. A computed or 1-D B, a 1-D A and
// batched B stay on the reference.

#include "backends/cpu/dnnl_inner_product.h"

namespace kiln::dnnl_cpu {

namespace {

class DnnlMatMulKernel final : public InnerProductKernel {
 public:
  using InnerProductKernel::InnerProductKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& as = in[0].shape;
    const Tensor& b = node_.inputs[1]->constant;
    if (as.size() < 2 || b.rank() != 2 || as.back() != b.dim(0)) return false;
    const int64_t k = b.dim(0), n = b.dim(1);
    const int64_t m = shape_numel(as) / (k > 0 ? k : 1);
    if (m <= 0 || k <= 0 || n <= 0) return false;
    return ip_.prepare(m, k, n, b.data<float>(), false, bias_input() >= 0, node_.epilogue, bf16());
  }

  int bias_input() const override { return node_.epilogue.bias_input; }
};

}  // namespace

static bool matmul_supported(const Node& node) {
  if (node.op != OpKind::MatMul || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Value* a = node.inputs[0];
  const Value* b = node.inputs[1];
  if (!is_f32(a) || !is_f32(b) || !b->is_constant() || !is_f32(node.outputs[0])) return false;
  if (b->constant.dtype() != DataType::kFloat32 || b->constant.rank() != 2) return false;
  // A's rank is checked at prepare, on the real shape: a shape computed from the data (a
  // ViT's, exported with Shape → Gather) is unknown until then.
  if (a->has_shape && a->dims.size() < 2) return false;
  const Epilogue& e = node.epilogue;
  if (e.affine_input >= 0) return false;
  for (int k : e.inputs())
    if (k >= static_cast<int>(node.inputs.size()) || !is_f32(node.inputs[k])) return false;
  return true;
}

static std::unique_ptr<Kernel> make_matmul_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlMatMulKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(matmul, matmul_supported, make_matmul_kernel, OpKind::MatMul);

}  // namespace kiln::dnnl_cpu
