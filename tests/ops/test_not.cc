#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Not, NegatesEveryElement) {
  Tensor x = make_tensor(DataType::kBool, {2, 3}, {1, 0, 0, 1, 1, 0});
  expect_near(run_ok(OpKind::Not, {}, {&x}),
              make_tensor(DataType::kBool, {2, 3}, {0, 1, 1, 0, 0, 1}), 0);
  Tensor empty(DataType::kBool, {0, 4});
  EXPECT_EQ(run_ok(OpKind::Not, {}, {&empty}).shape(), (Shape{0, 4}));
}

TEST(Not, RefusesNonBool) {
  Tensor f = make_tensor(DataType::kFloat32, {2}, {1, 0});
  expect_error(OpKind::Not, {}, {&f}, "expected bool, got float32");
}

}  // namespace
}  // namespace kiln::test
