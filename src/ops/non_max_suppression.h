// NonMaxSuppression's attribute and geometry (opsets 10 and 11), for the reference kernel and
// every backend: the box format, and the overlap of two boxes as the ONNX reference computes it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct NonMaxSuppressionAttrs {
  // 0: boxes are [y1, x1, y2, x2], any two opposite corners (TensorFlow's format); 1: boxes
  // are [x_center, y_center, width, height] (PyTorch's).
  int64_t center_point_box = 0;
};
inline NonMaxSuppressionAttrs non_max_suppression_attrs(const Node& n) {
  NonMaxSuppressionAttrs a;
  a.center_point_box = n.attrs.get_int("center_point_box", a.center_point_box);
  return a;
}

// A box as its sorted extent on each axis: lo ≤ hi.
struct NmsBox {
  float y_lo, x_lo, y_hi, x_hi;
};
inline NmsBox nms_box(const float* b, bool center_point) {
  if (center_point) {
    const float xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Intersection over union; 0 where either box has no area.
inline float nms_iou(const NmsBox& a, const NmsBox& b) {
  const float area_a = (a.y_hi - a.y_lo) * (a.x_hi - a.x_lo);
  const float area_b = (b.y_hi - b.y_lo) * (b.x_hi - b.x_lo);
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = std::min(a.y_hi, b.y_hi) - std::max(a.y_lo, b.y_lo);
  const float w = std::min(a.x_hi, b.x_hi) - std::max(a.x_lo, b.x_lo);
  if (h <= 0 || w <= 0) return 0;
  const float inter = h * w;
  return inter / (area_a + area_b - inter);
}

// The scalar inputs 2 to 4 (nullptr where omitted): the maximum per class (0 when omitted;
// negative taken as 0) and the thresholds, checked as the reference reads them.
struct NmsParams {
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
};
Result<NmsParams> nms_params(const std::vector<const Tensor*>& in);

// boxes [batch, boxes, 4] and scores [batch, classes, boxes].
Status check_shapes(const Shape& boxes, const Shape& scores);

}  // namespace kiln
