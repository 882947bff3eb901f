// Softmax CUDA kernel against the reference: the last axis (classifier rows, short and
// longer than a block) and inner axes (column walk), several ranks, large logits that would
// overflow exp without the max subtraction; fp32 and fp16.

#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct SoftmaxCase {
  Shape x;
  int64_t axis;  // 99: attribute absent (default -1)
  float range = 4.f;
};

TEST(CudaSoftmaxKernel, MatchesReference) {
  const std::vector<SoftmaxCase> cases = {
      {{8, 1000}, 99},         {{8, 1000}, -1},     {{3, 7}, 1},
      {{5, 3000}, 1},          {{1, 1}, 0},         {{2, 17, 9, 11}, 1},
      {{2, 17, 9, 11}, -1},    {{2, 17, 9, 11}, 2}, {{2, 17, 9, 11}, 0},
      {{1, 3, 7, 5}, 3},       {{4, 2, 2000}, 1},   {{33}, 0},
      {{256, 1000}, -1, 40.f}, {{3, 5, 6}, 1, 60.f}};
  uint32_t seed = 1;
  for (const SoftmaxCase& c : cases) {
    Attributes a;
    if (c.axis != 99) a.set("axis", c.axis);
    auto g = one_node(OpKind::Softmax, {c.x}, a);
    Tensor x = random_tensor(c.x, seed++, -c.range, c.range);
    // Wide-range logits on a 1/32 grid are exact in float16 (|x| < 64), so the fp16 run sees
    // the reference's inputs and the comparison measures the kernel, not input rounding.
    if (c.range > 8.f)
      for (int64_t i = 0; i < x.numel(); ++i)
        x.data<float>()[i] = std::round(x.data<float>()[i] * 32.f) / 32.f;
    SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis));
    expect_all_match(*g->node, {&x});
  }
}

TEST(CudaSoftmaxKernel, Errors) {
  {  // integer input
    auto g = one_node(OpKind::Softmax, {{2, 3}}, {});
    g->node->inputs[0]->dtype = DataType::kInt32;
    expect_factory_unsupported(*g->node);
  }
  {  // axis out of range fails at prepare
    Attributes a;
    a.set("axis", int64_t{2});
    auto g = one_node(OpKind::Softmax, {{2, 3}}, a);
    Tensor x = random_tensor({2, 3}, 5);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
