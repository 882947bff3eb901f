// Helpers for backend tests: run one node through a backend's kernel and through the
// reference kernel on the same inputs, and compare.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>

#include "backends/backend.h"
#include "ops/op_test_util.h"

namespace kiln::test {

// Conv attributes from a test case with the fields group, strides, dilations, pads and
// auto_pad (nullptr: absent); unset lists are left out, as an exporter would.
template <class ConvCaseT>
Attributes conv_attrs(const ConvCaseT& c) {
  Attributes a;
  if (c.group != 1) a.set("group", c.group);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  return a;
}

// A float32 value of `shape` in `g` (what supports() looks at).
inline Value* f32_value(Graph& g, const std::string& name, const Shape& shape) {
  Value* v = g.add_value(name);
  v->dtype = DataType::kFloat32;
  v->has_shape = true;
  for (int64_t d : shape) v->dims.push_back(Dim{d, ""});
  return v;
}

// One backend's host kernels as a test makes them without an engine: through the registry's
// candidate of that backend, with the backend's state (oneDNN's caches) where it has one.
class KernelSource {
 public:
  explicit KernelSource(const char* backend, std::unique_ptr<BackendState> state = nullptr)
      : backend_(backend), state_(std::move(state)) {}
  const char* name() const { return backend_; }
  const BackendState* state() const { return state_.get(); }
  // Whether the backend's candidate takes `node` (op, dtypes, attributes).
  bool supports(const Node& node) const {
    const KernelCandidate* c = KernelRegistry::find(node.op, DeviceKind::kCpu, backend_);
    return c && (!c->supports || c->supports(node));
  }
  Result<std::unique_ptr<Kernel>> create_kernel(const Node& node) const {
    const KernelCandidate* c = KernelRegistry::find(node.op, DeviceKind::kCpu, backend_);
    if (!c) return unsupported(node.describe() + ": no " + backend_ + " kernel");
    return c->make(node, KernelParams{Precision::kFp32, state_.get()});
  }

 private:
  const char* backend_;
  std::unique_ptr<BackendState> state_;
};

// The reference kernels.
inline const KernelSource& reference_backend() {
  static const KernelSource reference("reference");
  return reference;
}

// A host kernel's prepare, with the CPU build context.
inline Status prepare_host(Kernel& kernel, const std::vector<TensorDesc>& in,
                           std::vector<TensorDesc>& out) {
  BuildContext ctx(DeviceKind::kCpu);
  return kernel.prepare(in, out, ctx);
}

// A host kernel's execute on tensors (nullptr for omitted ones), through refs as the runtime
// passes them.
inline Status execute_host(Kernel& kernel, const std::vector<const Tensor*>& in,
                           const std::vector<Tensor*>& out) {
  HostOperands refs;
  refs.bind(in, out);
  const RunContext run(DeviceKind::kCpu);
  return kernel.execute(refs.in_ptr, refs.out_ptr, run);
}

// prepare + execute of `backend`'s kernel for `node` (inputs nullptr when omitted).
// The kernel is handed back through `keep` when given.
inline Result<std::vector<Tensor>> run_backend(const KernelSource& backend, const Node& node,
                                               const std::vector<const Tensor*>& in,
                                               std::unique_ptr<Kernel>* keep = nullptr) {
  KILN_ASSIGN_OR_RETURN(auto kernel, backend.create_kernel(node));
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = TensorDesc{in[i]->dtype(), in[i]->shape(), in[i]};
  std::vector<TensorDesc> out_descs(node.outputs.size());
  KILN_RETURN_IF_ERROR(prepare_host(*kernel, descs, out_descs));
  std::vector<Tensor> out;
  std::vector<Tensor*> out_ptrs;
  out.reserve(out_descs.size());
  for (const TensorDesc& d : out_descs) {
    if (!d.present()) {
      out_ptrs.push_back(nullptr);
      continue;
    }
    out.emplace_back(d.dtype, d.shape);
    out_ptrs.push_back(&out.back());
  }
  KILN_RETURN_IF_ERROR(execute_host(*kernel, in, out_ptrs));
  if (keep) *keep = std::move(kernel);
  return out;
}

// prepare + execute of an existing kernel on `in` (inputs' values known, as the runtime
// gives them), output 0 poisoned with NaN first so an element the kernel leaves unwritten
// shows. Returns output 0.
inline Result<Tensor> prepare_and_run(Kernel& kernel, const std::vector<const Tensor*>& in) {
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = TensorDesc{in[i]->dtype(), in[i]->shape(), in[i]};
  std::vector<TensorDesc> out(1);
  KILN_RETURN_IF_ERROR(prepare_host(kernel, descs, out));
  Tensor got(out[0].dtype, out[0].shape);
  if (got.dtype() == DataType::kFloat32)
    for (int64_t i = 0; i < got.numel(); ++i)
      got.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  KILN_RETURN_IF_ERROR(execute_host(kernel, in, {&got}));
  return got;
}

// Runs `node` on `backend` and on the reference backend; expects equal shapes and values
// within 1e-4 relative (plus a small absolute floor for values near zero). `keep` receives
// the backend's kernel.
inline void expect_matches_reference(const KernelSource& backend, const Node& node,
                                     const std::vector<const Tensor*>& in,
                                     std::unique_ptr<Kernel>* keep = nullptr) {
  auto got = run_backend(backend, node, in, keep);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = run_backend(reference_backend(), node, in);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) expect_near((*got)[i], (*want)[i], 1e-5, 1e-4);
}

}  // namespace kiln::test
