// oneDNN LayerNormalization, fp32: the input as [M, D] rows (D the product of the normalized
// axes, from `axis` on), statistics in float (stash_type 1), the scale and bias constants
// broadcast to [D] once at prepare. The Mean and InvStdDev outputs and other stash types stay
// on the reference.

#include "backends/cpu/dnnl_common.h"
#include "ops/layer_normalization.h"
#include "ops/op_util.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// `t` broadcast (numpy rules) to `shape`, flattened.
std::vector<float> broadcast_to(const Tensor& t, const Shape& shape) {
  const std::vector<float> v = t.to_floats();
  std::vector<float> out(static_cast<size_t>(shape_numel(shape)));
  for_each_broadcast(shape, {broadcast_strides(t.shape(), shape)},
                     [&](int64_t i, const std::vector<int64_t>& off) { out[i] = v[off[0]]; });
  return out;
}

class DnnlLayerNormKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t axis = layer_norm_attrs(node_).axis;
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank) return false;
    const Shape norm(xs.begin() + axis, xs.end());
    const int64_t d = shape_numel(norm), m = shape_numel(xs) / (d > 0 ? d : 1);
    if (d <= 0 || m <= 0) return false;
    const Value* b = node_.inputs.size() > 2 ? node_.inputs[2] : nullptr;
    // A scale or bias of higher rank than the normalized axes is left to the reference's checks.
    if (node_.inputs[1]->constant.rank() > static_cast<int64_t>(norm.size()) ||
        (b && b->constant.rank() > static_cast<int64_t>(norm.size())))
      return false;
    scale_ = broadcast_to(node_.inputs[1]->constant, norm);
    shift_ = b ? broadcast_to(b->constant, norm) : std::vector<float>(scale_.size(), 0.f);
    md_ = memory::desc({m, d}, dt::f32, tag::ab);
    dnnl::layer_normalization_forward::desc desc(
        dnnl::prop_kind::forward_inference, md_, layer_norm_attrs(node_).epsilon,
        dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
    pd_ = dnnl::layer_normalization_forward::primitive_desc(desc, cpu_engine());
    prim_ = dnnl::layer_normalization_forward(pd_);
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    memory src(md_, cpu_engine(), const_cast<float*>(in[0]->as<float>()));
    memory dst(md_, cpu_engine(), out[0]->as<float>());
    memory scale(pd_.weights_desc(), cpu_engine(), scale_.data());
    memory shift(pd_.weights_desc(), cpu_engine(), shift_.data());
    prim_.execute(stream_, {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_DST, dst},
                            {DNNL_ARG_SCALE, scale},
                            {DNNL_ARG_SHIFT, shift}});
    stream_.wait();
  }

 private:
  std::vector<float> scale_, shift_;
  memory::desc md_;
  dnnl::layer_normalization_forward::primitive_desc pd_;
  dnnl::layer_normalization_forward prim_;
  dnnl::stream stream_;
};

}  // namespace

static bool layer_norm_supported(const Node& node) {
  if (node.op != OpKind::LayerNormalization || node.inputs.size() < 2 || node.outputs.size() != 1 ||
      !node.epilogue.empty())
    return false;
  if (layer_norm_attrs(node).stash_type != 1) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.outputs[0])) return false;
  for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) {
    const Value* v = node.inputs[i];
    if (v && (!v->is_constant() || v->constant.dtype() != DataType::kFloat32)) return false;
  }
  return node.inputs[1] != nullptr;
}

static std::unique_ptr<Kernel> make_layer_norm_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlLayerNormKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(layer_norm, layer_norm_supported, make_layer_norm_kernel,
                          OpKind::LayerNormalization);

}  // namespace kiln::dnnl_cpu
