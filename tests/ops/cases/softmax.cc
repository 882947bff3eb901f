// Softmax: the last axis (classifier rows, short and long), other axes, the default axis.
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
