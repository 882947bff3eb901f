// Clip (both bounds, one bound omitted, ReLU6, integer input), Erf, and Pow (a constant float
// exponent, a constant integer one, an elementwise exponent, a broadcast one).
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

Tensor scalar(float v) { return Tensor::from_floats({}, {v}); }

// Clip of x in [-4, 4] with constant bounds; NaN: the bound omitted.
OpCase clip(std::string name, const Shape& s, uint32_t seed, float lo, float hi) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Clip;
  c.inputs.push_back({random_tensor(s, seed, -4.f, 4.f)});
  c.inputs.push_back(lo == lo ? CaseInput{scalar(lo), true} : CaseInput{});
  if (hi == hi) c.inputs.push_back({scalar(hi), true});
  return c;
}

OpCase pow_case(std::string name, const Shape& s, uint32_t seed, CaseInput exponent) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Pow;
  c.inputs.push_back({random_tensor(s, seed, 0.1f, 3.f)});
  c.inputs.push_back(std::move(exponent));
  return c;
}

}  // namespace

KILN_OP_CASES(unary_math) {
  constexpr float kNone = std::numeric_limits<float>::quiet_NaN();
  std::vector<OpCase> r{
      clip("both", {2, 16, 5, 7}, 1100, -1.5f, 2.5f),
      clip("relu6", {3, 24, 4, 4}, 1101, 0.f, 6.f),
      clip("min_only", {3, 5, 7}, 1102, -0.5f, kNone),
      clip("max_only", {3, 5, 7}, 1103, kNone, 1.f),
      clip("no_bounds", {17}, 1104, kNone, kNone),
  };
  {  // integer input and bounds
    OpCase c;
    c.name = "int64";
    c.op = OpKind::Clip;
    c.inputs.push_back({Tensor::from_int64s({6}, {-9, -2, 0, 3, 7, 12})});
    c.inputs.push_back({Tensor::from_int64s({}, {-1}), true});
    c.inputs.push_back({Tensor::from_int64s({}, {5}), true});
    r.push_back(std::move(c));
  }
  for (auto [name, shape] : {std::pair<const char*, Shape>{"nchw", {2, 16, 5, 7}},
                             std::pair<const char*, Shape>{"odd", {3, 5, 7}}}) {
    OpCase c;
    c.name = name;
    c.op = OpKind::Erf;
    c.inputs.push_back({random_tensor(shape, 1110, -3.f, 3.f)});
    r.push_back(std::move(c));
  }
  r.push_back(pow_case("square", {2, 16, 5, 7}, 1120, {scalar(2.f), true}));
  r.push_back(pow_case("fractional", {3, 5, 7}, 1121, {scalar(0.5f), true}));
  r.push_back(pow_case("int_exponent", {2, 8, 3, 3}, 1122, {Tensor::from_int64s({}, {3}), true}));
  r.push_back(pow_case("elementwise", {4, 9}, 1123, {random_tensor({4, 9}, 1124, -2.f, 2.f)}));
  r.push_back(pow_case("broadcast_row", {4, 9}, 1125, {random_tensor({9}, 1126, 0.f, 2.f)}));
  return r;
}

}  // namespace kiln::test
