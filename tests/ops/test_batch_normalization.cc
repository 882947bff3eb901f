// BatchNormalization (inference) against its formula, per element:
//   y = scale[c] · (x − mean[c]) / sqrt(var[c] + epsilon) + B[c],  c = index on axis 1.
#include <cmath>
#include <string>

#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct BnCase {
  const char* name;
  Shape x;
  float epsilon;  // < 0: attribute absent (default 1e-5)
};

// gtest prints a failing case by name, not as bytes.
void PrintTo(const BnCase& c, std::ostream* os) { *os << c.name; }

Tensor bn_formula(const Tensor& x, const Tensor& s, const Tensor& b, const Tensor& mean,
                  const Tensor& var, double eps) {
  Tensor y(DataType::kFloat32, x.shape());
  const int64_t c = x.dim(1);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = (i / inner) % c;
    y.data<float>()[i] = static_cast<float>(s.at_double(k) * (x.at_double(i) - mean.at_double(k)) /
                                                std::sqrt(var.at_double(k) + eps) +
                                            b.at_double(k));
  }
  return y;
}

class BnTable : public ::testing::TestWithParam<BnCase> {};

TEST_P(BnTable, MatchesFormula) {
  const BnCase& c = GetParam();
  const int64_t ch = c.x[1];
  const Tensor x = random_tensor(c.x, 21, -3.f, 3.f);
  const Tensor s = random_tensor({ch}, 22, 0.5f, 2.f), b = random_tensor({ch}, 23);
  const Tensor mean = random_tensor({ch}, 24), var = random_tensor({ch}, 25, 0.01f, 2.f);
  Attributes attrs;
  if (c.epsilon >= 0) attrs.set("epsilon", c.epsilon);
  const double eps = c.epsilon >= 0 ? c.epsilon : 1e-5f;
  const Tensor want = bn_formula(x, s, b, mean, var, eps);

  auto out = run_op(OpKind::BatchNormalization, attrs, {&x, &s, &b, &mean, &var});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_near((*out)[0], want, 1e-5, 1e-5);

  // float64 data with float32 parameters (opset 15 allows distinct parameter types).
  Tensor xd(DataType::kFloat64, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = x.data<float>()[i];
  auto out_d = run_op(OpKind::BatchNormalization, attrs, {&xd, &s, &b, &mean, &var});
  ASSERT_TRUE(out_d.is_ok()) << out_d.status().to_string();
  ASSERT_EQ((*out_d)[0].dtype(), DataType::kFloat64);
  expect_near(Tensor::from_floats(x.shape(), (*out_d)[0].to_floats()), want, 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, BnTable,
                         ::testing::Values(BnCase{"rank2", {4, 3}, -1},
                                           BnCase{"rank4", {2, 3, 4, 5}, -1},
                                           BnCase{"rank4_epsilon", {2, 3, 4, 5}, 0.01f},
                                           BnCase{"rank3", {3, 6, 7}, 1e-3f},
                                           BnCase{"rank5", {1, 4, 2, 3, 2}, -1},
                                           BnCase{"one_channel", {2, 1, 3, 3}, 0.5f}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BatchNormalization, ErrorsNameTheProblem) {
  const Tensor x = random_tensor({2, 3, 4, 4});
  const Tensor p = random_tensor({3}, 2, 0.1f, 1.f);
  const Tensor p4 = random_tensor({4}, 3, 0.1f, 1.f);
  const Tensor x1 = random_tensor({3});
  const Tensor xi = Tensor::zeros(DataType::kInt64, {2, 3, 4, 4});
  Attributes training;
  training.set("training_mode", int64_t{1});
  struct ErrorCase {
    const char* name;
    Attributes attrs;
    std::vector<const Tensor*> in;
    size_t outputs;
    const char* want;
  };
  const std::vector<ErrorCase> cases = {
      {"training_mode", training, {&x, &p, &p, &p, &p}, 3, "training-mode BatchNormalization"},
      {"training_mode_one_output",
       training,
       {&x, &p, &p, &p, &p},
       1,
       "training-mode BatchNormalization"},
      {"running_stats_requested", {}, {&x, &p, &p, &p, &p}, 3, "training-mode BatchNormalization"},
      {"scale_shape", {}, {&x, &p4, &p, &p, &p}, 1, "input 1 (scale) [4] must have shape [3]"},
      {"var_shape", {}, {&x, &p, &p, &p, &p4}, 1, "input 4 (input_var) [4] must have shape [3]"},
      {"x_rank_1", {}, {&x1, &p, &p, &p, &p}, 1, "input X [3] must have rank ≥ 2"},
      {"int_input", {}, {&xi, &p, &p, &p, &p}, 1, "BatchNormalization on int64"},
      {"missing_var", {}, {&x, &p, &p, &p}, 1, "expected 5 inputs, got 4"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto out = run_op(OpKind::BatchNormalization, c.attrs, c.in, c.outputs);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find(c.want), std::string::npos) << out.status().message();
  }
}

}  // namespace
}  // namespace kiln::test
