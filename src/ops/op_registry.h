// Per-op definitions: the shape rule and the reference kernel of every op kind.
//
// Each src/ops/<op>.cc registers its OpDef with KILN_REGISTER_OP. The reference kernel is
// plain C++ loops: slow and obviously right, the ground truth every backend kernel is
// tested against.
//
// Contract:
//  - infer(node, in, out): from the input dtypes and shapes (and the input values where
//    known: always when running, for constants when planning) fill out[i] for every node
//    output (out is pre-sized to node.outputs.size()). An omitted optional input has dtype
//    kUndefined. Bad attributes or inputs return a Status naming what is wrong.
//  - run(node, in, out): in[i] is nullptr for omitted inputs; out[i] has been allocated
//    with the dtype and shape infer() gave, or is nullptr when the node's output i is
//    omitted. run() writes every element of every non-null output.
#pragma once

#include <vector>

#include "core/layout.h"
#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// A value's description: what shape rules read and write, and what kernels are prepared with
// (backends/backend.h), where the layout also counts.
struct TensorDesc {
  DataType dtype = DataType::kUndefined;
  Shape shape;                     // logical (ONNX) shape
  const Tensor* value = nullptr;   // known contents (constants, shape values), or nullptr
  Layout layout = Layout::kPlain;  // how a kernel's operand is stored; shape rules ignore it
  bool present() const { return dtype != DataType::kUndefined; }
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

using InferFn = Status (*)(const Node& node, const std::vector<TensorDesc>& in,
                           std::vector<TensorDesc>& out);
using RunFn = Status (*)(const Node& node, const std::vector<const Tensor*>& in,
                         const std::vector<Tensor*>& out);

struct OpDef {
  InferFn infer = nullptr;
  RunFn run = nullptr;
  // The output shapes follow the values of the inputs (NonZero's count, NonMaxSuppression's
  // selected boxes, TopK's k when computed): infer needs every input's value, so a plan can be
  // made past such a node only once its inputs were computed.
  bool shape_follows_data = false;
  // For some such ops, the output shapes at their largest, from the inputs' dtypes and shapes
  // (and the values of small inputs such as a maximum count): the real extent, known once the
  // node has run, is on axis `bound_axis` of every output, and the kernel writes each output
  // row-major in its real shape at the start of its buffer (a plan runs the node on buffers of
  // the bound, then reads the extent back: runtime/plan.h). nullptr: no bound, the shapes are
  // known only from the inputs' values.
  InferFn bound = nullptr;
  int bound_axis = 0;
};

class OpRegistry {
 public:
  static bool add(OpKind op, OpDef def);
  // nullptr when the op kind has no definition linked in.
  static const OpDef* find(OpKind op);
};

// The op's shape rule and reference kernel applied to a node with a fused epilogue
// (ir/epilogue.h): the epilogue's inputs are hidden from the op's own rule and kernel, then
// output 0 is scaled and shifted per channel, the residual added and the activation applied. Equal
// to def->infer/run when the epilogue is empty. Float outputs only when the epilogue is not empty.
Status infer_node(const OpDef& def, const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out);
Status run_node(const OpDef& def, const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out);

// Runs `node` on the reference kernel: infer → allocate outputs → run. `out` receives one
// tensor per node output (undefined for omitted outputs). Errors carry the node's name.
Status run_reference(const Node& node, const std::vector<const Tensor*>& in,
                     std::vector<Tensor>& out);

}  // namespace kiln

// In src/ops/<op>.cc:  KILN_REGISTER_OP(Relu, infer_relu, run_relu);
#define KILN_REGISTER_OP(kind, infer_fn, run_fn)                 \
  [[maybe_unused]] static const bool kiln_op_registered_##kind = \
      ::kiln::OpRegistry::add(::kiln::OpKind::kind, ::kiln::OpDef{infer_fn, run_fn})
// An op whose output shapes follow its inputs' values (OpDef::shape_follows_data).
#define KILN_REGISTER_DATA_SHAPED_OP(kind, infer_fn, run_fn)     \
  [[maybe_unused]] static const bool kiln_op_registered_##kind = \
      ::kiln::OpRegistry::add(::kiln::OpKind::kind, ::kiln::OpDef{infer_fn, run_fn, true})
// An op whose output shapes follow its inputs' values, with a bound on them (OpDef::bound).
#define KILN_REGISTER_BOUNDED_OP(kind, infer_fn, run_fn, bound_fn, axis)                  \
  [[maybe_unused]] static const bool kiln_op_registered_##kind = ::kiln::OpRegistry::add( \
      ::kiln::OpKind::kind, ::kiln::OpDef{infer_fn, run_fn, true, bound_fn, axis})
