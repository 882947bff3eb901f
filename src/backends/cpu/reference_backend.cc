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
                 BuildContext& ctx) override {
    // The reference kernels read and write row-major tensors only.
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].present() && in[i].layout != Layout::kPlain)
        return internal_error(node_.describe() + ": input " + std::to_string(i) + " arrives " +
                              layout_name(in[i].layout) + "; the reference kernel reads plain");
    bounded_ = ctx.bounded;
    if (!bounded_) return infer_node(def_, node_, in, out).with_context(node_.describe());
    if (!def_.bound) return unsupported("op " + std::string(op_name(node_.op)) + " has no bound");
    std::vector<TensorDesc> outs(node_.outputs.size());
    KILN_RETURN_IF_ERROR(def_.bound(node_, in, outs).with_context(node_.describe()));
    out.assign(outs.begin(), outs.end());
    out.push_back(TensorDesc{DataType::kInt64, {1}});
    bound_ = outs;
    return Status::ok();
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
    if (bounded_) return execute_bounded();
    return run_node(def_, node_, in_ptr_, out_ptr_).with_context(node_.describe());
  }

 private:
  // The real shapes from the inputs' values, each output viewed in its real shape at the start
  // of its bound's buffer, and the extent after them.
  Status execute_bounded() {
    const size_t n_out = node_.outputs.size();
    std::vector<TensorDesc> in(in_.size()), real(n_out);
    for (size_t i = 0; i < in_.size(); ++i)
      if (in_ptr_[i]) in[i] = TensorDesc{in_[i].dtype(), in_[i].shape(), &in_[i]};
    KILN_RETURN_IF_ERROR(infer_node(def_, node_, in, real).with_context(node_.describe()));
    for (size_t i = 0; i < n_out; ++i) {
      if (!out_ptr_[i]) continue;
      const Shape& b = bound_[i].shape;
      if (real[i].shape.size() != b.size() || real[i].numel() > shape_numel(b))
        return internal_error(node_.describe() + ": output " + shape_str(real[i].shape) +
                              " exceeds its bound " + shape_str(b));
      out_[i] = Tensor::view_of(out_[i], 0, real[i].dtype, real[i].shape);
      out_ptr_[i] = &out_[i];
    }
    KILN_RETURN_IF_ERROR(run_node(def_, node_, in_ptr_,
                                  std::vector<Tensor*>(out_ptr_.begin(), out_ptr_.begin() + n_out))
                             .with_context(node_.describe()));
    const int axis = def_.bound_axis;
    const int64_t extent =
        real[0].shape.size() > static_cast<size_t>(axis) ? real[0].shape[axis] : 0;
    out_[n_out].data<int64_t>()[0] = extent;
    return Status::ok();
  }

  static void view_of(const TensorRef& r, Tensor& t) {
    if (t.raw() != r.data || t.dtype() != r.desc.dtype || t.shape() != r.desc.shape)
      t = host_tensor(r);
  }

  const Node& node_;
  const OpDef& def_;
  bool bounded_ = false;           // see BuildContext::bounded
  std::vector<TensorDesc> bound_;  // the outputs at their bound, when bounded_
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
