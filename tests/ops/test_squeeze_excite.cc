// SqueezeExcite's reference kernel against the four nodes it replaces, computed here in double,
// and its errors for inputs of the wrong shape or type.
#include <cmath>

#include "ops/op_test_util.h"
#include "ops/squeeze_excite.h"

namespace kiln::test {
namespace {

Attributes se_attrs(Activation squeeze, Activation excite) {
  SqueezeExciteAttrs a;
  a.squeeze = squeeze;
  a.excite = excite;
  if (excite == Activation::kHardSigmoid) {
    a.excite_alpha = 1.f / 6.f;
    a.excite_beta = 0.5f;
  }
  Attributes attrs;
  set_squeeze_excite_attrs(a, &attrs);
  return attrs;
}

// y[n, c, p] = x[n, c, p] · act2(Σ_j W2[c, j] · act1(Σ_k W1[j, k] · mean_p x[n, k, p] + B1[j]) +
// B2[c])
Tensor naive(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
             const Tensor& b2, Activation a1, Activation a2) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3], r = w1.shape()[0];
  auto act = [](Activation a, double v) {
    switch (a) {
      case Activation::kRelu: return v > 0 ? v : 0.0;
      case Activation::kSilu: return v / (1 + std::exp(-v));
      case Activation::kSigmoid: return 1 / (1 + std::exp(-v));
      case Activation::kHardSigmoid: return std::fmax(0.0, std::fmin(1.0, v / 6 + 0.5));
      default: return v;
    }
  };
  Tensor y(DataType::kFloat32, s);
  for (int64_t b = 0; b < n; ++b) {
    std::vector<double> mean(c, 0), hidden(r, 0);
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t p = 0; p < hw; ++p) mean[k] += x.at_double((b * c + k) * hw + p);
      mean[k] /= static_cast<double>(hw);
    }
    for (int64_t j = 0; j < r; ++j) {
      double v = b1.at_double(j);
      for (int64_t k = 0; k < c; ++k) v += w1.at_double(j * c + k) * mean[k];
      hidden[j] = act(a1, v);
    }
    for (int64_t k = 0; k < c; ++k) {
      double v = b2.at_double(k);
      for (int64_t j = 0; j < r; ++j) v += w2.at_double(k * r + j) * hidden[j];
      const double gate = act(a2, v);
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t i = (b * c + k) * hw + p;
        y.data<float>()[i] = static_cast<float>(x.at_double(i) * gate);
      }
    }
  }
  return y;
}

TEST(SqueezeExcite, MatchesTheFourNodesInDouble) {
  struct Case {
    Shape x;
    int64_t r;
    Activation a1, a2;
  };
  const Case cases[] = {
      {{2, 8, 3, 5}, 2, Activation::kSilu, Activation::kSigmoid},
      {{3, 12, 4, 4}, 3, Activation::kRelu, Activation::kHardSigmoid},
      {{1, 5, 1, 7}, 5, Activation::kNone, Activation::kSigmoid},
  };
  uint32_t seed = 700;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x));
    const int64_t ch = c.x[1];
    const Tensor x = random_tensor(c.x, ++seed, -2.f, 2.f);
    const Tensor w1 = random_tensor({c.r, ch, 1, 1}, ++seed);
    const Tensor b1 = random_tensor({c.r}, ++seed);
    const Tensor w2 = random_tensor({ch, c.r, 1, 1}, ++seed);
    const Tensor b2 = random_tensor({ch}, ++seed);
    auto y = run_op(OpKind::SqueezeExcite, se_attrs(c.a1, c.a2), {&x, &w1, &b1, &w2, &b2});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expect_near((*y)[0], naive(x, w1, b1, w2, b2, c.a1, c.a2), 1e-5, 1e-5);
  }
}

TEST(SqueezeExcite, WrongShapesAndTypesAreErrors) {
  const Tensor x = random_tensor({2, 8, 3, 3}, 1);
  const Tensor w1 = random_tensor({2, 8, 1, 1}, 2), b1 = random_tensor({2}, 3);
  const Tensor w2 = random_tensor({8, 2, 1, 1}, 4), b2 = random_tensor({8}, 5);
  const Tensor x3 = random_tensor({2, 8, 9}, 6);
  const Tensor w1_wide = random_tensor({2, 9, 1, 1}, 7), w2_3x3 = random_tensor({8, 2, 3, 3}, 8);
  const Tensor b2_short = random_tensor({7}, 9);
  const Tensor ints = Tensor::from_int64s({2, 8, 1, 1}, std::vector<int64_t>(16, 1));
  const Attributes attrs = se_attrs(Activation::kRelu, Activation::kSigmoid);
  struct Case {
    const char* what;
    std::vector<const Tensor*> in;
    const char* names;
  };
  const Case cases[] = {
      {"x of rank 3", {&x3, &w1, &b1, &w2, &b2}, "input 0"},
      {"W1 of the wrong width", {&x, &w1_wide, &b1, &w2, &b2}, "input 1"},
      {"W2 not 1x1", {&x, &w1, &b1, &w2_3x3, &b2}, "input 3"},
      {"B2 too short", {&x, &w1, &b1, &w2, &b2_short}, "input 4"},
      {"integer W1", {&x, &ints, &b1, &w2, &b2}, "input 1"},
      {"W2 missing", {&x, &w1, &b1}, "inputs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto y = run_op(OpKind::SqueezeExcite, attrs, c.in);
    ASSERT_FALSE(y.is_ok());
    EXPECT_NE(y.status().message().find(c.names), std::string::npos) << y.status().to_string();
  }
}

}  // namespace
}  // namespace kiln::test
