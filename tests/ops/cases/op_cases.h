// One case table per op, run against every kernel of every backend that takes the node.
//
// A case is data: the op, its attributes and epilogue, and its inputs (random tensors, some
// marked as constants, the initializers a kernel may read at build). Case files in this
// folder register their tables with KILN_OP_CASES; the harnesses run every registered case:
//   tests/backends/test_op_cases.cc        the reference kernel (shape rule and kernel agree)
//                                          and the oneDNN kernel where it claims the node;
//   tests/backends/cuda/test_op_cases.cc   the CUDA kernel, fp32 and fp16, each layout
//                                          offered (kiln_gpu_tests, label gpu).
// A new kernel for an existing op is tested by the cases its op already has; a new case is one
// line in its op's table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::test {

struct CaseInput {
  Tensor t;               // undefined: an omitted optional input
  bool constant = false;  // an initializer (what a kernel may read at build)
};

struct OpCase {
  std::string name;  // unique within its op, e.g. "axis1_three_inputs"
  OpKind op = OpKind::kCount;
  Attributes attrs;
  std::vector<CaseInput> inputs;
  size_t outputs = 1;
  Epilogue epilogue;
  // Why the oneDNN kernel, claiming the node, runs the reference kernel for these shapes (both
  // operands broadcast, an empty input); nullptr: its own primitive must run.
  const char* onednn_reference = nullptr;
};

// Every registered case, in registration order (built on first use).
const std::vector<OpCase>& op_cases();

// "Concat.axis1_three_inputs", for traces; case_test_name(i) is the label of op_cases()[i]
// as a gtest name ("Concat_axis1_three_inputs").
std::string case_label(const OpCase& c);
std::string case_test_name(size_t index);

// The case's one-node graph: each input a graph input of its tensor's dtype and shape, or a
// constant holding it.
struct CaseGraph {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
  std::vector<const Tensor*> inputs;  // nullptr for omitted inputs
};
CaseGraph build_case(const OpCase& c);

// A 1-D int64 tensor of `v` (starts, pads, axes, sizes: the index inputs cases take).
inline Tensor int64s(const std::vector<int64_t>& v) {
  return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
}

// `c` as an int8 layer (Epilogue::int8, what fuse_int8_conv makes of a Conv, Gemm or MatMul):
// its weights (input 1) rounded onto a grid of max|W| / 127 per slice of `axis` (the output
// channels), their scales in the epilogue, and its input read on the grid of `input_scale`.
OpCase int8_layer(OpCase c, int axis, float input_scale);

// Registration (one per case file): the function returns the file's cases.
using CaseTable = std::vector<OpCase> (*)();
bool register_op_cases(CaseTable table);

}  // namespace kiln::test

// In tests/ops/cases/<op>.cc:
//   KILN_OP_CASES(concat) { return {OpCase{...}, ...}; }
#define KILN_OP_CASES(name)                                            \
  static std::vector<::kiln::test::OpCase> kiln_op_cases_##name();     \
  [[maybe_unused]] static const bool kiln_op_cases_registered_##name = \
      ::kiln::test::register_op_cases(&kiln_op_cases_##name);          \
  static std::vector<::kiln::test::OpCase> kiln_op_cases_##name()
