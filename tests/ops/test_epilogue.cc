// The fused epilogue as the reference runs it: y = act(op(x) + residual).
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
                  Case{Activation::kHardSwish, 0, 0}}) {
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

TEST(Epilogue, Describe) {
  Epilogue e{Activation::kClip, 0.f, 6.f, 3};
  EXPECT_EQ(e.describe(), "+ residual → Clip(0, 6)");
  EXPECT_TRUE(Epilogue{}.empty());
}

}  // namespace
}  // namespace kiln::test
