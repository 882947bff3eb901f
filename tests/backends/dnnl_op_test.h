// One-node checks of the oneDNN kernels for the non-conv ops (binary, eltwise, softmax,
// concat, resize): the node is built from test tensors, run through oneDNN's kernel with its
// output poisoned (prepare_and_run) and through the reference kernel, and compared.
#pragma once

#include <string>
#include <vector>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {

struct OpInput {
  Tensor t;               // undefined: an omitted optional input
  bool constant = false;  // an initializer (what Clip's bounds and Resize's scales must be)
};

// Builds `op` over `inputs`, expects oneDNN to claim it, runs both backends and compares
// within atol + rtol·|want|. Returns whether oneDNN's own primitive ran (false: the
// kernel sent these shapes to the reference kernel).
inline bool dnnl_matches_reference(OpKind op, const Attributes& attrs,
                                   const std::vector<OpInput>& inputs, double atol = 1e-6,
                                   double rtol = 1e-5) {
  Graph g;
  std::vector<Value*> ins;
  std::vector<const Tensor*> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OpInput& in = inputs[i];
    if (!in.t.defined()) {
      ins.push_back(nullptr);
      tensors.push_back(nullptr);
      continue;
    }
    // Appended, not "c" + std::to_string(i): GCC 12 warns on that (-Wrestrict, a false
    // positive) where it inlines it.
    std::string name(in.constant ? "c" : "x");
    name += std::to_string(i);
    ins.push_back(in.constant ? g.add_constant(name, in.t) : f32_value(g, name, in.t.shape()));
    tensors.push_back(&in.t);
  }
  Value* y = g.add_value("y");
  y->dtype = DataType::kFloat32;
  Node* n = g.add_node(op, "node", ins, {y}, attrs);
  const KernelSource& dnnl = onednn_backend(2);
  EXPECT_TRUE(dnnl.supports(*n)) << op_name(op) << " not claimed";
  if (!dnnl.supports(*n)) return false;
  auto kernel = dnnl.create_kernel(*n);
  EXPECT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  if (!kernel.is_ok()) return false;
  auto got = prepare_and_run(**kernel, tensors);
  // Declined (kUnsupported, with the reason): the planner takes the reference kernel.
  if (got.status().code() == StatusCode::kUnsupported) return false;
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = run_backend(reference_backend(), *n, tensors);
  EXPECT_TRUE(want.is_ok()) << want.status().to_string();
  if (!got.is_ok() || !want.is_ok()) return false;
  expect_near(*got, (*want)[0], atol, rtol);
  return true;
}

}  // namespace kiln::test
