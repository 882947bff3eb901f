// Split along any axis, any dtype, piece sizes from the constant `split` input, opset 18's
// num_outputs, or equal pieces (ops/split.cc's rules). Each output is `outer` rows of its
// piece, read at a column offset of the input's rows: copy_rows.cuh once per output, the
// reverse of Concat. Rank-4 float activations split on channels (axis 1) stay in NHWC,
// where the rows are the N·H·W pixels; everything else is plain.

#include <algorithm>
#include <memory>

#include "backends/cuda/kernels/copy_rows.cuh"
#include "ops/op_util.h"
#include "ops/split.h"

namespace kiln {
namespace {

class SplitKernel final : public CudaKernel {
 public:
  SplitKernel(int64_t axis, bool nhwc, int64_t num_outputs_attr, std::vector<bool> present)
      : axis_(axis),
        nhwc_(nhwc),
        num_outputs_attr_(num_outputs_attr),
        present_(std::move(present)) {}

  Layout input_layout(int i, Layout) const override {
    return i == 0 && nhwc_ ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILN_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(axis_, rank));
    if (x.layout == Layout::kNHWC && (rank != 4 || axis != 1))
      return invalid_argument("NHWC input is split on channels (axis 1) only");
    const int64_t dim = x.shape[axis], n = static_cast<int64_t>(out.size());
    sizes_.clear();
    if (in.size() > 1 && in[1].present()) {
      KILN_ASSIGN_OR_RETURN(sizes_, known_int64s(cuda::desc_of(in[1]), "input 1 (split)"));
      int64_t sum = 0;
      for (int64_t s : sizes_) {
        if (s < 0) return invalid_argument("split has a negative size");
        sum += s;
      }
      if (static_cast<int64_t>(sizes_.size()) != n || sum != dim)
        return invalid_argument("split " + shape_str(sizes_) + " does not cut the axis of " +
                                std::to_string(dim) + " into " + std::to_string(n) + " pieces");
    } else if (n == 0) {
      return invalid_argument("Split needs at least one output");
    } else if (num_outputs_attr_ > 0) {
      if (num_outputs_attr_ != n) return invalid_argument("num_outputs differs from the outputs");
      const int64_t piece = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes_.push_back(std::max<int64_t>(0, std::min(piece, dim - i * piece)));
    } else {
      if (dim % n != 0)
        return invalid_argument("axis dimension " + std::to_string(dim) +
                                " cannot be split equally into " + std::to_string(n));
      sizes_.assign(n, dim / n);
    }
    layout_ = x.layout;
    rows_ = 1;
    unit_bytes_ = static_cast<int64_t>(dtype_size(x.dtype));
    if (layout_ == Layout::kNHWC) {
      rows_ = x.shape[0] * x.shape[2] * x.shape[3];
    } else {
      for (int64_t i = 0; i < axis; ++i) rows_ *= x.shape[i];
      for (int64_t i = axis + 1; i < rank; ++i) unit_bytes_ *= x.shape[i];
    }
    in_row_ = dim * unit_bytes_;
    for (int64_t i = 0; i < n; ++i) {
      if (i < static_cast<int64_t>(present_.size()) && !present_[i]) {
        out[i] = TensorDesc{};
        continue;
      }
      Shape s = x.shape;
      s[axis] = sizes_[i];
      out[i] = TensorDesc{x.dtype, s, nullptr, layout_};
    }
    return Status::ok();
  }

  std::string tactic() const override { return std::string("kiln split ") + layout_name(layout_); }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const auto* src = static_cast<const char*>(in[0]->data);
    int64_t offset = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t chunk = sizes_[i] * unit_bytes_;
      if (out[i])
        KILN_RETURN_IF_ERROR(
            cuda::copy_rows(src + offset, out[i]->data, rows_, chunk, in_row_, chunk, run.stream));
      offset += chunk;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool nhwc_;
  int64_t num_outputs_attr_;
  std::vector<bool> present_;
  std::vector<int64_t> sizes_;
  int64_t rows_ = 0, unit_bytes_ = 0, in_row_ = 0;
  Layout layout_ = Layout::kPlain;
};

Result<std::unique_ptr<CudaKernel>> make_split(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (dtype_size(x->dtype) == 0)
    return unsupported(std::string("Split of ") + dtype_name(x->dtype));
  if (node.input(1) && !node.input(1)->is_constant())
    return unsupported("input 1 (split) is not a constant");
  const int64_t axis = split_attrs(node).axis;
  const bool nhwc =
      dtype_is_float(x->dtype) && cuda::known_rank(node, 0) == 4 && (axis == 1 || axis == -3);
  std::vector<bool> present;
  for (const Value* v : node.outputs) present.push_back(v != nullptr);
  return std::unique_ptr<CudaKernel>(
      new SplitKernel(axis, nhwc, split_attrs(node).num_outputs, std::move(present)));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Split, make_split);

}  // namespace kiln
