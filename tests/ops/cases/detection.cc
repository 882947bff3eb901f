// A detector's last ops: ArgMax (every axis, kept or dropped, ties, the last index) and
// EfficientNMS_TRT (shared and per-class boxes, both box codings, class-wise and agnostic, a
// background class, the sigmoid, more candidates than a block, the 4096 cap). The NMS cases'
// boxes sit on a grid of eighths and their scores on multiples of 1/256, which float16 and
// bfloat16 hold exactly, and thresholds they hold too, so that every precision selects float32's
// detections.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase arg_max(std::string name, Tensor x, int64_t axis, bool keepdims, bool last = false) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::ArgMax;
  c.attrs.set("axis", axis);
  c.attrs.set("keepdims", int64_t{keepdims});
  if (last) c.attrs.set("select_last_index", int64_t{1});
  c.inputs.push_back({std::move(x)});
  return c;
}

// Values on a coarse grid: many ties.
Tensor coarse(const Shape& s, uint32_t seed) {
  Tensor t = random_tensor(s, seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = std::round(t.data<float>()[i] * 4.f) / 4.f;
  return t;
}

struct Nms {
  int64_t batch = 1, n = 64, classes = 3, coding = 0, k = 20, background = -1;
  bool per_class = false, agnostic = false, sigmoid = false;
  float iou = 0.5f, score = 0.1f;
};

// Boxes clustered in a 32×32 field (many overlaps), on a grid of eighths; scores in [0, 1) (or
// logits in [-4, 2) with the sigmoid) on multiples of 1/256.
OpCase efficient_nms(std::string name, const Nms& p, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::EfficientNMS_TRT;
  c.attrs.set("score_threshold", p.score);
  c.attrs.set("iou_threshold", p.iou);
  c.attrs.set("max_output_boxes", p.k);
  c.attrs.set("background_class", p.background);
  c.attrs.set("score_activation", int64_t{p.sigmoid});
  c.attrs.set("class_agnostic", int64_t{p.agnostic});
  c.attrs.set("box_coding", p.coding);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> pos(4, 28), size(2, 10);
  const Shape bs = p.per_class ? Shape{p.batch, p.n, p.classes, 4} : Shape{p.batch, p.n, 4};
  std::vector<float> boxes(static_cast<size_t>(shape_numel(bs)));
  auto grid = [](float v) { return std::round(v * 8.f) / 8.f; };
  for (size_t i = 0; i < boxes.size(); i += 4) {
    const float cx = grid(std::round(pos(gen) / 6) * 6 + size(gen) / 4);
    const float cy = grid(std::round(pos(gen) / 6) * 6 + size(gen) / 4);
    const float w = grid(size(gen)), h = grid(size(gen));
    if (p.coding == 1) {
      boxes[i] = cx, boxes[i + 1] = cy, boxes[i + 2] = w, boxes[i + 3] = h;
    } else {
      boxes[i] = cx - w / 2, boxes[i + 1] = cy - h / 2, boxes[i + 2] = cx + w / 2,
      boxes[i + 3] = cy + h / 2;
    }
  }
  c.inputs.push_back({Tensor::from_floats(bs, boxes)});
  Tensor scores = p.sigmoid ? random_tensor({p.batch, p.n, p.classes}, seed + 1, -4.f, 2.f)
                            : random_tensor({p.batch, p.n, p.classes}, seed + 1, 0.f, 1.f);
  for (int64_t i = 0; i < scores.numel(); ++i)
    scores.data<float>()[i] = std::floor(scores.data<float>()[i] * 256.f) / 256.f;
  c.inputs.push_back({std::move(scores)});
  c.outputs = 4;
  return c;
}

Nms with(Nms p, void (*f)(Nms&)) {
  f(p);
  return p;
}

}  // namespace

KILN_OP_CASES(detection) {
  return {
      arg_max("last_axis", random_tensor({4, 33}, 1), -1, true),
      arg_max("middle_axis_dropped", random_tensor({2, 17, 6}, 2), 1, false),
      arg_max("ties_axis0", coarse({9, 4, 3}, 3), 0, true),
      arg_max("ties_last_index", coarse({5, 7}, 4), 1, true, true),
      arg_max("classes_of_detections", random_tensor({2, 5040, 80}, 5), 2, true),
      efficient_nms("shared_corners", Nms{}, 10),
      efficient_nms("center_size_batch", with(Nms{}, [](Nms& p) { p.batch = 3, p.coding = 1; }),
                    11),
      efficient_nms("per_class_boxes",
                    with(Nms{}, [](Nms& p) { p.per_class = true, p.classes = 4; }), 12),
      efficient_nms("agnostic_background",
                    with(Nms{}, [](Nms& p) { p.agnostic = true, p.background = 0, p.k = 50; }), 13),
      efficient_nms("sigmoid", with(Nms{}, [](Nms& p) { p.sigmoid = true, p.score = 0.25f; }), 14),
      efficient_nms("room_to_spare", with(Nms{}, [](Nms& p) { p.k = 300, p.iou = 0.375f; }), 15),
      // More candidates than a block's threads, and more than the 4096 that enter NMS.
      efficient_nms("many_candidates",
                    with(Nms{}, [](Nms& p) { p.batch = 2, p.n = 2000, p.classes = 4, p.k = 100; }),
                    16),
      efficient_nms("yolo_like",
                    with(Nms{},
                         [](Nms& p) {
                           p.n = 5040, p.classes = 80, p.score = 0.001f, p.iou = 0.625f, p.k = 100;
                         }),
                    17),
  };
}

}  // namespace kiln::test
