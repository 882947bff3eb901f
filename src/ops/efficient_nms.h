// EfficientNMS_TRT (TensorRT's EfficientNMS plugin node, plugin_version 1 and 2, as detector
// "end2end" exports write it): its attributes and its candidate order, for the reference
// kernel and every backend.
//
// Inputs: boxes [B, N, 4] (one box for every class) or [B, N, C, 4] (one per class), scores
// [B, N, C]; float32. Outputs, of fixed size: num_detections int32 [B, 1], detection_boxes
// [B, K, 4] as corners, detection_scores [B, K], detection_classes int32 [B, K], where K is
// max_output_boxes; the entries after num_detections are zero.
//
// Per image: every (box, class) pair other than background_class whose score (after a sigmoid
// with score_activation) is above score_threshold (strictly) is a candidate; they are ordered
// by score, highest first, equal scores by the lower box then the lower class; the first
// kMaxCandidates of them enter a greedy NMS that keeps a candidate unless its IoU with one
// kept before it (of the same class, or of any class with class_agnostic) is above
// iou_threshold (strictly), until K are kept. box_coding 0: boxes are two opposite corners
// [x1, y1, x2, y2]; 1: [x_center, y_center, width, height]; the output is corners either way.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct EfficientNmsAttrs {
  float score_threshold = 0.5f;
  float iou_threshold = 0.5f;
  int64_t max_output_boxes = 100;
  int64_t background_class = -1;  // -1: none
  bool score_activation = false;  // a sigmoid on the scores
  bool class_agnostic = false;
  int64_t box_coding = 0;  // 0: corners, 1: centre and size
};
EfficientNmsAttrs efficient_nms_attrs(const Attributes& attrs);

// The plugin's cap: only the best-scoring candidates of an image enter NMS.
inline constexpr int64_t kEfficientNmsMaxCandidates = 4096;

// The batch, boxes and classes of boxes [B, N, 4] or [B, N, C, 4] and scores [B, N, C], checked;
// per_class_boxes says which boxes form it is.
struct EfficientNmsShape {
  int64_t batch = 0, boxes = 0, classes = 0;
  bool per_class_boxes = false;
};
Result<EfficientNmsShape> efficient_nms_shape(const Shape& boxes, const Shape& scores);

// The attributes' values checked (thresholds in range, K > 0, box_coding 0 or 1).
Status check_efficient_nms_attrs(const EfficientNmsAttrs& a);

}  // namespace kiln
