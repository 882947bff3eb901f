// Resize: nearest (every nearest_mode), linear and cubic, the coordinate transformations the
// exporters write, scales or sizes, up- and downsampling by odd factors; FPN's nearest ×2.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

Tensor int64s(const std::vector<int64_t>& v) {
  Tensor t(DataType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Inputs X, roi (omitted), scales or sizes (constants).
OpCase resize(std::string name, const Shape& x, const std::string& mode, const std::string& coord,
              const std::string& nearest, std::vector<float> scales, std::vector<int64_t> sizes,
              uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Resize;
  c.attrs.set("mode", mode);
  c.attrs.set("coordinate_transformation_mode", coord);
  c.attrs.set("nearest_mode", nearest);
  c.inputs.push_back({random_tensor(x, seed, -2.f, 2.f)});
  c.inputs.push_back({});  // roi
  if (!scales.empty()) {
    c.inputs.push_back({Tensor::from_floats({static_cast<int64_t>(scales.size())}, scales), true});
  } else {
    c.inputs.push_back({});
    c.inputs.push_back({int64s(sizes), true});
  }
  return c;
}

}  // namespace

KILN_OP_CASES(resize) {
  uint32_t seed = 1000;
  std::vector<OpCase> r = {
      resize("fpn_nearest_x2", {2, 24, 7, 9}, "nearest", "asymmetric", "floor", {1, 1, 2, 2}, {},
             seed++),
      resize("nearest_x8", {1, 16, 4, 5}, "nearest", "asymmetric", "floor", {1, 1, 8, 8}, {},
             seed++),
  };
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    r.push_back(resize(std::string("nearest_") + nearest, {1, 3, 7, 5}, "nearest", "half_pixel",
                       nearest, {}, {1, 3, 11, 4}, seed++));
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    r.push_back(resize(std::string("linear_up_") + coord, {2, 8, 5, 6}, "linear", coord,
                       "round_prefer_floor", {1, 1, 2.5f, 1.5f}, {}, seed++));
    r.push_back(resize(std::string("linear_down_") + coord, {1, 5, 13, 11}, "linear", coord,
                       "round_prefer_floor", {}, {1, 5, 5, 4}, seed++));
  }
  r.push_back(resize("cubic", {1, 4, 6, 7}, "cubic", "half_pixel", "round_prefer_floor", {},
                     {1, 4, 9, 10}, seed++));
  return r;
}

}  // namespace kiln::test
