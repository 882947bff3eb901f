// Transpose CUDA kernel against the reference: NCHW↔NHWC style permutations, reversed
// default perm, size-1 dims, ranks 1 to 6, float (fp32/fp16) and int64 data.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct TransposeCase {
  Shape x;
  std::vector<int64_t> perm;  // empty: attribute absent
};

const std::vector<TransposeCase> kCases = {
    {{2, 17, 9, 11}, {0, 2, 3, 1}},
    {{2, 9, 11, 17}, {0, 3, 1, 2}},
    {{1, 3, 7, 5}, {}},
    {{1, 3, 7, 5}, {0, 1, 2, 3}},
    {{3, 1, 4, 1}, {3, 2, 1, 0}},
    {{7, 13}, {1, 0}},
    {{33}, {0}},
    {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}},
    {{2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}},
    {{2, 3, 2, 3, 2, 3}, {0, 1, 3, 2, 4, 5}},
    {{4, 32, 28, 28}, {0, 2, 3, 1}},
    {{1, 6, 4, 2, 3}, {0, 2, 1, 3, 4}},
};

TEST(CudaTransposeKernel, FloatMatchesReference) {
  uint32_t seed = 1;
  for (const TransposeCase& c : kCases) {
    Attributes a;
    if (!c.perm.empty()) a.set("perm", c.perm);
    auto g = one_node(OpKind::Transpose, {c.x}, a);
    Tensor x = random_tensor(c.x, seed++);
    SCOPED_TRACE(shape_str(c.x) + " perm " + shape_str(c.perm));
    expect_all_match(*g->node, {&x});
  }
}

TEST(CudaTransposeKernel, Int64MatchesReference) {
  for (const TransposeCase& c : kCases) {
    Attributes a;
    if (!c.perm.empty()) a.set("perm", c.perm);
    auto g = one_node(OpKind::Transpose, {c.x}, a);
    g->node->inputs[0]->dtype = DataType::kInt64;
    Tensor x(DataType::kInt64, c.x);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<int64_t>()[i] = i * 7 - 100;
    SCOPED_TRACE(shape_str(c.x) + " perm " + shape_str(c.perm));
    expect_cuda_matches_reference(*g->node, {&x}, Precision::kFp32);
  }
}

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
