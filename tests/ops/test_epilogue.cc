// The fused epilogue as the reference runs it: y = act(op(x) + residual).
#include <cmath>

#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// Gemm A·B + C, then + R, then the activation, computed naively here.
Tensor gemm_epilogue_expected(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor* r,
                              Activation act, float alpha, float beta) {
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  Tensor y(DataType::kFloat32, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = c.data<float>()[j];
      for (int64_t q = 0; q < k; ++q) s += a.data<float>()[i * k + q] * b.data<float>()[q * n + j];
      if (r) s += r->data<float>()[i * n + j];
      y.data<float>()[i * n + j] = apply_activation(act, alpha, beta, s);
    }
  return y;
}

TEST(Epilogue, GemmWithResidualAndEveryActivation) {
  Tensor a = random_tensor({3, 5}, 1), b = random_tensor({5, 4}, 2), c = random_tensor({4}, 3);
  Tensor r = random_tensor({3, 4}, 4, -2.f, 2.f);
  struct Case {
    Activation act;
    float alpha, beta;
  };
  for (Case cs : {Case{Activation::kNone, 0, 0}, Case{Activation::kRelu, 0, 0},
                  Case{Activation::kClip, 0.f, 0.5f}, Case{Activation::kLeakyRelu, 0.1f, 0},
                  Case{Activation::kSigmoid, 0, 0}, Case{Activation::kTanh, 0, 0},
                  Case{Activation::kSilu, 0, 0}, Case{Activation::kHardSigmoid, 0.2f, 0.5f},
                  Case{Activation::kHardSwish, 0, 0}, Case{Activation::kGelu, 0, 0}}) {
    for (bool residual : {false, true}) {
      if (!residual && cs.act == Activation::kNone) continue;
      Graph g;
      std::vector<Value*> ins = {g.add_value("a"), g.add_value("b"), g.add_value("c")};
      std::vector<const Tensor*> tensors = {&a, &b, &c};
      if (residual) {
        ins.push_back(g.add_value("r"));
        tensors.push_back(&r);
      }
      Node* n = g.add_node(OpKind::Gemm, "gemm", ins, {g.add_value("y")});
      n->epilogue = {cs.act, cs.alpha, cs.beta, residual ? 3 : -1};
      std::vector<Tensor> out;
      Status s = run_reference(*n, tensors, out);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      SCOPED_TRACE(n->epilogue.describe());
      expect_near(
          out[0],
          gemm_epilogue_expected(a, b, c, residual ? &r : nullptr, cs.act, cs.alpha, cs.beta), 1e-5,
          1e-5);
    }
  }
}

TEST(Epilogue, ResidualShapeMismatchIsAnError) {
  Tensor a = random_tensor({3, 5}), b = random_tensor({5, 4}), r = random_tensor({4, 3});
  Graph g;
  Node* n = g.add_node(OpKind::Gemm, "gemm",
                       {g.add_value("a"), g.add_value("b"), nullptr, g.add_value("r")},
                       {g.add_value("y")});
  n->epilogue.residual_input = 3;
  std::vector<Tensor> out;
  Status s = run_reference(*n, {&a, &b, nullptr, &r}, out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("does not match the output"), std::string::npos) << s.message();
}

// MatMul's bias epilogue: bias[n] added along the last axis, before the residual and the
// activation, against a hand-computed sum; a bias of the wrong length, or on another op, is an
// error naming it.
TEST(Epilogue, MatMulBias) {
  Tensor a = random_tensor({2, 3, 5}, 1), b = random_tensor({5, 4}, 2);
  Tensor bias = random_tensor({4}, 3), r = random_tensor({2, 3, 4}, 4);
  Graph g;
  Node* n = g.add_node(OpKind::MatMul, "mm",
                       {g.add_value("a"), g.add_value("b"), g.add_value("bias"), g.add_value("r")},
                       {g.add_value("y")});
  n->epilogue.bias_input = 2;
  n->epilogue.residual_input = 3;
  n->epilogue.act = Activation::kGelu;
  std::vector<Tensor> out;
  Status s = run_reference(*n, {&a, &b, &bias, &r}, out);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double v = bias.data<float>()[j] + r.data<float>()[i * 4 + j];
      for (int64_t q = 0; q < 5; ++q)
        v += double{a.data<float>()[i * 5 + q]} * b.data<float>()[q * 4 + j];
      const double want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(out[0].data<float>()[i * 4 + j], want, 1e-5) << i << "," << j;
    }
  Tensor short_bias = random_tensor({3}, 5);
  s = run_reference(*n, {&a, &b, &short_bias, &r}, out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("epilogue bias"), std::string::npos) << s.message();
  Node* gemm = g.add_node(OpKind::Gemm, "gemm",
                          {g.add_value("a2"), g.add_value("b2"), nullptr, g.add_value("bias2")},
                          {g.add_value("y2")});
  gemm->epilogue.bias_input = 3;
  Tensor bt = random_tensor({5, 4}, 6);
  s = run_reference(*gemm, {&a, &bt, nullptr, &bias}, out);
  EXPECT_FALSE(s.is_ok());
}

TEST(Epilogue, Describe) {
  Epilogue e{Activation::kClip, 0.f, 6.f, 3};
  EXPECT_EQ(e.describe(), "+ residual → Clip(0, 6)");
  EXPECT_TRUE(Epilogue{}.empty());
  Epilogue gelu;
  gelu.bias_input = 2;
  gelu.act = Activation::kGelu;
  EXPECT_FALSE(gelu.empty());
  EXPECT_EQ(gelu.describe(), "+ bias[n] → Gelu");
  EXPECT_EQ(gelu.inputs(), std::vector<int>{2});
}

}  // namespace
}  // namespace kiln::test
