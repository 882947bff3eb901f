// A detector's answers: its detections read from the outputs of any of its export forms, moved
// from the engine's input slot back onto the image, and scored against known boxes (mAP).
//
//   auto dets = kiln::read_detections(outputs);           // one list per image of the batch
//   for (auto& d : (*dets)[0]) d.box = kiln::to_image(d.box, batch.placement[0]);
//   kiln::DetectionMetrics m = kiln::evaluate_detections(all_dets, all_truths, 80);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/images.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// Corners, in pixels: x0 ≤ x1, y0 ≤ y1.
struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
float box_area(const Box& b);
float box_iou(const Box& a, const Box& b);  // 0 where either has no area

struct Detection {
  Box box;
  float score = 0;
  int cls = 0;
};

// The detections of each image from a detector's outputs, best first, in whichever form it
// was exported:
//   - EfficientNMS_TRT's four: num_dets / num_detections [B, 1], det_boxes / detection_boxes
//     [B, K, 4] corners, det_scores / detection_scores [B, K], det_classes /
//     detection_classes [B, K];
//   - one [M, 7] output of rows (image, x0, y0, x1, y1, class, score), as an end-to-end
//     NonMaxSuppression export writes it (`batch` says how many images; rows of images past it
//     are an error);
//   - one [B, N, 5 + C] output of decoded candidates (cx, cy, w, h, objectness, C class
//     probabilities): those of score objectness × class above `conf` go through class-wise
//     NMS at `iou`, at most `max_det` an image, as EfficientNMS_TRT would.
// Anything else is an error naming what the outputs hold.
struct ReadDetectionsOptions {
  int64_t batch = 1;  // images in the batch (for the [M, 7] form)
  float conf = 0.25f, iou = 0.45f;
  int64_t max_det = 100;
};
Result<std::vector<std::vector<Detection>>> read_detections(
    const std::map<std::string, Tensor>& outputs, const ReadDetectionsOptions& options = {});

// A box found on the engine's input slot, on the image: (slot − pad) / scale, clipped to the
// image's size.
Box to_image(const Box& slot_box, const ImagePlacement& placement);

// A known object of an image.
struct GroundTruth {
  Box box;
  int cls = 0;
};

// COCO's box AP: per class and IoU threshold (0.50, 0.55 ... 0.95), the detections of every
// image by score, highest first (equal scores in the order given), each matched to the unmatched
// known box of its image and class with the highest IoU at or above the threshold (a true
// positive) or to none (a false positive); precision made non-increasing from the right; AP
// the mean of the precision at the 101 recalls 0, 0.01 ... 1 (0 past the last recall reached).
// Classes with no known box are left out of the means. No "crowd" boxes, no area ranges, and
// the detections are taken as given (cap them per image first, as COCO's 100).
struct DetectionMetrics {
  double map50 = 0;                   // mean over classes of the AP at IoU 0.50
  double map50_95 = 0;                // mean over classes and the ten thresholds
  std::vector<double> ap50, ap50_95;  // per class; -1 for a class with no known box
  int64_t detections = 0, ground_truths = 0;
  int classes_evaluated = 0;
};
DetectionMetrics evaluate_detections(const std::vector<std::vector<Detection>>& detections,
                                     const std::vector<std::vector<GroundTruth>>& truths,
                                     int classes);

}  // namespace kiln
