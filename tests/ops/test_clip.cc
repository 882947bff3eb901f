#include <limits>
#include <optional>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// (min, max), either may be omitted.
const std::vector<std::pair<std::optional<double>, std::optional<double>>> kBounds = {
    {-2, 3}, {-2, std::nullopt}, {std::nullopt, 3}, {std::nullopt, std::nullopt}, {0, 0},
    {4, 1}};  // min > max: everything becomes max

TEST(Clip, MatchesFormulaOnSeveralTypes) {
  uint32_t seed = 1;
  for (DataType dt :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
        DataType::kInt8, DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kUInt64})
    for (const auto& [lo, hi] : kBounds) {
      const bool is_unsigned = dt == DataType::kUInt8 || dt == DataType::kUInt64;
      if (is_unsigned && ((lo && *lo < 0) || (hi && *hi < 0))) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " min " + (lo ? std::to_string(*lo) : "-") +
                   " max " + (hi ? std::to_string(*hi) : "-"));
      Tensor x = random_of(dt, {3, 4, 5}, ++seed, is_unsigned ? 0 : -6, 6);
      Tensor tmin = make_tensor(dt, {}, {lo.value_or(0)});
      Tensor tmax = make_tensor(dt, {}, {hi.value_or(0)});
      Tensor want = naive_broadcast(dt, {&x}, [&](const std::vector<double>& v) {
        double y = v[0];
        if (lo && y < *lo) y = *lo;
        if (hi && y > *hi) y = *hi;
        return y;
      });
      std::vector<const Tensor*> ins = {&x, lo ? &tmin : nullptr, hi ? &tmax : nullptr};
      expect_near(run_ok(OpKind::Clip, {}, ins), want, 0);
      if (!hi) {  // also without the trailing omitted input
        ins.pop_back();
        expect_near(run_ok(OpKind::Clip, {}, ins), want, 0);
      }
    }
}

TEST(Clip, DefaultsAreTypeLimits) {
  Tensor x = make_tensor(DataType::kInt8, {3}, {-128, 0, 127});
  expect_near(run_ok(OpKind::Clip, {}, {&x}), x, 0);
  Tensor f = Tensor::from_floats({3}, {-INFINITY, NAN, INFINITY});
  Tensor y = run_ok(OpKind::Clip, {}, {&f});
  EXPECT_EQ(y.data<float>()[0], -INFINITY);
  EXPECT_TRUE(std::isnan(y.data<float>()[1]));
  EXPECT_EQ(y.data<float>()[2], INFINITY);
}

TEST(Clip, Errors) {
  Tensor x = random_of(DataType::kFloat32, {3}, 1);
  Tensor vec = random_of(DataType::kFloat32, {2}, 2);
  expect_error(OpKind::Clip, {}, {&x, &vec}, "min must be a scalar");
  Tensor i = make_tensor(DataType::kInt64, {}, {0});
  expect_error(OpKind::Clip, {}, {&x, nullptr, &i}, "input 2: expected float32");
  Tensor b = random_of(DataType::kBool, {3}, 3);
  expect_error(OpKind::Clip, {}, {&b}, "got bool");
}

}  // namespace
}  // namespace kiln::test
