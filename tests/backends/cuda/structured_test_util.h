// One-node graphs for the structured-kernel tests (pooling, concat, softmax, batch norm,
// transpose...): float32 inputs of known shape (constants where given), and the loops over
// precisions and offered layouts every case runs through.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace kiln::test {

// A graph holding one node; inputs are activations of the given shapes, except those with
// a constant tensor in `constants` (same index; undefined Tensor = activation).
struct OneNodeGraph {
  Graph g;
  Node* node = nullptr;
};

// "in3", "out0"... built by appending: GCC 12 warns (-Wrestrict, a false positive) on
// "literal" + std::to_string(i).
inline std::string numbered(const char* prefix, size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

inline std::unique_ptr<OneNodeGraph> one_node(OpKind op, const std::vector<Shape>& inputs,
                                              Attributes attrs, size_t num_outputs = 1,
                                              const std::vector<Tensor>& constants = {}) {
  auto o = std::make_unique<OneNodeGraph>();
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i < constants.size() && constants[i].defined())
      ins.push_back(o->g.add_constant(numbered("c", i), constants[i]));
    else
      ins.push_back(f32_value(o->g, numbered("in", i), inputs[i]));
  }
  std::vector<Value*> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(o->g.add_value(numbered("out", i)));
  o->node = o->g.add_node(op, "test_node", ins, outs, std::move(attrs));
  return o;
}

constexpr Precision kPrecisions[] = {Precision::kFp32, Precision::kFp16, Precision::kBf16};
constexpr Layout kLayouts[] = {Layout::kPlain, Layout::kNHWC};

// Runs the node against the reference in fp32 and fp16 and, for rank-4 inputs, with
// both layouts offered.
inline void expect_all_match(const Node& node, const std::vector<const Tensor*>& in) {
  for (Precision p : kPrecisions)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(std::string(precision_name(p)) + " offered " + layout_name(l));
      expect_cuda_matches_reference(node, in, p, l);
    }
}

// The factory's answer for a node the CUDA backend must leave to the CPU.
inline void expect_factory_unsupported(const Node& node) {
  ASSERT_TRUE(has_cuda_kernel(node.op)) << op_name(node.op);
  auto k = make_cuda_kernel(node, Precision::kFp16);
  ASSERT_FALSE(k.is_ok()) << node.describe();
  EXPECT_EQ(k.status().code(), StatusCode::kUnsupported) << k.status().to_string();
}

}  // namespace kiln::test
