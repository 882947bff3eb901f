// Softmax CUDA kernel: the cases it rejects (integer input, an axis out of range). Its values
// against the reference (every axis, long rows, large logits; fp32 and fp16) are in the op's
// case table, tests/ops/cases/softmax.cc, run by test_op_cases.cc.

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

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
