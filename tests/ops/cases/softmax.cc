// Softmax: the last axis (classifier rows, short and longer than a CUDA block), other axes, the
// default axis, a single element, large logits that overflow exp without the max subtraction.
#include <cmath>
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase softmax(std::string name, const Shape& s, int64_t axis, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Softmax;
  if (axis != 99) c.attrs.set("axis", axis);  // 99: the default (-1 at opset 13)
  c.inputs.push_back({random_tensor(s, seed, -6.f, 6.f)});
  return c;
}

// Logits in ±range (< 64) on a 1/32 grid: exact in float16, so an fp16 run sees the
// reference's inputs and the comparison measures the kernel, not input rounding.
OpCase large_logits(std::string name, const Shape& s, int64_t axis, float range, uint32_t seed) {
  OpCase c = softmax(std::move(name), s, axis, seed);
  Tensor& x = c.inputs[0].t;
  x = random_tensor(s, seed, -range, range);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = std::round(x.data<float>()[i] * 32.f) / 32.f;
  return c;
}

}  // namespace

KILN_OP_CASES(softmax) {
  std::vector<OpCase> r = {
      softmax("rows", {4, 1000}, -1, 300),
      softmax("short_rows", {64, 7}, 1, 301),
      softmax("default_axis", {2, 3, 10}, 99, 302),
      softmax("middle_axis", {2, 9, 5}, 1, 303),
      softmax("rank1", {9}, 0, 304),
      softmax("size_one_axis", {2, 1, 6}, 1, 305),
      softmax("large_channels", {4, 21, 112, 112}, 1, 306),
      softmax("long_rows", {5, 3000}, -1, 307),
      softmax("one_element", {1, 1}, 0, 308),
      softmax("long_middle_axis", {4, 2, 2000}, 1, 309),
      large_logits("large_logits_rows", {256, 1000}, -1, 40.f, 320),
      large_logits("large_logits_middle_axis", {3, 5, 6}, 1, 60.f, 321),
  };
  uint32_t seed = 310;
  for (int64_t axis = -4; axis < 4; ++axis) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on
    // "literal" + std::string.
    std::string name = "rank4_axis";
    if (axis < 0) name += "_minus";
    name += std::to_string(axis < 0 ? -axis : axis);
    r.push_back(softmax(name, {2, 3, 5, 7}, axis, seed++));
  }
  return r;
}

}  // namespace kiln::test
