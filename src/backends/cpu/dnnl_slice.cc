// oneDNN Slice in fp32: the window (ops/slice.h, the reference's numpy rules) as one reorder
// from a strided view of the input (its first element, each axis's stride times its step) to
// the plain output. Negative steps (oneDNN's descs take no negative strides) and empty windows
// run on the reference kernel. A window of unit steps whose rows are contiguous runs of the
// input (ShuffleNetV2's channel halves: one run each) is copied run by run instead: oneDNN
// 2.6's reorder took several times a memcpy's time for them.

#include <cstring>

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"
#include "ops/slice.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

// Runs shorter than this (64 bytes) are copied by oneDNN's strided reorder.
constexpr int64_t kMinRunElems = 16;

class DnnlSliceKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>&) override {
    auto w = slice_window(in);
    if (!w.is_ok() || !all_positive(in[0].shape) || !all_positive(w->shape)) return false;
    if (w->shape.size() > DNNL_MAX_NDIMS) return false;
    const Shape& xs = in[0].shape;
    const std::vector<int64_t> in_strides = strides_of(xs);
    std::vector<int64_t> strides = in_strides;
    first_ = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      if (w->step[d] < 1) return false;
      first_ += w->start[d] * strides[d];
      strides[d] *= w->step[d];
    }
    // Runs: the axes after the last one the window cuts are whole, so each row of the window
    // along them is contiguous in the input.
    runs_ = true;
    int64_t cut = -1;
    for (size_t d = 0; d < xs.size(); ++d) {
      runs_ = runs_ && w->step[d] == 1;
      if (w->shape[d] != xs[d]) cut = static_cast<int64_t>(d);
    }
    if (runs_) {
      run_elems_ = 1;
      for (size_t d = static_cast<size_t>(std::max<int64_t>(cut, 0)); d < xs.size(); ++d)
        run_elems_ *= w->shape[d];
      // Short runs (a column of an image) are the reorder's: a memcpy per few bytes is not.
      runs_ = run_elems_ >= kMinRunElems;
    }
    if (runs_) {
      outer_shape_.assign(w->shape.begin(), w->shape.begin() + std::max<int64_t>(cut, 0));
      outer_strides_.assign(in_strides.begin(), in_strides.begin() + std::max<int64_t>(cut, 0));
      return true;
    }
    src_md_ = memory::desc(to_dims(w->shape), memory::data_type::f32, to_dims(strides));
    dst_md_ = plain_desc(w->shape);
    prim_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src_md_, cpu_engine(), dst_md_));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override {
    return runs_ ? "kiln contiguous runs" : impl_info_of(prim_);
  }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    if (runs_) {
      // The rows in output order: a counter over the outer axes of the window.
      const float* x = in[0]->as<float>() + first_;
      float* y = out[0]->as<float>();
      std::vector<int64_t> at(outer_shape_.size(), 0);
      const int64_t rows = shape_numel(outer_shape_);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t off = 0;
        for (size_t d = 0; d < at.size(); ++d) off += at[d] * outer_strides_[d];
        std::memcpy(y + r * run_elems_, x + off, static_cast<size_t>(run_elems_) * sizeof(float));
        for (size_t d = at.size(); d-- > 0;) {
          if (++at[d] < outer_shape_[d]) break;
          at[d] = 0;
        }
      }
      return;
    }
    execute_src_dst(prim_, stream_, src_md_, in[0]->as<float>() + first_, dst_md_, out[0]->data);
  }

 private:
  int64_t first_ = 0;  // elements from the input's start to the window's first
  bool runs_ = false;  // copied as contiguous runs by run() itself
  int64_t run_elems_ = 0;
  Shape outer_shape_;                   // the window's axes before the runs
  std::vector<int64_t> outer_strides_;  // their input strides
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
