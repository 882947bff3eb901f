// oneDNN Softmax in fp32 along one axis (opset-13 semantics, as the reference kernel), on
// any rank.

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"
#include "ops/softmax.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

class DnnlSoftmaxKernel final : public DnnlSrcDstKernel {
 public:
  using DnnlSrcDstKernel::DnnlSrcDstKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    const Shape& xs = in[0].shape;
    if (xs.empty() || !all_positive(xs)) return false;
    auto axis = normalize_axis(softmax_attrs(node_).axis, static_cast<int64_t>(xs.size()));
    if (!axis.is_ok()) return false;
    src_md_ = dst_md_ = plain_desc(xs);
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, src_md_,
                                     static_cast<int>(*axis));
    prim_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, cpu_engine()));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }
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
