// The ops whose output shapes follow their data: NonZero (float and integer data, ranks 1 to
// 4, with zeros), TopK (every axis, largest and smallest, k from 1 to the extent) and
// NonMaxSuppression (both box formats, several classes and batches, thresholds given or not,
// equal scores), and sizes past a GPU kernel's tile or block. Their CUDA kernels take these
// cases as they come (NonZero and NonMaxSuppression on their bound).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// Random data with every third element zero.
Tensor with_zeros(const Shape& s, uint32_t seed) {
  Tensor t = random_tensor(s, seed);
  for (int64_t i = 0; i < t.numel(); i += 3) t.data<float>()[i] = 0.f;
  return t;
}

OpCase non_zero(std::string name, Tensor x) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::NonZero;
  c.inputs.push_back({std::move(x)});
  return c;
}

OpCase top_k(std::string name, const Shape& x, int64_t axis, int64_t k, bool largest,
             uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::TopK;
  c.attrs.set("axis", axis);
  c.attrs.set("largest", int64_t{largest});
  c.inputs.push_back({random_tensor(x, seed)});
  c.inputs.push_back({Tensor::from_int64s({1}, {k}), true});
  c.outputs = 2;
  return c;
}

// B batches of N random corner boxes (or center boxes) in a 16×16 field, C classes of scores.
OpCase nms(std::string name, int64_t b, int64_t n, int64_t classes, int64_t center, int64_t max_out,
           float iou, float score, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::NonMaxSuppression;
  c.attrs.set("center_point_box", center);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> pos(0, 16), size(1, 6);
  std::vector<float> boxes(static_cast<size_t>(b * n * 4));
  for (size_t i = 0; i < boxes.size(); i += 4) {
    const float y = pos(gen), x = pos(gen), h = size(gen), w = size(gen);
    if (center) {
      boxes[i] = x, boxes[i + 1] = y, boxes[i + 2] = w, boxes[i + 3] = h;
    } else {
      boxes[i] = y, boxes[i + 1] = x, boxes[i + 2] = y + h, boxes[i + 3] = x + w;
    }
  }
  c.inputs.push_back({Tensor::from_floats({b, n, 4}, boxes)});
  c.inputs.push_back({random_tensor({b, classes, n}, seed + 1, 0.f, 1.f)});
  c.inputs.push_back({Tensor::from_int64s({1}, {max_out}), true});
  c.inputs.push_back({Tensor::from_floats({1}, {iou}), true});
  if (score >= 0) c.inputs.push_back({Tensor::from_floats({1}, {score}), true});
  return c;
}

// `c` (a NonMaxSuppression case) with its box coordinates rounded to eighths and its scores
// down to multiples of `score_step`: values float16 and bfloat16 hold exactly, so that (with
// thresholds they hold too) every precision selects float32's boxes, however many. A coarse
// step gives many equal scores, which the reference orders by the lower index.
OpCase on_grid(OpCase c, float score_step) {
  Tensor& boxes = c.inputs[0].t;
  for (int64_t i = 0; i < boxes.numel(); ++i)
    boxes.data<float>()[i] = std::round(boxes.data<float>()[i] * 8.f) / 8.f;
  Tensor& scores = c.inputs[1].t;
  for (int64_t i = 0; i < scores.numel(); ++i)
    scores.data<float>()[i] = std::floor(scores.data<float>()[i] / score_step) * score_step;
  return c;
}

}  // namespace

KILN_OP_CASES(data_shaped) {
  return {
      non_zero("rank1", with_zeros({37}, 1)),
      non_zero("rank4", with_zeros({2, 3, 4, 5}, 2)),
      non_zero("int64", Tensor::from_int64s({2, 3}, {0, 4, -2, 0, 0, 9})),
      top_k("last_axis_largest", {4, 33}, -1, 5, true, 3),
      top_k("axis0_smallest", {9, 4, 3}, 0, 9, false, 4),
      top_k("middle_axis", {2, 17, 6}, 1, 1, true, 5),
      nms("corners", 1, 64, 1, 0, 10, 0.5f, 0.1f, 6),
      nms("centers_classes", 2, 50, 3, 1, 5, 0.4f, -1, 7),
      nms("all_kept_by_iou_1", 1, 30, 2, 0, 100, 1.f, 0.f, 8),
      // Sizes where a GPU kernel works in tiles and blocks: several tiles of a flat scan,
      // nothing to select, a row longer than a block, a thousand boxes.
      non_zero("large", with_zeros({3, 70, 90}, 9)),
      non_zero("all_zero", Tensor::from_floats({4, 6}, std::vector<float>(24, 0.f))),
      top_k("long_axis", {3, 1000}, -1, 100, true, 10),
      top_k("long_middle_axis_smallest", {2, 1000, 3}, 1, 100, false, 11),
      on_grid(nms("thousand_boxes", 1, 1000, 2, 0, 300, 0.25f, 0.0625f, 12), 1.f / 256),
      on_grid(nms("tied_scores", 2, 200, 2, 0, 100, 0.375f, 0.125f, 13), 0.25f),
  };
}

}  // namespace kiln::test
