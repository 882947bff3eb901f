// Detections from a detector's outputs, and boxes moved back onto their image
// (kiln/detection.h).
#include "kiln/detection.h"

#include <algorithm>
#include <cmath>

#include "ir/graph.h"
#include "ops/op_registry.h"

namespace kiln {

float box_area(const Box& b) { return std::max(0.f, b.x1 - b.x0) * std::max(0.f, b.y1 - b.y0); }

float box_iou(const Box& a, const Box& b) {
  const float w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const float h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  const float area_a = box_area(a), area_b = box_area(b);
  if (w <= 0 || h <= 0 || area_a <= 0 || area_b <= 0) return 0;
  return w * h / (area_a + area_b - w * h);
}

Box to_image(const Box& b, const ImagePlacement& p) {
  const float w = static_cast<float>(p.width), h = static_cast<float>(p.height);
  auto x = [&](float v) {
    return std::clamp(static_cast<float>((v - p.pad_x) / p.scale_x), 0.f, w);
  };
  auto y = [&](float v) {
    return std::clamp(static_cast<float>((v - p.pad_y) / p.scale_y), 0.f, h);
  };
  if (p.scale_x <= 0 || p.scale_y <= 0) return Box{};
  return Box{x(b.x0), y(b.y0), x(b.x1), y(b.y1)};
}

namespace {

const Tensor* find(const std::map<std::string, Tensor>& out, const char* a, const char* b) {
  auto it = out.find(a);
  if (it == out.end()) it = out.find(b);
  return it == out.end() ? nullptr : &it->second;
}

Status expect(const Tensor& t, const char* what, const Shape& shape) {
  if (t.shape() != shape)
    return invalid_argument(std::string(what) + " is " + shape_str(t.shape()) + ", expected " +
                            shape_str(shape));
  return Status::ok();
}

// EfficientNMS_TRT's four outputs.
Result<std::vector<std::vector<Detection>>> from_efficient_nms(const Tensor& num,
                                                               const Tensor& boxes,
                                                               const Tensor& scores,
                                                               const Tensor& classes) {
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    return invalid_argument("detection boxes are " + shape_str(boxes.shape()) +
                            ", expected [batch, K, 4]");
  const int64_t batch = boxes.dim(0), k = boxes.dim(1);
  KILN_RETURN_IF_ERROR(expect(num, "num_detections", {batch, 1}));
  KILN_RETURN_IF_ERROR(expect(scores, "detection scores", {batch, k}));
  KILN_RETURN_IF_ERROR(expect(classes, "detection classes", {batch, k}));
  std::vector<std::vector<Detection>> r(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = static_cast<int64_t>(num.at_double(b));
    if (n < 0 || n > k)
      return invalid_argument("image " + std::to_string(b) + " has " + std::to_string(n) +
                              " detections, outside 0 to " + std::to_string(k));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = b * k + j;
      Detection d;
      d.box = {static_cast<float>(boxes.at_double(at * 4)),
               static_cast<float>(boxes.at_double(at * 4 + 1)),
               static_cast<float>(boxes.at_double(at * 4 + 2)),
               static_cast<float>(boxes.at_double(at * 4 + 3))};
      d.score = static_cast<float>(scores.at_double(at));
      d.cls = static_cast<int>(classes.at_double(at));
      r[b].push_back(d);
    }
  }
  return r;
}

// [M, 7] rows (image, x0, y0, x1, y1, class, score).
Result<std::vector<std::vector<Detection>>> from_rows(const Tensor& rows, int64_t batch) {
  std::vector<std::vector<Detection>> r(static_cast<size_t>(batch));
  for (int64_t i = 0; i < rows.dim(0); ++i) {
    auto v = [&](int j) { return rows.at_double(i * 7 + j); };
    const int64_t b = static_cast<int64_t>(v(0));
    if (b < 0 || b >= batch)
      return invalid_argument("detection row " + std::to_string(i) + " is of image " +
                              std::to_string(b) + ", outside the batch of " +
                              std::to_string(batch));
    Detection d;
    d.box = {static_cast<float>(v(1)), static_cast<float>(v(2)), static_cast<float>(v(3)),
             static_cast<float>(v(4))};
    d.cls = static_cast<int>(v(5));
    d.score = static_cast<float>(v(6));
    r[b].push_back(d);
  }
  for (auto& list : r)
    std::stable_sort(list.begin(), list.end(),
                     [](const Detection& a, const Detection& b) { return a.score > b.score; });
  return r;
}

// [B, N, 5 + C] candidates through EfficientNMS_TRT's reference kernel.
Result<std::vector<std::vector<Detection>>> from_candidates(const Tensor& cand,
                                                            const ReadDetectionsOptions& o) {
  const int64_t batch = cand.dim(0), n = cand.dim(1), classes = cand.dim(2) - 5;
  if (classes < 1)
    return invalid_argument("decoded detections are " + shape_str(cand.shape()) +
                            ", expected [batch, boxes, 5 + classes]");
  Tensor boxes(DataType::kFloat32, {batch, n, 4}), scores(DataType::kFloat32, {batch, n, classes});
  for (int64_t i = 0; i < batch * n; ++i) {
    auto v = [&](int64_t j) { return static_cast<float>(cand.at_double(i * (classes + 5) + j)); };
    float* b = boxes.data<float>() + i * 4;
    b[0] = v(0), b[1] = v(1), b[2] = v(2), b[3] = v(3);
    for (int64_t c = 0; c < classes; ++c) scores.data<float>()[i * classes + c] = v(5 + c) * v(4);
  }
  Graph g;
  std::vector<Value*> outs;
  for (int i = 0; i < 4; ++i) outs.push_back(g.add_value("nms_" + std::to_string(i)));
  Attributes a;
  a.set("score_threshold", o.conf);
  a.set("iou_threshold", o.iou);
  a.set("max_output_boxes", o.max_det);
  a.set("box_coding", int64_t{1});
  Node* node = g.add_node(OpKind::EfficientNMS_TRT, "read_detections",
                          {g.add_value("boxes"), g.add_value("scores")}, outs, a);
  std::vector<Tensor> r;
  KILN_RETURN_IF_ERROR(run_reference(*node, {&boxes, &scores}, r).with_context("class-wise NMS"));
  return from_efficient_nms(r[0], r[1], r[2], r[3]);
}

}  // namespace

Result<std::vector<std::vector<Detection>>> read_detections(
    const std::map<std::string, Tensor>& outputs, const ReadDetectionsOptions& o) {
  const Tensor* num = find(outputs, "num_dets", "num_detections");
  const Tensor* boxes = find(outputs, "det_boxes", "detection_boxes");
  const Tensor* scores = find(outputs, "det_scores", "detection_scores");
  const Tensor* classes = find(outputs, "det_classes", "detection_classes");
  if (num && boxes && scores && classes) return from_efficient_nms(*num, *boxes, *scores, *classes);
  if (outputs.size() == 1) {
    const Tensor& t = outputs.begin()->second;
    if (t.rank() == 2 && t.dim(1) == 7) return from_rows(t, o.batch);
    if (t.rank() == 3 && t.dim(2) > 5) return from_candidates(t, o);
  }
  std::string held;
  for (const auto& [name, t] : outputs)
    held += (held.empty() ? "" : ", ") + name + " " + shape_str(t.shape());
  return invalid_argument(
      "the outputs (" + held +
      ") are not a detector's: expected EfficientNMS_TRT's four (num_dets, det_boxes, "
      "det_scores, det_classes), one [M, 7] of rows (image, x0, y0, x1, y1, class, score), "
      "or one [batch, boxes, 5 + classes] of decoded candidates");
}

}  // namespace kiln
