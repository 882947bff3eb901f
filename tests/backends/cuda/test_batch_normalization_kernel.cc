// Standalone BatchNormalization CUDA kernel: the cases the factory leaves to the CPU
// (statistics not constant, training mode, an epilogue other than Relu, running statistics
// requested). Its values against the reference (ranks 2 to 5, every vector width, the default
// epsilon, the Relu epilogue; fp32 and fp16, both layouts) are in the op's case table,
// tests/ops/cases/batch_normalization.cc, run by test_op_cases.cc.

#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

// scale, B, mean, var for C channels (var > 0).
std::vector<Tensor> bn_params(int64_t c, uint32_t seed) {
  return {random_tensor({c}, seed, 0.5f, 1.5f), random_tensor({c}, seed + 1, -1.f, 1.f),
          random_tensor({c}, seed + 2, -0.5f, 0.5f), random_tensor({c}, seed + 3, 0.1f, 2.f)};
}

std::unique_ptr<OneNodeGraph> bn_node(const Shape& x, const std::vector<Tensor>& p,
                                      Attributes attrs = {}, size_t outputs = 1) {
  const Shape c = {x[1]};
  return one_node(OpKind::BatchNormalization, {x, c, c, c, c}, std::move(attrs), outputs,
                  {Tensor(), p[0], p[1], p[2], p[3]});
}

TEST(CudaBatchNormKernel, UnsupportedCases) {
  std::vector<Tensor> p = bn_params(3, 70);
  {  // statistics that are not constants
    auto g = one_node(OpKind::BatchNormalization, {{1, 3, 4, 4}, {3}, {3}, {3}, {3}}, {});
    expect_factory_unsupported(*g->node);
  }
  {  // training mode
    Attributes a;
    a.set("training_mode", int64_t{1});
    auto g = bn_node({1, 3, 4, 4}, p, a);
    expect_factory_unsupported(*g->node);
  }
  {  // an epilogue other than Relu
    auto g = bn_node({1, 3, 4, 4}, p);
    g->node->epilogue.act = Activation::kClip;
    expect_factory_unsupported(*g->node);
  }
  {  // running statistics requested
    auto g = bn_node({1, 3, 4, 4}, p, {}, 3);
    expect_factory_unsupported(*g->node);
  }
}

}  // namespace
}  // namespace kiln::test
