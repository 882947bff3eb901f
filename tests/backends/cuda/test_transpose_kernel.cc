// Transpose CUDA kernel: the cases it rejects (rank 7, a perm that is not a permutation), and
// the two rank-4 permutations it runs as views of an NHWC or plain input. Its
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

// (0,2,3,1) of an NHWC-stored input and (0,3,1,2) of a plain one move no bytes: the output is
// the input's buffer relabelled. The values still match the reference (the case table checks
// every layout offered; this checks that the view is what runs).
TEST(CudaTransposeKernel, ChannelPermutesAreViews) {
  struct Case {
    std::vector<int64_t> perm;
    Shape x;
  };
  for (const Case& c : {Case{{0, 2, 3, 1}, {2, 5, 3, 7}}, Case{{0, 3, 1, 2}, {2, 3, 7, 5}}}) {
    Attributes a;
    a.set("perm", c.perm);
    auto g = one_node(OpKind::Transpose, {c.x}, a);
    Tensor x = random_tensor(c.x, 11);
    std::vector<Tensor> want;
    ASSERT_TRUE(run_reference(*g->node, {&x}, want).is_ok());
    for (Precision p : {Precision::kFp32, Precision::kFp16}) {
      auto got = run_cuda_node(*g->node, {&x}, p);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_NE(got->tactic.find("view"), std::string::npos) << got->tactic;
      ASSERT_EQ(got->outputs[0].shape(), want[0].shape());
      EXPECT_LE(relative_l2(got->outputs[0], want[0]), tolerance(p));
    }
  }
  {  // any other permutation gathers
    Attributes a;
    a.set("perm", std::vector<int64_t>{0, 1, 3, 2});
    auto g = one_node(OpKind::Transpose, {{2, 3, 4, 5}}, a);
    Tensor x = random_tensor({2, 3, 4, 5}, 12);
    auto got = run_cuda_node(*g->node, {&x}, Precision::kFp32);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->tactic.find("view"), std::string::npos) << got->tactic;
  }
}

}  // namespace
}  // namespace kiln::test
