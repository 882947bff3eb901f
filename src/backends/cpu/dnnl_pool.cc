// oneDNN MaxPool / AveragePool / GlobalAveragePool, 2-D fp32 (NCHW or the oneDNN layout of
// stored_blocked), without MaxPool's Indices output. Geometry comes from the shared pool_dims();
// ceil mode maps onto a larger end padding (padded_end_for_output). Shapes oneDNN cannot express
// exactly fall back to the reference: an end padding that cannot be made non-negative, or
// AveragePool counting padding with ceil-mode overflow (those positions are not padding in ONNX,
// but oneDNN would count them).

#include "backends/cpu/dnnl_common.h"
#include "ops/pool.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

PoolAttrOptions options_for(OpKind op) {
  if (op == OpKind::MaxPool) return PoolAttrOptions{.dilations = true, .storage_order = true};
  return PoolAttrOptions{.count_include_pad = true};
}

class DnnlPoolKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    if (xs.size() != 4) return false;
    if (node_.op == OpKind::GlobalAveragePool) {
      // One window over the whole plane: average pooling with the plane as the kernel.
      if (xs[2] <= 0 || xs[3] <= 0) return false;
      return create(dnnl::algorithm::pooling_avg_exclude_padding, xs, out[0].shape, {1, 1},
                    {xs[2], xs[3]}, {0, 0}, {0, 0}, {0, 0});
    }
    auto attrs = parse_pool_attrs(node_.attrs, 2, options_for(node_.op));
    if (!attrs.is_ok()) return false;
    auto dims = pool_dims(*attrs, xs);
    if (!dims.is_ok()) return false;
    const bool is_max = node_.op == OpKind::MaxPool;
    memory::dims strides, kernel, dil, pad_l, pad_r;
    for (const PoolDim& d : *dims) {
      // A negative end padding (the last inputs are never read) is raised to 0 when
      // that keeps the output size: any pe in [pe, pe + stride) gives the same size.
      int64_t pe = d.padded_end_for_output();
      if (pe < 0) pe = 0;
      if ((d.in + d.pad_begin + pe - d.effective_kernel()) / d.stride + 1 != d.out) return false;
      if (!is_max && attrs->count_include_pad && pe > d.pad_end) return false;
      strides.push_back(d.stride);
      kernel.push_back(d.kernel);
      dil.push_back(d.dilation - 1);
      pad_l.push_back(d.pad_begin);
      pad_r.push_back(pe);
    }
    dnnl::algorithm alg = is_max                     ? dnnl::algorithm::pooling_max
                          : attrs->count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                     : dnnl::algorithm::pooling_avg_exclude_padding;
    return create(alg, xs, out[0].shape, strides, kernel, dil, pad_l, pad_r);
  }

  bool create(dnnl::algorithm alg, const Shape& xs, const Shape& ys, const memory::dims& strides,
              const memory::dims& kernel, const memory::dims& dil, const memory::dims& pad_l,
              const memory::dims& pad_r) {
    // The input as its producer stores it; the output in the same layout (dst `any`), with
    // a reorder when the reader wants it otherwise.
    memory::desc src_md = stored_desc(shared_, node_.inputs[0], xs);
    dst_ext_ = stored_desc(shared_, node_.outputs[0], ys);
    memory::desc dst_md(to_dims(ys), dt::f32, tag::any);
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md, dst_md,
                                        strides, kernel, dil, pad_l, pad_r);
    pd_ = dnnl::pooling_v2_forward::primitive_desc(desc, cpu_engine());
    prim_ = dnnl::pooling_v2_forward(pd_);
    stream_ = dnnl::stream(cpu_engine());
    dst_direct_ = pd_.dst_desc() == dst_ext_;
    if (!dst_direct_) {
      dst_mem_ = memory(pd_.dst_desc(), cpu_engine());
      dst_reorder_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), pd_.dst_desc(), cpu_engine(), dst_ext_));
    }
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    memory src(pd_.src_desc(), cpu_engine(), const_cast<float*>(in[0]->as<float>()));
    memory dst(dst_ext_, cpu_engine(), out[0]->as<float>());
    prim_.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_direct_ ? dst : dst_mem_}});
    if (!dst_direct_) dst_reorder_.execute(stream_, dst_mem_, dst);
    stream_.wait();
  }

 private:
  dnnl::pooling_v2_forward::primitive_desc pd_;
  dnnl::pooling_v2_forward prim_;
  dnnl::stream stream_;
  memory::desc dst_ext_;  // as the readers store the output
  bool dst_direct_ = true;
  memory dst_mem_;
  dnnl::reorder dst_reorder_;
};

}  // namespace

static bool pool_supported(const Node& node) {
  if (node.op != OpKind::MaxPool && node.op != OpKind::AveragePool &&
      node.op != OpKind::GlobalAveragePool)
    return false;
  if (node.inputs.size() != 1 || node.outputs.empty() || !node.epilogue.empty()) return false;
  // MaxPool's Indices output is not produced.
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i]) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.outputs[0])) return false;
  const Value* x = node.inputs[0];
  if (x->has_shape && x->dims.size() != 4) return false;
  if (node.op == OpKind::GlobalAveragePool) return true;  // no attributes
  return parse_pool_attrs(node.attrs, 2, options_for(node.op)).is_ok();
}

static std::unique_ptr<Kernel> make_pool_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlPoolKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(pool, pool_supported, make_pool_kernel, OpKind::MaxPool,
                          OpKind::AveragePool, OpKind::GlobalAveragePool);

}  // namespace kiln::dnnl_cpu
