#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Three-way broadcasting shapes: condition, X, Y.
const std::vector<std::vector<Shape>> kWhereShapes = {
    {{2, 3}, {2, 3}, {2, 3}}, {{2, 3}, {}, {}},      {{}, {2, 3}, {3}}, {{3, 1}, {1, 4}, {4}},
    {{2, 1, 1}, {3, 1}, {4}}, {{4}, {2, 3, 4}, {1}}, {{0, 2}, {2}, {1}}};

TEST(Where, BroadcastsThreeWaysOnSeveralTypes) {
  uint32_t seed = 1;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kInt8,
                      DataType::kBool, DataType::kFloat64})
    for (const auto& s : kWhereShapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(s[0]) + shape_str(s[1]) +
                   shape_str(s[2]));
      Tensor c = random_of(DataType::kBool, s[0], ++seed);
      Tensor x = random_of(dt, s[1], ++seed, 0, 100);
      Tensor y = random_of(dt, s[2], ++seed, -100, 0);
      Tensor want = naive_broadcast(
          dt, {&c, &x, &y}, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
      expect_near(run_ok(OpKind::Where, {}, {&c, &x, &y}), want, 0);
    }
}

TEST(Where, Errors) {
  Tensor c = random_of(DataType::kBool, {2, 3}, 1);
  Tensor x = random_of(DataType::kFloat32, {2, 3}, 2);
  Tensor x64 = random_of(DataType::kFloat64, {2, 3}, 3);
  Tensor bad = random_of(DataType::kFloat32, {4}, 4);
  expect_error(OpKind::Where, {}, {&x, &x, &x}, "condition): expected bool, got float32");
  expect_error(OpKind::Where, {}, {&c, &x, &x64}, "input 2: expected float32");
  expect_error(OpKind::Where, {}, {&c, &x, &bad}, "do not broadcast");
  expect_error(OpKind::Where, {}, {&c, &x}, "inputs");
}

}  // namespace
}  // namespace kiln::test
