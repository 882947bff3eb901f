// Concat CUDA kernel: that fuse_concat_affine's channel-affine epilogue runs fused (one launch
// for up to 64 inputs, more in several) and is left to the CPU on plain data; error cases. Its
// values against the reference (every axis and rank, int64 data, the epilogue) are in the op's
// case table, tests/ops/cases/concat.cc, run by test_op_cases.cc.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

// Concat(x_0..x_k) with epilogue act(y·a[c] + shift[c]): DenseNet's concat → norm → relu.
std::unique_ptr<OneNodeGraph> affine_concat(const std::vector<Shape>& pieces, Activation act,
                                            uint32_t seed) {
  int64_t c = 0;
  for (const Shape& s : pieces) c += s[1];
  std::vector<Shape> shapes = pieces;
  shapes.push_back({c});
  shapes.push_back({c});
  std::vector<Tensor> constants(pieces.size());
  constants.push_back(random_tensor({c}, seed, 0.5f, 1.5f));
  constants.push_back(random_tensor({c}, seed + 1, -1.f, 1.f));
  Attributes a;
  a.set("axis", int64_t{1});
  auto g = one_node(OpKind::Concat, shapes, a, 1, constants);
  g->node->epilogue.affine_input = static_cast<int>(pieces.size());
  g->node->epilogue.act = act;
  return g;
}

// The values are checked by the case table (tests/ops/cases/concat.cc); here, that the
// epilogue runs fused into the concat kernel rather than as a separate step.
TEST(CudaConcatKernel, AffineEpilogueRunsFused) {
  std::vector<std::vector<Shape>> cases = {
      {{2, 64, 7, 5}, {2, 32, 7, 5}, {2, 32, 7, 5}, {2, 32, 7, 5}},  // 8 channels a thread
      {{1, 3, 4, 6}, {1, 5, 4, 6}, {1, 1, 4, 6}},                    // 1 channel a thread
      {{3, 12, 5, 5}, {3, 4, 5, 5}, {3, 0, 5, 5}},                   // 4, and an empty input
      {{1, 16, 3, 3}},
  };
  std::vector<Shape> many(70, Shape{2, 8, 3, 4});  // two launches: 64 inputs, then 6
  many[0] = {2, 16, 3, 4};
  cases.push_back(many);
  uint32_t seed = 40;
  for (const auto& pieces : cases)
    for (Activation act : {Activation::kRelu, Activation::kNone}) {
      auto g = affine_concat(pieces, act, seed);
      std::vector<Tensor> xs;
      for (const Shape& s : pieces) xs.push_back(random_tensor(s, seed++, -2.f, 2.f));
      std::vector<const Tensor*> in;
      for (const Tensor& t : xs) in.push_back(&t);
      const Node& n = *g->node;
      in.push_back(&n.input(pieces.size())->constant);
      in.push_back(&n.input(pieces.size() + 1)->constant);
      SCOPED_TRACE(std::to_string(pieces.size()) + " inputs, first " + shape_str(pieces[0]) +
                   (act == Activation::kRelu ? ", relu" : ""));
      auto r = run_cuda_node(n, in, Precision::kFp16);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_NE(r->tactic.find("fused"), std::string::npos) << r->tactic;
    }
}

TEST(CudaConcatKernel, AffineEpilogueOnPlainDataIsLeftToTheCpu) {
  // A constant input keeps the concat plain, where the kernel does not apply the epilogue.
  Tensor k = random_tensor({1, 4, 5, 6}, 90);
  Tensor a = random_tensor({7}, 91), b = random_tensor({7}, 92);
  Attributes at;
  at.set("axis", int64_t{1});
  auto g =
      one_node(OpKind::Concat, {{1, 3, 5, 6}, {1, 4, 5, 6}, {7}, {7}}, at, 1, {Tensor(), k, a, b});
  g->node->epilogue.affine_input = 2;
  Tensor x = random_tensor({1, 3, 5, 6}, 93);
  auto r = run_cuda_node(*g->node, {&x, &k, &a, &b}, Precision::kFp32);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << r.status().to_string();
}

TEST(CudaConcatKernel, Errors) {
  {  // no axis attribute
    auto g = one_node(OpKind::Concat, {{1, 3}, {1, 3}}, {});
    ASSERT_TRUE(has_cuda_kernel(OpKind::Concat));
    EXPECT_FALSE(make_cuda_kernel(*g->node, Precision::kFp32).is_ok());
  }
  {  // shapes that disagree outside the axis fail at prepare
    Attributes a;
    a.set("axis", int64_t{1});
    auto g = one_node(OpKind::Concat, {{1, 3, 4, 4}, {1, 3, 5, 4}}, a);
    Tensor x0 = random_tensor({1, 3, 4, 4}, 1), x1 = random_tensor({1, 3, 5, 4}, 2);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x0, &x1}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
