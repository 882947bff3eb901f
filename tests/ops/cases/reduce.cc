// ReduceMean, ReduceMax, ReduceL2 (axes attribute) and ReduceSum (axes input): leading, inner,
// trailing and alternating axes, all axes (none given or every one listed), keepdims 0/1,
// negative axes, size-1 axes, long contiguous and long strided reductions, rank 1 and 5,
// ResNet's spatial mean; ReduceSum's empty axes input, with and without noop_with_empty_axes.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Axes {
  const char* name;
  Shape x;
  std::vector<int64_t> axes;  // empty: none given (all axes)
  int64_t keepdims;
  const char* onednn_reference = nullptr;  // see OpCase
};

const Axes kAxes[] = {
    {"spatial", {2, 17, 9, 11}, {2, 3}, 1},
    {"channels_dropped", {2, 17, 9, 11}, {1}, 0},
    {"last_negative", {2, 17, 9, 11}, {-1}, 1},
    {"all", {2, 17, 9, 11}, {}, 1},
    {"alternating", {2, 17, 9, 11}, {0, 2}, 0},
    {"size_one_axis", {3, 1, 7}, {1}, 1, "only an axis of size 1 reduced"},
    {"long_rows", {4, 5000}, {1}, 1},
    {"rank5", {2, 3, 4, 5, 6}, {-1, -2, 0}, 0},
    {"resnet_mean", {8, 256, 7, 7}, {2, 3}, 1},
    {"odd_axes", {2, 17, 9, 11}, {1, 3}, 1},
    {"all_listed", {1, 3, 7, 5}, {0, 1, 2, 3}, 0},
    {"leading_and_size_one", {3, 1, 7}, {0, 1}, 0},
    {"long_columns", {4, 5000}, {0}, 0},
    {"rank1", {33}, {0}, 0},
    {"rank5_alternating", {2, 3, 4, 5, 6}, {1, 3}, 1},
};

// ReduceSum with an axes input of no elements: all axes, or (noop_with_empty_axes) a copy.
OpCase sum_empty_axes(const char* name, int64_t noop, uint32_t seed) {
  OpCase c;
  c.name = name;
  c.op = OpKind::ReduceSum;
  if (noop) c.attrs.set("noop_with_empty_axes", noop);
  c.inputs.push_back({random_tensor({3, 5, 7}, seed, 0.f, 2.f)});
  c.inputs.push_back({int64s({}), true});
  if (noop) c.onednn_reference = "nothing reduced (noop_with_empty_axes): a copy";
  return c;
}

}  // namespace

KILN_OP_CASES(reduce) {
  std::vector<OpCase> r;
  uint32_t seed = 900;
  for (OpKind op : {OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceL2})
    for (const Axes& a : kAxes) {
      OpCase c;
      c.name = a.name;
      c.op = op;
      if (!a.axes.empty()) c.attrs.set("axes", a.axes);
      c.attrs.set("keepdims", a.keepdims);
      c.inputs.push_back({random_tensor(a.x, seed++, -2.f, 2.f)});
      c.onednn_reference = a.onednn_reference;
      r.push_back(std::move(c));
    }
  for (const Axes& a : kAxes) {
    OpCase c;
    c.name = a.name;
    c.op = OpKind::ReduceSum;
    c.attrs.set("keepdims", a.keepdims);
    c.inputs.push_back({random_tensor(a.x, seed++, 0.f, 2.f)});
    if (!a.axes.empty()) c.inputs.push_back({int64s(a.axes), true});
    c.onednn_reference = a.onednn_reference;
    r.push_back(std::move(c));
  }
  r.push_back(sum_empty_axes("empty_axes", 0, seed++));
  r.push_back(sum_empty_axes("noop_empty_axes", 1, seed++));
  return r;
}

}  // namespace kiln::test
