// Test helper for the library-backed kernels (cuDNN Conv, cuBLASLt Gemm/MatMul): like
// run_cuda_node, but with a caller-owned TacticCache, a choice of timing or heuristics, and
// optionally the output written in place over the kernel's inplace_input().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_test_util.h"

namespace kiln::test {

struct LibRunOptions {
  bool time_tactics = true;
  bool in_place = false;   // output 0 over input inplace_input() (which must be ≥ 0)
  bool offer_raw = false;  // CudaRunOptions::offer_raw
  CudnnConvPath conv_path = CudnnConvPath::kAuto;     // CudaRunOptions::conv_path
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;  // CudaRunOptions::space_to_depth
  std::string backend;                                // CudaRunOptions::backend
  bool runtime_fusion = true;                         // CudaRunOptions::runtime_fusion
};

inline Result<CudaNodeResult> run_lib_kernel(const Node& node,
                                             const std::vector<const Tensor*>& inputs,
                                             Precision precision, TacticCache& tactics,
                                             LibRunOptions opt = {}) {
  CudaRunOptions o;
  o.time_tactics = opt.time_tactics;
  o.in_place = opt.in_place;
  o.offer_raw = opt.offer_raw;
  o.conv_path = opt.conv_path;
  o.space_to_depth = opt.space_to_depth;
  o.runtime_fusion = opt.runtime_fusion;
  o.backend = opt.backend;
  o.tactics = &tactics;
  return run_cuda_node_with(node, inputs, precision, o);
}

// run_lib_kernel against the reference, within the precision's tolerance.
inline void expect_lib_kernel_matches(const Node& node, const std::vector<const Tensor*>& in,
                                      Precision p, TacticCache& tactics, LibRunOptions opt = {},
                                      std::string* tactic = nullptr) {
  auto got = run_lib_kernel(node, in, p, tactics, opt);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<Tensor> want;
  ASSERT_TRUE(run_reference(node, in, want).is_ok());
  ASSERT_EQ(got->outputs[0].shape(), want[0].shape());
  EXPECT_LE(relative_l2(got->outputs[0], want[0]), tolerance(p))
      << node.describe() << " (" << precision_name(p) << ", " << got->tactic << ")";
  if (tactic) *tactic = got->tactic;
}

}  // namespace kiln::test
