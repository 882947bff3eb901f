// LayerNormalization CUDA kernel against the reference: ConvNeXt's rows (channels last, 96 and
// more), rows shorter than a warp and longer than 32 packs, odd widths (no vector loads), axis
// other than the last, Scale/B broadcast from fewer dims, no B, the Mean/InvStdDev outputs, and
// inputs far from zero mean (where a one-pass variance loses its digits); fp32 and fp16. Then
// the cases the factory leaves to the CPU.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct LnCase {
  Shape x;
  int64_t axis;  // 99: attribute absent (default -1)
  Shape scale;   // Scale's (and B's) shape
  bool bias = true;
  size_t outputs = 1;
  float offset = 0.f;  // added to every input (fp32 only: fp16 cannot hold the deviations)
};

TEST(CudaLayerNormKernel, MatchesReference) {
  const std::vector<LnCase> cases = {
      {{2, 7, 7, 96}, 99, {96}},
      {{1, 14, 14, 384}, -1, {384}},
      {{4, 1536}, 1, {1536}},
      {{3, 5, 13}, -1, {13}},
      {{3, 5, 13}, 1, {5, 13}},
      {{2, 6, 4, 8}, 1, {1, 1, 8}},
      {{2, 6, 4, 8}, 2, {4, 8}, false},
      {{5, 40}, -1, {40}, true, 3},
      {{2, 3, 2056}, -1, {2056}, true, 2},
      {{64, 96}, -1, {96}, true, 1, 1000.f},
      {{1, 1}, 0, {1, 1}},
  };
  uint32_t seed = 1;
  for (const LnCase& c : cases) {
    Attributes a;
    if (c.axis != 99) a.set("axis", c.axis);
    a.set("epsilon", 1e-6f);
    Tensor scale = random_tensor(c.scale, seed++, 0.2f, 1.5f);
    Tensor bias = random_tensor(c.scale, seed++, -1.f, 1.f);
    std::vector<Shape> shapes = {c.x, c.scale};
    std::vector<Tensor> consts = {Tensor(), scale};
    if (c.bias) {
      shapes.push_back(c.scale);
      consts.push_back(bias);
    }
    auto g = one_node(OpKind::LayerNormalization, shapes, a, c.outputs, consts);
    Tensor x = random_tensor(c.x, seed++, -3.f + c.offset, 3.f + c.offset);
    std::vector<const Tensor*> in = {&x, &scale};
    if (c.bias) in.push_back(&bias);
    SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis) + " outputs " +
                 std::to_string(c.outputs));
    if (c.offset != 0.f)
      expect_cuda_matches_reference(*g->node, in, Precision::kFp32, Layout::kPlain);
    else
      expect_all_match(*g->node, in);
  }
}

TEST(CudaLayerNormKernel, UnsupportedCases) {
  {  // Scale computed at run time
    auto g = one_node(OpKind::LayerNormalization, {{2, 8}, {8}, {8}}, {});
    expect_factory_unsupported(*g->node);
  }
  {  // double statistics
    Attributes a;
    a.set("stash_type", int64_t{11});
    Tensor s = random_tensor({8}, 3, 0.5f, 1.f);
    auto g = one_node(OpKind::LayerNormalization, {{2, 8}, {8}}, a, 1, {Tensor(), s});
    expect_factory_unsupported(*g->node);
  }
  {  // Scale that does not broadcast to the normalized dims fails at prepare
    Tensor s = random_tensor({3}, 4, 0.5f, 1.f);
    auto g = one_node(OpKind::LayerNormalization, {{2, 8}, {3}}, {}, 1, {Tensor(), s});
    Tensor x = random_tensor({2, 8}, 5);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x, &s}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
