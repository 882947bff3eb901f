// oneDNN element-wise activations and math ops in fp32: Relu, LeakyRelu, Sigmoid, Tanh,
// HardSigmoid, HardSwish, Clip, Softplus, Exp, Sqrt, on any shape and stored layout (a 1-D
// view of its elements).
//
// oneDNN 2.6 has no HardSigmoid: it runs as linear(alpha, beta) then clip(0, 1), the second
// in place on the output. Clip takes its bounds from its inputs' values when it is prepared
// (the importer turns the older attributes into inputs; bounds computed in the graph are part
// of what the kernel was prepared for, see DnnlKernel); min > max (every element becomes max
// in ONNX, oneDNN would give min below it) runs on the reference kernel. Like the
// fused Clip of a conv, oneDNN's clip maps NaN to the lower bound (ONNX passes it through).

#include <limits>

#include "backends/cpu/dnnl_common.h"
#include "ops/activation_attrs.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using alg = dnnl::algorithm;

struct Step {
  alg algorithm;
  float alpha = 0.f, beta = 0.f;
};

// The eltwise steps of `node` (empty: oneDNN cannot express it); `in` gives Clip's bounds.
std::vector<Step> steps_of(const Node& node, const std::vector<TensorDesc>& in) {
  switch (node.op) {
    case OpKind::Relu: return {{alg::eltwise_relu}};
    case OpKind::LeakyRelu: return {{alg::eltwise_relu, leaky_relu_attrs(node).alpha}};
    case OpKind::Sigmoid: return {{alg::eltwise_logistic}};
    case OpKind::Tanh: return {{alg::eltwise_tanh}};
    case OpKind::HardSigmoid:
      return {{alg::eltwise_linear, hard_sigmoid_attrs(node).alpha, hard_sigmoid_attrs(node).beta},
              {alg::eltwise_clip, 0.f, 1.f}};
    case OpKind::HardSwish: return {{alg::eltwise_hardswish}};
    case OpKind::Softplus: return {{alg::eltwise_soft_relu}};
    case OpKind::Exp: return {{alg::eltwise_exp}};
    case OpKind::Sqrt: return {{alg::eltwise_sqrt}};
    case OpKind::Clip: {
      float lo = -std::numeric_limits<float>::infinity();
      float hi = std::numeric_limits<float>::infinity();
      for (size_t i = 1; i < in.size() && i < 3; ++i) {
        if (!in[i].present()) continue;  // omitted bound
        if (!in[i].value || in[i].value->numel() != 1) return {};
        (i == 1 ? lo : hi) = in[i].value->data<float>()[0];
      }
      if (lo > hi) return {};
      return {{alg::eltwise_clip, lo, hi}};
    }
    default: return {};
  }
}

class DnnlEltwiseKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    if (!all_positive(in[0].shape)) return false;
    const std::vector<Step> steps = steps_of(node_, in);
    if (steps.empty()) return false;
    int64_t n = 1;
    for (int64_t d : in[0].shape) n *= d;
    md_ = memory::desc({n}, memory::data_type::f32, memory::format_tag::a);
    // Stored layouts hold exactly the logical elements (no block padding), so the 1-D view
    // serves any of them; where input and output are stored differently the input is first
    // reordered into the output, and the steps run in place there.
    const bool rank4 = in[0].shape.size() == 4;
    src_ext_ = rank4 ? stored_desc(shared_, node_.input(0), in[0].shape) : plain_desc(in[0].shape);
    dst_ext_ = rank4 ? stored_desc(shared_, node_.output(0), in[0].shape) : plain_desc(in[0].shape);
    relayout_ = src_ext_ != dst_ext_;
    if (relayout_)
      relayout_prim_ = dnnl::reorder(
          dnnl::reorder::primitive_desc(cpu_engine(), src_ext_, cpu_engine(), dst_ext_));
    prims_.clear();
    for (const Step& s : steps) {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, s.algorithm, md_,
                                       s.alpha, s.beta);
      prims_.emplace_back(dnnl::eltwise_forward::primitive_desc(desc, cpu_engine()));
    }
    stream_ = dnnl::stream(cpu_engine());
    (void)out;
    return true;
  }

  std::string impl_info() const override {
    std::string r = prims_.empty() ? "" : impl_info_of(prims_[0]);
    return relayout_ ? r + " after a relayout" : r;
  }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    if (relayout_) {
      memory src(src_ext_, cpu_engine(), const_cast<void*>(in[0]->data));
      memory dst(dst_ext_, cpu_engine(), out[0]->data);
      relayout_prim_.execute(stream_, src, dst);
    }
    // Later steps (HardSigmoid's clip, every step after a relayout) run in place on the output.
    for (size_t i = 0; i < prims_.size(); ++i)
      execute_src_dst(prims_[i], stream_, md_, i == 0 && !relayout_ ? in[0]->data : out[0]->data,
                      md_, out[0]->data);
  }

 private:
  memory::desc md_;                 // the 1-D view
  memory::desc src_ext_, dst_ext_;  // as stored
  bool relayout_ = false;
  dnnl::reorder relayout_prim_;
  std::vector<dnnl::eltwise_forward> prims_;
  dnnl::stream stream_;
};

}  // namespace

bool is_eltwise_op(OpKind op) {
  switch (op) {
    case OpKind::Relu:
    case OpKind::LeakyRelu:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
    case OpKind::Clip:
    case OpKind::Softplus:
    case OpKind::Exp:
    case OpKind::Sqrt: return true;
    default: return false;
  }
}

static bool eltwise_supported(const Node& node) {
  if (!is_eltwise_op(node.op)) return false;
  if (node.inputs.empty() || node.outputs.size() != 1 || !node.epilogue.empty()) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.outputs[0])) return false;
  if (node.op == OpKind::Clip) {
    if (node.inputs.size() > 3) return false;
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] && !is_f32(node.inputs[i])) return false;
  } else if (node.inputs.size() != 1) {
    return false;
  }
  return true;
}

static std::unique_ptr<Kernel> make_eltwise_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlEltwiseKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(eltwise, eltwise_supported, make_eltwise_kernel, OpKind::Relu,
                          OpKind::LeakyRelu, OpKind::Sigmoid, OpKind::Tanh, OpKind::HardSigmoid,
                          OpKind::HardSwish, OpKind::Clip, OpKind::Softplus, OpKind::Exp,
                          OpKind::Sqrt);

}  // namespace kiln::dnnl_cpu
