#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// (base dtype, exponent dtype, base range, exponent range): the output has the base dtype.
struct PowCase {
  DataType base, exponent;
  double lo, hi, e_lo, e_hi;
};

const PowCase kPowCases[] = {
    {DataType::kFloat32, DataType::kFloat32, 0.1, 4, -3, 3},
    {DataType::kFloat64, DataType::kFloat64, 0.1, 4, -3, 3},
    {DataType::kFloat16, DataType::kFloat16, 0.1, 3, -2, 2},
    {DataType::kBFloat16, DataType::kFloat32, 0.1, 3, -2, 2},
    {DataType::kFloat32, DataType::kInt64, -4, 4, -3, 4},
    {DataType::kFloat32, DataType::kInt32, -4, 4, -3, 4},
    {DataType::kFloat32, DataType::kUInt64, -4, 4, 0, 5},
    {DataType::kFloat64, DataType::kUInt8, -4, 4, 0, 5},
    {DataType::kInt32, DataType::kInt32, -6, 6, 0, 6},
    {DataType::kInt64, DataType::kInt64, -6, 6, 0, 8},
    {DataType::kInt64, DataType::kUInt32, -6, 6, 0, 8},
    // Integer base, float exponent: pow in double, truncated toward zero.
    {DataType::kInt32, DataType::kFloat32, 0, 9, 0, 3},
    {DataType::kInt64, DataType::kFloat64, 1, 9, -1, 2.5},
};

TEST(Pow, MixedDtypesBroadcast) {
  uint32_t seed = 1;
  for (const PowCase& c : kPowCases)
    for (const auto& [sa, sb] : kBroadcastCases) {
      SCOPED_TRACE(std::string(dtype_name(c.base)) + " ^ " + dtype_name(c.exponent) + " " +
                   shape_str(sa) + " " + shape_str(sb));
      Tensor x = random_of(c.base, sa, ++seed, c.lo, c.hi);
      Tensor y = random_of(c.exponent, sb, ++seed, c.e_lo, c.e_hi);
      const bool int_base = !dtype_is_float(c.base);
      Tensor want = naive_broadcast(c.base, {&x, &y}, [&](const std::vector<double>& v) {
        const double p = std::pow(v[0], v[1]);
        return int_base ? std::trunc(p) : p;
      });
      expect_near(run_ok(OpKind::Pow, {}, {&x, &y}), want, rtol_of(c.base), rtol_of(c.base));
    }
}

TEST(Pow, IntegerNegativeExponents) {
  Tensor x = make_tensor(DataType::kInt32, {5}, {1, -1, -1, 2, -3});
  Tensor y = make_tensor(DataType::kInt32, {5}, {-4, -3, -2, -1, -2});
  expect_near(run_ok(OpKind::Pow, {}, {&x, &y}),
              make_tensor(DataType::kInt32, {5}, {1, -1, 1, 0, 0}), 0);
  Tensor zero = make_tensor(DataType::kInt32, {1}, {0});
  Tensor neg = make_tensor(DataType::kInt32, {1}, {-1});
  expect_error(OpKind::Pow, {}, {&zero, &neg}, "division by zero");
}

TEST(Pow, LargeIntegerPowersAreExact) {
  Tensor x = make_tensor(DataType::kInt64, {2}, {3, -7});
  Tensor y = make_tensor(DataType::kInt64, {2}, {39, 21});
  Tensor z = run_ok(OpKind::Pow, {}, {&x, &y});
  EXPECT_EQ(z.data<int64_t>()[0], 4052555153018976267LL);  // 3^39, beyond double's 53 bits
  EXPECT_EQ(z.data<int64_t>()[1], -558545864083284007LL);  // (-7)^21
}

TEST(Pow, Errors) {
  check_binary_errors(OpKind::Pow);
  Tensor u8 = random_of(DataType::kUInt8, {3}, 1, 0, 5);
  Tensor f = random_of(DataType::kFloat32, {3}, 2);
  expect_error(OpKind::Pow, {}, {&u8, &f}, "input 0: expected one of");
  Tensor b = random_of(DataType::kBool, {3}, 3);
  expect_error(OpKind::Pow, {}, {&f, &b}, "input 1: expected one of");
}

}  // namespace
}  // namespace kiln::test
