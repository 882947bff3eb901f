// NonMaxSuppression (opsets 10 and 11): per batch and class, the boxes kept by greedy
// non-maximum suppression, as an int64 [selected, 3] tensor of (batch, class, box) rows,
// ordered by batch, then class, then selection.
//
// Inputs: boxes [B, N, 4] and scores [B, C, N] (float32); optional scalars (or one-element
// tensors) max_output_boxes_per_class (int64, default 0: nothing is selected),
// iou_threshold (float32, default 0) and score_threshold (float32, default: none).
// For each (b, c): the boxes whose score is above score_threshold (strictly), by score
// descending, equal scores by the lower box index first; each in turn is selected unless its
// IoU with an already selected box is above iou_threshold (strictly), until
// max_output_boxes_per_class are selected. The count follows the data
// (OpDef::shape_follows_data); it is at most B · C · min(N, max_output_boxes_per_class).

#include "ops/non_max_suppression.h"

#include <algorithm>
#include <numeric>

#include "ops/elementwise.h"

namespace kiln {

namespace {

// The optional scalar input i, or nullptr when omitted; an error for more than one element.
Result<const Tensor*> optional_scalar(const std::vector<const Tensor*>& in, size_t i,
                                      DataType dtype, const char* what) {
  if (in.size() <= i || !in[i]) return nullptr;
  if (in[i]->dtype() != dtype)
    return invalid_argument(std::string(what) + ": expected " + dtype_name(dtype) + ", got " +
                            dtype_name(in[i]->dtype()));
  if (in[i]->numel() != 1)
    return invalid_argument(std::string(what) + " must hold one value, got shape " +
                            shape_str(in[i]->shape()));
  return in[i];
}

}  // namespace

Result<NmsParams> nms_params(const std::vector<const Tensor*>& in) {
  NmsParams p;
  KILN_ASSIGN_OR_RETURN(const Tensor* m, optional_scalar(in, 2, DataType::kInt64,
                                                         "max_output_boxes_per_class (input 2)"));
  KILN_ASSIGN_OR_RETURN(const Tensor* iou,
                        optional_scalar(in, 3, DataType::kFloat32, "iou_threshold (input 3)"));
  KILN_ASSIGN_OR_RETURN(const Tensor* score,
                        optional_scalar(in, 4, DataType::kFloat32, "score_threshold (input 4)"));
  if (m) p.max_per_class = std::max<int64_t>(m->data<int64_t>()[0], 0);
  if (iou) p.iou_threshold = iou->data<float>()[0];
  if (score) {
    p.has_score_threshold = true;
    p.score_threshold = score->data<float>()[0];
  }
  if (p.iou_threshold < 0 || p.iou_threshold > 1)
    return invalid_argument("iou_threshold " + std::to_string(p.iou_threshold) +
                            " is outside 0 to 1");
  return p;
}

Status check_shapes(const Shape& boxes, const Shape& scores) {
  if (boxes.size() != 3 || boxes[2] != 4)
    return invalid_argument("boxes (input 0) must be [batch, boxes, 4], got " + shape_str(boxes));
  if (scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1])
    return invalid_argument("scores (input 1) must be [batch, classes, boxes] = [" +
                            std::to_string(boxes[0]) + ", C, " + std::to_string(boxes[1]) +
                            "], got " + shape_str(scores));
  return Status::ok();
}

namespace {

// The selected (batch, class, box) triples, in output order.
Result<std::vector<int64_t>> select(const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& boxes = *in[0];
  const Tensor& scores = *in[1];
  KILN_RETURN_IF_ERROR(check_shapes(boxes.shape(), scores.shape()));
  KILN_ASSIGN_OR_RETURN(NmsParams p, nms_params(in));
  const bool center = non_max_suppression_attrs(node).center_point_box != 0;
  const int64_t batches = boxes.shape()[0], n = boxes.shape()[1], classes = scores.shape()[1];
  std::vector<int64_t> picked;
  std::vector<int64_t> order;
  std::vector<NmsBox> kept;
  for (int64_t b = 0; b < batches; ++b) {
    const float* bx = boxes.data<float>() + b * n * 4;
    for (int64_t c = 0; c < classes; ++c) {
      const float* sc = scores.data<float>() + (b * classes + c) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!p.has_score_threshold || sc[i] > p.score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        const NmsBox box = nms_box(bx + i * 4, center);
        bool suppressed = false;
        for (const NmsBox& k : kept) suppressed = suppressed || nms_iou(k, box) > p.iou_threshold;
        if (suppressed) continue;
        kept.push_back(box);
        picked.insert(picked.end(), {b, c, i});
      }
    }
  }
  return picked;
}

std::vector<const Tensor*> values_of(const std::vector<TensorDesc>& in) {
  std::vector<const Tensor*> v(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) v[i] = in[i].present() ? in[i].value : nullptr;
  return v;
}

Status infer_non_max_suppression(const Node& node, const std::vector<TensorDesc>& in,
                                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 5));
  for (size_t i : {size_t{0}, size_t{1}})
    if (in[i].dtype != DataType::kFloat32)
      return invalid_argument("input " + std::to_string(i) + ": expected float32, got " +
                              dtype_name(in[i].dtype));
  KILN_RETURN_IF_ERROR(check_shapes(in[0].shape, in[1].shape));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].present() && !in[i].value)
      return unsupported("its output shape follows the values of input " + std::to_string(i) +
                         ", computed at run time");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> picked, select(node, values_of(in)));
  out[0] = {DataType::kInt64, {static_cast<int64_t>(picked.size() / 3), 3}};
  return Status::ok();
}

// At most B · C · min(N, max_output_boxes_per_class) rows: the maximum must be known (a
// constant, or read back where the graph computes it).
Status bound_non_max_suppression(const Node& node, const std::vector<TensorDesc>& in,
                                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 5));
  KILN_RETURN_IF_ERROR(check_shapes(in[0].shape, in[1].shape));
  int64_t max_per_class = 0;
  if (in.size() > 2 && in[2].present()) {
    if (!in[2].value)
      return unsupported(
          "its bound follows input 2 (max_output_boxes_per_class), computed at "
          "run time");
    std::vector<const Tensor*> values(3, nullptr);
    values[2] = in[2].value;
    KILN_ASSIGN_OR_RETURN(NmsParams p, nms_params(values));
    max_per_class = p.max_per_class;
  }
  const int64_t rows = in[0].shape[0] * in[1].shape[1] * std::min(in[0].shape[1], max_per_class);
  out[0] = {DataType::kInt64, {rows, 3}};
  return Status::ok();
}

Status run_non_max_suppression(const Node& node, const std::vector<const Tensor*>& in,
                               const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> picked, select(node, in));
  if (static_cast<int64_t>(picked.size()) != out[0]->numel())
    return internal_error("NonMaxSuppression: " + std::to_string(picked.size() / 3) +
                          " boxes selected, " + std::to_string(out[0]->shape()[0]) + " planned");
  std::copy(picked.begin(), picked.end(), out[0]->data<int64_t>());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_BOUNDED_OP(NonMaxSuppression, infer_non_max_suppression, run_non_max_suppression,
                         bound_non_max_suppression, 0);

}  // namespace kiln
