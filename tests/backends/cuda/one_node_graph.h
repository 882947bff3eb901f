// A one-node graph for CUDA kernel tests: inputs are graph inputs (with their dtype and
// static shape, what a factory looks at) or constants (what prepare reads on the host).
//
//   OneNodeGraph t(OpKind::Add, {In(x), In::constant(bias)});
//   expect_cuda_matches_reference(*t.node, t.inputs(), Precision::kFp16, Layout::kPlain);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "ir/graph.h"

namespace kiln::test {

struct In {
  Tensor tensor;  // undefined: an omitted optional input
  bool constant = false;
  In() = default;
  In(Tensor t) : tensor(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  static In make_constant(Tensor t) {
    In in(std::move(t));
    in.constant = true;
    return in;
  }
};

struct OneNodeGraph {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  Node* node = nullptr;
  std::vector<Tensor> tensors;

  OneNodeGraph(OpKind op, const std::vector<In>& in, Attributes attrs = {},
               size_t num_outputs = 1) {
    std::vector<Value*> ins;
    for (size_t i = 0; i < in.size(); ++i) {
      tensors.push_back(in[i].tensor);
      const std::string name = "in" + std::to_string(i);
      if (!in[i].tensor.defined()) {
        ins.push_back(nullptr);
      } else if (in[i].constant) {
        ins.push_back(graph->add_constant(name, in[i].tensor));
      } else {
        Value* v = graph->add_value(name);
        v->dtype = in[i].tensor.dtype();
        v->has_shape = true;
        for (int64_t d : in[i].tensor.shape()) v->dims.push_back(Dim{d, ""});
        ins.push_back(v);
      }
    }
    std::vector<Value*> outs;
    for (size_t i = 0; i < num_outputs; ++i)
      outs.push_back(graph->add_value("out" + std::to_string(i)));
    node = graph->add_node(op, "test_node", ins, outs, std::move(attrs));
  }

  std::vector<const Tensor*> inputs() const {
    std::vector<const Tensor*> p;
    for (const Tensor& t : tensors) p.push_back(t.defined() ? &t : nullptr);
    return p;
  }

  // What the registered factory says about the node.
  Status create(Precision p = Precision::kFp32) const {
    if (!has_cuda_kernel(node->op)) return not_found("no CUDA kernel registered");
    auto k = make_cuda_kernel(*node, p);
    return k.is_ok() ? Status::ok() : k.status();
  }
};

inline Tensor int_tensor(DataType dt, const Shape& shape, uint32_t seed, int64_t lo, int64_t hi,
                         bool nonzero = false) {
  Tensor t(dt, shape);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    int64_t v = lo + static_cast<int64_t>((s >> 8) % static_cast<uint32_t>(hi - lo + 1));
    if (nonzero && v == 0) v = 1;
    switch (dt) {
      case DataType::kInt64: t.data<int64_t>()[i] = v; break;
      case DataType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DataType::kBool: t.data<bool>()[i] = v != 0; break;
      default: ADD_FAILURE() << "int_tensor of " << dtype_name(dt); return t;
    }
  }
  return t;
}

}  // namespace kiln::test
