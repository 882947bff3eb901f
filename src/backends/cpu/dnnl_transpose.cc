// oneDNN Transpose in fp32, any permutation of up to DNNL_MAX_NDIMS axes: one reorder from the
// input viewed in the output's axis order (output axis i walks input axis perm[i], with that
// axis's stride) to the plain output. ShuffleNet's channel shuffle is such a transpose.

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"
#include "ops/transpose.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

class DnnlTransposeKernel final : public DnnlSrcDstKernel {
 public:
  using DnnlSrcDstKernel::DnnlSrcDstKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    const Shape& xs = in[0].shape;
    const size_t rank = xs.size();
    if (rank == 0 || rank > DNNL_MAX_NDIMS || !all_positive(xs)) return false;
    auto checked = transpose_perm(node_, static_cast<int64_t>(rank));  // the reference's rule
    if (!checked.is_ok()) return false;
    const std::vector<int64_t>& perm = *checked;
    const std::vector<int64_t> strides = strides_of(xs);
    std::vector<int64_t> dims(rank), src_strides(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t p = perm[i];
      dims[i] = xs[p];
      src_strides[i] = strides[p];
    }
    src_md_ = memory::desc(to_dims(dims), memory::data_type::f32, to_dims(src_strides));
    dst_md_ = plain_desc(dims);
    prim_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src_md_, cpu_engine(), dst_md_));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }
};

}  // namespace

static bool transpose_supported(const Node& node) {
  return node.inputs.size() == 1 && node.outputs.size() == 1 && node.epilogue.empty() &&
         is_f32(node.inputs[0]) && is_f32(node.outputs[0]);
}

static std::unique_ptr<Kernel> make_transpose_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlTransposeKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(transpose, transpose_supported, make_transpose_kernel, OpKind::Transpose);

}  // namespace kiln::dnnl_cpu
