// oneDNN ReduceMean, ReduceSum and ReduceL2 in fp32 (the reduction primitive: mean, sum, and
// the L2 norm as norm_lp_sum with p = 2), the axes and keepdims resolved as the reference does
// (ops/reduce.h). The reduced axes are kept as 1 in the primitive's output: without keepdims
// the output's bytes are the same. ReduceMax stays on the reference kernel, which propagates
// NaN as ONNX asks; an empty axis, or no axis of more than one element reduced, too.
//
// The mean over the two spatial axes of an NCHW tensor (torchvision's x.mean([2, 3]) in
// ShuffleNetV2 and RegNet heads) is a global average pool: oneDNN's pooling runs it about 8×
// faster than its reduction (1×1024×7×7: 0.024 ms against 0.20 ms on 2 AVX-512 cores).

#include "backends/cpu/dnnl_common.h"
#include "ops/reduce.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::algorithm;
using dnnl::memory;

class DnnlReduceKernel final : public DnnlSrcDstKernel {
 public:
  using DnnlSrcDstKernel::DnnlSrcDstKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    const Shape& xs = in[0].shape;
    if (xs.empty() || xs.size() > DNNL_MAX_NDIMS || !all_positive(xs)) return false;
    auto spec = node_.op == OpKind::ReduceSum ? reduce_spec_from_input(node_, in)
                                              : reduce_spec_from_attr(node_, xs);
    if (!spec.is_ok()) return false;
    Shape kept = xs;
    bool any = false;
    for (size_t d = 0; d < xs.size(); ++d)
      if (spec->reduced[d]) {
        kept[d] = 1;
        any = any || xs[d] > 1;
      }
    // Reducing only axes of size 1 is not a reduction to oneDNN (its desc then refuses src ==
    // dst): the reference kernel copies (or, for L2, takes |x|).
    if (!any) return false;
    algorithm alg = algorithm::reduction_mean;
    float p = 0.f;
    if (node_.op == OpKind::ReduceSum) alg = algorithm::reduction_sum;
    if (node_.op == OpKind::ReduceL2) {
      alg = algorithm::reduction_norm_lp_sum;
      p = 2.f;
    }
    src_md_ = plain_desc(xs);
    dst_md_ = plain_desc(kept);
    stream_ = dnnl::stream(cpu_engine());
    const bool spatial = xs.size() == 4 && !spec->reduced[0] && !spec->reduced[1] &&
                         spec->reduced[2] && spec->reduced[3];
    if (node_.op == OpKind::ReduceMean && spatial) {
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference,
                                          algorithm::pooling_avg_exclude_padding, src_md_, dst_md_,
                                          {1, 1}, {xs[2], xs[3]}, {0, 0}, {0, 0}, {0, 0});
      prim_ =
          dnnl::pooling_v2_forward(dnnl::pooling_v2_forward::primitive_desc(desc, cpu_engine()));
      return true;
    }
    dnnl::reduction::desc desc(alg, src_md_, dst_md_, p, 0.f);
    prim_ = dnnl::reduction(dnnl::reduction::primitive_desc(desc, cpu_engine()));
    return true;
  }
};

}  // namespace

bool is_reduce_op(OpKind op) {
  return op == OpKind::ReduceMean || op == OpKind::ReduceSum || op == OpKind::ReduceL2;
}

static bool reduce_supported(const Node& node) {
  return is_reduce_op(node.op) && !node.inputs.empty() && node.inputs.size() <= 2 &&
         node.outputs.size() == 1 && node.epilogue.empty() && is_f32(node.inputs[0]) &&
         is_f32(node.outputs[0]);
}

static std::unique_ptr<Kernel> make_reduce_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlReduceKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(reduce, reduce_supported, make_reduce_kernel, OpKind::ReduceMean,
                          OpKind::ReduceSum, OpKind::ReduceL2);

}  // namespace kiln::dnnl_cpu
