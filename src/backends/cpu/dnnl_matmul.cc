// oneDNN MatMul by a constant matrix as an inner product: A [..., K] · B [K, N] → Y [..., N],
// fp32, A's leading dims flattened into the inner product's rows (a Linear layer on a rank-4
// activation, as in ConvNeXt's MLPs and every transformer). B is packed once per prepared
// shape; the epilogue's bias (a Linear layer's, bias[n]) is the inner product's bias, the
// residual a sum post-op and the activation an eltwise one. A computed or 1-D B, a 1-D A and
// batched B stay on the reference.

#include <cstring>

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class DnnlMatMulKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& as = in[0].shape;
    const Tensor& b = node_.inputs[1]->constant;
    if (as.size() < 2 || b.rank() != 2 || as.back() != b.dim(0)) return false;
    const int64_t k = b.dim(0), n = b.dim(1);
    const int64_t m = shape_numel(as) / (k > 0 ? k : 1);
    if (m <= 0 || k <= 0 || n <= 0) return false;
    const int bi = node_.epilogue.bias_input;
    memory::desc src_md({m, k}, dt::f32, tag::nc);
    memory::desc dst_md({m, n}, dt::f32, tag::nc);
    memory::desc w_any({n, k}, dt::f32, tag::any);
    memory::desc bias_md = bi >= 0 ? memory::desc({n}, dt::f32, tag::x) : memory::desc();
    dnnl::post_ops ops;
    if (node_.epilogue.residual_input >= 0) ops.append_sum(1.f);
    if (!append_activation(node_.epilogue, ops)) return false;
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, src_md, w_any,
                                           bias_md, dst_md);
    pd_ = dnnl::inner_product_forward::primitive_desc(desc, attr, cpu_engine());
    prim_ = dnnl::inner_product_forward(pd_);
    stream_ = dnnl::stream(cpu_engine());
    // B [K, N] is the weights of an inner product with N outputs and K inputs, stored io.
    memory user(memory::desc({n, k}, dt::f32, tag::io), cpu_engine(),
                const_cast<float*>(b.data<float>()));
    weights_ = memory(pd_.weights_desc(), cpu_engine());
    dnnl::reorder(user, weights_).execute(stream_, user, weights_);
    stream_.wait();
    (void)out;
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    float* dst = out[0]->data<float>();
    const int r = node_.epilogue.residual_input;
    if (r >= 0 && in[r]->data<float>() != dst)  // the sum post-op accumulates into dst
      std::memcpy(dst, in[r]->data<float>(), sizeof(float) * out[0]->numel());
    memory src(pd_.src_desc(), cpu_engine(), const_cast<float*>(in[0]->data<float>()));
    memory dmem(pd_.dst_desc(), cpu_engine(), dst);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dmem}};
    const int bi = node_.epilogue.bias_input;
    if (bi >= 0)
      args[DNNL_ARG_BIAS] =
          memory(pd_.bias_desc(), cpu_engine(), const_cast<float*>(in[bi]->data<float>()));
    prim_.execute(stream_, args);
    stream_.wait();
  }

 private:
  dnnl::inner_product_forward::primitive_desc pd_;
  dnnl::inner_product_forward prim_;
  dnnl::stream stream_;
  memory weights_;
};

}  // namespace

static bool matmul_supported(const Node& node) {
  if (node.op != OpKind::MatMul || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Value* a = node.inputs[0];
  const Value* b = node.inputs[1];
  if (!is_f32(a) || !is_f32(b) || !b->is_constant() || !is_f32(node.outputs[0])) return false;
  if (b->constant.dtype() != DataType::kFloat32 || b->constant.rank() != 2) return false;
  if (!a->has_shape || a->dims.size() < 2) return false;
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
