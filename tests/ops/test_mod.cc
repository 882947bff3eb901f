#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double py_mod(double a, double b) {  // the divisor's sign
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

TEST(Mod, IntegersTakeTheDivisorsSignOrTheDividendsWithFmod) {
  const DataType types[] = {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64};
  uint32_t seed = 1;
  for (DataType dt : types)
    for (int64_t fmod : {0, 1})
      for (const auto& [sa, sb] : kBroadcastCases) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " fmod " + std::to_string(fmod) + " " +
                     shape_str(sa) + " " + shape_str(sb));
        Tensor a = random_of(dt, sa, ++seed, -50, 50);
        std::vector<double> bv = values_of(random_of(DataType::kInt32, sb, ++seed, 1, 9));
        for (size_t i = 0; i < bv.size(); ++i) bv[i] = (i % 2) ? -bv[i] : bv[i];  // both signs
        Tensor b = make_tensor(dt, sb, bv);
        Attributes at;
        at.set("fmod", fmod);
        Tensor want = naive_broadcast(dt, {&a, &b}, [&](const std::vector<double>& v) {
          return fmod ? std::fmod(v[0], v[1]) : py_mod(v[0], v[1]);
        });
        expect_near(run_ok(OpKind::Mod, at, {&a, &b}), want, 0);
      }
}

TEST(Mod, UnsignedAndFloats) {
  Tensor a = make_tensor(DataType::kUInt8, {4}, {7, 200, 9, 0});
  Tensor b = make_tensor(DataType::kUInt8, {4}, {3, 7, 9, 5});
  expect_near(run_ok(OpKind::Mod, {}, {&a, &b}), make_tensor(DataType::kUInt8, {4}, {1, 4, 0, 0}),
              0);
  Attributes at;
  at.set("fmod", int64_t{1});
  for (DataType dt : kTestFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_of(dt, {2, 5}, 3, -6, 6);
    Tensor y = make_tensor(dt, {5}, {1.5, -2.25, 3, -0.75, 2});
    Tensor want = naive_broadcast(
        dt, {&x, &y}, [](const std::vector<double>& v) { return std::fmod(v[0], v[1]); });
    expect_near(run_ok(OpKind::Mod, at, {&x, &y}), want, 0, rtol_of(dt) * 4);
  }
}

TEST(Mod, Errors) {
  Tensor f = random_of(DataType::kFloat32, {3}, 1);
  expect_error(OpKind::Mod, {}, {&f, &f}, "needs fmod = 1");
  Tensor a = make_tensor(DataType::kInt32, {3}, {1, 2, 3});
  Tensor z = make_tensor(DataType::kInt32, {3}, {1, 0, 2});
  expect_error(OpKind::Mod, {}, {&a, &z}, "Mod by zero (input 1, element 1)");
  Attributes bad;
  bad.set("fmod", int64_t{2});
  expect_error(OpKind::Mod, bad, {&a, &a}, "'fmod' must be 0 or 1");
  Tensor l = make_tensor(DataType::kInt64, {3}, {1, 2, 3});
  expect_error(OpKind::Mod, {}, {&a, &l}, "input 1: expected int32");
  // INT_MIN % -1 is 0, not a trap.
  Tensor m = make_tensor(DataType::kInt32, {1}, {-2147483648.0});
  Tensor n1 = make_tensor(DataType::kInt32, {1}, {-1});
  expect_near(run_ok(OpKind::Mod, {}, {&m, &n1}), make_tensor(DataType::kInt32, {1}, {0}), 0);
}

}  // namespace
}  // namespace kiln::test
