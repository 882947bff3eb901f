// oneDNN Softmax in fp32 along one axis (opset-13 semantics, as the reference kernel), on
// any rank.

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

class DnnlSoftmaxKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    const Shape& xs = in[0].shape;
    if (xs.empty() || !all_positive(xs)) return false;
    auto axis = normalize_axis(node_.attrs.get_int("axis", -1), static_cast<int64_t>(xs.size()));
    if (!axis.is_ok()) return false;
    md_ = plain_desc(xs);
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md_,
                                     static_cast<int>(*axis));
    prim_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, cpu_engine()));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    execute_src_dst(prim_, stream_, md_, in[0]->raw(), md_, out[0]->raw());
  }

 private:
  memory::desc md_;
  dnnl::softmax_forward prim_;
  dnnl::stream stream_;
};

}  // namespace

static bool softmax_supported(const Node& node) {
  return node.inputs.size() == 1 && node.outputs.size() == 1 && node.epilogue.empty() &&
         is_f32(node.inputs[0]) && is_f32(node.outputs[0]);
}

static std::unique_ptr<Kernel> make_softmax_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlSoftmaxKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(softmax, softmax_supported, make_softmax_kernel, OpKind::Softmax);

}  // namespace kiln::dnnl_cpu
