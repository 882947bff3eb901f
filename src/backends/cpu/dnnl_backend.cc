// The oneDNN CPU backend in fp32: Conv and Gemm (with their fused epilogue as post-ops),
// 2-D pooling, the broadcasting binary ops, the unary activations, Softmax, Concat and
// Resize. Everything else takes the reference kernel, the host's next candidate; shapes a
// claimed kernel cannot run too (DnnlKernel::prepare declines them).

#include <omp.h>

#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "backends/cpu/dnnl_common.h"
#include "core/check.h"

namespace kiln::dnnl_cpu {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

OmpThreadScope::OmpThreadScope(int threads) : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
}
OmpThreadScope::~OmpThreadScope() { omp_set_num_threads(saved_); }

bool is_f32(const Value* v, bool optional) {
  if (!v) return optional;
  return v->dtype == DataType::kFloat32;
}

dnnl::memory::dims to_dims(const std::vector<int64_t>& v) {
  return dnnl::memory::dims(v.begin(), v.end());
}

dnnl::memory::desc plain_desc(const std::vector<int64_t>& shape) {
  dnnl::memory::dims dims = shape.empty() ? dnnl::memory::dims{1} : to_dims(shape);
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

void execute_src_dst(const dnnl::primitive& prim, dnnl::stream& stream,
                     const dnnl::memory::desc& src_md, const void* src,
                     const dnnl::memory::desc& dst_md, void* dst) {
  dnnl::memory s(src_md, cpu_engine(), const_cast<void*>(src));
  dnnl::memory d(dst_md, cpu_engine(), dst);
  prim.execute(stream, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, d}});
  stream.wait();
}

bool all_positive(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d <= 0) return false;
  return true;
}

// Appends the epilogue activation as eltwise post-ops; false when oneDNN 2.6 has none.
bool append_activation(const Epilogue& e, dnnl::post_ops& ops) {
  using alg = dnnl::algorithm;
  switch (e.act) {
    case Activation::kNone: return true;
    case Activation::kRelu: ops.append_eltwise(1.f, alg::eltwise_relu, 0.f, 0.f); return true;
    case Activation::kLeakyRelu:
      ops.append_eltwise(1.f, alg::eltwise_relu, e.alpha, 0.f);
      return true;
    case Activation::kClip:
      ops.append_eltwise(1.f, alg::eltwise_clip, e.alpha, e.beta);
      return true;
    case Activation::kSigmoid:
      ops.append_eltwise(1.f, alg::eltwise_logistic, 0.f, 0.f);
      return true;
    case Activation::kTanh: ops.append_eltwise(1.f, alg::eltwise_tanh, 0.f, 0.f); return true;
    case Activation::kSilu: ops.append_eltwise(1.f, alg::eltwise_swish, 1.f, 0.f); return true;
    case Activation::kHardSigmoid:
      // 2.6 has no hardsigmoid: alpha·x + beta, then clip to [0, 1].
      ops.append_eltwise(1.f, alg::eltwise_linear, e.alpha, e.beta);
      ops.append_eltwise(1.f, alg::eltwise_clip, 0.f, 1.f);
      return true;
    case Activation::kHardSwish:
      ops.append_eltwise(1.f, alg::eltwise_hardswish, 0.f, 0.f);
      return true;
    case Activation::kGelu: ops.append_eltwise(1.f, alg::eltwise_gelu_erf, 0.f, 0.f); return true;
  }
  return false;
}

namespace {
bool same_descs(const std::vector<TensorDesc>& a, const std::vector<TensorDesc>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape || a[i].layout != b[i].layout)
      return false;
  return true;
}

// Small inputs whose values a kernel may have built its primitive from (Resize's scales or
// sizes, Clip's bounds, when computed in the graph): their bytes are part of what was
// prepared. Activations this small cost nothing to compare.
constexpr int64_t kKeyedValueElements = 16;

// The bytes of input `d` when it is small and its value known, else empty.
std::string_view small_value(const TensorDesc& d) {
  if (!d.value || d.value->numel() > kKeyedValueElements) return {};
  return {static_cast<const char*>(d.value->raw()), d.value->nbytes()};
}

// Whether the small inputs hold `values` (prepare runs before every execute: no allocation).
bool same_small_values(const std::vector<TensorDesc>& in, const std::vector<std::string>& values) {
  if (in.size() != values.size()) return false;
  for (size_t i = 0; i < in.size(); ++i)
    if (small_value(in[i]) != values[i]) return false;
  return true;
}
}  // namespace

Status DnnlKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                           BuildContext&) {
  const OpDef* def = OpRegistry::find(node_.op);
  if (!def) return unsupported(node_.describe() + ": no shape rule");
  // The reference shape rule validates attributes and shapes and gives the output descs.
  KILN_RETURN_IF_ERROR(infer_node(*def, node_, in, out).with_context(node_.describe()));
  if (!prepared_in_.empty() && same_descs(in, prepared_in_) &&
      same_small_values(in, prepared_values_)) {
    // A dynamic step prepares before every run: the layouts were settled at the first prepare.
    for (size_t i = 0; i < out.size(); ++i) out[i].layout = prepared_out_layouts_[i];
    return Status();
  }
  // The layouts the plan records: the rank-4 values this backend's kernels read and write in
  // a oneDNN layout (stored_layout, derived from the graph, so producer and readers agree).
  // An input arriving in another layout than the kernel reads is the planner's bug: it would
  // be read as the wrong elements.
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].present() || in[i].value) continue;
    const Layout want = stored_layout(shared_, node_.input(i), in[i].shape);
    if (in[i].layout != want)
      return internal_error(node_.describe() + ": input " + std::to_string(i) + " ('" +
                            node_.input(i)->name + "') arrives " + layout_name(in[i].layout) +
                            ", but oneDNN's layout plan stores it " + layout_name(want));
  }
  prepared_out_layouts_.assign(out.size(), Layout::kPlain);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].present())
      out[i].layout = prepared_out_layouts_[i] =
          stored_layout(shared_, node_.output(i), out[i].shape);
  const OmpThreadScope threads(shared_.options.threads);
  std::string declined;
  try {
    if (!try_prepare(in, out)) declined = "oneDNN has no implementation for these shapes";
  } catch (const dnnl::error& e) {
    declined = std::string("oneDNN: ") + e.what();  // none for these shapes or attributes
  } catch (const std::bad_alloc&) {
    // Shapes too large for oneDNN's buffers: the reference kernel, and the runtime's size
    // checks, report them.
    declined = "out of memory preparing oneDNN's primitive";
  }
  if (!declined.empty()) {
    prepared_in_.clear();
    return unsupported(node_.describe() + ": " + declined);
  }
  prepared_in_ = in;
  prepared_values_.assign(in.size(), std::string());
  for (size_t i = 0; i < in.size(); ++i) prepared_values_[i] = small_value(in[i]);
  return Status();
}

std::string DnnlKernel::tactic() const {
  const std::string impl = impl_info();
  return impl.empty() ? "onednn" : "onednn " + impl;
}

std::string DnnlSrcDstKernel::impl_info() const { return impl_info_of(prim_); }

void DnnlSrcDstKernel::run(const std::vector<const TensorRef*>& in,
                           const std::vector<TensorRef*>& out) {
  execute_src_dst(prim_, stream_, src_md_, in[0]->data, dst_md_, out[0]->data);
}

std::string impl_info_of(const dnnl::primitive& p) {
  if (!p) return "";
  const char* info = nullptr;
  if (dnnl_primitive_desc_query(p.get_primitive_desc(), dnnl_query_impl_info_str, 0, &info) !=
          dnnl_success ||
      !info)
    return "";
  return info;
}

Status DnnlKernel::execute(const std::vector<const TensorRef*>& in,
                           const std::vector<TensorRef*>& out, const RunContext&) {
  const OmpThreadScope threads(shared_.options.threads);
  try {
    run(in, out);
  } catch (const dnnl::error& e) {
    return internal_error(node_.describe() + ": oneDNN: " + e.what());
  }
  return Status();
}

bool register_dnnl_kernel(const std::vector<OpKind>& ops, bool (*supports)(const Node&),
                          KernelFactory make) {
  for (OpKind op : ops)
    KernelRegistry::add(KernelCandidate{DeviceKind::kCpu, "onednn", op, supports, make});
  return true;
}

Result<std::unique_ptr<Kernel>> make_dnnl_kernel(const Node& node, const KernelParams& params,
                                                 bool (*supports)(const Node&), DnnlMakeFn make) {
  const auto* shared = dynamic_cast<const DnnlShared*>(params.state);
  // A plan built without the engine's backend states (PlanOptions::states) has no oneDNN.
  if (!shared) return unsupported(node.describe() + ": planned without oneDNN's state");
  if (!supports(node)) return unsupported(node.describe() + ": not supported by oneDNN");
  return make(node, *shared);
}

bool claims(const Node& node) {
  const KernelCandidate* c = KernelRegistry::find(node.op, DeviceKind::kCpu, "onednn");
  return c && c->supports(node);
}

ChoiceEntries DnnlShared::saved_choices() const {
  ChoiceEntries out;
  save_conv_answers(*convs, out);
  save_reorder_times(*layouts, out);
  return out;
}

Status DnnlShared::restore_choices(const ChoiceEntries& entries) {
  for (const auto& [key, value] : entries) {
    KILN_ASSIGN_OR_RETURN(const bool conv, restore_conv_answer(*convs, key, value));
    if (!conv) KILN_RETURN_IF_ERROR(restore_reorder_time(*layouts, key, value).status());
  }
  return Status::ok();
}

const DnnlShared* shared_of(const BackendState* state) {
  return dynamic_cast<const DnnlShared*>(state);
}

namespace {

std::unique_ptr<BackendState> state_for_engine(const EngineOptions& o) {
  return make_onednn_state(
      {o.threads, o.cpu_conv_algo, o.cpu_layout, o.precision, o.precision_overrides});
}

// An engine's oneDNN caches (layouts, conv choices), shared by the kernels it makes.
const bool kStateRegistered =
    KernelRegistry::add_state(BackendStateFactory{DeviceKind::kCpu, "onednn", state_for_engine});

}  // namespace

}  // namespace kiln::dnnl_cpu

namespace kiln {

Status cpu_precision_status(Precision p) {
  if (p == Precision::kFp32) return Status::ok();
  if (p != Precision::kBf16)
    return unsupported(std::string("precision ") + precision_name(p) +
                       " on the CPU: it computes in fp32 or bf16");
  // Asked of oneDNN itself: a bf16 conv it runs natively (not its reference loops) needs the
  // AVX-512 BF16 or AMX instructions, and honours DNNL_MAX_CPU_ISA.
  static const bool native = [] {
    using dnnl::memory;
    try {
      const memory::desc src({1, 32, 8, 8}, memory::data_type::bf16, memory::format_tag::any);
      const memory::desc w({32, 32, 3, 3}, memory::data_type::bf16, memory::format_tag::any);
      const memory::desc dst({1, 32, 8, 8}, memory::data_type::f32, memory::format_tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src, w, dst, {1, 1},
                                        {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, dnnl_cpu::cpu_engine());
      return std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  if (native) return Status::ok();
  return unsupported(
      "bf16 on the CPU needs bfloat16 instructions (AVX-512 BF16 or AMX), which this CPU "
      "lacks: oneDNN has only its reference convolution for it; use fp32, or --device cuda");
}

std::unique_ptr<BackendState> make_onednn_state(const OnednnOptions& options) {
  auto s = std::make_unique<dnnl_cpu::DnnlShared>();
  s->options = options;
  return s;
}

}  // namespace kiln
