// Every op case (tests/ops/cases) on every CUDA candidate the registry holds for its op (Conv:
// cuDNN's legacy and graph paths, kiln's depthwise kernel): fp32, fp16 and bf16, each layout
// offered, outputs poisoned, against the reference. A case a candidate declines (kUnsupported:
// the planner then takes the next one, or the CPU) is skipped for that candidate, precision and
// layout; any other error fails.
#include <gtest/gtest.h>

#include "backends/cuda/structured_test_util.h"
#include "ops/cases/op_cases.h"

namespace kiln::test {
namespace {

class CudaOpCases : public ::testing::TestWithParam<size_t> {};

// What a kernel of precision `p` receives: float32 inputs rounded to its storage type (fp16,
// bf16), so that a bf16 Cast to int truncates the value the device holds, and large softmax
// logits lose what bf16 cannot hold before the kernel sees them, in the reference too.
std::vector<Tensor> stored_as(Precision p, const std::vector<const Tensor*>& in) {
  std::vector<Tensor> r;
  for (const Tensor* t : in) {
    if (!t || t->dtype() != DataType::kFloat32 || p == Precision::kFp32 || p == Precision::kTf32) {
      r.push_back(t ? *t : Tensor());
      continue;
    }
    std::vector<float> v = t->to_floats();
    for (float& x : v)
      x = p == Precision::kFp16 ? half_bits_to_float(float_to_half_bits(x))
                                : bf16_bits_to_float(float_to_bf16_bits(x));
    r.push_back(Tensor::from_floats(t->shape(), v));
  }
  return r;
}

TEST_P(CudaOpCases, MatchesReference) {
  const OpCase& c = op_cases()[GetParam()];
  CaseGraph cg = build_case(c);
  if (!has_cuda_kernel(c.op)) GTEST_SKIP() << "no CUDA kernel for " << op_name(c.op);
  std::vector<Tensor> want;
  Status ref = run_reference(*cg.node, cg.inputs, want);
  ASSERT_TRUE(ref.is_ok()) << ref.to_string();
  int ran = 0;
  for (Precision p : kPrecisions) {
    // The reference on what the device holds (the same as `want` in fp32).
    const std::vector<Tensor> stored = stored_as(p, cg.inputs);
    std::vector<const Tensor*> stored_ptrs;
    for (size_t i = 0; i < stored.size(); ++i)
      stored_ptrs.push_back(cg.inputs[i] ? &stored[i] : nullptr);
    std::vector<Tensor> want_p;
    Status ref_p = run_reference(*cg.node, stored_ptrs, want_p);
    ASSERT_TRUE(ref_p.is_ok()) << ref_p.to_string();
    for (const KernelCandidate* cand : KernelRegistry::candidates(c.op, DeviceKind::kCuda))
      for (Layout l : kLayouts) {
        SCOPED_TRACE(std::string(cand->backend) + " " + precision_name(p) + " offered " +
                     layout_name(l));
        CudaRunOptions o;
        o.offered = l;
        o.backend = cand->backend;
        auto got = run_cuda_node_with(*cg.node, cg.inputs, p, o);
        if (!got.is_ok() && got.status().code() == StatusCode::kUnsupported) continue;
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        ASSERT_EQ(got->outputs.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          if (!want[i].defined()) continue;
          ASSERT_EQ(got->outputs[i].shape(), want_p[i].shape()) << "output " << i;
          EXPECT_LE(relative_l2(got->outputs[i], want_p[i]),
                    dtype_is_float(want[i].dtype()) ? tolerance(p) : 0.0)
              << "output " << i << " (" << got->tactic << ")";
        }
        ++ran;
      }
  }
  if (ran == 0) GTEST_SKIP() << "every CUDA candidate leaves this case to the CPU";
}

INSTANTIATE_TEST_SUITE_P(All, CudaOpCases, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return case_test_name(info.param); });

}  // namespace
}  // namespace kiln::test
