#include <limits>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

const DataType kAll[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                         DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                         DataType::kInt16,    DataType::kUInt16,  DataType::kInt32,
                         DataType::kUInt32,   DataType::kInt64,   DataType::kUInt64,
                         DataType::kBool};

bool is_unsigned(DataType dt) {
  return dt == DataType::kUInt8 || dt == DataType::kUInt16 || dt == DataType::kUInt32 ||
         dt == DataType::kUInt64;
}

Attributes to(DataType dt) {
  Attributes a;
  a.set("to", static_cast<int64_t>(dt));
  return a;
}

TEST(Cast, EveryPairOfNumericTypes) {
  uint32_t seed = 1;
  for (DataType from : kAll)
    for (DataType dst : kAll) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(dst));
      // In-range values (wrapping and saturation have their own tests); negative ones only
      // where both types are signed (negative float → unsigned saturates, checked below).
      const double lo = is_unsigned(from) || is_unsigned(dst) ? 0 : -100;
      Tensor x = random_of(from, {4, 5}, ++seed, lo, 100);
      Tensor want = naive_broadcast(dst, {&x}, [&](const std::vector<double>& v) {
        if (dst == DataType::kBool) return v[0] != 0 ? 1.0 : 0.0;
        if (!dtype_is_float(dst)) return std::trunc(v[0]);
        return v[0];
      });
      expect_near(run_ok(OpKind::Cast, to(dst), {&x}), want, 0);
    }
}

TEST(Cast, FloatToIntTruncatesTowardZeroAndSaturates) {
  Tensor x = Tensor::from_floats({7}, {-2.7f, -0.5f, 0.5f, 2.7f, 1e10f, -1e10f, NAN});
  expect_near(run_ok(OpKind::Cast, to(DataType::kInt32), {&x}),
              make_tensor(DataType::kInt32, {7}, {-2, 0, 0, 2, 2147483647, -2147483648.0, 0}), 0);
  expect_near(run_ok(OpKind::Cast, to(DataType::kUInt8), {&x}),
              make_tensor(DataType::kUInt8, {7}, {0, 0, 0, 2, 255, 0, 0}), 0);
  Tensor big = Tensor::from_floats({2}, {1e30f, -1e30f});
  Tensor y = run_ok(OpKind::Cast, to(DataType::kInt64), {&big});
  EXPECT_EQ(y.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(y.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
}

TEST(Cast, IntToIntWrapsAround) {
  Tensor x = make_tensor(DataType::kInt32, {4}, {300, -1, 65536, -129});
  expect_near(run_ok(OpKind::Cast, to(DataType::kUInt8), {&x}),
              make_tensor(DataType::kUInt8, {4}, {44, 255, 0, 127}), 0);
  expect_near(run_ok(OpKind::Cast, to(DataType::kInt8), {&x}),
              make_tensor(DataType::kInt8, {4}, {44, -1, 0, 127}), 0);
  Tensor y = run_ok(OpKind::Cast, to(DataType::kUInt64), {&x});
  EXPECT_EQ(y.data<uint64_t>()[1], std::numeric_limits<uint64_t>::max());
}

TEST(Cast, ToBoolIsNonZero) {
  Tensor x = Tensor::from_floats({5}, {0.f, -0.f, 0.1f, -3.f, NAN});
  expect_near(run_ok(OpKind::Cast, to(DataType::kBool), {&x}),
              make_tensor(DataType::kBool, {5}, {0, 0, 1, 1, 1}), 0);
}

TEST(Cast, HalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between two halfs: ties go to the even one (1.0).
  Tensor x = Tensor::from_floats({3}, {1.f + 1.f / 2048, 1.f + 3.f / 2048, 70000.f});
  Tensor y = run_ok(OpKind::Cast, to(DataType::kFloat16), {&x});
  EXPECT_EQ(y.at_double(0), 1.0);
  EXPECT_EQ(y.at_double(1), 1.0 + 2.0 / 1024);
  EXPECT_TRUE(std::isinf(y.at_double(2)));
}

TEST(Cast, Errors) {
  Tensor x = random_of(DataType::kFloat32, {3}, 1);
  expect_error(OpKind::Cast, to(DataType::kString), {&x}, "string");
  expect_error(OpKind::Cast, {}, {&x}, "missing attribute 'to'");
  Attributes bad;
  bad.set("to", int64_t{42});
  expect_error(OpKind::Cast, bad, {&x}, "Cast to data type 42");
}

}  // namespace
}  // namespace kiln::test
