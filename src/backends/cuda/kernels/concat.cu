// Concat along any axis, any dtype: with outer = the product of the dims before the axis,
// each input is `outer` rows of `chunk` bytes written at a column offset of rows of the
// output's row bytes, i.e. one strided 2-D copy per input. Rank-4 float inputs joined on
// channels (axis 1) stay in NHWC: there the rows are the N·H·W pixels and the chunks each
// input's channels, which is the same copy (copy_rows.cuh). Every other case works on
// plain data.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/copy_rows.cuh"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/op_util.h"

namespace kiln {
namespace {

class ConcatKernel final : public CudaKernel {
 public:
  ConcatKernel(int64_t axis, bool channels_nhwc) : axis_(axis), nhwc_(channels_nhwc) {}

  Layout input_layout(int, Layout) const override { return nhwc_ ? Layout::kNHWC : Layout::kPlain; }

  Status prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                 CudaBuildContext&) override {
    if (in.empty() || !in[0].present()) return invalid_argument("Concat needs inputs");
    const DevDesc& first = in[0];
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    KILN_ASSIGN_OR_RETURN(axis_norm_, normalize_axis(axis_, rank));
    Shape shape = first.shape;
    shape[axis_norm_] = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const DevDesc& d = in[k];
      const std::string which = "input " + std::to_string(k);
      if (!d.present()) return invalid_argument(which + " is missing");
      if (d.dtype != first.dtype)
        return invalid_argument(which + ": expected " + dtype_name(first.dtype) + ", got " +
                                dtype_name(d.dtype));
      if (d.layout != first.layout)
        return invalid_argument(which + ": layout " + layout_name(d.layout) + ", input 0 is " +
                                layout_name(first.layout));
      bool ok = static_cast<int64_t>(d.shape.size()) == rank;
      for (int64_t i = 0; ok && i < rank; ++i) ok = i == axis_norm_ || d.shape[i] == first.shape[i];
      if (!ok)
        return invalid_argument(which + " shape " + shape_str(d.shape) + " does not match " +
                                shape_str(first.shape) + " outside axis " +
                                std::to_string(axis_norm_));
      shape[axis_norm_] += d.shape[axis_norm_];
    }
    if (first.layout == Layout::kNHWC && (rank != 4 || axis_norm_ != 1))
      return invalid_argument("NHWC inputs are concatenated on channels (axis 1) only");
    layout_ = first.layout;
    elem_ = static_cast<int64_t>(dtype_size(first.dtype));
    // Rows and the bytes each unit of the axis spans in one row.
    rows_ = 1;
    unit_bytes_ = elem_;
    if (layout_ == Layout::kNHWC) {
      rows_ = shape[0] * shape[2] * shape[3];
    } else {
      for (int64_t i = 0; i < axis_norm_; ++i) rows_ *= shape[i];
      for (int64_t i = axis_norm_ + 1; i < rank; ++i) unit_bytes_ *= shape[i];
    }
    sizes_.clear();
    for (const DevDesc& d : in) sizes_.push_back(d.shape[axis_norm_]);
    out_axis_ = shape[axis_norm_];
    out[0] = DevDesc{first.dtype, shape, layout_, nullptr};
    return Status::ok();
  }

  std::string tactic() const override { return std::string("kiln concat ") + layout_name(layout_); }

  Status enqueue(const std::vector<const DevTensor*>& in, const std::vector<DevTensor*>& out,
                 const CudaRunContext& run) override {
    auto* dst = static_cast<char*>(out[0]->data);
    const int64_t dst_row = out_axis_ * unit_bytes_;
    int64_t offset = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t chunk = sizes_[k] * unit_bytes_;
      if (chunk > 0 && rows_ > 0)
        KILN_RETURN_IF_ERROR(
            cuda::copy_rows(in[k]->data, dst + offset, rows_, chunk, chunk, dst_row, run.stream));
      offset += chunk;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool nhwc_;
  int64_t axis_norm_ = 0, rows_ = 0, unit_bytes_ = 0, elem_ = 0, out_axis_ = 0;
  std::vector<int64_t> sizes_;
  Layout layout_ = Layout::kPlain;
};

Result<std::unique_ptr<CudaKernel>> make_concat(const Node& node, Precision) {
  if (node.inputs.empty()) return invalid_argument("Concat needs at least one input");
  if (!node.attrs.has("axis")) return invalid_argument("missing attribute axis");
  const int64_t axis = node.attrs.get_int("axis", 0);
  // NHWC when every input is a rank-4 float activation joined on channels; a constant input
  // arrives plain, so then everything stays plain.
  bool nhwc = true;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Value* v = node.input(k);
    if (!v) return invalid_argument("input " + std::to_string(k) + " is omitted");
    nhwc = nhwc && !v->is_constant() && dtype_is_float(v->dtype) && cuda::known_rank(node, k) == 4;
  }
  nhwc = nhwc && (axis == 1 || axis == -3);
  return std::unique_ptr<CudaKernel>(new ConcatKernel(axis, nhwc));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Concat, make_concat);

}  // namespace kiln
