// oneDNN Conv: 2-D fp32, any groups/strides/dilations/pads (auto_pad resolved by the shared
// conv_geometry), the node's epilogue as post-ops. Weights are constants, reordered once
// per prepared shape into the layout the primitive picks (format_tag::any). Activations
// between oneDNN nodes are stored in the layout the layout decision gives each value
// (stored_format: nhwc or nChw16c on AVX-512), so a conv reorders only where a neighbour
// needs nchw or where running in another layout measured faster.
//
// At prepare the conv's candidates are timed on the real shapes (dnnl_conv_plan.cc): the
// direct conv on the stored layouts, the direct conv on oneDNN's preferred layout with
// reorders, and for 3×3 stride-1 undilated ungrouped convs oneDNN's Winograd, which does
// about half the multiplies but wants nChw16c and rounds about twice as far from the exact
// result. EngineOptions::cpu_conv_algo picks: "direct" (default: never Winograd), "auto" (all
// timed, the fastest kept) or "winograd" (wherever oneDNN can create it; direct elsewhere).
//
// An int8 Conv (Epilogue::input_scale, from fuse_int8_conv) runs oneDNN's 8-bit conv: the
// input quantized by the input reorder, the weights packed as int8 codes, the int32 sums scaled
// back to float32 with the epilogue as post-ops (dnnl_conv_plan.cc, ConvPlanner::make).

#include "backends/cpu/dnnl_conv_plan.h"

namespace kiln::dnnl_cpu {

namespace {

class DnnlConvKernel final : public DnnlKernel {
 public:
  DnnlConvKernel(const Node& node, const DnnlShared& shared, ConvAttrs attrs)
      : DnnlKernel(node, shared), attrs_(std::move(attrs)), planner_(node, attrs_, shared) {}

  // What the prepared shapes run (tests check it).
  const ConvPlan& plan() const { return plan_; }
  bool has_residual() const { return node_.epilogue.residual_input >= 0; }

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    const Shape& ws = in[1].shape;
    if (xs.size() != 4 || ws.size() != 4 || out[0].shape.size() != 4) return false;
    ConvOperands ops{xs, ws, out[0].shape};
    // How the neighbours store the activations.
    ops.src = stored_format(shared_, node_.inputs[0], xs[0]);
    ops.dst = stored_format(shared_, node_.outputs[0], out[0].shape[0]);
    const int r = node_.epilogue.residual_input;
    if (r >= 0)
      ops.res = stored_format(shared_, node_.inputs[r], in[static_cast<size_t>(r)].shape[0]);
    return planner_.choose(ops, &plan_);
  }

  std::string impl_info() const override {
    std::string r = impl_info_of(plan_.prim);
    if (node_.epilogue.int8()) r = "int8 " + r;
    if (plan_.algo == dnnl::algorithm::convolution_winograd) r += " (winograd)";
    if (plan_.src_reorder) r += " + input reorder";
    if (!plan_.dst_direct) r += " + output reorder";
    return r;
  }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    const int r = node_.epilogue.residual_input, b = bias_index(node_);
    planner_.run(plan_, in[0]->as<float>(), out[0]->as<float>(),
                 r >= 0 ? in[r]->as<float>() : nullptr, b >= 0 ? in[b]->as<float>() : nullptr);
  }

 private:
  ConvAttrs attrs_;
  ConvPlanner planner_;  // refers to attrs_
  ConvPlan plan_;
};

}  // namespace

bool conv_uses_winograd(const Kernel& kernel) { return conv_plan_summary(kernel).winograd; }

ConvPlanSummary conv_plan_summary(const Kernel& kernel) {
  auto* k = dynamic_cast<const DnnlConvKernel*>(&kernel);
  if (!k || !k->prepared()) return {};
  const ConvPlan& p = k->plan();
  const bool res = k->has_residual();
  return ConvPlanSummary{p.algo == dnnl::algorithm::convolution_winograd,
                         p.src_reorder,
                         !p.dst_direct,
                         res && !p.res_binary && !p.res_same_layout,
                         res && p.res_binary,
                         p.remembered,
                         p.pd.impl_info_str()};
}

static bool conv_supported(const Node& node) {
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

static std::unique_ptr<Kernel> make_conv_kernel(const Node& node, const DnnlShared& shared) {
  auto attrs = parse_conv_attrs(node.attrs);
  return std::make_unique<DnnlConvKernel>(node, shared, attrs.is_ok() ? *attrs : ConvAttrs{});
}

KILN_REGISTER_DNNL_KERNEL(conv, conv_supported, make_conv_kernel, OpKind::Conv);

}  // namespace kiln::dnnl_cpu
