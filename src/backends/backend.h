// The contract every backend implements (CPU reference, oneDNN, CUDA).
//
// A backend claims nodes with supports(); the runtime builds one Kernel per claimed node.
// Nodes no backend claims run on the CPU reference kernels (src/ops), with explicit copies
// when the rest of the graph lives elsewhere, and `kiln inspect` reports them.
//
// Kernel life cycle, the same on every backend:
//   prepare(in)   when input shapes are first seen or change: choose the algorithm, size
//                 scratch, pack weights. May allocate. Returns the output descriptions.
//   execute(...)  runs on the inputs with the prepared shapes. Must not allocate device
//                 memory or synchronize (so GPU backends can capture it in a CUDA graph);
//                 CPU kernels write into the preallocated output tensors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/op_registry.h"

namespace kiln {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `out` is pre-sized to the node's output count; fill each present output's desc.
  virtual Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out) = 0;
  // in[i] nullptr for omitted inputs; out[i] nullptr for omitted outputs, otherwise
  // allocated with the prepared desc.
  virtual Status execute(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) = 0;
  // The implementation prepare() chose, for profiles and `kiln inspect` (oneDNN's
  // implementation name, "reference" where the backend's own kernel declined the shapes);
  // empty for the reference backend's kernels.
  virtual std::string tactic() const { return ""; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Whether this backend can run `node` (op, dtypes, attribute values).
  virtual bool supports(const Node& node) const = 0;
  // Builds the kernel for a node supports() accepted. The node outlives the kernel.
  virtual Result<std::unique_ptr<Kernel>> create_kernel(const Node& node) const = 0;
};

// The CPU reference backend: every op with a reference kernel, single-threaded.
const Backend& reference_backend();

}  // namespace kiln
