// oneDNN BatchNormalization, inference with constant statistics, fp32, ranks 2 to 5, with a
// fused Relu epilogue: y = act((x − mean)/sqrt(var + ε)·scale + B), run as one binary
// primitive, x·a[c] with the shift added and the Relu applied as post-ops. Rank-4 operands are
// read and written as stored (layout_operands), so the standalone norms that
// fuse_channel_affine makes of DenseNet's Mul + Add + Relu run as one pass in their group's
// layout. (oneDNN's own batch_normalization primitive took 3× a binary pass's time per
// pass in nhwc on a 2-core AVX-512 Xeon: 6.2 ms for DenseNet-121's 62 norms at batch 1.)

#include <cmath>

#include "backends/cpu/dnnl_common.h"
#include "ops/batch_normalization.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

class DnnlBatchNormKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    if (xs.size() < 2 || xs.size() > 5 || !all_positive(xs)) return false;
    const int64_t c = xs[1];
    // scale, B, mean, var: c float32 constants each.
    for (size_t i = 1; i < 5; ++i)
      if (!in[i].value || in[i].dtype != DataType::kFloat32 || in[i].value->numel() != c)
        return false;
    // [N, C, 1...] has the same bytes in every stored layout: described as [N, C] (oneDNN 2.6
    // broadcast the per-channel operands of a [2, 16, 1, 1] tensor wrongly).
    int64_t spatial = 1;
    for (size_t i = 2; i < xs.size(); ++i) spatial *= xs[i];
    const Shape shape = spatial == 1 ? Shape{xs[0], c} : xs;
    const bool stored = shape.size() == 4;
    x_md_ = stored ? stored_desc(shared_, node_.input(0), shape) : plain_desc(shape);
    y_md_ = stored ? stored_desc(shared_, node_.output(0), shape) : plain_desc(shape);
    // y = x·a[c] + shift[c]: a binary Mul by the per-channel factor with the shift added and
    // the Relu applied as post-ops, one pass in the stored layout.
    const float eps = batch_norm_attrs(node_).epsilon;
    const std::vector<float> scale = in[1].value->to_floats(), b = in[2].value->to_floats(),
                             mean = in[3].value->to_floats(), var = in[4].value->to_floats();
    memory::dims vec_dims(shape.size(), 1);
    vec_dims[1] = c;
    const memory::desc vec = plain_desc(std::vector<int64_t>(vec_dims.begin(), vec_dims.end()));
    factor_ = memory(vec, cpu_engine());
    shift_ = memory(vec, cpu_engine());
    auto* a = static_cast<float*>(factor_.get_data_handle());
    auto* sh = static_cast<float*>(shift_.get_data_handle());
    for (int64_t i = 0; i < c; ++i) {
      a[i] = scale[i] / std::sqrt(var[i] + eps);
      sh[i] = b[i] - mean[i] * a[i];
    }
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, vec);
    if (node_.epilogue.act == Activation::kRelu)
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    // Input and output stored alike: one pass. Stored differently (a plain input from a
    // reference kernel before an NHWC conv, as an 8-bit image input's normalization is),
    // oneDNN's binary has only its slow reference implementation (20 ms for a 2×3×224×224
    // tensor): the pass writes in the input's layout into a buffer made here, and a reorder
    // stores it in the output's.
    const bool same = x_md_ == y_md_;
    dnnl::binary::desc d(dnnl::algorithm::binary_mul, x_md_, vec, same ? y_md_ : x_md_);
    prim_ = dnnl::binary(dnnl::binary::primitive_desc(d, attr, cpu_engine()));
    if (same) {
      mid_ = memory();
      reorder_ = dnnl::reorder();
    } else {
      mid_ = memory(x_md_, cpu_engine());
      reorder_ =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), x_md_, cpu_engine(), y_md_));
    }
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override {
    return impl_info_of(prim_) + (reorder_ ? " + output reorder" : "");
  }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    memory x(x_md_, cpu_engine(), const_cast<void*>(in[0]->data));
    memory y(y_md_, cpu_engine(), out[0]->data);
    prim_.execute(stream_, {{DNNL_ARG_SRC_0, x},
                            {DNNL_ARG_SRC_1, factor_},
                            {DNNL_ARG_DST, reorder_ ? mid_ : y},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, shift_}});
    if (reorder_) reorder_.execute(stream_, {{DNNL_ARG_FROM, mid_}, {DNNL_ARG_TO, y}});
    stream_.wait();
  }

 private:
  memory::desc x_md_, y_md_;
  memory factor_, shift_;  // per channel, broadcast over the other axes
  dnnl::binary prim_;
  memory mid_;             // the result in the input's layout, where the output's differs
  dnnl::reorder reorder_;  // mid_ → the output's layout, or empty
  dnnl::stream stream_;
};

}  // namespace

static bool batch_norm_supported(const Node& node) {
  if (node.inputs.size() != 5 || node.outputs.size() != 1 || !is_f32(node.inputs[0]) ||
      !is_f32(node.outputs[0]))
    return false;
  for (size_t i = 1; i < 5; ++i)
    if (!node.input(i) || !node.input(i)->is_constant()) return false;
  if (batch_norm_attrs(node).training_mode) return false;
  const Epilogue& e = node.epilogue;
  return e.residual_input < 0 && e.affine_input < 0 &&
         (e.act == Activation::kNone || e.act == Activation::kRelu);
}

static std::unique_ptr<Kernel> make_batch_norm_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlBatchNormKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(batch_norm, batch_norm_supported, make_batch_norm_kernel,
                          OpKind::BatchNormalization);

}  // namespace kiln::dnnl_cpu
