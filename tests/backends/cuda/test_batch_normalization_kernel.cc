// Standalone BatchNormalization CUDA kernel against the reference: constant statistics,
// ranks 2 to 5, channel counts for every vector width, both layouts offered for rank 4,
// fp32 and fp16; the cases the factory leaves to the CPU.

#include <string>
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

TEST(CudaBatchNormKernel, MatchesReference) {
  const std::vector<Shape> shapes = {{1, 3, 7, 5},    {2, 17, 9, 11},  {2, 8, 5, 5}, {1, 4, 3, 3},
                                     {2, 2, 3, 5},    {4, 64, 28, 28}, {5, 12},      {3, 6, 10},
                                     {1, 3, 2, 4, 5}, {2, 16, 1, 1}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    std::vector<Tensor> p = bn_params(s[1], seed);
    seed += 4;
    Attributes a;
    a.set("epsilon", 1e-3f);
    auto g = bn_node(s, p, a);
    Tensor x = random_tensor(s, seed++, -2.f, 2.f);
    SCOPED_TRACE(shape_str(s));
    expect_all_match(*g->node, {&x, &p[0], &p[1], &p[2], &p[3]});
  }
}

TEST(CudaBatchNormKernel, DefaultEpsilon) {
  std::vector<Tensor> p = bn_params(24, 50);
  auto g = bn_node({2, 24, 6, 7}, p);
  Tensor x = random_tensor({2, 24, 6, 7}, 60);
  expect_all_match(*g->node, {&x, &p[0], &p[1], &p[2], &p[3]});
}

// fuse_channel_affine's form: mean 0, var 1, epsilon 0, a Relu epilogue.
TEST(CudaBatchNormKernel, ReluEpilogue) {
  uint32_t seed = 80;
  for (const Shape& s : {Shape{2, 24, 6, 7}, Shape{3, 13, 5, 4}, Shape{2, 16}}) {
    const int64_t c = s[1];
    std::vector<Tensor> p = {random_tensor({c}, seed, 0.5f, 1.5f), random_tensor({c}, seed + 1),
                             Tensor::from_floats({c}, std::vector<float>(c, 0.f)),
                             Tensor::from_floats({c}, std::vector<float>(c, 1.f))};
    seed += 2;
    Attributes a;
    a.set("epsilon", 0.f);
    auto g = bn_node(s, p, a);
    g->node->epilogue.act = Activation::kRelu;
    Tensor x = random_tensor(s, seed++, -2.f, 2.f);
    SCOPED_TRACE(shape_str(s));
    expect_all_match(*g->node, {&x, &p[0], &p[1], &p[2], &p[3]});
  }
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
