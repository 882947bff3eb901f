// COCO's box AP over a set of images (kiln/detection.h: evaluate_detections).
#include <algorithm>
#include <numeric>

#include "kiln/detection.h"

namespace kiln {

namespace {

constexpr int kThresholds = 10;  // IoU 0.50, 0.55 ... 0.95
constexpr int kRecalls = 101;    // recall 0, 0.01 ... 1

struct Scored {
  float score;
  int64_t image, index;  // the detection's image and place in its list
};

// The AP of one class at one IoU threshold.
double average_precision(const std::vector<Scored>& dets,
                         const std::vector<std::vector<Detection>>& detections,
                         const std::vector<std::vector<GroundTruth>>& truths, int cls,
                         int64_t positives, double threshold) {
  std::vector<std::vector<bool>> matched(truths.size());
  for (size_t i = 0; i < truths.size(); ++i) matched[i].assign(truths[i].size(), false);
  std::vector<double> precision, recall;
  int64_t tp = 0, fp = 0;
  for (const Scored& s : dets) {
    const Box& box = detections[s.image][s.index].box;
    const std::vector<GroundTruth>& gts = truths[s.image];
    int64_t best = -1;
    double best_iou = threshold;
    for (size_t g = 0; g < gts.size(); ++g) {
      if (gts[g].cls != cls || matched[s.image][g]) continue;  // COCO: one detection each
      const double iou = box_iou(box, gts[g].box);
      if (iou >= best_iou && (best < 0 || iou > best_iou)) {
        best = static_cast<int64_t>(g);
        best_iou = iou;
      }
    }
    if (best >= 0) {
      matched[s.image][best] = true;
      ++tp;
    } else {
      ++fp;
    }
    precision.push_back(static_cast<double>(tp) / static_cast<double>(tp + fp));
    recall.push_back(static_cast<double>(tp) / static_cast<double>(positives));
  }
  for (size_t i = precision.size(); i-- > 1;)
    precision[i - 1] = std::max(precision[i - 1], precision[i]);
  double sum = 0;
  for (int r = 0; r < kRecalls; ++r) {
    const double at = r / 100.0;
    // The first detection whose recall reaches `at` (COCO's searchsorted, side left).
    const auto it = std::lower_bound(recall.begin(), recall.end(), at - 1e-12);
    if (it != recall.end()) sum += precision[static_cast<size_t>(it - recall.begin())];
  }
  return sum / kRecalls;
}

}  // namespace

DetectionMetrics evaluate_detections(const std::vector<std::vector<Detection>>& detections,
                                     const std::vector<std::vector<GroundTruth>>& truths,
                                     int classes) {
  DetectionMetrics m;
  m.ap50.assign(static_cast<size_t>(std::max(classes, 0)), -1);
  m.ap50_95 = m.ap50;
  const size_t images = std::min(detections.size(), truths.size());
  std::vector<std::vector<Scored>> by_class(m.ap50.size());
  std::vector<int64_t> positives(m.ap50.size(), 0);
  for (size_t i = 0; i < truths.size(); ++i)
    for (const GroundTruth& g : truths[i]) {
      ++m.ground_truths;
      if (g.cls >= 0 && g.cls < classes) ++positives[g.cls];
    }
  for (size_t i = 0; i < images; ++i)
    for (size_t j = 0; j < detections[i].size(); ++j) {
      ++m.detections;
      const int c = detections[i][j].cls;
      if (c >= 0 && c < classes)
        by_class[c].push_back(
            {detections[i][j].score, static_cast<int64_t>(i), static_cast<int64_t>(j)});
    }
  double sum50 = 0, sum = 0;
  for (int c = 0; c < classes; ++c) {
    if (positives[c] == 0) continue;
    std::vector<Scored>& dets = by_class[c];
    std::stable_sort(dets.begin(), dets.end(),
                     [](const Scored& a, const Scored& b) { return a.score > b.score; });
    double all = 0;
    for (int t = 0; t < kThresholds; ++t) {
      const double ap =
          average_precision(dets, detections, truths, c, positives[c], 0.5 + 0.05 * t);
      if (t == 0) m.ap50[c] = ap;
      all += ap;
    }
    m.ap50_95[c] = all / kThresholds;
    sum50 += m.ap50[c];
    sum += m.ap50_95[c];
    ++m.classes_evaluated;
  }
  if (m.classes_evaluated > 0) {
    m.map50 = sum50 / m.classes_evaluated;
    m.map50_95 = sum / m.classes_evaluated;
  }
  return m;
}

}  // namespace kiln
