// The reference kernels: src/ops' plain loops behind the kernel contract, registered as the
// host's candidate for every op.

#include "backends/backend.h"

namespace kiln {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(const Node& node, const OpDef& def) : node_(node), def_(def) {}

  DeviceKind device() const override { return DeviceKind::kCpu; }
  // Reshape-like ops give their input's row-major bytes another shape: the plan makes the
  // output a view of the input's buffer and the step does not run.
  bool is_alias() const override {
    return node_.op == OpKind::Reshape || node_.op == OpKind::Flatten ||
           node_.op == OpKind::Squeeze || node_.op == OpKind::Unsqueeze;
  }
  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 BuildContext&) override {
    // The reference kernels read and write row-major tensors only.
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].present() && in[i].layout != Layout::kPlain)
        return internal_error(node_.describe() + ": input " + std::to_string(i) + " arrives " +
                              layout_name(in[i].layout) + "; the reference kernel reads plain");
    return infer_node(def_, node_, in, out).with_context(node_.describe());
  }
  Status execute(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const RunContext&) override {
    // Tensors over the operands' bytes (the reference kernels are written on Tensors), made
    // again only where an operand moved or changed shape: a plan's runs allocate nothing here.
    in_.resize(in.size());
    out_.resize(out.size());
    in_ptr_.assign(in.size(), nullptr);
    out_ptr_.assign(out.size(), nullptr);
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i]) {
        view_of(*in[i], in_[i]);
        in_ptr_[i] = &in_[i];
      }
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i]) {
        view_of(*out[i], out_[i]);
        out_ptr_[i] = &out_[i];
      }
    return run_node(def_, node_, in_ptr_, out_ptr_).with_context(node_.describe());
  }

 private:
  static void view_of(const TensorRef& r, Tensor& t) {
    if (t.raw() != r.data || t.dtype() != r.desc.dtype || t.shape() != r.desc.shape)
      t = host_tensor(r);
  }

  const Node& node_;
  const OpDef& def_;
  std::vector<Tensor> in_, out_;
  std::vector<const Tensor*> in_ptr_;
  std::vector<Tensor*> out_ptr_;
};

bool has_reference(const Node& node) { return OpRegistry::find(node.op) != nullptr; }

Result<std::unique_ptr<Kernel>> make_reference(const Node& node, const KernelParams&) {
  return make_reference_kernel(node);
}

}  // namespace

Result<std::unique_ptr<Kernel>> make_reference_kernel(const Node& node) {
  const OpDef* def = OpRegistry::find(node.op);
  if (!def) return unsupported(node.describe() + ": no reference kernel");
  return std::unique_ptr<Kernel>(new ReferenceKernel(node, *def));
}

// Every op with a shape rule and a reference kernel, on the host, after the op's own
// candidates.
static const bool kRegistered = KernelRegistry::add(
    KernelCandidate{DeviceKind::kCpu, "reference", OpKind::kCount, has_reference, make_reference});

}  // namespace kiln
