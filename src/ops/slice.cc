// Slice: a strided window per axis, from the starts/ends/axes/steps inputs (opset 13 form).
//
// Per axis of size d (numpy semantics): negative starts/ends count from the end (+d), then
// are clamped to [0, d] for positive steps and to [0, d-1] / [-1, d-1] for negative ones;
// so INT64_MAX / INT64_MIN ends mean "to the end" / "to the beginning".

#include "ops/slice.h"

#include <algorithm>
#include <cstring>

#include "ops/op_util.h"

namespace kiln {

Result<SliceWindow> slice_window(const std::vector<TensorDesc>& in) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  KILN_ASSIGN_OR_RETURN(auto starts, known_int64s(in[1], "input 1 (starts)"));
  KILN_ASSIGN_OR_RETURN(auto ends, known_int64s(in[2], "input 2 (ends)"));
  if (starts.size() != ends.size())
    return invalid_argument("starts has " + std::to_string(starts.size()) + " entries, ends " +
                            std::to_string(ends.size()));
  const size_t k = starts.size();
  std::vector<int64_t> axes, steps(k, 1);
  if (in.size() > 3 && in[3].present()) {
    KILN_ASSIGN_OR_RETURN(axes, known_int64s(in[3], "input 3 (axes)"));
  } else {
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (in.size() > 4 && in[4].present()) {
    KILN_ASSIGN_OR_RETURN(steps, known_int64s(in[4], "input 4 (steps)"));
  }
  if (axes.size() != k || steps.size() != k)
    return invalid_argument("starts, ends, axes and steps must have the same length (" +
                            std::to_string(k) + ", " + std::to_string(ends.size()) + ", " +
                            std::to_string(axes.size()) + ", " + std::to_string(steps.size()) +
                            ")");
  SliceWindow w{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), s};
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t a, normalize_axis(axes[i], rank, "axes entry"));
    if (seen[a]) return invalid_argument("axis " + std::to_string(axes[i]) + " repeated in axes");
    seen[a] = true;
    const int64_t d = s[a], step = steps[i];
    if (step == 0) return invalid_argument("step 0 on axis " + std::to_string(a));
    int64_t b = starts[i], e = ends[i];
    // Adding d to a negative value cannot overflow; the clamps then bound everything by d.
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t n;
    if (d == 0) {  // nothing to take; also keeps the clamp bounds below ordered
      b = 0;
      n = 0;
    } else if (step > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      n = e > b ? (e - b - 1) / step + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      // -step overflows for INT64_MIN; any step beyond d takes one element anyway.
      n = b > e ? (b - e - 1) / (step < -d ? d + 1 : -step) + 1 : 0;
    }
    w.start[a] = b;
    // With at most one element the step is never applied; 1 keeps stride math small.
    w.step[a] = n > 1 ? step : 1;
    w.shape[a] = n;
  }
  return w;
}

namespace {

Status infer_slice(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 3, 5));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Slice on ") + dtype_name(in[0].dtype));
  KILN_ASSIGN_OR_RETURN(SliceWindow w, slice_window(in));
  out[0] = {in[0].dtype, std::move(w.shape)};
  return Status::ok();
}

Status run_slice(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  KILN_ASSIGN_OR_RETURN(SliceWindow w, slice_window(descs));
  const Tensor& x = *in[0];
  std::vector<int64_t> strides = strides_of(x.shape());
  int64_t base = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    base += w.start[d] * strides[d];
    strides[d] *= w.step[d];
  }
  const size_t es = dtype_size(x.dtype());
  const auto* from = static_cast<const std::byte*>(x.raw()) + base * es;
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for_each_broadcast(w.shape, {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(to + i * es, from + off[0] * es, es);
  });
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Slice, infer_slice, run_slice);

}  // namespace kiln
