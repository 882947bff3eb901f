// LayerNormalization CUDA kernel: inputs far from zero mean (where a one-pass variance loses its
// digits; fp32), and the cases the factory leaves to the CPU or rejects. Its values against the
// reference (ConvNeXt's and ViT's rows, short and long rows, odd widths, other axes, Scale/B
// broadcast, no B, the Mean/InvStdDev outputs; fp32 and fp16) are in the op's case table,
// tests/ops/cases/layer_normalization.cc, run by test_op_cases.cc.

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

// Inputs far from zero mean (offset 1000), where a one-pass variance loses its digits; fp32
// only: fp16 cannot hold the deviations.
TEST(CudaLayerNormKernel, InputsFarFromZeroMean) {
  Attributes a;
  a.set("axis", int64_t{-1});
  a.set("epsilon", 1e-6f);
  Tensor scale = random_tensor({96}, 1, 0.2f, 1.5f);
  Tensor bias = random_tensor({96}, 2, -1.f, 1.f);
  auto g =
      one_node(OpKind::LayerNormalization, {{64, 96}, {96}, {96}}, a, 1, {Tensor(), scale, bias});
  Tensor x = random_tensor({64, 96}, 3, 997.f, 1003.f);
  expect_cuda_matches_reference(*g->node, {&x, &scale, &bias}, Precision::kFp32, Layout::kPlain);
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
