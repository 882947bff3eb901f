// EfficientNMS_TRT's reference kernel: the semantics are in efficient_nms.h.

#include "ops/efficient_nms.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/elementwise.h"
#include "ops/non_max_suppression.h"

namespace kiln {

EfficientNmsAttrs efficient_nms_attrs(const Attributes& attrs) {
  EfficientNmsAttrs a;
  a.score_threshold = attrs.get_float("score_threshold", a.score_threshold);
  a.iou_threshold = attrs.get_float("iou_threshold", a.iou_threshold);
  a.max_output_boxes = attrs.get_int("max_output_boxes", a.max_output_boxes);
  a.background_class = attrs.get_int("background_class", a.background_class);
  a.score_activation = attrs.get_int("score_activation", 0) != 0;
  a.class_agnostic = attrs.get_int("class_agnostic", 0) != 0;
  a.box_coding = attrs.get_int("box_coding", a.box_coding);
  return a;
}

Status check_efficient_nms_attrs(const EfficientNmsAttrs& a) {
  if (!(a.iou_threshold >= 0 && a.iou_threshold <= 1))
    return invalid_argument("iou_threshold " + std::to_string(a.iou_threshold) +
                            " is outside 0 to 1");
  if (std::isnan(a.score_threshold)) return invalid_argument("score_threshold is NaN");
  if (a.max_output_boxes <= 0)
    return invalid_argument("max_output_boxes is " + std::to_string(a.max_output_boxes) +
                            "; it must be positive");
  if (a.box_coding != 0 && a.box_coding != 1)
    return invalid_argument("box_coding " + std::to_string(a.box_coding) +
                            " is neither 0 (corners) nor 1 (centre and size)");
  return Status::ok();
}

Result<EfficientNmsShape> efficient_nms_shape(const Shape& boxes, const Shape& scores) {
  if (scores.size() != 3)
    return invalid_argument("scores (input 1) must be [batch, boxes, classes], got " +
                            shape_str(scores));
  EfficientNmsShape s{scores[0], scores[1], scores[2], boxes.size() == 4};
  const Shape shared = {s.batch, s.boxes, 4}, per_class = {s.batch, s.boxes, s.classes, 4};
  if (boxes != shared && boxes != per_class)
    return invalid_argument("boxes (input 0) must be " + shape_str(shared) + " or " +
                            shape_str(per_class) + " for scores " + shape_str(scores) + ", got " +
                            shape_str(boxes));
  return s;
}

namespace {

Status infer_efficient_nms(const Node& node, const std::vector<TensorDesc>& in,
                           std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  for (size_t i : {size_t{0}, size_t{1}})
    if (in[i].dtype != DataType::kFloat32)
      return invalid_argument("input " + std::to_string(i) + ": expected float32, got " +
                              dtype_name(in[i].dtype));
  const EfficientNmsAttrs a = efficient_nms_attrs(node.attrs);
  KILN_RETURN_IF_ERROR(check_efficient_nms_attrs(a));
  KILN_ASSIGN_OR_RETURN(EfficientNmsShape s, efficient_nms_shape(in[0].shape, in[1].shape));
  if (out.size() != 4)
    return invalid_argument(
        "EfficientNMS_TRT has 4 outputs (num_detections, boxes, scores, "
        "classes), the node names " +
        std::to_string(out.size()));
  const int64_t k = a.max_output_boxes;
  out[0] = {DataType::kInt32, {s.batch, 1}};
  out[1] = {DataType::kFloat32, {s.batch, k, 4}};
  out[2] = {DataType::kFloat32, {s.batch, k}};
  out[3] = {DataType::kInt32, {s.batch, k}};
  return Status::ok();
}

struct Candidate {
  float score;  // after the activation
  int64_t box, cls;
};

// Corners [x1, y1, x2, y2] of a box as the input codes it.
void corners_of(const float* b, int64_t coding, float* c) {
  if (coding == 0) {
    std::copy(b, b + 4, c);
    return;
  }
  c[0] = b[0] - b[2] / 2;
  c[1] = b[1] - b[3] / 2;
  c[2] = b[0] + b[2] / 2;
  c[3] = b[1] + b[3] / 2;
}

Status run_efficient_nms(const Node& node, const std::vector<const Tensor*>& in,
                         const std::vector<Tensor*>& out) {
  const EfficientNmsAttrs a = efficient_nms_attrs(node.attrs);
  KILN_ASSIGN_OR_RETURN(EfficientNmsShape s, efficient_nms_shape(in[0]->shape(), in[1]->shape()));
  const float* boxes = in[0]->data<float>();
  const float* scores = in[1]->data<float>();
  const int64_t k = a.max_output_boxes;
  int32_t* num = out[0]->data<int32_t>();
  float* out_boxes = out[1]->data<float>();
  float* out_scores = out[2]->data<float>();
  int32_t* out_classes = out[3]->data<int32_t>();
  std::fill(out_boxes, out_boxes + s.batch * k * 4, 0.f);
  std::fill(out_scores, out_scores + s.batch * k, 0.f);
  std::fill(out_classes, out_classes + s.batch * k, 0);
  std::vector<Candidate> cand;
  std::vector<NmsBox> kept_box;
  std::vector<int64_t> kept_cls;
  for (int64_t b = 0; b < s.batch; ++b) {
    cand.clear();
    for (int64_t i = 0; i < s.boxes; ++i)
      for (int64_t c = 0; c < s.classes; ++c) {
        if (c == a.background_class) continue;
        float v = scores[(b * s.boxes + i) * s.classes + c];
        if (a.score_activation) v = 1.f / (1.f + std::exp(-v));
        if (v > a.score_threshold) cand.push_back({v, i, c});
      }
    // Box-major order already: a stable sort keeps equal scores by box, then class.
    std::stable_sort(cand.begin(), cand.end(),
                     [](const Candidate& p, const Candidate& q) { return p.score > q.score; });
    if (static_cast<int64_t>(cand.size()) > kEfficientNmsMaxCandidates)
      cand.resize(kEfficientNmsMaxCandidates);
    kept_box.clear();
    kept_cls.clear();
    for (const Candidate& d : cand) {
      if (static_cast<int64_t>(kept_box.size()) >= k) break;
      const float* raw = boxes + ((b * s.boxes + d.box) * (s.per_class_boxes ? s.classes : 1) +
                                  (s.per_class_boxes ? d.cls : 0)) *
                                     4;
      float c4[4];
      corners_of(raw, a.box_coding, c4);
      // nms_box reads [y1, x1, y2, x2]; the axes are interchangeable for IoU.
      const NmsBox box = nms_box(c4, false);
      bool suppressed = false;
      for (size_t j = 0; j < kept_box.size() && !suppressed; ++j)
        suppressed = (a.class_agnostic || kept_cls[j] == d.cls) &&
                     nms_iou(kept_box[j], box) > a.iou_threshold;
      if (suppressed) continue;
      const int64_t at = b * k + static_cast<int64_t>(kept_box.size());
      std::copy(c4, c4 + 4, out_boxes + at * 4);
      out_scores[at] = d.score;
      out_classes[at] = static_cast<int32_t>(d.cls);
      kept_box.push_back(box);
      kept_cls.push_back(d.cls);
    }
    num[b] = static_cast<int32_t>(kept_box.size());
  }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(EfficientNMS_TRT, infer_efficient_nms, run_efficient_nms);

}  // namespace kiln
