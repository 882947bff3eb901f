// Pure views: Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference Dropout. The
// output is input 0's buffer (kPlain) under a new shape, so nothing is launched. One family
// file: the ops differ only in their shape rule, which is the reference's (src/ops), so
// the 0 / -1 rules of Reshape and the axes rules cannot drift from it.
//
// Shape-like inputs (Reshape's shape, Squeeze/Unsqueeze's axes) must be constants: the
// model's own, or computed from the plan's shapes at build time (the plan builder passes
// those as constants). A shape computed on the device at run time would need the device to
// tell the host, which enqueue may not.
#include <algorithm>
#include <memory>
#include <string>

#include "backends/cuda/cuda_kernel.h"
#include "ops/dropout.h"
#include "ops/op_registry.h"

namespace kiln {

namespace {

class ViewKernel final : public CudaKernel {
 public:
  // Keeps a copy of the node's op and attributes (the shape rule's inputs), not the graph's.
  ViewKernel(const Node& node, const OpDef* def) : node_(node), def_(def) {
    std::fill(node_.inputs.begin(), node_.inputs.end(), nullptr);
    std::fill(node_.outputs.begin(), node_.outputs.end(), nullptr);
  }

  bool is_alias() const override { return true; }
  bool reads_on_host(int i) const override { return i > 0; }
  std::string tactic() const override { return "view"; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.empty() || !in[0].present()) return invalid_argument("input 0 is missing");
    if (dtype_size(in[0].dtype) == 0)
      return unsupported(std::string("view of ") + dtype_name(in[0].dtype));
    if (in[0].layout != Layout::kPlain)
      return invalid_argument(std::string("a view needs plain input, got ") +
                              layout_name(in[0].layout));
    std::vector<TensorDesc> descs(in.size());
    for (size_t i = 0; i < in.size(); ++i) descs[i] = {in[i].dtype, in[i].shape, in[i].value};
    // The views forward a constant input's value; on the device the data is the buffer.
    descs[0].value = nullptr;
    std::vector<TensorDesc> shapes(out.size());
    KILN_RETURN_IF_ERROR(def_->infer(node_, descs, shapes));
    if (shape_numel(shapes[0].shape) != in[0].numel())
      return internal_error("view changes the element count");
    out[0] = TensorDesc{in[0].dtype, shapes[0].shape};
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    return internal_error("enqueue on a view");  // is_alias(): never called
  }

 private:
  Node node_;
  const OpDef* def_;
};

// Inputs from index `first` on must be constants (shape / axes / Dropout's ratio and
// training_mode).
Status check_constant_inputs(const Node& node, size_t first) {
  for (size_t i = first; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (v && !v->is_constant())
      return unsupported("input " + std::to_string(i) + " of " + op_name(node.op) +
                         " is computed at run time (a constant is needed)");
  }
  return Status::ok();
}

Result<std::unique_ptr<CudaKernel>> make_view(const Node& node, Precision) {
  const OpDef* def = OpRegistry::find(node.op);
  if (!def) return unsupported(std::string("no shape rule for ") + op_name(node.op));
  if (!node.input(0)) return invalid_argument("input 0 is missing");
  if (!node.epilogue.empty()) return unsupported("a fused epilogue on a view");
  // The graph may not know input 0's dtype (a converted model); prepare sees the plan's.
  if (node.inputs[0]->dtype != DataType::kUndefined && dtype_size(node.inputs[0]->dtype) == 0)
    return unsupported(std::string("view of ") + dtype_name(node.inputs[0]->dtype));
  KILN_RETURN_IF_ERROR(check_constant_inputs(node, 1));
  if (node.op == OpKind::Dropout) {
    if (node.output(1)) return unsupported("Dropout with a mask output");
    // Inputs 1 and 2 are constants here (checked above).
    const Value* ratio = node.input(1);
    const Value* training = node.input(2);
    KILN_RETURN_IF_ERROR(check_dropout_is_identity(ratio ? &ratio->constant : nullptr,
                                                   training ? &training->constant : nullptr));
  }
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i]) return unsupported("a view with more than one output");
  return std::unique_ptr<CudaKernel>(std::make_unique<ViewKernel>(node, def));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Reshape, make_view);
KILN_REGISTER_CUDA_KERNEL(Flatten, make_view);
KILN_REGISTER_CUDA_KERNEL(Squeeze, make_view);
KILN_REGISTER_CUDA_KERNEL(Unsqueeze, make_view);
KILN_REGISTER_CUDA_KERNEL(Identity, make_view);
KILN_REGISTER_CUDA_KERNEL(Dropout, make_view);

}  // namespace kiln
