// The ops that only relabel or copy bytes: Reshape (a -1, a 0 kept, rank changes), Flatten
// (axes 0, 1, the last, negative), Squeeze and Unsqueeze (axes as inputs, negative ones),
// Identity, Dropout at inference, and Cast between float32, float16 and int64.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// `op` of x with an optional constant int64 second input (a shape or axes).
OpCase view(OpKind op, std::string name, const Shape& x, uint32_t seed,
            const std::vector<int64_t>& second = {}, bool has_second = true, Attributes a = {}) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  c.attrs = std::move(a);
  c.inputs.push_back({random_tensor(x, seed)});
  if (has_second) c.inputs.push_back({int64s(second), true});
  return c;
}

Attributes axis(int64_t v) {
  Attributes a;
  a.set("axis", v);
  return a;
}

OpCase cast(std::string name, const Tensor& x, DataType to) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Cast;
  c.attrs.set("to", static_cast<int64_t>(to));
  c.inputs.push_back({x});
  return c;
}

}  // namespace

KILN_OP_CASES(views) {
  return {
      view(OpKind::Reshape, "flatten_tail", {2, 16, 5, 7}, 1200, {2, -1}),
      view(OpKind::Reshape, "keep_zero", {2, 16, 5, 7}, 1201, {0, 4, 4, 35}),
      view(OpKind::Reshape, "to_rank4", {6, 20}, 1202, {3, 2, 4, 5}),
      view(OpKind::Flatten, "axis1", {2, 16, 5, 7}, 1210, {}, false, axis(1)),
      view(OpKind::Flatten, "axis0", {2, 3, 4}, 1211, {}, false, axis(0)),
      view(OpKind::Flatten, "last_axis", {2, 3, 4}, 1212, {}, false, axis(3)),
      view(OpKind::Flatten, "negative_axis", {2, 16, 5, 7}, 1213, {}, false, axis(-2)),
      view(OpKind::Squeeze, "pooled", {2, 16, 1, 1}, 1220, {2, 3}),
      view(OpKind::Squeeze, "negative", {3, 1, 5}, 1221, {-2}),
      view(OpKind::Squeeze, "all_ones", {1, 4, 1, 6}, 1222, {}, false),
      view(OpKind::Unsqueeze, "to_rank4", {2, 16}, 1230, {2, 3}),
      view(OpKind::Unsqueeze, "negative", {3, 5}, 1231, {-1}),
      view(OpKind::Identity, "nchw", {2, 16, 5, 7}, 1240, {}, false),
      view(OpKind::Dropout, "inference", {2, 16, 5, 7}, 1250, {}, false),
      cast("f32_to_f16", random_tensor({2, 16, 5, 7}, 1260, -100.f, 100.f), DataType::kFloat16),
      cast("f32_to_i64", random_tensor({3, 17}, 1261, -50.f, 50.f), DataType::kInt64),
      cast("i64_to_f32", Tensor::from_int64s({5}, {-7, 0, 3, 1024, 2047}), DataType::kFloat32),
      cast("f32_to_f32", random_tensor({4, 9}, 1262), DataType::kFloat32),
  };
}

}  // namespace kiln::test
