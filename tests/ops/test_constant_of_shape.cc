#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(ConstantOfShape, FillsTheShapeWithTheValue) {
  Tensor shape = Tensor::from_int64s({3}, {2, 3, 4});
  Tensor out = run_ok(OpKind::ConstantOfShape, {}, {&shape});
  expect_near(out, make_tensor(DataType::kFloat32, {2, 3, 4}, std::vector<double>(24, 0)), 0);
  for (DataType dt : {DataType::kInt64, DataType::kFloat16, DataType::kBool, DataType::kInt32}) {
    SCOPED_TRACE(dtype_name(dt));
    Attributes at;
    at.set("value", make_tensor(dt, {1}, {1}));
    Tensor s = Tensor::from_int64s({2}, {3, 5});
    expect_near(run_ok(OpKind::ConstantOfShape, at, {&s}),
                make_tensor(dt, {3, 5}, std::vector<double>(15, 1)), 0);
  }
  Tensor scalar_shape = Tensor::from_int64s({0}, {});
  Attributes seven;
  seven.set("value", make_tensor(DataType::kFloat32, {1}, {7.5}));
  expect_near(run_ok(OpKind::ConstantOfShape, seven, {&scalar_shape}),
              make_tensor(DataType::kFloat32, {}, {7.5}), 0);
  Tensor empty = Tensor::from_int64s({2}, {0, 3});
  EXPECT_EQ(run_ok(OpKind::ConstantOfShape, seven, {&empty}).shape(), (Shape{0, 3}));
}

TEST(ConstantOfShape, Errors) {
  Tensor neg = Tensor::from_int64s({2}, {2, -1});
  expect_error(OpKind::ConstantOfShape, {}, {&neg}, "negative dimension");
  Tensor two_d = Tensor::from_int64s({1, 2}, {2, 2});
  expect_error(OpKind::ConstantOfShape, {}, {&two_d}, "must be 1-D");
  Attributes many;
  many.set("value", make_tensor(DataType::kFloat32, {2}, {1, 2}));
  Tensor s = Tensor::from_int64s({1}, {3});
  expect_error(OpKind::ConstantOfShape, many, {&s}, "must hold one element");
}

}  // namespace
}  // namespace kiln::test
