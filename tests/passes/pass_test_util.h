// Helpers for pass tests: run a whole graph node by node on the reference kernels, so a
// test can compare a graph's outputs before and after a pass on the same random inputs.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"
#include "ops/op_test_util.h"
#include "passes/pass.h"

namespace kiln::test {

// The graph's outputs for `inputs` (one per graph input, in order).
inline Result<std::vector<Tensor>> run_graph(Graph& g, const std::vector<Tensor>& inputs) {
  KILN_RETURN_IF_ERROR(g.topo_sort());
  std::map<const Value*, Tensor> env;
  if (inputs.size() != g.inputs().size()) return invalid_argument("wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs()[i]] = inputs[i];
  for (const auto& v : g.values())
    if (v->is_constant()) env[v.get()] = v->constant;
  for (const auto& n : g.nodes()) {
    std::vector<const Tensor*> in;
    for (const Value* v : n->inputs) {
      if (!v) {
        in.push_back(nullptr);
        continue;
      }
      auto it = env.find(v);
      if (it == env.end()) return internal_error("value '" + v->name + "' not computed");
      in.push_back(&it->second);
    }
    std::vector<Tensor> out;
    KILN_RETURN_IF_ERROR(run_reference(*n, in, out));
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) env[n->outputs[i]] = std::move(out[i]);
  }
  std::vector<Tensor> r;
  for (const Value* o : g.outputs()) {
    auto it = env.find(o);
    if (it == env.end()) return internal_error("graph output '" + o->name + "' not computed");
    r.push_back(it->second);
  }
  return r;
}

// A float32 value with a static shape.
inline Value* typed_value(Graph& g, const std::string& name, const Shape& s) {
  Value* v = g.add_value(name);
  v->dtype = DataType::kFloat32;
  v->has_shape = true;
  for (int64_t d : s) v->dims.push_back({d, ""});
  return v;
}

// Runs `pass` on g and checks that the outputs on `inputs` stay within atol/rtol, that
// the graph still verifies, and returns what the pass returned.
template <class PassFn>
bool run_pass_and_compare(Graph& g, PassFn pass, const std::vector<Tensor>& inputs,
                          double atol = 1e-5, double rtol = 1e-5) {
  auto before = run_graph(g, inputs);
  EXPECT_TRUE(before.is_ok()) << before.status().to_string();
  auto changed = pass(g);
  EXPECT_TRUE(changed.is_ok()) << changed.status().to_string();
  Status v = verify_graph(g);
  EXPECT_TRUE(v.is_ok()) << v.to_string() << "\n" << print_graph(g);
  auto after = run_graph(g, inputs);
  EXPECT_TRUE(after.is_ok()) << after.status().to_string();
  if (before.is_ok() && after.is_ok()) {
    EXPECT_EQ(before->size(), after->size());
    for (size_t i = 0; i < before->size() && i < after->size(); ++i)
      expect_near((*after)[i], (*before)[i], atol, rtol);
  }
  return changed.is_ok() && *changed;
}

inline int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op == op;
  return n;
}

}  // namespace kiln::test
