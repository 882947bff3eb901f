// oneDNN Conv: 2-D fp32, any groups/strides/dilations/pads (auto_pad resolved by the shared
// conv_geometry), the node's epilogue as post-ops. Weights are constants, reordered once
// per prepared shape into the layout oneDNN picks (format_tag::any). oneDNN picks the
// activation layouts too (blocked nChw16c on AVX-512, which selects the direct JIT kernels
// instead of the generic GEMM path); values between oneDNN nodes are stored in that layout
// (stored_blocked), so a conv reorders only where a neighbour needs nchw.

#include <cstring>

#include "backends/cpu/dnnl_common.h"
#include "ops/conv.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
}

class DnnlConvKernel final : public DnnlKernel {
 public:
  DnnlConvKernel(const Node& node, int threads, ConvAttrs attrs)
      : DnnlKernel(node, threads), attrs_(std::move(attrs)) {}

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    const Shape& ws = in[1].shape;
    if (xs.size() != 4 || ws.size() != 4) return false;
    auto geo = conv_geometry(attrs_, xs, ws);
    if (!geo.is_ok()) return false;
    const ConvGeometry& g = *geo;
    const int64_t groups = g.group;

    memory::dims src_dims = to_dims(xs), dst_dims = to_dims(out[0].shape);
    memory::dims w_dims =
        groups == 1 ? to_dims(ws) : memory::dims{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
    memory::dims strides = to_dims(g.strides), pad_l = to_dims(g.pad_begin),
                 pad_r = to_dims(g.pad_end), dil;
    for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps

    memory::desc src_md(src_dims, dt::f32, tag::any);
    memory::desc dst_md(dst_dims, dt::f32, tag::any);
    // How the neighbours store the activations (blocked between oneDNN nodes, else nchw).
    src_ext_ = stored_desc(node_.inputs[0], xs);
    dst_ext_ = stored_desc(node_.outputs[0], out[0].shape);
    const int r = node_.epilogue.residual_input;
    if (r >= 0) res_ext_ = stored_desc(node_.inputs[r], out[0].shape);
    memory::desc w_any(w_dims, dt::f32, tag::any);
    const int b = bias_index(node_);
    memory::desc bias_md = b >= 0 ? memory::desc({ws[0]}, dt::f32, tag::x) : memory::desc();

    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src_md, w_any,
                                         bias_md, dst_md, strides, dil, pad_l, pad_r);
    dnnl::post_ops ops;
    if (r >= 0) ops.append_sum(1.f);
    if (!append_activation(node_.epilogue, ops)) return false;
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    pd_ = dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
    prim_ = dnnl::convolution_forward(pd_);
    stream_ = dnnl::stream(cpu_engine());

    // Pack the constant weights once into oneDNN's chosen layout.
    const Tensor& w = node_.inputs[1]->constant;
    memory::desc w_user(w_dims, dt::f32, groups == 1 ? tag::oihw : tag::goihw);
    memory user(w_user, cpu_engine(), const_cast<float*>(w.data<float>()));
    weights_ = memory(pd_.weights_desc(), cpu_engine());
    dnnl::reorder(user, weights_).execute(stream_, user, weights_);
    stream_.wait();

    // Where oneDNN's choice differs from how the neighbours store a value (the graph's
    // input, a value a reference kernel reads, a channel count off the block), reorder;
    // everything is made here so run() only executes.
    src_reorder_ = pd_.src_desc() != src_ext_;
    dst_direct_ = pd_.dst_desc() == dst_ext_;
    if (src_reorder_) {
      src_mem_ = memory(pd_.src_desc(), cpu_engine());
      src_reorder_prim_ = make_reorder(src_ext_, pd_.src_desc());
    }
    if (!dst_direct_) {
      dst_mem_ = memory(pd_.dst_desc(), cpu_engine());
      dst_reorder_prim_ = make_reorder(pd_.dst_desc(), dst_ext_);
    }
    res_copy_ = r >= 0 && res_ext_ == pd_.dst_desc();
    if (r >= 0 && !res_copy_) res_reorder_prim_ = make_reorder(res_ext_, pd_.dst_desc());
    return true;
  }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    const int r = node_.epilogue.residual_input;
    memory src(src_ext_, cpu_engine(), const_cast<float*>(in[0]->data<float>()));
    memory dst_user(dst_ext_, cpu_engine(), out[0]->data<float>());
    if (src_reorder_) {
      src_reorder_prim_.execute(stream_, src, src_mem_);
      src = src_mem_;
    }
    memory dmem = dst_direct_ ? dst_user : dst_mem_;
    // The sum post-op accumulates into dst: start dst as the residual.
    if (r >= 0) {
      const float* res = in[r]->data<float>();
      if (!res_copy_)
        res_reorder_prim_.execute(
            stream_, {{DNNL_ARG_FROM, memory(res_ext_, cpu_engine(), const_cast<float*>(res))},
                      {DNNL_ARG_TO, dmem}});
      else if (res != dmem.get_data_handle())
        std::memcpy(dmem.get_data_handle(), res, pd_.dst_desc().get_size());
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dmem}};
    const int b = bias_index(node_);
    if (b >= 0)
      args[DNNL_ARG_BIAS] =
          memory(pd_.bias_desc(), cpu_engine(), const_cast<float*>(in[b]->data<float>()));
    prim_.execute(stream_, args);
    if (!dst_direct_) dst_reorder_prim_.execute(stream_, dst_mem_, dst_user);
    stream_.wait();
  }

 private:
  ConvAttrs attrs_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  dnnl::stream stream_;
  memory weights_;
  memory::desc src_ext_, dst_ext_, res_ext_;  // as the neighbours store them
  bool src_reorder_ = false, dst_direct_ = true, res_copy_ = true;
  memory src_mem_, dst_mem_;  // oneDNN-layout scratch where the layouts differ
  dnnl::reorder src_reorder_prim_, dst_reorder_prim_, res_reorder_prim_;
};

}  // namespace

bool conv_supported(const Node& node) {
  if (node.op != OpKind::Conv || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Value* w = node.inputs[1];
  if (!is_f32(node.inputs[0]) || !is_f32(w) || !w->is_constant()) return false;
  if (w->constant.dtype() != DataType::kFloat32 || w->constant.rank() != 4) return false;
  if (!is_f32(node.outputs[0])) return false;
  const int b = bias_index(node);
  if (b >= 0 && !is_f32(node.inputs[b])) return false;
  const int r = node.epilogue.residual_input;
  if (r >= 0 && (r >= static_cast<int>(node.inputs.size()) || !is_f32(node.inputs[r])))
    return false;
  return parse_conv_attrs(node.attrs).is_ok();
}

std::unique_ptr<Kernel> make_conv_kernel(const Node& node, int threads) {
  auto attrs = parse_conv_attrs(node.attrs);
  return std::make_unique<DnnlConvKernel>(node, threads, attrs.is_ok() ? *attrs : ConvAttrs{});
}

}  // namespace kiln::dnnl_cpu
