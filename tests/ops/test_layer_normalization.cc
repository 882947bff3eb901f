#include <optional>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Naive LayerNormalization from coordinates, in double: each outer row's mean and
// population variance over the dims from `axis` on, Scale/B indexed by the trailing
// coordinates (a size-1 dim reads index 0). Returns {Y, Mean, InvStdDev} (default stash).
std::vector<Tensor> naive_layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias,
                                     int64_t axis, double eps) {
  const Shape& s = x.shape();
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? rows : cols) *= s[d];
  auto param_at = [&](const Tensor& p, int64_t col) {
    // Trailing coordinates of `col` within the normalized dims, right-aligned to p's shape.
    const Shape& ps = p.shape();
    int64_t rem = col, flat = 0, mul = 1;
    for (int64_t d = static_cast<int64_t>(s.size()) - 1, k = static_cast<int64_t>(ps.size()) - 1;
         d >= axis; --d, --k) {
      const int64_t c = rem % s[d];
      rem /= s[d];
      if (k >= 0) {
        if (ps[k] != 1) flat += c * mul;
        mul *= ps[k];
      }
    }
    return p.at_double(flat);
  };
  std::vector<double> y(x.numel()), mean(rows), inv(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += x.at_double(r * cols + c);
    m /= cols;
    for (int64_t c = 0; c < cols; ++c) v += std::pow(x.at_double(r * cols + c) - m, 2);
    v /= cols;
    mean[r] = m;
    inv[r] = 1 / std::sqrt(v + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (x.at_double(r * cols + c) - m) * inv[r] * param_at(scale, c) +
                        (bias ? param_at(*bias, c) : 0);
  }
  Shape stat = s;
  for (size_t d = axis; d < s.size(); ++d) stat[d] = 1;
  // Mean and InvStdDev are in the stash type: float by default, whatever X's type.
  return {make_tensor(x.dtype(), s, y), make_tensor(DataType::kFloat32, stat, mean),
          make_tensor(DataType::kFloat32, stat, inv)};
}

TEST(LayerNormalization, MatchesNaiveForAxesParamsAndDtypes) {
  struct Case {
    Shape x;
    std::optional<int64_t> axis;  // nullopt: attribute absent (default -1)
    int64_t normalized;
    Shape scale;
    std::optional<Shape> bias;
    std::optional<float> eps;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, std::nullopt, 2, {4}, Shape{4}, std::nullopt},
      {{2, 3, 4}, 1, 1, {3, 4}, Shape{3, 4}, 1e-3f},
      {{2, 3, 4}, 0, 0, {2, 3, 4}, std::nullopt, std::nullopt},
      {{2, 3, 4}, -2, 1, {1, 4}, Shape{3, 1}, 0.5f},   // broadcast Scale and B
      {{2, 3, 4}, -1, 2, {}, Shape{1}, std::nullopt},  // scalar Scale
      {{1, 7, 7, 96}, -1, 3, {96}, Shape{96}, 1e-6f},  // ConvNeXt's channels-last norm
      {{5, 1}, 1, 1, {1}, Shape{1}, std::nullopt},     // one element per row: y = B
  };
  uint32_t seed = 90;
  for (const Case& c : cases)
    for (DataType dt : kTestFloatTypes) {
      SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.normalized) + " " + dtype_name(dt));
      // An offset mean (3) exercises the variance's cancellation.
      Tensor x = random_of(dt, c.x, ++seed, -1, 7);
      Tensor scale = random_of(dt, c.scale, ++seed, -2, 2);
      Tensor bias = c.bias ? random_of(dt, *c.bias, ++seed, -2, 2) : Tensor();
      Attributes a;
      if (c.axis) a.set("axis", *c.axis);
      if (c.eps) a.set("epsilon", *c.eps);
      auto got = run_op(OpKind::LayerNormalization, a, {&x, &scale, c.bias ? &bias : nullptr}, 3);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      auto want =
          naive_layer_norm(x, scale, c.bias ? &bias : nullptr, c.normalized, c.eps ? *c.eps : 1e-5);
      const double tol = std::max(rtol_of(dt), 1e-6) * 8;
      expect_near((*got)[0], want[0], tol, tol);
      expect_near((*got)[1], want[1], 1e-6, 1e-6);
      expect_near((*got)[2], want[2], 1e-5, 1e-5);
    }
}

TEST(LayerNormalization, Errors) {
  Tensor x = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor s3 = random_of(DataType::kFloat32, {3}, 2), s2 = random_of(DataType::kFloat32, {2}, 3);
  Attributes a;
  a.set("axis", int64_t{2});
  expect_error(OpKind::LayerNormalization, a, {&x, &s3}, "axis 2 out of range for rank 2");
  expect_error(OpKind::LayerNormalization, {}, {&x, &s2}, "Scale shape [2]");
  expect_error(OpKind::LayerNormalization, {}, {&x, &s3, &s2}, "B shape [2]");
  Tensor s23 = random_of(DataType::kFloat32, {1, 2, 3}, 4);
  expect_error(OpKind::LayerNormalization, {}, {&x, &s23}, "does not broadcast");
  Tensor h = random_of(DataType::kFloat16, {3}, 5);
  expect_error(OpKind::LayerNormalization, {}, {&x, &h}, "float16");
  Tensor xi = random_of(DataType::kInt32, {2, 3}, 6);
  expect_error(OpKind::LayerNormalization, {}, {&xi, &s3}, "int32");
  Tensor scalar = random_of(DataType::kFloat32, {}, 7);
  expect_error(OpKind::LayerNormalization, {}, {&scalar, &scalar}, "scalar");
  expect_error(OpKind::LayerNormalization, {}, {&x}, "input");
}

}  // namespace
}  // namespace kiln::test
