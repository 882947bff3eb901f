// NonMaxSuppression on random boxes, checked against what greedy suppression means rather than
// a second copy of the loop: per (batch, class), the selection is in score order, above the
// score threshold, at most max_output_boxes_per_class, no two selected boxes overlap by more
// than the IoU threshold, and every candidate left out overlaps a better selected box by more
// than it (or comes after the count was reached). Both box formats, ties, and bad inputs.
#include <algorithm>
#include <random>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// IoU of corner boxes (y1, x1, y2, x2) with sorted corners, by inclusion–exclusion.
double iou(const double* a, const double* b) {
  const double ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
  const double ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
  const double by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  const double bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
  const double ih = std::max(0.0, std::min(ay1, by1) - std::max(ay0, by0));
  const double iw = std::max(0.0, std::min(ax1, bx1) - std::max(ax0, bx0));
  const double inter = ih * iw;
  const double uni = (ay1 - ay0) * (ax1 - ax0) + (by1 - by0) * (bx1 - bx0) - inter;
  return uni > 0 && inter > 0 ? inter / uni : 0;
}

struct Nms {
  int64_t max_out;
  float iou_thr, score_thr;
};

void check_selection(const Tensor& boxes, const Tensor& scores, const Nms& p, const Tensor& sel) {
  const int64_t B = boxes.shape()[0], N = boxes.shape()[1], C = scores.shape()[1];
  ASSERT_EQ(sel.shape().size(), 2u);
  ASSERT_EQ(sel.shape()[1], 3);
  const std::vector<int64_t> rows = sel.to_int64s();
  const std::vector<float> bx = boxes.to_floats(), sc = scores.to_floats();
  size_t r = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      SCOPED_TRACE("batch " + std::to_string(b) + " class " + std::to_string(c));
      auto score = [&](int64_t i) { return sc[(b * C + c) * N + i]; };
      auto box = [&](int64_t i) {
        std::vector<double> v(4);
        for (int k = 0; k < 4; ++k) v[k] = bx[(b * N + i) * 4 + k];
        return v;
      };
      std::vector<int64_t> picked;
      while (r < rows.size() / 3 && rows[3 * r] == b && rows[3 * r + 1] == c)
        picked.push_back(rows[3 * r++ + 2]);
      EXPECT_LE(static_cast<int64_t>(picked.size()), p.max_out);
      for (size_t k = 0; k < picked.size(); ++k) {
        EXPECT_GT(score(picked[k]), p.score_thr);
        if (k) EXPECT_GE(score(picked[k - 1]), score(picked[k]));
        for (size_t j = 0; j < k; ++j)
          EXPECT_LE(iou(box(picked[j]).data(), box(picked[k]).data()), p.iou_thr + 1e-6);
      }
      if (static_cast<int64_t>(picked.size()) == p.max_out) continue;
      // Every candidate left out is suppressed by a selected box that comes first.
      for (int64_t i = 0; i < N; ++i) {
        if (score(i) <= p.score_thr) continue;
        if (std::find(picked.begin(), picked.end(), i) != picked.end()) continue;
        bool by_better = false;
        for (int64_t j : picked)
          by_better = by_better || ((score(j) > score(i) || (score(j) == score(i) && j < i)) &&
                                    iou(box(j).data(), box(i).data()) > p.iou_thr - 1e-6);
        EXPECT_TRUE(by_better) << "box " << i << " was left out";
      }
    }
  EXPECT_EQ(r, rows.size() / 3) << "rows out of (batch, class) order";
}

TEST(NonMaxSuppression, RandomBoxesFollowGreedySuppression) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> pos(0, 10), size(0.5f, 4), score(0, 1);
  std::uniform_int_distribution<int> coarse(0, 4);
  const Nms params[] = {{3, 0.5f, 0.2f}, {100, 0.3f, 0.0f}, {100, 0.0f, 0.5f}, {1, 0.7f, 0.1f}};
  for (int64_t center : {0, 1})
    for (const Nms& p : params) {
      const int64_t B = 2, N = 40, C = 3;
      std::vector<float> bx(B * N * 4), sc(B * C * N);
      for (int64_t i = 0; i < B * N; ++i) {
        const float y = pos(gen), x = pos(gen), h = size(gen), w = size(gen);
        float* q = &bx[i * 4];
        if (center) {
          q[0] = x, q[1] = y, q[2] = w, q[3] = h;
        } else if (i % 2) {
          q[0] = y + h, q[1] = x + w, q[2] = y, q[3] = x;  // flipped corners
        } else {
          q[0] = y, q[1] = x, q[2] = y + h, q[3] = x + w;
        }
      }
      for (float& s : sc) s = coarse(gen) < 2 ? coarse(gen) * 0.2f : score(gen);  // ties too
      Tensor boxes = Tensor::from_floats({B, N, 4}, bx),
             scores = Tensor::from_floats({B, C, N}, sc);
      // The checker reads corners: give it the center boxes as corners.
      std::vector<float> corners = bx;
      if (center)
        for (int64_t i = 0; i < B * N; ++i) {
          const float* q = &bx[i * 4];
          corners[i * 4 + 0] = q[1] - q[3] / 2, corners[i * 4 + 1] = q[0] - q[2] / 2;
          corners[i * 4 + 2] = q[1] + q[3] / 2, corners[i * 4 + 3] = q[0] + q[2] / 2;
        }
      Tensor max_out = Tensor::from_int64s({1}, {p.max_out});
      Tensor iou_t = Tensor::from_floats({1}, {p.iou_thr}),
             score_t = Tensor::from_floats({1}, {p.score_thr});
      Attributes a;
      a.set("center_point_box", center);
      Tensor sel =
          run_ok(OpKind::NonMaxSuppression, a, {&boxes, &scores, &max_out, &iou_t, &score_t});
      SCOPED_TRACE("center " + std::to_string(center) + " max " + std::to_string(p.max_out) +
                   " iou " + std::to_string(p.iou_thr) + " score " + std::to_string(p.score_thr));
      check_selection(Tensor::from_floats({B, N, 4}, corners), scores, p, sel);
      EXPECT_GT(sel.shape()[0], 0);
    }
}

// Equal scores go to the lower index; suppression needs IoU strictly above the threshold, and
// selection a score strictly above its threshold.
TEST(NonMaxSuppression, EdgeSemantics) {
  // Boxes 0 and 1 identical (IoU 1); box 2 half overlapping box 0 (IoU 1/3).
  Tensor boxes = Tensor::from_floats({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0.5, 1, 1.5});
  Tensor scores = Tensor::from_floats({1, 1, 3}, {0.9f, 0.9f, 0.5f});
  Tensor ten = Tensor::from_int64s({1}, {10});
  Tensor third = Tensor::from_floats({1}, {1.f / 3.f}), half = Tensor::from_floats({1}, {0.5f});
  Tensor at_half = Tensor::from_floats({1}, {0.5f});
  // IoU(0, 2) = 1/3 is not above 1/3: kept; box 1 (equal score, higher index) suppressed by 0.
  Tensor sel = run_ok(OpKind::NonMaxSuppression, {}, {&boxes, &scores, &ten, &third});
  EXPECT_EQ(sel.to_int64s(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  // A score equal to the threshold is not above it.
  sel = run_ok(OpKind::NonMaxSuppression, {}, {&boxes, &scores, &ten, &half, &at_half});
  EXPECT_EQ(sel.to_int64s(), (std::vector<int64_t>{0, 0, 0}));
  // No max_output_boxes_per_class: nothing selected.
  sel = run_ok(OpKind::NonMaxSuppression, {}, {&boxes, &scores});
  EXPECT_EQ(sel.shape(), (Shape{0, 3}));
}

TEST(NonMaxSuppression, BadInputsAreRefused) {
  Tensor boxes = random_tensor({1, 3, 4}, 2), scores = random_tensor({1, 2, 3}, 3);
  Tensor bad_boxes = random_tensor({1, 3, 5}, 2), bad_scores = random_tensor({1, 2, 4}, 3);
  Tensor ten = Tensor::from_int64s({1}, {10});
  Tensor big_iou = Tensor::from_floats({1}, {1.5f});
  Tensor f_max = Tensor::from_floats({1}, {3.f});
  expect_error(OpKind::NonMaxSuppression, {}, {&bad_boxes, &scores}, "must be [batch, boxes, 4]");
  expect_error(OpKind::NonMaxSuppression, {}, {&boxes, &bad_scores}, "scores (input 1) must be");
  expect_error(OpKind::NonMaxSuppression, {}, {&boxes, &scores, &ten, &big_iou}, "outside 0 to 1");
  expect_error(OpKind::NonMaxSuppression, {}, {&boxes, &scores, &f_max}, "expected int64");
}

}  // namespace
}  // namespace kiln::test
