// Every op case (tests/ops/cases) on the CUDA kernel of its op: fp32 and fp16, each layout
// offered, outputs poisoned, against the reference. A case the kernel declines (kUnsupported:
// the plan then runs the node on the CPU) is skipped for that precision and layout; any other
// error fails.
#include <gtest/gtest.h>

#include <cctype>

#include "backends/cuda/structured_test_util.h"
#include "ops/cases/op_cases.h"

namespace kiln::test {
namespace {

class CudaOpCases : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaOpCases, MatchesReference) {
  const OpCase& c = op_cases()[GetParam()];
  CaseGraph cg = build_case(c);
  if (!CudaKernelRegistry::find(c.op)) GTEST_SKIP() << "no CUDA kernel for " << op_name(c.op);
  int ran = 0;
  for (Precision p : kPrecisions)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(std::string(precision_name(p)) + " offered " + layout_name(l));
      auto r = run_cuda_node(*cg.node, cg.inputs, p, l);
      if (!r.is_ok() && r.status().code() == StatusCode::kUnsupported) continue;
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      expect_cuda_matches_reference(*cg.node, cg.inputs, p, l);
      ++ran;
    }
  if (ran == 0) GTEST_SKIP() << "the CUDA kernel leaves this case to the CPU";
}

std::string label(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = case_label(op_cases()[info.param]);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(All, CudaOpCases, ::testing::Range<size_t>(0, op_cases().size()), label);

}  // namespace
}  // namespace kiln::test
