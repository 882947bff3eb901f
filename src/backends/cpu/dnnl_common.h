// Shared plumbing of the oneDNN CPU backend: one engine/stream per process, the thread
// count every kernel sets before creating or running a primitive, and a kernel base that
// falls back to the reference kernel when oneDNN cannot take the concrete shapes (a rank
// supports() could not see, a padding oneDNN rejects), so a claimed node always runs.
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/dnnl_backend.h"

namespace kiln::dnnl_cpu {

// The caches of one backend, each defined (and made) where it is used.
struct ConvAnswers;  // the convs' timed choices (dnnl_conv_plan.cc)
struct LayoutPlans;  // the layout decision's group plans and reorder times (dnnl_layout_plan.cc)
std::shared_ptr<ConvAnswers> make_conv_answers();
std::shared_ptr<LayoutPlans> make_layout_plans();
// Their timed answers as texts ("onednn conv KEY" and "onednn reorder SHAPE" entries), and one
// entry taken back: false when the key is not theirs, an error when the value does not parse.
using ChoiceEntries = std::vector<std::pair<std::string, std::string>>;
void save_conv_answers(const ConvAnswers& a, ChoiceEntries& out);
Result<bool> restore_conv_answer(ConvAnswers& a, const std::string& key, const std::string& value);
void save_reorder_times(const LayoutPlans& p, ChoiceEntries& out);
Result<bool> restore_reorder_time(LayoutPlans& p, const std::string& key, const std::string& value);

// What the kernels of one backend share: its options and its caches. The caches are
// thread-safe; they grow with the distinct conv questions and value groups asked (bounded by
// the graph and the input shapes run) and go with the backend.
struct DnnlShared : BackendState {
  OnednnOptions options;
  std::shared_ptr<ConvAnswers> convs = make_conv_answers();
  std::shared_ptr<LayoutPlans> layouts = make_layout_plans();
  // The node's compute precision: its override, else the engine's.
  Precision precision_of(const Node& node) const {
    auto it = options.precision_overrides.find(node.name);
    return it == options.precision_overrides.end() ? options.precision : it->second;
  }
  ChoiceEntries saved_choices() const override;
  Status restore_choices(const ChoiceEntries& entries) override;
};

// The oneDNN state of an engine (make_onednn_state), or nullptr for another backend's.
const DnnlShared* shared_of(const BackendState* state);

dnnl::engine& cpu_engine();
// oneDNN's OpenMP thread count for the kernels this thread prepares or runs while the scope
// lives (0: all cores). OpenMP keeps the count per calling thread; the scope puts the caller's
// own count back when it ends, so a kiln call never changes the calling program's OpenMP
// setting (omp_get_max_threads() is the same after as before).
class OmpThreadScope {
 public:
  explicit OmpThreadScope(int threads);
  ~OmpThreadScope();
  OmpThreadScope(const OmpThreadScope&) = delete;
  OmpThreadScope& operator=(const OmpThreadScope&) = delete;

 private:
  int saved_;
};

// Whether `v` is a float32 value (or an omitted optional input when `optional`).
bool is_f32(const Value* v, bool optional = false);

// dnnl dims from kiln shapes.
dnnl::memory::dims to_dims(const std::vector<int64_t>& v);

// Input index of a Conv/Gemm bias (the optional third input), or -1 when absent or when
// that slot holds the epilogue's residual.
inline int bias_index(const Node& node) {
  if (node.inputs.size() > 2 && node.inputs[2] && node.epilogue.residual_input != 2) return 2;
  return -1;
}

// Appends the epilogue's activation as eltwise post-ops (after any sum post-op for the
// residual); false when oneDNN 2.6 cannot express it.
bool append_activation(const Epilogue& e, dnnl::post_ops& ops);

// Whether this backend claims `node` (what OnednnBackend::supports answers): the kernel
// registered for its op kind supports it.
bool claims(const Node& node);

// The oneDNN kernels register themselves in the one kernel registry (backends/backend.h), one
// file per kernel (KILN_REGISTER_DNNL_KERNEL): the op kinds it serves, whether it runs a node
// of them (dtypes, attributes), and its factory. An op kind registered twice aborts at
// startup.
using DnnlMakeFn = std::unique_ptr<Kernel> (*)(const Node& node, const DnnlShared& shared);
bool register_dnnl_kernel(const std::vector<OpKind>& ops, bool (*supports)(const Node&),
                          KernelFactory make);
// The registry's factory for a oneDNN kernel: kUnsupported unless `supports(node)`; the
// backend's state (KernelParams::state) is its DnnlShared.
Result<std::unique_ptr<Kernel>> make_dnnl_kernel(const Node& node, const KernelParams& params,
                                                 bool (*supports)(const Node&), DnnlMakeFn make);

// Activation storage between oneDNN kernels (dnnl_layout.cc, dnnl_layout_plan.cc). The
// runtime hands kernels host Tensors of the logical NCHW shape; a value whose producer and
// every reader are oneDNN Conv/pool/binary nodes may instead hold a layout oneDNN's kernels
// run on (nhwc for the brgemm kernels of oneDNN 2.6 on AVX-512, nChw16c/nChw8c for the
// older direct ones and Winograd) in that Tensor, which saves a reorder on each side of
// every conv. Such a value is "storable": float32, rank 4 with a known channel count, no
// graph input or output, produced as output 0 of a claimed node that writes it as a layout
// operand (layout_operands), and every use reads it as one. Producer and readers derive its
// layout from the graph through stored_format, so they always agree.
bool storable(const Value* v);
// The values claimed node `n` reads and writes in a stored layout: a Conv's input 0, output
// and residual; a pool's (MaxPool, AveragePool, GlobalAveragePool) or a unary element-wise
// op's input 0 and output; a rank-4 Concat's inputs and output when every input has a
// multiple of 16 channels; a binary op's (Add/Sub/Mul/Div) rank-4 output and its inputs of the
// output's shape or of [N, C, 1, 1] (a per-channel operand such as a squeeze-and-excitation scale,
// whose bytes are the same in every candidate layout); empty for other nodes.
std::vector<const Value*> layout_operands(const Node& n);
// The layout `v` is stored in during a run at batch `batch` (the run's size of the value's
// dim 0): nchw (the logical layout) unless it is storable; else the layout the plan of its
// group of connected storable values gives it (layout_choice), nhwc where that is a blocked
// layout and the channel count is off the block (blocked bytes = logical bytes).
dnnl::memory::format_tag stored_format(const DnnlShared& sh, const Value* v, int64_t batch);
// stored_format as the Layout a plan records for the value (rank 4; kPlain otherwise).
Layout stored_layout(const DnnlShared& sh, const Value* v, const Shape& shape);
// Whether `v` is stored in a oneDNN layout (stored_format is not nchw).
bool stored_blocked(const DnnlShared& sh, const Value* v, int64_t batch);
// The f32 memory desc of a rank-4 tensor of `shape` stored as `v` is (batch: shape[0]).
dnnl::memory::desc stored_desc(const DnnlShared& sh, const Value* v,
                               const std::vector<int64_t>& shape);

// The layout decision for `v` at batch `batch` (dnnl_layout_plan.cc describes it): the
// candidate layouts; the seconds of the group's convs with the whole group in each (empty when
// not timed: a forced CpuLayout, one candidate, or unknown dims); the estimated seconds
// of the plan taken, conversions included (at most the smaller of those); the batch the group
// was planned for; and the layout chosen for `v` (nchw when `v` is not storable or oneDNN has no
// JIT layout).
struct LayoutChoice {
  std::vector<dnnl::memory::format_tag> layouts;
  std::vector<double> seconds;
  double planned_seconds = -1;
  int64_t batch = 1;
  dnnl::memory::format_tag chosen = dnnl::memory::format_tag::nchw;
};
LayoutChoice layout_choice(const DnnlShared& sh, const Value* v, int64_t batch);
// Copies `src` (described by `src_md`) to `dst` (`dst_md`) with a one-off reorder; for the
// rare paths (reference fallback), not the per-run ones.
void reorder_once(const dnnl::memory::desc& src_md, const void* src,
                  const dnnl::memory::desc& dst_md, void* dst);

// Base for oneDNN kernels: subclasses implement try_prepare (false → use the reference
// kernel for these shapes) and run. A kernel is prepared again when its inputs' dtypes or
// shapes change, or the values of its small inputs (≤ 16 elements: Resize's scales or sizes,
// Clip's bounds, when computed in the graph), which a primitive may be built from.
class DnnlKernel : public Kernel {
 public:
  DnnlKernel(const Node& node, const DnnlShared& shared) : node_(node), shared_(shared) {}

  DeviceKind device() const final { return DeviceKind::kCpu; }
  // The backend's layout plan gives producers and readers one layout per value (stored_layout),
  // so the inputs arrive as their producers store them; prepare checks it.
  std::vector<Layout> input_layouts(const std::vector<Layout>& offered) const final {
    return offered;
  }
  // With the shapes: each rank-4 input in the layout the plan stores it in (stored_layout),
  // also where its producer is another backend's kernel (one that took a node oneDNN
  // declined): the planner converts it.
  std::vector<Layout> input_layouts_for(const std::vector<TensorDesc>& offered) const final;
  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 BuildContext& ctx) final;
  Status execute(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const RunContext& run) final;
  // "onednn <oneDNN's implementation name>".
  std::string tactic() const final;
  // Whether the last prepare built oneDNN's primitive (it did not decline).
  bool prepared() const { return !prepared_in_.empty(); }

 protected:
  // Builds the primitive for `in`; `out` already holds the inferred output descs. Returns
  // false (not an error) when oneDNN cannot run these shapes: prepare then declines
  // (kUnsupported), and the planner takes the next candidate (the reference kernel).
  virtual bool try_prepare(const std::vector<TensorDesc>& in,
                           const std::vector<TensorDesc>& out) = 0;
  virtual void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) = 0;
  // oneDNN's name for the prepared primitive (impl_info_of), for tactic(); empty if none.
  virtual std::string impl_info() const { return ""; }

  const Node& node_;
  const DnnlShared& shared_;  // the backend's, which outlives its kernels

 private:
  std::vector<TensorDesc> prepared_in_;
  std::vector<Layout> prepared_out_layouts_;  // what prepare gave each output
  std::vector<std::string> prepared_values_;  // of the small inputs (dnnl_backend.cc)
};

// A kernel that runs one one-source primitive (DNNL_ARG_SRC → DNNL_ARG_DST): try_prepare
// sets src_md_, dst_md_, prim_ and stream_; running and naming it are shared.
class DnnlSrcDstKernel : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  std::string impl_info() const override;
  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override;

  dnnl::memory::desc src_md_, dst_md_;
  dnnl::primitive prim_;
  dnnl::stream stream_;
};

// Whether the prepared conv `kernel` runs oneDNN's Winograd algorithm.
bool conv_uses_winograd(const Kernel& kernel);
// What the prepared conv `kernel` runs besides the conv (tests check that convs between
// neighbours stored in their layout run without reorders): reorders of its input, output
// and residual between the stored layouts and the primitive's, and whether the residual is
// read by a binary post-op; whether the plan is the process's earlier answer to the same
// question (made again, not timed). All false for other kernels or the reference path.
struct ConvPlanSummary {
  bool winograd = false, src_reorder = false, dst_reorder = false, res_reorder = false;
  bool res_binary = false;
  bool remembered = false;
  std::string impl;  // oneDNN's implementation name
};
ConvPlanSummary conv_plan_summary(const Kernel& kernel);
// Add/Sub/Mul/Div with broadcasting (dnnl_binary.cc).
bool is_binary_op(OpKind op);
// The unary activations and math ops (dnnl_eltwise.cc).
bool is_eltwise_op(OpKind op);
// ReduceMean, ReduceSum, ReduceL2 (dnnl_reduce.cc).
bool is_reduce_op(OpKind op);

// oneDNN's implementation name of a made primitive ("brgconv_1x1:avx512_core"); empty for an
// empty one.
std::string impl_info_of(const dnnl::primitive& p);

// The row-major f32 desc of `shape` (what the runtime's Tensors hold); a scalar is [1].
dnnl::memory::desc plain_desc(const std::vector<int64_t>& shape);
// Executes a one-source primitive (DNNL_ARG_SRC → DNNL_ARG_DST) on `src` and `dst` described
// by `src_md` and `dst_md`, and waits for it.
void execute_src_dst(const dnnl::primitive& prim, dnnl::stream& stream,
                     const dnnl::memory::desc& src_md, const void* src,
                     const dnnl::memory::desc& dst_md, void* dst);
// Whether every dim of `shape` is positive (oneDNN 2.6 primitives take no empty tensors).
bool all_positive(const std::vector<int64_t>& shape);

}  // namespace kiln::dnnl_cpu

// In src/backends/cpu/dnnl_<op>.cc, at namespace kiln::dnnl_cpu, the op kinds last:
//   KILN_REGISTER_DNNL_KERNEL(pool, pool_supported, make_pool_kernel, OpKind::MaxPool, ...);
#define KILN_REGISTER_DNNL_KERNEL(name, supports_fn, make_fn, ...)                 \
  static ::kiln::Result<std::unique_ptr<::kiln::Kernel>> kiln_dnnl_make_##name(    \
      const ::kiln::Node& node, const ::kiln::KernelParams& params) {              \
    return ::kiln::dnnl_cpu::make_dnnl_kernel(node, params, supports_fn, make_fn); \
  }                                                                                \
  [[maybe_unused]] static const bool kiln_dnnl_kernel_registered_##name =          \
      ::kiln::dnnl_cpu::register_dnnl_kernel({__VA_ARGS__}, supports_fn, kiln_dnnl_make_##name)
