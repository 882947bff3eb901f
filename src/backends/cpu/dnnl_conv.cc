// oneDNN Conv: 2-D fp32, any groups/strides/dilations/pads (auto_pad resolved by the shared
// conv_geometry), the node's epilogue as post-ops. Weights are constants, reordered once
// per prepared shape into the layout oneDNN picks (format_tag::any). Activations are NCHW
// between nodes; each conv lets oneDNN choose its own activation layout too (blocked
// nChw16c on AVX-512, which selects the direct JIT kernels instead of the generic GEMM
// path) and reorders in and out around the call. Keeping blocked layouts across nodes
// would save those reorders; that is the next step.

#include <cstring>

#include "backends/cpu/dnnl_common.h"
#include "ops/conv.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

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
    src_plain_ = memory::desc(src_dims, dt::f32, tag::nchw);
    dst_plain_ = memory::desc(dst_dims, dt::f32, tag::nchw);
    memory::desc w_any(w_dims, dt::f32, tag::any);
    const int b = bias_index(node_);
    memory::desc bias_md = b >= 0 ? memory::desc({ws[0]}, dt::f32, tag::x) : memory::desc();

    dnnl::post_ops ops;
    if (node_.epilogue.residual_input >= 0) ops.append_sum(1.f);
    if (!append_activation(node_.epilogue, ops)) return false;
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);

    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src_md, w_any,
                                         bias_md, dst_md, strides, dil, pad_l, pad_r);
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

    // Activation layouts oneDNN chose: scratch buffers and reorders, made once here so
    // run() only executes.
    src_blocked_ = pd_.src_desc() != src_plain_;
    dst_blocked_ = pd_.dst_desc() != dst_plain_;
    if (src_blocked_) {
      src_mem_ = memory(pd_.src_desc(), cpu_engine());
      src_reorder_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), src_plain_, cpu_engine(), pd_.src_desc()));
    }
    if (dst_blocked_) {
      dst_mem_ = memory(pd_.dst_desc(), cpu_engine());
      dst_reorder_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), pd_.dst_desc(), cpu_engine(), dst_plain_));
      if (node_.epilogue.residual_input >= 0)
        residual_reorder_ = dnnl::reorder(
            dnnl::reorder::primitive_desc(cpu_engine(), dst_plain_, cpu_engine(), pd_.dst_desc()));
    }
    return true;
  }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    float* dst = out[0]->data<float>();
    const int r = node_.epilogue.residual_input;
    memory src_user(src_plain_, cpu_engine(), const_cast<float*>(in[0]->data<float>()));
    memory dst_user(dst_plain_, cpu_engine(), dst);
    memory src = src_user;
    if (src_blocked_) {
      src_reorder_.execute(stream_, src_user, src_mem_);
      src = src_mem_;
    }
    memory dmem = dst_blocked_ ? dst_mem_ : dst_user;
    // The sum post-op accumulates into dst: start dst as the residual.
    if (r >= 0) {
      memory res(dst_plain_, cpu_engine(), const_cast<float*>(in[r]->data<float>()));
      if (dst_blocked_)
        residual_reorder_.execute(stream_, res, dst_mem_);
      else if (in[r]->data<float>() != dst)
        std::memcpy(dst, in[r]->data<float>(), sizeof(float) * out[0]->numel());
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dmem}};
    const int b = bias_index(node_);
    if (b >= 0)
      args[DNNL_ARG_BIAS] =
          memory(pd_.bias_desc(), cpu_engine(), const_cast<float*>(in[b]->data<float>()));
    prim_.execute(stream_, args);
    if (dst_blocked_) dst_reorder_.execute(stream_, dst_mem_, dst_user);
    stream_.wait();
  }

 private:
  ConvAttrs attrs_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  dnnl::stream stream_;
  memory weights_;
  memory::desc src_plain_, dst_plain_;
  bool src_blocked_ = false, dst_blocked_ = false;
  memory src_mem_, dst_mem_;  // oneDNN-layout scratch when the layouts are blocked
  dnnl::reorder src_reorder_, dst_reorder_, residual_reorder_;
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
