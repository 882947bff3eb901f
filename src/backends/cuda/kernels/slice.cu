// Slice (opset 13 form: starts, ends, axes?, steps? as constant inputs), any element type,
// either layout (a rank-4 NHWC activation is sliced on its logical axes). The window is
// resolved at prepare with the reference's numpy rules (ops/slice.cc): negative starts/ends
// count from the end, then clamp to [0, d] for positive steps and [0, d-1] / [-1, d-1] for
// negative ones. The copy is axis_map.cuh's: input coordinate start + o·step per axis.

#include <algorithm>
#include <memory>

#include "backends/cuda/kernels/axis_map.cuh"
#include "ops/op_util.h"

namespace kiln {
namespace {

// Per-axis first index, step and count, as ops/slice.cc's slice_window.
Status slice_window(const std::vector<TensorDesc>& in, std::vector<int64_t>& start,
                    std::vector<int64_t>& step, Shape& shape) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  KILN_ASSIGN_OR_RETURN(auto starts, known_int64s(cuda::desc_of(in[1]), "input 1 (starts)"));
  KILN_ASSIGN_OR_RETURN(auto ends, known_int64s(cuda::desc_of(in[2]), "input 2 (ends)"));
  if (starts.size() != ends.size())
    return invalid_argument("starts and ends have different lengths");
  const size_t k = starts.size();
  std::vector<int64_t> axes, steps(k, 1);
  if (in.size() > 3 && in[3].present()) {
    KILN_ASSIGN_OR_RETURN(axes, known_int64s(cuda::desc_of(in[3]), "input 3 (axes)"));
  } else {
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (in.size() > 4 && in[4].present()) {
    KILN_ASSIGN_OR_RETURN(steps, known_int64s(cuda::desc_of(in[4]), "input 4 (steps)"));
  }
  if (axes.size() != k || steps.size() != k)
    return invalid_argument("starts, ends, axes and steps must have the same length");
  start.assign(rank, 0);
  step.assign(rank, 1);
  shape = s;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t a, normalize_axis(axes[i], rank, "axes entry"));
    if (seen[a]) return invalid_argument("axis " + std::to_string(axes[i]) + " repeated in axes");
    seen[a] = true;
    const int64_t d = s[a], st = steps[i];
    if (st == 0) return invalid_argument("step 0 on axis " + std::to_string(a));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t n;
    if (d == 0) {
      b = 0;
      n = 0;
    } else if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      n = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      n = b > e ? (b - e - 1) / (st < -d ? d + 1 : -st) + 1 : 0;
    }
    start[a] = b;
    step[a] = n > 1 ? st : 1;
    shape[a] = n;
  }
  return Status::ok();
}

class SliceKernel final : public CudaKernel {
 public:
  Layout input_layout(int i, Layout offered) const override {
    return i == 0 ? offered : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    if (in.size() < 3) return invalid_argument("Slice needs starts and ends");
    const TensorDesc& x = in[0];
    std::vector<int64_t> start, step;
    Shape shape;
    KILN_RETURN_IF_ERROR(slice_window(in, start, step, shape));
    KILN_RETURN_IF_ERROR(cuda::make_axis_map(x.shape, shape, x.layout, start, step, map_));
    elem_ = dtype_size(x.dtype);
    numel_ = shape_numel(shape);
    out[0] = TensorDesc{x.dtype, shape, nullptr, x.layout};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln slice"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    return cuda::launch_axis_map(elem_, in[0]->data, out[0]->data, numel_, map_,
                                 cuda::OutsideRule::kNone, 0, run.stream);
  }

 private:
  cuda::AxisMap map_;
  size_t elem_ = 0;
  int64_t numel_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_slice(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  const size_t es = dtype_size(x->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    return unsupported(std::string("Slice of ") + dtype_name(x->dtype));
  if (cuda::known_rank(node, 0) > cuda::kMaxMapAxes) return unsupported("Slice of rank > 6");
  KILN_RETURN_IF_ERROR(cuda::inputs_constant_from(node, 1));
  return std::unique_ptr<CudaKernel>(new SliceKernel());
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Slice, make_slice);

}  // namespace kiln
