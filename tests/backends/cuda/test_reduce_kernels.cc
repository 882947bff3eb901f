// ReduceMean, ReduceMax, ReduceL2 and ReduceSum CUDA kernels: the cases they leave to the CPU or
// reject (integer input, axes computed at run time, a repeated axis). Their values against the
// reference (every axis form, keepdims, long reductions, ReduceSum's axes input and
// noop_with_empty_axes; fp32 and fp16) are in the ops' case table, tests/ops/cases/reduce.cc,
// run by test_op_cases.cc.

#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

TEST(CudaReduceKernel, Errors) {
  {  // integer input
    Attributes a;
    a.set("axes", std::vector<int64_t>{1});
    auto g = one_node(OpKind::ReduceMax, {{2, 3}}, a);
    g->node->inputs[0]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // axes computed at run time
    auto g = one_node(OpKind::ReduceSum, {{2, 3}, {1}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // repeated axis: rejected at prepare
    Attributes a;
    a.set("axes", std::vector<int64_t>{1, -1});
    auto g = one_node(OpKind::ReduceMean, {{2, 3}}, a);
    Tensor x = random_tensor({2, 3}, 7);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
