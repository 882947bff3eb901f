#include "ops/pool_test_util.h"

namespace kiln::test {
namespace {

TEST(AveragePool, MatchesNaiveOnEveryCaseDtypeAndCountMode) {
  uint32_t seed = 20;
  int ran = 0;
  for (const PoolCase& c : kPoolCases) {
    if (!c.dilations.empty()) continue;  // opset 19
    for (DataType dt : kTestFloatTypes)
      for (int64_t include : {0, 1}) {
        SCOPED_TRACE(c.name + " " + dtype_name(dt) +
                     " count_include_pad=" + std::to_string(include));
        Tensor x = random_of(dt, c.in, ++seed);
        Attributes a = pool_attrs(c);
        a.set("count_include_pad", include);
        Tensor want =
            naive_pool(x, c, include ? NaiveKind::kAverageIncludePad : NaiveKind::kAverage).y;
        expect_near(run_ok(OpKind::AveragePool, a, {&x}), want, rtol_of(dt), rtol_of(dt));
        ++ran;
      }
  }
  EXPECT_GT(ran, 100);
}

// ONNX's averagepool_2d_ceil example: the ceil-mode windows hang over the edge and
// average only what they cover.
TEST(AveragePool, HandComputedCeilMode) {
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  Tensor x = make_tensor(DataType::kFloat32, {1, 1, 4, 4}, v);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("ceil_mode", int64_t{1});
  expect_near(run_ok(OpKind::AveragePool, a, {&x}),
              make_tensor(DataType::kFloat32, {1, 1, 2, 2}, {6, 7.5, 12, 13.5}), 1e-6);
}

// x = 1..6, k=3, s=2, pads 1/1, ceil: windows [-1,1] [1,3] [3,5] [5,7]; position 6 is end
// padding (counted with count_include_pad), 7 is beyond it (never counted).
TEST(AveragePool, HandComputedCeilModeWithPadding) {
  Tensor x = make_tensor(DataType::kFloat32, {1, 1, 6}, {1, 2, 3, 4, 5, 6});
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3});
  a.set("strides", std::vector<int64_t>{2});
  a.set("pads", std::vector<int64_t>{1, 1});
  a.set("ceil_mode", int64_t{1});
  expect_near(run_ok(OpKind::AveragePool, a, {&x}),
              make_tensor(DataType::kFloat32, {1, 1, 4}, {1.5, 3, 5, 6}), 1e-6);
  a.set("count_include_pad", int64_t{1});
  expect_near(run_ok(OpKind::AveragePool, a, {&x}),
              make_tensor(DataType::kFloat32, {1, 1, 4}, {1, 3, 5, 3}), 1e-6);
}

TEST(AveragePool, SameUpperExcludesPaddingByDefault) {
  // 3x3 input, k=2, SAME_UPPER pads one at the end: the last row/column average fewer.
  Tensor x = make_tensor(DataType::kFloat32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("auto_pad", std::string("SAME_UPPER"));
  expect_near(run_ok(OpKind::AveragePool, a, {&x}),
              make_tensor(DataType::kFloat32, {1, 1, 3, 3}, {3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9}),
              1e-6);
}

TEST(AveragePool, Errors) {
  Tensor x = random_of(DataType::kFloat32, {1, 1, 4, 4}, 1);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  Attributes dilated = a;
  dilated.set("dilations", std::vector<int64_t>{2, 2});
  expect_error(OpKind::AveragePool, dilated, {&x}, "dilations");
  Attributes include = a;
  include.set("count_include_pad", int64_t{2});
  expect_error(OpKind::AveragePool, include, {&x}, "count_include_pad must be 0 or 1");
  Attributes padded = a;
  padded.set("pads", std::vector<int64_t>{0, 0, 0, 2});
  expect_error(OpKind::AveragePool, padded, {&x}, "smaller than the kernel");
  expect_error(OpKind::AveragePool, {}, {&x}, "kernel_shape is required");
  Tensor xi = random_of(DataType::kInt8, {1, 1, 4, 4}, 1);
  expect_error(OpKind::AveragePool, a, {&xi}, "int8");
  Tensor x5 = random_of(DataType::kFloat32, {1, 1, 4, 4, 4}, 1);
  expect_error(OpKind::AveragePool, a, {&x5}, "expected 3 (one per spatial dim)");
}

}  // namespace
}  // namespace kiln::test
