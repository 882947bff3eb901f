#include "backends/backend.h"

#include <cstring>
#include <utility>

#include "core/check.h"

namespace kiln {

const char* device_kind_name(DeviceKind d) { return d == DeviceKind::kCuda ? "cuda" : "cpu"; }

std::vector<Layout> Kernel::input_layouts(const std::vector<Layout>& offered) const {
  std::vector<Layout> want(offered.size());
  for (size_t i = 0; i < offered.size(); ++i)
    want[i] = input_layout(static_cast<int>(i), offered[i]);
  return want;
}

std::vector<Layout> Kernel::input_layouts_for(const std::vector<TensorDesc>& offered) const {
  std::vector<Layout> layouts(offered.size(), Layout::kPlain);
  for (size_t i = 0; i < offered.size(); ++i) layouts[i] = offered[i].layout;
  return input_layouts(layouts);
}

namespace {
std::vector<KernelCandidate>& registry() {
  static std::vector<KernelCandidate> r;
  return r;
}
std::vector<BackendStateFactory>& state_factories() {
  static std::vector<BackendStateFactory> r;
  return r;
}
}  // namespace

bool KernelRegistry::add(const KernelCandidate& c) {
  KILN_CHECK(c.make != nullptr);
  // Two kernels of one backend for one op would leave which runs to static initialization
  // order.
  for (const KernelCandidate& o : registry())
    KILN_CHECK(!(o.op == c.op && o.device == c.device && std::strcmp(o.backend, c.backend) == 0));
  registry().push_back(c);
  return true;
}

bool KernelRegistry::add_state(const BackendStateFactory& f) {
  KILN_CHECK(f.make != nullptr);
  state_factories().push_back(f);
  return true;
}

std::vector<const KernelCandidate*> KernelRegistry::candidates(OpKind op, DeviceKind device) {
  std::vector<const KernelCandidate*> r;
  for (const KernelCandidate& c : registry())
    if (c.op == op && c.device == device) r.push_back(&c);
  for (const KernelCandidate& c : registry())
    if (c.op == OpKind::kCount && c.device == device) r.push_back(&c);
  return r;
}

const KernelCandidate* KernelRegistry::find(OpKind op, DeviceKind device, const char* backend) {
  for (const KernelCandidate* c : candidates(op, device))
    if (std::strcmp(c->backend, backend) == 0) return c;
  return nullptr;
}

BackendStates KernelRegistry::make_states(DeviceKind device, const EngineOptions& options) {
  BackendStates s;
  for (const BackendStateFactory& f : state_factories())
    if (f.device == device) s.by_backend.emplace_back(f.backend, f.make(options));
  return s;
}

const BackendState* BackendStates::find(const char* backend) const {
  for (const auto& [name, state] : by_backend)
    if (name == backend) return state.get();
  return nullptr;
}

std::vector<const KernelCandidate*> candidates_for(const Node& node, DeviceKind device,
                                                   bool reference_only) {
  std::vector<const KernelCandidate*> r;
  for (const KernelCandidate* c : KernelRegistry::candidates(node.op, device)) {
    if (reference_only && std::strcmp(c->backend, "reference") != 0) continue;
    if (c->supports && !c->supports(node)) continue;
    r.push_back(c);
  }
  return r;
}

TensorRef host_ref(const Tensor& t) {
  return TensorRef{TensorDesc{t.dtype(), t.shape(), nullptr}, const_cast<void*>(t.raw())};
}

namespace {
// `r` over `t`'s bytes; the shape vector is copied only when it changed.
void point(TensorRef& r, const Tensor& t) {
  r.desc.dtype = t.dtype();
  if (r.desc.shape != t.shape()) r.desc.shape = t.shape();
  r.data = const_cast<void*>(t.raw());
}
}  // namespace

void KernelOperands::reset(size_t n_in, size_t n_out) {
  in.assign(n_in, TensorRef{});
  out.assign(n_out, TensorRef{});
  in_ptr.assign(n_in, nullptr);
  out_ptr.assign(n_out, nullptr);
}

void KernelOperands::set_in(size_t i, const TensorDesc& d, void* data) {
  in[i] = TensorRef{d, data};
  in[i].desc.value = nullptr;
  in_ptr[i] = &in[i];
}

void KernelOperands::set_out(size_t i, const TensorDesc& d, void* data) {
  out[i] = TensorRef{d, data};
  out[i].desc.value = nullptr;
  out_ptr[i] = &out[i];
}

void HostOperands::bind(const std::vector<const Tensor*>& ins, const std::vector<Tensor*>& outs) {
  in.resize(ins.size());
  out.resize(outs.size());
  in_ptr.assign(ins.size(), nullptr);
  out_ptr.assign(outs.size(), nullptr);
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i]) {
      point(in[i], *ins[i]);
      in_ptr[i] = &in[i];
    }
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) {
      point(out[i], *outs[i]);
      out_ptr[i] = &out[i];
    }
}

Tensor host_tensor(const TensorRef& r) {
  return Tensor::borrow(r.data, r.desc.dtype, r.desc.shape);
}

}  // namespace kiln
