// The reference backend wraps src/ops' plain-loop kernels behind the Backend contract.

#include "backends/backend.h"

namespace kiln {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(const Node& node, const OpDef& def) : node_(node), def_(def) {}

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out) override {
    return infer_node(def_, node_, in, out).with_context(node_.describe());
  }
  Status execute(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    return run_node(def_, node_, in, out).with_context(node_.describe());
  }

 private:
  const Node& node_;
  const OpDef& def_;
};

class ReferenceBackend final : public Backend {
 public:
  const char* name() const override { return "reference"; }
  bool supports(const Node& node) const override { return OpRegistry::find(node.op) != nullptr; }
  Result<std::unique_ptr<Kernel>> create_kernel(const Node& node) const override {
    const OpDef* def = OpRegistry::find(node.op);
    if (!def) return unsupported(node.describe() + ": no reference kernel");
    return std::unique_ptr<Kernel>(new ReferenceKernel(node, *def));
  }
};

}  // namespace

const Backend& reference_backend() {
  static const ReferenceBackend backend;
  return backend;
}

}  // namespace kiln
