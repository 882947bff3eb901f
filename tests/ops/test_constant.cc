#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Constant, OutputsTheValueAttribute) {
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16, DataType::kBool}) {
    Tensor v = random_of(dt, {2, 3}, 5);
    Attributes a;
    a.set("value", v);
    expect_near(run_ok(OpKind::Constant, a, {}), v, 0);
  }
}

TEST(Constant, ScalarAndListForms) {
  Attributes f;
  f.set("value_float", 2.5f);
  expect_near(run_ok(OpKind::Constant, f, {}), Tensor::from_floats({}, {2.5f}), 0);
  Attributes fs;
  fs.set("value_floats", std::vector<float>{1.f, -2.f});
  expect_near(run_ok(OpKind::Constant, fs, {}), Tensor::from_floats({2}, {1.f, -2.f}), 0);
  Attributes i;
  i.set("value_int", int64_t{7});
  expect_near(run_ok(OpKind::Constant, i, {}), Tensor::from_int64s({}, {7}), 0);
  Attributes is;
  is.set("value_ints", std::vector<int64_t>{3, 4, 5});
  expect_near(run_ok(OpKind::Constant, is, {}), Tensor::from_int64s({3}, {3, 4, 5}), 0);
}

TEST(Constant, Errors) {
  expect_error(OpKind::Constant, {}, {}, "missing attribute 'value'");
  Attributes s;
  s.set("value_string", std::string("x"));
  expect_error(OpKind::Constant, s, {}, "value_string");
  Tensor x = random_of(DataType::kFloat32, {1}, 1);
  Attributes a;
  a.set("value", x);
  expect_error(OpKind::Constant, a, {&x}, "expected 0 inputs");
}

}  // namespace
}  // namespace kiln::test
