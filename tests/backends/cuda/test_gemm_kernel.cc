// cuBLASLt Gemm and MatMul kernels against the reference: transA/transB, alpha/beta, every
// broadcast form of C, epilogues (cuBLASLt's bias/ReLU, residual through C, other
// activations after), classifier shapes (M = 1 and 256, K = 2048, N = 1000), odd sizes, in
// place over the residual, the tactic cache, and what the kernels decline.
#include <memory>
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cuda/lib_kernel_test_util.h"

namespace kiln::test {
namespace {

const Precision kPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kFp16,
                                 Precision::kBf16};

struct GemmCase {
  const char* name;
  int64_t m, k, n;
  bool trans_a, trans_b;
  float alpha, beta;
  Shape c;  // {} with has_c false: no C
  bool has_c;
};

const GemmCase kGemms[] = {
    {"classifier_m1", 1, 2048, 1000, false, true, 1.f, 1.f, {1000}, true},
    {"classifier_m256", 256, 2048, 1000, false, true, 1.f, 1.f, {1000}, true},
    {"odd_7x13x5", 7, 13, 5, false, false, 1.f, 1.f, {5}, true},
    {"trans_a", 9, 6, 11, true, false, 1.f, 1.f, {1, 11}, true},
    {"trans_ab", 5, 17, 3, true, true, 0.5f, 2.f, {3}, true},
    {"alpha_beta", 12, 8, 16, false, true, 1.5f, -0.5f, {16}, true},
    {"scalar_c", 4, 9, 6, false, false, 1.f, 0.7f, {1}, true},
    {"full_c", 6, 10, 7, false, true, 1.f, 0.3f, {6, 7}, true},
    {"column_c", 6, 10, 7, true, false, 1.f, 1.f, {6, 1}, true},
    {"no_c", 33, 24, 40, false, false, 2.f, 1.f, {}, false},
    {"beta0", 3, 4, 5, false, true, 1.f, 0.f, {5}, true},
};

struct EpiCase {
  const char* name;
  Activation act;
  float alpha, beta;
  bool residual;
};

const EpiCase kEpilogues[] = {
    {"none", Activation::kNone, 0, 0, false},
    {"relu", Activation::kRelu, 0, 0, false},
    {"residual", Activation::kNone, 0, 0, true},
    {"relu_residual", Activation::kRelu, 0, 0, true},
    {"clip", Activation::kClip, -0.2f, 0.4f, false},
    {"silu_residual", Activation::kSilu, 0, 0, true},
};

struct GemmNode {
  Graph g;
  Node* node = nullptr;
  Tensor a, b, c, r;
  std::vector<const Tensor*> in;
};

std::unique_ptr<GemmNode> make_gemm(const GemmCase& c, const EpiCase& e, uint32_t seed) {
  auto gn = std::make_unique<GemmNode>();
  Graph& g = gn->g;
  gn->a = random_tensor(c.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed);
  gn->b = random_tensor(c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed + 1, -0.5f, 0.5f);
  Attributes a;
  if (c.trans_a) a.set("transA", int64_t{1});
  if (c.trans_b) a.set("transB", int64_t{1});
  if (c.alpha != 1.f) a.set("alpha", c.alpha);
  if (c.beta != 1.f) a.set("beta", c.beta);
  std::vector<Value*> ins{f32_value(g, "a", gn->a.shape()), g.add_constant("b", gn->b)};
  gn->in = {&gn->a, &gn->b};
  if (c.has_c) {
    gn->c = random_tensor(c.c, seed + 2);
    ins.push_back(g.add_constant("c", gn->c));
    gn->in.push_back(&gn->c);
  }
  // Weights are uploaded once per node name (WeightStore): one name per weight tensor.
  gn->node = g.add_node(OpKind::Gemm, std::string("gemm_") + c.name + "_" + std::to_string(seed),
                        ins, {f32_value(g, "y", {c.m, c.n})}, a);
  if (e.residual) {
    gn->r = random_tensor({c.m, c.n}, seed + 3);
    g.set_input(gn->node, gn->node->inputs.size(), f32_value(g, "r", gn->r.shape()));
    gn->in.push_back(&gn->r);
    gn->node->epilogue.residual_input = static_cast<int>(gn->node->inputs.size()) - 1;
  }
  gn->node->epilogue.act = e.act;
  gn->node->epilogue.alpha = e.alpha;
  gn->node->epilogue.beta = e.beta;
  return gn;
}

bool full_c(const GemmCase& c) { return c.has_c && c.c.size() == 2 && c.c[0] != 1; }

TEST(LtGemm, MatchesReferenceOverShapesEpiloguesAndPrecisions) {
  uint32_t seed = 300;
  for (const GemmCase& c : kGemms)
    for (const EpiCase& e : kEpilogues) {
      if (e.residual && full_c(c) && c.beta != 0.f) continue;  // declined, tested below
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(std::string(c.name) + " / " + e.name + " / " + precision_name(p));
        auto gn = make_gemm(c, e, seed += 5);
        expect_cuda_matches_reference(*gn->node, gn->in, p);
      }
    }
}

TEST(LtGemm, HeuristicChoiceAndInPlaceResidual) {
  uint32_t seed = 500;
  for (int ci : {1, 2, 3, 9})
    for (int ei : {2, 3, 5})
      for (Precision p : kPrecisions)
        for (bool timed : {true, false}) {
          SCOPED_TRACE(std::string(kGemms[ci].name) + " / " + kEpilogues[ei].name + " / " +
                       precision_name(p) + (timed ? " timed" : " heuristic"));
          auto gn = make_gemm(kGemms[ci], kEpilogues[ei], seed += 3);
          TacticCache cache;
          std::string tactic;
          expect_lib_kernel_matches(*gn->node, gn->in, p, cache, {timed, true}, &tactic);
          EXPECT_EQ(cache.size(), timed ? 1u : 0u);
          EXPECT_EQ(tactic.find("heuristic") != std::string::npos, !timed) << tactic;
        }
}

TEST(LtGemm, TacticCacheSkipsRetiming) {
  for (Precision p : kPrecisions) {
    TacticCache cache;
    auto gn = make_gemm(kGemms[1], kEpilogues[1], 77);
    std::string first, second;
    expect_lib_kernel_matches(*gn->node, gn->in, p, cache, {}, &first);
    ASSERT_EQ(cache.size(), 1u);
    EXPECT_EQ(first.find("cached"), std::string::npos) << first;
    expect_lib_kernel_matches(*gn->node, gn->in, p, cache, {}, &second);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_NE(second.find("cached"), std::string::npos) << second;
  }
}

StatusCode factory_code(const Node& n) {
  auto k = make_cuda_kernel(n, Precision::kFp16);
  return k.is_ok() ? StatusCode::kOk : k.status().code();
}

TEST(LtGemm, DeclinesWhatItCannotRun) {
  {  // B computed by the graph
    Graph g;
    Node* n =
        g.add_node(OpKind::Gemm, "gemm", {f32_value(g, "a", {2, 3}), f32_value(g, "b", {3, 4})},
                   {f32_value(g, "y", {2, 4})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // C computed by the graph
    Graph g;
    Node* n = g.add_node(OpKind::Gemm, "gemm",
                         {f32_value(g, "a", {2, 3}), g.add_constant("b", random_tensor({3, 4})),
                          f32_value(g, "c", {4})},
                         {f32_value(g, "y", {2, 4})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // a full C and a residual both want cuBLASLt's C
    auto gn = make_gemm(kGemms[7], kEpilogues[2], 5);
    EXPECT_EQ(factory_code(*gn->node), StatusCode::kUnsupported);
  }
}

// MatMul: 2-D, batched with broadcast batch dims, constant or computed B, 1-D operands.
struct MatMulCase {
  const char* name;
  Shape a, b;
  bool b_const;
};

const MatMulCase kMatMuls[] = {
    {"2d_const", {5, 7}, {7, 9}, true},
    {"2d_input", {16, 32}, {32, 8}, false},
    {"batched_a_const_b", {3, 5, 7}, {7, 6}, true},
    {"batched_4d_const_b", {2, 3, 4, 8}, {8, 5}, true},
    {"batched_both", {4, 6, 10}, {4, 10, 3}, false},
    {"broadcast_a", {1, 6, 10}, {3, 10, 4}, false},
    {"broadcast_a_rank2", {6, 10}, {2, 3, 10, 4}, false},
    {"vector_a", {7}, {7, 5}, true},
    {"vector_b", {3, 4, 7}, {7}, false},
};

// Epilogues: none; residual + ReLU (cuBLASLt's C and epilogue); a bias along the last axis
// (fuse_epilogue's Linear bias: cuBLASLt's bias epilogue); bias + residual + ReLU; bias + SiLU
// (a separate launch after the bias epilogue).
TEST(LtMatMul, MatchesReference) {
  const char* kEpis[] = {"none", "relu_residual", "bias", "bias_relu_residual", "bias_silu"};
  uint32_t seed = 1200;
  for (const MatMulCase& c : kMatMuls)
    for (int epi = 0; epi < 5; ++epi)
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(std::string(c.name) + " / " + kEpis[epi] + " / " + precision_name(p));
        Graph g;
        Tensor a = random_tensor(c.a, seed += 3), b = random_tensor(c.b, seed + 1, -0.5f, 0.5f);
        Value* bv = c.b_const ? g.add_constant("b", b) : f32_value(g, "b", c.b);
        Value* y = f32_value(g, "y", {});
        y->has_shape = false;
        Node* n = g.add_node(OpKind::MatMul, "matmul_" + std::to_string(seed),
                             {f32_value(g, "a", c.a), bv}, {y});
        std::vector<const Tensor*> in{&a, &b};
        std::vector<Tensor> plain;
        ASSERT_TRUE(run_reference(*n, in, plain).is_ok());
        const Shape ys = plain[0].shape();
        Tensor bias, r;
        const bool with_bias = epi >= 2, with_res = epi == 1 || epi == 3;
        if (with_bias) {
          if (c.b.size() < 2) continue;  // a 1-D B has no N axis (fuse_epilogue makes none)
          bias = random_tensor({ys.back()}, seed + 5);
          n->epilogue.bias_input = static_cast<int>(n->inputs.size());
          g.set_input(n, n->inputs.size(), g.add_constant("bias", bias));
          in.push_back(&bias);
        }
        if (with_res) {
          r = random_tensor(ys, seed + 2);
          n->epilogue.residual_input = static_cast<int>(n->inputs.size());
          g.set_input(n, n->inputs.size(), f32_value(g, "r", r.shape()));
          in.push_back(&r);
          n->epilogue.act = Activation::kRelu;
        }
        if (epi == 4) n->epilogue.act = Activation::kSilu;
        expect_cuda_matches_reference(*n, in, p);
      }
}

}  // namespace
}  // namespace kiln::test
