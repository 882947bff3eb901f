// Every op case (tests/ops/cases) on the CUDA kernel of its op: fp32, fp16 and bf16, each layout
// offered, outputs poisoned, against the reference. A case the kernel declines (kUnsupported:
// the plan then runs the node on the CPU) is skipped for that precision and layout; any other
// error fails.
#include <gtest/gtest.h>

#include "backends/cuda/structured_test_util.h"
#include "ops/cases/op_cases.h"

namespace kiln::test {
namespace {

class CudaOpCases : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaOpCases, MatchesReference) {
  const OpCase& c = op_cases()[GetParam()];
  CaseGraph cg = build_case(c);
  if (!has_cuda_kernel(c.op)) GTEST_SKIP() << "no CUDA kernel for " << op_name(c.op);
  std::vector<Tensor> want;
  Status ref = run_reference(*cg.node, cg.inputs, want);
  ASSERT_TRUE(ref.is_ok()) << ref.to_string();
  int ran = 0;
  for (Precision p : kPrecisions)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(std::string(precision_name(p)) + " offered " + layout_name(l));
      auto got = run_cuda_node(*cg.node, cg.inputs, p, l);
      if (!got.is_ok() && got.status().code() == StatusCode::kUnsupported) continue;
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_EQ(got->outputs.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        if (!want[i].defined()) continue;
        ASSERT_EQ(got->outputs[i].shape(), want[i].shape()) << "output " << i;
        EXPECT_LE(relative_l2(got->outputs[i], want[i]),
                  dtype_is_float(want[i].dtype()) ? tolerance(p) : 0.0)
            << "output " << i << " (" << got->tactic << ")";
      }
      ++ran;
    }
  if (ran == 0) GTEST_SKIP() << "the CUDA kernel leaves this case to the CPU";
}

INSTANTIATE_TEST_SUITE_P(All, CudaOpCases, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return case_test_name(info.param); });

}  // namespace
}  // namespace kiln::test
