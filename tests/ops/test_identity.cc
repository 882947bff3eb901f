#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Identity, CopiesEveryNumericType) {
  uint32_t seed = 1;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kUInt8,
                      DataType::kBool})
    for (const Shape& s : {Shape{}, Shape{3, 4}, Shape{0, 2}}) {
      Tensor x = random_of(dt, s, ++seed);
      Tensor y = run_ok(OpKind::Identity, {}, {&x});
      expect_near(y, x, 0);
      if (x.numel() > 0) {
        EXPECT_NE(y.raw(), x.raw());  // a copy, not an alias
      }
    }
}

TEST(Identity, Errors) {
  Tensor x = random_of(DataType::kFloat32, {3}, 1);
  expect_error(OpKind::Identity, {}, {&x, &x}, "inputs");
}

}  // namespace
}  // namespace kiln::test
