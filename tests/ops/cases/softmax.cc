// Softmax: the last axis (classifier rows, short and long), other axes, the default axis.
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
  return {
      softmax("rows", {4, 1000}, -1, 300),
      softmax("short_rows", {64, 7}, 1, 301),
      softmax("default_axis", {2, 3, 10}, 99, 302),
      softmax("middle_axis", {2, 9, 5}, 1, 303),
      softmax("rank4_channels", {2, 16, 5, 7}, 1, 304),
  };
}

}  // namespace kiln::test
