// EfficientNMS_TRT against a small independent implementation (pick the best remaining
// candidate, drop what it overlaps, repeat) on random boxes: class-wise and class-agnostic,
// corners and centre-size, one box per class or shared, a background class, the sigmoid; and
// hand cases: ties, IoU exactly at the threshold, no boxes, nothing above the threshold, the
// 4096-candidate cap, padding; bad shapes and attributes refused.
#include <algorithm>
#include <cmath>
#include <random>

#include "ops/efficient_nms.h"
#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

struct Options {
  float score_threshold = 0.2f, iou = 0.5f;
  int64_t k = 10, background = -1, coding = 0;
  bool sigmoid = false, agnostic = false;
};

Attributes attrs_of(const Options& o) {
  Attributes a;
  a.set("score_threshold", o.score_threshold);
  a.set("iou_threshold", o.iou);
  a.set("max_output_boxes", o.k);
  a.set("background_class", o.background);
  a.set("score_activation", int64_t{o.sigmoid});
  a.set("class_agnostic", int64_t{o.agnostic});
  a.set("box_coding", o.coding);
  return a;
}

struct Detection {
  float box[4];
  float score;
  int32_t cls;
};

float iou(const float* a, const float* b) {
  auto area = [](const float* p) {
    return std::max(0.f, std::fabs(p[2] - p[0])) * std::max(0.f, std::fabs(p[3] - p[1]));
  };
  const float ix = std::min(std::max(a[0], a[2]), std::max(b[0], b[2])) -
                   std::max(std::min(a[0], a[2]), std::min(b[0], b[2]));
  const float iy = std::min(std::max(a[1], a[3]), std::max(b[1], b[3])) -
                   std::max(std::min(a[1], a[3]), std::min(b[1], b[3]));
  if (area(a) <= 0 || area(b) <= 0 || ix <= 0 || iy <= 0) return 0;
  return ix * iy / (area(a) + area(b) - ix * iy);
}

// The oracle for image b: candidates in a list; take the best (ties: lower box, then class),
// drop those it suppresses, until K or none are left.
std::vector<Detection> oracle(const Tensor& boxes, const Tensor& scores, int64_t b,
                              const Options& o) {
  const int64_t n = scores.shape()[1], c = scores.shape()[2];
  const bool per_class = boxes.shape().size() == 4;
  struct Cand {
    Detection d;
    int64_t box;
  };
  std::vector<Cand> left;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k) {
      if (k == o.background) continue;
      float s = scores.data<float>()[(b * n + i) * c + k];
      if (o.sigmoid) s = 1.f / (1.f + std::exp(-s));
      if (!(s > o.score_threshold)) continue;
      const float* p =
          boxes.data<float>() + ((b * n + i) * (per_class ? c : 1) + (per_class ? k : 0)) * 4;
      Cand cd{{{p[0], p[1], p[2], p[3]}, s, static_cast<int32_t>(k)}, i};
      if (o.coding == 1) {
        cd.d.box[0] = p[0] - p[2] / 2;
        cd.d.box[1] = p[1] - p[3] / 2;
        cd.d.box[2] = p[0] + p[2] / 2;
        cd.d.box[3] = p[1] + p[3] / 2;
      }
      left.push_back(cd);
    }
  // The plugin's cap: the best 4096 by score (ties: box, then class, the order of `left`).
  std::stable_sort(left.begin(), left.end(),
                   [](const Cand& p, const Cand& q) { return p.d.score > q.d.score; });
  if (left.size() > 4096) left.resize(4096);
  std::vector<Detection> kept;
  while (!left.empty() && static_cast<int64_t>(kept.size()) < o.k) {
    size_t best = 0;
    for (size_t j = 1; j < left.size(); ++j) {
      const Cand &p = left[j], &q = left[best];
      if (p.d.score > q.d.score ||
          (p.d.score == q.d.score && (p.box < q.box || (p.box == q.box && p.d.cls < q.d.cls))))
        best = j;
    }
    const Detection d = left[best].d;
    kept.push_back(d);
    left.erase(left.begin() + static_cast<long>(best));
    left.erase(std::remove_if(left.begin(), left.end(),
                              [&](const Cand& r) {
                                return (o.agnostic || r.d.cls == d.cls) &&
                                       iou(r.d.box, d.box) > o.iou;
                              }),
               left.end());
  }
  return kept;
}

std::vector<Tensor> run_nms(const Tensor& boxes, const Tensor& scores, const Options& o) {
  auto out = run_op(OpKind::EfficientNMS_TRT, attrs_of(o), {&boxes, &scores}, 4);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? *out : std::vector<Tensor>{};
}

void expect_matches_oracle(const Tensor& boxes, const Tensor& scores, const Options& o) {
  const std::vector<Tensor> got = run_nms(boxes, scores, o);
  ASSERT_EQ(got.size(), 4u);
  const int64_t batch = scores.shape()[0];
  ASSERT_EQ(got[0].shape(), (Shape{batch, 1}));
  ASSERT_EQ(got[1].shape(), (Shape{batch, o.k, 4}));
  ASSERT_EQ(got[2].shape(), (Shape{batch, o.k}));
  ASSERT_EQ(got[3].shape(), (Shape{batch, o.k}));
  ASSERT_EQ(got[0].dtype(), DataType::kInt32);
  ASSERT_EQ(got[3].dtype(), DataType::kInt32);
  for (int64_t b = 0; b < batch; ++b) {
    SCOPED_TRACE("image " + std::to_string(b));
    const std::vector<Detection> want = oracle(boxes, scores, b, o);
    const int32_t num = got[0].data<int32_t>()[b];
    ASSERT_EQ(num, static_cast<int32_t>(want.size()));
    for (int64_t j = 0; j < o.k; ++j) {
      const int64_t at = b * o.k + j;
      const bool real = j < num;
      EXPECT_EQ(got[3].data<int32_t>()[at], real ? want[j].cls : 0) << "detection " << j;
      EXPECT_FLOAT_EQ(got[2].data<float>()[at], real ? want[j].score : 0.f) << "detection " << j;
      for (int e = 0; e < 4; ++e)
        EXPECT_FLOAT_EQ(got[1].data<float>()[at * 4 + e], real ? want[j].box[e] : 0.f)
            << "detection " << j << " coordinate " << e;
    }
  }
}

// Random boxes in a 100×100 image, clustered so that many overlap: corners [x1, y1, x2, y2]
// (coding 0) or [cx, cy, w, h] (coding 1).
Tensor random_boxes(const Shape& shape, int64_t coding, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> centre(20, 80), size(5, 40), jitter(-4, 4);
  Tensor t(DataType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel() / 4; ++i) {
    const float cx = std::round(centre(gen) / 15) * 15 + jitter(gen);
    const float cy = std::round(centre(gen) / 15) * 15 + jitter(gen);
    const float w = size(gen), h = size(gen);
    if (coding == 1) {
      p[i * 4 + 0] = cx, p[i * 4 + 1] = cy, p[i * 4 + 2] = w, p[i * 4 + 3] = h;
    } else {
      p[i * 4 + 0] = cx - w / 2, p[i * 4 + 1] = cy - h / 2;
      p[i * 4 + 2] = cx + w / 2, p[i * 4 + 3] = cy + h / 2;
    }
  }
  return t;
}

TEST(EfficientNms, RandomBoxesMatchAnIndependentImplementation) {
  const int64_t batch = 2, n = 80, classes = 4;
  uint32_t seed = 100;
  for (int64_t coding : {0, 1})
    for (bool per_class : {false, true})
      for (bool agnostic : {false, true})
        for (bool sigmoid : {false, true}) {
          SCOPED_TRACE("coding " + std::to_string(coding) + (per_class ? " per-class" : "") +
                       (agnostic ? " agnostic" : "") + (sigmoid ? " sigmoid" : ""));
          const Shape bs = per_class ? Shape{batch, n, classes, 4} : Shape{batch, n, 4};
          const Tensor boxes = random_boxes(bs, coding, ++seed);
          const Tensor scores = sigmoid ? random_tensor({batch, n, classes}, ++seed, -4.f, 2.f)
                                        : random_tensor({batch, n, classes}, ++seed, 0.f, 1.f);
          Options o;
          o.coding = coding;
          o.agnostic = agnostic;
          o.sigmoid = sigmoid;
          o.k = 25;
          o.iou = 0.45f;
          expect_matches_oracle(boxes, scores, o);
          o.background = 1;
          o.k = 200;  // more room than detections: the rest is zero
          expect_matches_oracle(boxes, scores, o);
        }
}

TEST(EfficientNms, TiesThresholdsAndEmptyImages) {
  // Two boxes of equal score and IoU 0.75 (inter 3, union 4): at iou_threshold 0.75 both stay
  // (only an IoU above it suppresses); below it the lower box index wins the tie.
  const Tensor boxes = Tensor::from_floats({1, 3, 4}, {0, 0, 4, 1, 1, 0, 4, 1, 10, 10, 12, 12});
  const Tensor scores = Tensor::from_floats({1, 3, 1}, {0.9f, 0.9f, 0.3f});
  Options o;
  o.iou = 0.75f;
  std::vector<Tensor> got = run_nms(boxes, scores, o);
  EXPECT_EQ(got[0].data<int32_t>()[0], 3);
  o.iou = 0.7f;
  got = run_nms(boxes, scores, o);
  ASSERT_EQ(got[0].data<int32_t>()[0], 2);
  EXPECT_EQ(got[1].data<float>()[0], 0.f);  // box 0 kept first
  EXPECT_EQ(got[1].data<float>()[4], 10.f);
  // A score exactly at the threshold is not kept; nothing above it gives zero detections.
  o.score_threshold = 0.9f;
  got = run_nms(boxes, scores, o);
  EXPECT_EQ(got[0].data<int32_t>()[0], 0);
  for (int64_t i = 0; i < got[1].numel(); ++i) ASSERT_EQ(got[1].data<float>()[i], 0.f);
  // No boxes at all.
  const Tensor none_boxes = Tensor::zeros(DataType::kFloat32, {2, 0, 4});
  const Tensor none_scores = Tensor::zeros(DataType::kFloat32, {2, 0, 3});
  got = run_nms(none_boxes, none_scores, Options{});
  EXPECT_EQ(got[0].to_int64s(), (std::vector<int64_t>{0, 0}));
}

TEST(EfficientNms, OnlyTheBest4096CandidatesEnterNms) {
  // 4100 disjoint unit boxes with falling scores: all would survive, but only 4096 enter.
  const int64_t n = 4100;
  Tensor boxes(DataType::kFloat32, {1, n, 4});
  Tensor scores(DataType::kFloat32, {1, n, 1});
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(i * 2);
    float* p = boxes.data<float>() + i * 4;
    p[0] = x, p[1] = 0, p[2] = x + 1, p[3] = 1;
    scores.data<float>()[i] = 1.f - static_cast<float>(i) / (2 * n);
  }
  Options o;
  o.k = 5000;
  const std::vector<Tensor> got = run_nms(boxes, scores, o);
  EXPECT_EQ(got[0].data<int32_t>()[0], kEfficientNmsMaxCandidates);
  EXPECT_EQ(got[2].data<float>()[kEfficientNmsMaxCandidates], 0.f);
}

TEST(EfficientNms, BadShapesAndAttributesAreRefused) {
  const Tensor boxes = random_boxes({1, 5, 4}, 0, 3);
  const Tensor scores = random_tensor({1, 5, 2}, 4, 0.f, 1.f);
  const Tensor short_scores = random_tensor({1, 4, 2}, 5, 0.f, 1.f);
  expect_error(OpKind::EfficientNMS_TRT, attrs_of({}), {&boxes, &short_scores}, "boxes (input 0)",
               4);
  const Tensor flat = random_tensor({1, 5}, 6);
  expect_error(OpKind::EfficientNMS_TRT, attrs_of({}), {&boxes, &flat}, "scores (input 1)", 4);
  Options o;
  o.iou = 1.5f;
  expect_error(OpKind::EfficientNMS_TRT, attrs_of(o), {&boxes, &scores}, "iou_threshold", 4);
  o = {};
  o.k = 0;
  expect_error(OpKind::EfficientNMS_TRT, attrs_of(o), {&boxes, &scores}, "max_output_boxes", 4);
  o = {};
  o.coding = 2;
  expect_error(OpKind::EfficientNMS_TRT, attrs_of(o), {&boxes, &scores}, "box_coding", 4);
  const Tensor ints = Tensor::from_int64s({1, 5, 2}, std::vector<int64_t>(10, 1));
  expect_error(OpKind::EfficientNMS_TRT, attrs_of({}), {&boxes, &ints}, "float32", 4);
  expect_error(OpKind::EfficientNMS_TRT, attrs_of({}), {&boxes, &scores}, "4 outputs", 2);
}

}  // namespace
}  // namespace kiln::test
