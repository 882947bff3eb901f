// kiln/detection.h: mAP against cases computed by hand, the detections read from each export
// form's outputs, and boxes moved from a letterboxed slot back onto the image.
#include <gtest/gtest.h>

#include "kiln/detection.h"

namespace kiln {
namespace {

Detection det(float x0, float y0, float x1, float y1, float score, int cls = 0) {
  return Detection{Box{x0, y0, x1, y1}, score, cls};
}
GroundTruth truth(float x0, float y0, float x1, float y1, int cls = 0) {
  return GroundTruth{Box{x0, y0, x1, y1}, cls};
}

TEST(DetectionMap, PerfectDetectionsScoreOne) {
  const std::vector<std::vector<GroundTruth>> t = {{truth(0, 0, 10, 10), truth(20, 20, 30, 40, 1)},
                                                   {truth(5, 5, 15, 15, 1)}};
  const std::vector<std::vector<Detection>> d = {
      {det(0, 0, 10, 10, 0.9f), det(20, 20, 30, 40, 0.8f, 1)}, {det(5, 5, 15, 15, 0.7f, 1)}};
  const DetectionMetrics m = evaluate_detections(d, t, 3);
  EXPECT_DOUBLE_EQ(m.map50, 1.0);
  EXPECT_DOUBLE_EQ(m.map50_95, 1.0);
  EXPECT_EQ(m.classes_evaluated, 2);
  EXPECT_EQ(m.ap50[2], -1);  // no known box of class 2
  EXPECT_EQ(m.detections, 3);
  EXPECT_EQ(m.ground_truths, 3);
}

// One class, two known boxes; detections by score: a hit, a miss (no overlap), a hit. Precision
// 1, 1/2, 2/3 at recalls 1/2, 1/2, 1; made non-increasing from the right: 1, 2/3, 2/3. The 101
// recall points: 0 ... 0.5 (51 points) read precision 1, 0.51 ... 1 (50 points) read 2/3.
TEST(DetectionMap, AHandComputedPrecisionRecallCurve) {
  const std::vector<std::vector<GroundTruth>> t = {{truth(0, 0, 10, 10), truth(50, 50, 60, 60)}};
  const std::vector<std::vector<Detection>> d = {
      {det(0, 0, 10, 10, 0.9f), det(100, 100, 110, 110, 0.8f), det(50, 50, 60, 60, 0.7f)}};
  const DetectionMetrics m = evaluate_detections(d, t, 1);
  const double want = (51 * 1.0 + 50 * (2.0 / 3.0)) / 101;
  EXPECT_NEAR(m.map50, want, 1e-12);
  EXPECT_NEAR(m.map50_95, want, 1e-12);  // exact boxes: every threshold alike
}

// A detection overlapping its box at IoU 0.68 (a 10×10 box against [0, 0, 10, 10] shifted by
// 1.9 px in x: 8.1·10 / (200 − 81)): a hit at 0.50 ... 0.65, a miss from 0.70 on. AP 1 at four
// thresholds, 0 at six: 0.4 over 0.50:0.95.
TEST(DetectionMap, IouThresholdsCountSeparately) {
  const std::vector<std::vector<GroundTruth>> t = {{truth(0, 0, 10, 10)}};
  const std::vector<std::vector<Detection>> d = {{det(1.9f, 0, 11.9f, 10, 0.5f)}};
  ASSERT_NEAR(box_iou(d[0][0].box, t[0][0].box), 81.0 / 119.0, 1e-6);
  const DetectionMetrics m = evaluate_detections(d, t, 1);
  EXPECT_DOUBLE_EQ(m.map50, 1.0);
  EXPECT_NEAR(m.map50_95, 0.4, 1e-12);
}

// Two detections on one box: the second is a false positive (a box matches once). The wrong
// class never matches. Missed boxes lower the recall: one of two found, precision 1 then 1/2:
// AP = 51/101.
TEST(DetectionMap, DuplicatesWrongClassesAndMisses) {
  const std::vector<std::vector<GroundTruth>> t = {{truth(0, 0, 10, 10)}, {truth(0, 0, 10, 10)}};
  const std::vector<std::vector<Detection>> d = {
      {det(0, 0, 10, 10, 0.9f), det(0, 0, 10, 10, 0.8f), det(0, 0, 10, 10, 0.95f, 1)}, {}};
  const DetectionMetrics m = evaluate_detections(d, t, 2);
  EXPECT_NEAR(m.ap50[0], 51.0 / 101, 1e-12);
  EXPECT_EQ(m.ap50[1], -1);
  EXPECT_NEAR(m.map50, 51.0 / 101, 1e-12);
  // No detections at all: AP 0; no known boxes at all: nothing evaluated.
  EXPECT_EQ(evaluate_detections({{}, {}}, t, 1).map50, 0);
  EXPECT_EQ(evaluate_detections(d, {{}, {}}, 2).classes_evaluated, 0);
}

// Of two known boxes a detection overlaps, it takes the one of higher IoU, leaving the other
// to a later detection.
TEST(DetectionMap, ADetectionTakesItsBestUnmatchedBox) {
  const std::vector<std::vector<GroundTruth>> t = {{truth(0, 0, 10, 10), truth(2, 0, 12, 10)}};
  const std::vector<std::vector<Detection>> d = {
      {det(2, 0, 12, 10, 0.9f), det(0, 0, 10, 10, 0.8f)}};
  EXPECT_DOUBLE_EQ(evaluate_detections(d, t, 1).map50_95, 1.0);
}

TEST(ReadDetections, EveryExportForm) {
  // EfficientNMS_TRT's outputs: two images, K = 3.
  std::map<std::string, Tensor> trt;
  trt["num_dets"] = Tensor::from_int64s({2, 1}, {2, 0});
  trt["det_boxes"] = Tensor::from_floats(
      {2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  trt["det_scores"] = Tensor::from_floats({2, 3}, {0.9f, 0.5f, 0, 0, 0, 0});
  trt["det_classes"] = Tensor::from_int64s({2, 3}, {3, 7, 0, 0, 0, 0});
  auto a = read_detections(trt);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_EQ(a->size(), 2u);
  ASSERT_EQ((*a)[0].size(), 2u);
  EXPECT_TRUE((*a)[1].empty());
  EXPECT_EQ((*a)[0][1].cls, 7);
  EXPECT_FLOAT_EQ((*a)[0][1].box.x0, 5);
  EXPECT_FLOAT_EQ((*a)[0][0].score, 0.9f);

  // [M, 7] rows, out of order: sorted by score per image.
  std::map<std::string, Tensor> rows;
  rows["detections"] = Tensor::from_floats(
      {3, 7}, {1, 0, 0, 5, 5, 2, 0.3f, 0, 1, 1, 4, 4, 1, 0.2f, 1, 2, 2, 6, 6, 4, 0.8f});
  ReadDetectionsOptions o;
  o.batch = 2;
  auto b = read_detections(rows, o);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  ASSERT_EQ((*b)[1].size(), 2u);
  EXPECT_FLOAT_EQ((*b)[1][0].score, 0.8f);
  EXPECT_EQ((*b)[1][0].cls, 4);
  o.batch = 1;
  EXPECT_FALSE(read_detections(rows, o).is_ok());  // a row of image 1 in a batch of 1

  // Decoded candidates [1, 3, 5 + 2] (scores objectness × class: box 0 0.09 / 0.81, box 1
  // 0.16 / 0.64, box 2 0.18 / 0.09): above 0.15, class-wise NMS at 0.5 suppresses box 1's class
  // 1 (IoU 0.78 with box 0) but not its class 0, whose only other box is far.
  std::map<std::string, Tensor> cand;
  cand["detections"] =
      Tensor::from_floats({1, 3, 7}, {10,   10,   4,    4,  0.9f, 0.1f, 0.9f, 10.5f, 10,   4,   4,
                                      0.8f, 0.2f, 0.8f, 50, 50,   4,    4,    0.9f,  0.2f, 0.1f});
  o.conf = 0.15f;
  o.iou = 0.5f;
  auto c = read_detections(cand, o);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ((*c)[0].size(), 3u);
  EXPECT_EQ((*c)[0][0].cls, 1);
  EXPECT_NEAR((*c)[0][0].score, 0.81f, 1e-6);
  EXPECT_FLOAT_EQ((*c)[0][0].box.x0, 8);  // corners from the centre and size
  EXPECT_EQ((*c)[0][1].cls, 0);
  EXPECT_NEAR((*c)[0][1].score, 0.18f, 1e-6);
  EXPECT_EQ((*c)[0][2].cls, 0);
  EXPECT_FLOAT_EQ((*c)[0][2].box.x0, 8.5f);

  std::map<std::string, Tensor> logits;
  logits["logits"] = Tensor::from_floats({1, 10}, std::vector<float>(10, 0.f));
  auto bad = read_detections(logits);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("logits [1,10]"), std::string::npos)
      << bad.status().message();
}

TEST(ReadDetections, LetterboxedBoxesGoBackOntoTheImage) {
  // A 500×250 image letterboxed into 640×640: scale 1.28, 320 px tall, padded 160 above.
  ImagePlacement p;
  p.width = 500, p.height = 250, p.scale_x = p.scale_y = 1.28, p.pad_x = 0, p.pad_y = 160;
  const Box b = to_image(Box{64, 160 + 128, 640, 700}, p);
  EXPECT_FLOAT_EQ(b.x0, 50);
  EXPECT_FLOAT_EQ(b.y0, 100);
  EXPECT_FLOAT_EQ(b.x1, 500);  // clipped to the image
  EXPECT_FLOAT_EQ(b.y1, 250);
  EXPECT_FLOAT_EQ(to_image(Box{0, 0, 10, 10}, ImagePlacement{}).x1, 0);  // a failed image
}

}  // namespace
}  // namespace kiln
