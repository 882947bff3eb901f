// Gather CUDA kernel: the cases it leaves to the CPU or rejects (indices computed at run time,
// an index out of range). Its values against the reference (int32 and int64 indices of rank 0
// to 2, negative and repeated ones, every axis, int64 data; fp32 and fp16) are in the op's case
// table, tests/ops/cases/data_movement.cc, run by test_op_cases.cc.

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

TEST(CudaGatherKernel, Errors) {
  {  // indices computed at run time
    auto g = one_node(OpKind::Gather, {{4, 3}, {2}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // index out of range: rejected at prepare
    Tensor idx = Tensor::from_int64s({1}, {4});
    auto g = one_node(OpKind::Gather, {{4, 3}, {1}}, {}, 1, {Tensor(), idx});
    Tensor x = random_tensor({4, 3}, 2);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x, &idx}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
