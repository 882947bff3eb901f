// oneDNN Slice in fp32: the window (ops/slice.h, the reference's numpy rules) as one reorder
// from a strided view of the input (its first element, each axis's stride times its step) to
// the plain output. Negative steps (oneDNN's descs take no negative strides) and empty windows
// run on the reference kernel.

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"
#include "ops/slice.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

class DnnlSliceKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    auto w = slice_window(in);
    if (!w.is_ok() || !all_positive(in[0].shape) || !all_positive(w->shape)) return false;
    if (w->shape.size() > DNNL_MAX_NDIMS) return false;
    std::vector<int64_t> strides = strides_of(in[0].shape);
    first_ = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      if (w->step[d] < 1) return false;
      first_ += w->start[d] * strides[d];
      strides[d] *= w->step[d];
    }
    src_md_ = memory::desc(to_dims(w->shape), memory::data_type::f32, to_dims(strides));
    dst_md_ = plain_desc(w->shape);
    prim_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src_md_, cpu_engine(), dst_md_));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    execute_src_dst(prim_, stream_, src_md_, in[0]->data<float>() + first_, dst_md_, out[0]->raw());
  }

 private:
  int64_t first_ = 0;  // elements from the input's start to the window's first
  memory::desc src_md_, dst_md_;
  dnnl::reorder prim_;
  dnnl::stream stream_;
};

}  // namespace

static bool slice_supported(const Node& node) {
  return node.inputs.size() >= 3 && node.inputs.size() <= 5 && node.outputs.size() == 1 &&
         node.epilogue.empty() && is_f32(node.inputs[0]) && is_f32(node.outputs[0]);
}

static std::unique_ptr<Kernel> make_slice_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlSliceKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(slice, slice_supported, make_slice_kernel, OpKind::Slice);

}  // namespace kiln::dnnl_cpu
