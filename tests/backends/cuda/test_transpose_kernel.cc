// Transpose CUDA kernel: the cases it rejects (rank 7, a perm that is not a permutation). Its
// values against the reference (ranks 1 to 6, the default perm, float and int64 data) are in the
// op's case table, tests/ops/cases/shape_ops.cc, run by test_op_cases.cc.

#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

TEST(CudaTransposeKernel, Errors) {
  {  // rank 7
    auto g = one_node(OpKind::Transpose, {{1, 2, 1, 2, 1, 2, 2}}, {});
    expect_factory_unsupported(*g->node);
  }
  {  // not a permutation: fails at prepare
    Attributes a;
    a.set("perm", std::vector<int64_t>{0, 0, 1});
    auto g = one_node(OpKind::Transpose, {{2, 3, 4}}, a);
    Tensor x = random_tensor({2, 3, 4}, 3);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
