// Every op case (tests/ops/cases) on the CPU: the reference kernel runs it, and where the
// oneDNN backend claims the node its kernel matches the reference, output poisoned with NaN
// first, through oneDNN's own primitive unless the case says why not. The CUDA kernels run the same
// cases in tests/backends/cuda/test_op_cases.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/backend_test_util.h"
#include "backends/dnnl_test_util.h"
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

class OpCases : public ::testing::TestWithParam<size_t> {};

TEST_P(OpCases, ReferenceAndOnednn) {
  const OpCase& c = op_cases()[GetParam()];
  CaseGraph cg = build_case(c);
  std::vector<Tensor> want;
  Status ran = run_reference(*cg.node, cg.inputs, want);
  ASSERT_TRUE(ran.is_ok()) << ran.to_string();
  ASSERT_EQ(want.size(), c.outputs);
  const KernelSource& dnnl = onednn_backend(2);
  if (!dnnl.supports(*cg.node)) return;  // the reference kernel runs it on the CPU
  auto kernel = dnnl.create_kernel(*cg.node);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  auto got = prepare_and_run(**kernel, cg.inputs);
  if (c.onednn_reference) {
    // oneDNN declines the node at prepare, saying why; the planner then takes the next
    // candidate, the reference kernel.
    ASSERT_FALSE(got.is_ok()) << "oneDNN should decline: " << c.onednn_reference;
    EXPECT_EQ(got.status().code(), StatusCode::kUnsupported) << got.status().to_string();
    return;
  }
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  // The absolute floor follows the output's scale: a long dot product (Gemm's K of 2048)
  // rounds in another order in oneDNN, which shows on outputs that cancel to near zero.
  double scale = 1;
  if (want[0].dtype() == DataType::kFloat32)
    for (int64_t i = 0; i < want[0].numel(); ++i)
      scale = std::max(scale, std::fabs(want[0].at_double(i)));
  if (!c.epilogue.int8()) {
    expect_near(*got, want[0], 1e-6 * scale, 1e-5);
    return;
  }
  // int8: oneDNN's own 8-bit conv or inner product, not a float one. Its int32 sums are exact, but
  // an input on a half step may round the other way (x · (1/s) against the reference's x / s: one
  // code, s · |w| ≤ 1e-3 of the output here), and without VNNI oneDNN halves the weights' codes
  // against overflow of its 16-bit pair sums (7-bit weights: about 1% of the output).
  EXPECT_NE((*kernel)->tactic().find("int8"), std::string::npos) << (*kernel)->tactic();
  EXPECT_EQ((*kernel)->tactic().find("ref"), std::string::npos) << (*kernel)->tactic();
  // VNNI as oneDNN uses it (the tactic names the ISA: a capped ONEDNN_MAX_CPU_ISA counts).
  const bool vnni = (*kernel)->tactic().find("vnni") != std::string::npos;
  expect_near(*got, want[0], (vnni ? 2e-3 : 3e-2) * scale, 0);
}

INSTANTIATE_TEST_SUITE_P(All, OpCases, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return case_test_name(info.param); });

}  // namespace
}  // namespace kiln::test
