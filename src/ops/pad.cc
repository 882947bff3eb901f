// Pad (ONNX opset 13 form, plus the opset-18 axes input): inputs (data, pads,
// constant_value?, axes?), mode constant / reflect / edge, any element type.
//
// pads = [begin_0, ..., begin_{n-1}, end_0, ..., end_{n-1}] over the padded axes; a
// negative pad removes elements. Output coordinate o of an axis reads input coordinate
// i = o - begin; outside [0, len) it is the constant, the nearest edge element (edge) or
// the mirror image without repeating the edge (reflect: -1 → 1, len → len-2). This is
// "pad, then crop": reflection is always relative to the whole input axis.

#include "ops/pad.h"

#include <string>

#include "ops/op_util.h"

namespace kiln {

Result<PadMode> parse_pad_mode(const Attributes& attrs) {
  const std::string mode = attrs.get_string("mode", "constant");
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return unsupported("mode 'wrap' (opset 19)");
  return invalid_argument("unknown mode '" + mode + "' (expected constant, reflect, edge)");
}

Result<PadAmounts> read_pads(const std::vector<TensorDesc>& in, PadMode mode) {
  const Shape& shape = in[0].shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, known_int64s(in[1], "pads"));
  std::vector<int64_t> axes;
  if (in.size() > 3 && in[3].present()) {
    KILN_ASSIGN_OR_RETURN(axes, known_int64s(in[3], "axes"));
    for (int64_t& a : axes) {
      KILN_ASSIGN_OR_RETURN(a, normalize_axis(a, rank, "axes entry"));
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  const size_t n = axes.size();
  if (pads.size() != 2 * n)
    return invalid_argument("pads has " + std::to_string(pads.size()) + " elements, expected " +
                            std::to_string(2 * n) + " (2 × " +
                            (in.size() > 3 && in[3].present() ? "number of axes" : "rank") + ")");
  PadAmounts p{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < n; ++k) {
    const int64_t a = axes[k];
    if (seen[a]) return invalid_argument("axis " + std::to_string(a) + " repeated in axes");
    seen[a] = true;
    p.begin[a] = pads[k];
    p.end[a] = pads[n + k];
  }
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t len = shape[a], b = p.begin[a], e = p.end[a];
    if (len + b + e < 0)
      return invalid_argument("pads " + std::to_string(b) + "," + std::to_string(e) +
                              " remove more than the " + std::to_string(len) +
                              " elements of axis " + std::to_string(a));
    const int64_t widest = std::max(b, e);
    if (widest <= 0 || mode == PadMode::kConstant) continue;
    if (len == 0)
      return invalid_argument(std::string(mode == PadMode::kEdge ? "edge" : "reflect") +
                              " padding of empty axis " + std::to_string(a));
    // numpy reflects any width periodically; like ONNX Runtime we refuse widths that would
    // reflect more than once (beyond the axis itself), which no real model asks for. The
    // ONNX documentation's example pads a length-2 axis by 2, so width == length is allowed.
    if (mode == PadMode::kReflect && widest > len)
      return invalid_argument("reflect pad " + std::to_string(widest) + " on axis " +
                              std::to_string(a) + " of length " + std::to_string(len) +
                              " is larger than the axis");
  }
  return p;
}

namespace {

Status infer_pad(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 4));
  KILN_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(node.attrs));
  if (in[0].dtype == DataType::kString) return unsupported("Pad of string tensors");
  if (in.size() > 2 && in[2].present()) {
    if (in[2].dtype != in[0].dtype)
      return invalid_argument(std::string("input 2 (constant_value): expected ") +
                              dtype_name(in[0].dtype) + ", got " + dtype_name(in[2].dtype));
    if (shape_numel(in[2].shape) > 1)
      return invalid_argument("constant_value must be a scalar, got shape " +
                              shape_str(in[2].shape));
  }
  KILN_ASSIGN_OR_RETURN(PadAmounts p, read_pads(in, mode));
  Shape shape = in[0].shape;
  for (size_t a = 0; a < shape.size(); ++a) shape[a] += p.begin[a] + p.end[a];
  out[0] = {in[0].dtype, shape};
  return Status::ok();
}

// Input coordinate read by output coordinate o, or -1 for the constant.
int64_t source_index(PadMode mode, int64_t o, int64_t begin, int64_t len) {
  int64_t i = o - begin;
  if (i >= 0 && i < len) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : len - 1;
    case PadMode::kReflect: {
      // Mirror without repeating the edge; the pattern repeats every 2·(len-1) elements.
      if (len == 1) return 0;
      const int64_t period = 2 * (len - 1);
      i = ((i % period) + period) % period;
      return i < len ? i : period - i;
    }
  }
  return -1;
}

Status run_pad(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(node.attrs));
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  KILN_ASSIGN_OR_RETURN(PadAmounts p, read_pads(descs, mode));
  const Tensor& x = *in[0];
  const Shape& out_shape = out[0]->shape();
  const size_t rank = out_shape.size();
  const std::vector<int64_t> strides = strides_of(x.shape());

  // Per axis: input offset (index × stride) of each output coordinate, -1 for constant.
  std::vector<std::vector<int64_t>> src(rank);
  for (size_t a = 0; a < rank; ++a) {
    for (int64_t o = 0; o < out_shape[a]; ++o) {
      int64_t i = source_index(mode, o, p.begin[a], x.dim(static_cast<int64_t>(a)));
      src[a].push_back(i < 0 ? -1 : i * strides[a]);
    }
  }
  const Tensor* value = in.size() > 2 ? in[2] : nullptr;
  if (value && value->numel() == 0) value = nullptr;  // empty = not given

  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T fill = value ? value->data<T>()[0] : T(0);
    const T* xd = x.data<T>();
    T* y = out[0]->data<T>();
    const int64_t n = out[0]->numel();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      bool constant = false;
      for (size_t a = 0; a < rank && !constant; ++a) {
        const int64_t s = src[a][idx[a]];
        constant = s < 0;
        off += s;
      }
      y[k] = constant ? fill : xd[off];
      for (int64_t a = static_cast<int64_t>(rank) - 1; a >= 0; --a) {
        if (++idx[a] < out_shape[a]) break;
        idx[a] = 0;
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(Pad, infer_pad, run_pad);

}  // namespace kiln
