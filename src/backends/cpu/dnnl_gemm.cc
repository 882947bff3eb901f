// oneDNN Gemm as an inner product: Y[M, N] = A[M, K] · B' + C, fp32, transA = 0, alpha =
// beta = 1, B a constant (packed once per prepared shape), C absent or a per-column bias
// ([N] or [1, N]); the node's epilogue as post-ops. Other Gemms stay on the reference.

#include <cstring>

#include "backends/cpu/dnnl_common.h"
#include "ops/gemm.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class DnnlGemmKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& as = in[0].shape;
    const Tensor& b = node_.inputs[1]->constant;
    const bool trans_b = gemm_attrs(node_).trans_b;
    if (as.size() != 2 || b.rank() != 2) return false;
    const int64_t m = as[0], k = as[1], n = trans_b ? b.dim(0) : b.dim(1);
    if ((trans_b ? b.dim(1) : b.dim(0)) != k) return false;
    const int bi = bias_index(node_);
    if (bi >= 0) {
      const Shape& cs = in[bi].shape;
      const bool row =
          (cs.size() == 1 && cs[0] == n) || (cs.size() == 2 && cs[0] == 1 && cs[1] == n);
      if (!row) return false;
    }
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
    // B is [K, N] (io) or, transposed, [N, K] (oi): either way the weights of an inner
    // product with N outputs and K inputs.
    memory::desc w_user({n, k}, dt::f32, trans_b ? tag::oi : tag::io);
    memory user(w_user, cpu_engine(), const_cast<float*>(b.data<float>()));
    weights_ = memory(pd_.weights_desc(), cpu_engine());
    dnnl::reorder(user, weights_).execute(stream_, user, weights_);
    stream_.wait();
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
    const int bi = bias_index(node_);
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
