#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// (X shape, slope shape): slope broadcasts to X's shape.
const std::vector<std::pair<Shape, Shape>> kPReluShapes = {{{2, 3, 4, 5}, {2, 3, 4, 5}},
                                                           {{2, 3, 4, 5}, {3, 1, 1}},
                                                           {{2, 3, 4, 5}, {1}},
                                                           {{2, 3, 4, 5}, {5}},
                                                           {{3, 4}, {}},
                                                           {{1, 3, 2}, {1, 3, 1}}};

TEST(PRelu, SlopeBroadcastsToX) {
  uint32_t seed = 1;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                      DataType::kBFloat16, DataType::kInt32, DataType::kInt64})
    for (const auto& [sx, ss] : kPReluShapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(sx) + " " + shape_str(ss));
      Tensor x = random_of(dt, sx, ++seed, -10, 10);
      Tensor slope = random_of(dt, ss, ++seed, -3, 3);
      Tensor want = naive_broadcast(dt, {&x, &slope}, [](const std::vector<double>& v) {
        return v[0] < 0 ? v[0] * v[1] : v[0];
      });
      expect_near(run_ok(OpKind::PRelu, {}, {&x, &slope}), want, rtol_of(dt), rtol_of(dt));
    }
}

TEST(PRelu, Errors) {
  Tensor x = random_of(DataType::kFloat32, {3, 4}, 1);
  Tensor wide = random_of(DataType::kFloat32, {2, 3, 4}, 2);  // would grow X
  expect_error(OpKind::PRelu, {}, {&x, &wide}, "does not broadcast to X shape [3,4]");
  Tensor bad = random_of(DataType::kFloat32, {3}, 3);
  expect_error(OpKind::PRelu, {}, {&x, &bad}, "do not broadcast");
  Tensor i = random_of(DataType::kInt32, {4}, 4);
  expect_error(OpKind::PRelu, {}, {&x, &i}, "input 1: expected float32");
}

}  // namespace
}  // namespace kiln::test
