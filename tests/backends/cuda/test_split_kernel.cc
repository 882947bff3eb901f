// Split CUDA kernel: the cases it rejects (sizes computed at run time, unequal pieces without
// sizes). Its values against the reference (every axis and rank, the split input,
// num_outputs, int64 data; fp32 and fp16) are in the op's case table,
// tests/ops/cases/data_movement.cc, run by test_op_cases.cc.

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

TEST(CudaSplitKernel, Errors) {
  {  // split sizes computed at run time
    auto g = one_node(OpKind::Split, {{2, 6}, {2}}, {}, 2);
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // unequal without sizes: rejected at prepare
    Attributes a;
    a.set("axis", int64_t{1});
    auto g = one_node(OpKind::Split, {{2, 7}}, a, 2);
    Tensor x = random_tensor({2, 7}, 3);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
