// The one kernel contract and registry, for every backend (the CPU reference, oneDNN, CUDA).
//
// A kernel runs one node of the optimized graph on one device. Its life cycle:
//   create    a registered factory looks at the node (op, attributes, dtypes) and the engine's
//             precision and returns a kernel, or kUnsupported saying why; the runtime then
//             takes the next candidate for the node, or a reference step on the host.
//   questions before prepare, the runtime asks how the kernel wants its inputs (layouts,
//             constants read on the host, in place, views): the plan records each value's
//             device, dtype and layout and inserts conversions and copies as steps.
//   prepare   once per input shape, at plan time: check the shapes, choose the algorithm (by
//             timing candidates where there are several), pack or upload constants, size the
//             workspace, fill the output descriptions. May allocate and synchronize.
//   execute   on buffers with the prepared descriptions. Never allocates and never
//             synchronizes a GPU stream (so a CUDA graph can capture it); on the host it
//             writes into the preallocated outputs.
//
// Build and run contexts are per device: a CUDA kernel's carry the stream and library handles
// (backends/cuda/cuda_kernel.h). A kernel is only ever given its own device's contexts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/layout.h"
#include "ir/graph.h"
#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/op_registry.h"

namespace kiln {

enum class DeviceKind : uint8_t { kCpu, kCuda };
const char* device_kind_name(DeviceKind d);  // "cpu", "cuda"

// A kernel's operand: its description (dtype, logical shape, layout) and its bytes on the
// kernel's device. `desc.value` is not set at execute.
struct TensorRef {
  TensorDesc desc;
  void* data = nullptr;
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// What prepare() may use. A device derives its own (CudaBuildContext).
struct BuildContext {
  explicit BuildContext(DeviceKind d) : device(d) {}
  virtual ~BuildContext() = default;
  const DeviceKind device;
  // The node's compute precision: the engine's, or the node's override.
  Precision precision = Precision::kFp32;
  // The plan's notes, for what a kernel changed that a user should know of (a constant
  // saturated to fp16's range); nullptr when nobody listens.
  std::vector<std::string>* notes = nullptr;
  // The node's output shapes follow its data and its op has a bound (OpDef::bound): `out` is
  // pre-sized to the node's outputs plus one. prepare() fills the outputs at their bound and
  // the last entry as int64 [1]; execute() writes each output in its real shape, row-major at
  // the start of its buffer, and the real extent of OpDef::bound_axis into the last one. A
  // kernel that cannot declines with kUnsupported.
  bool bounded = false;
};

// What execute() gets. A device derives its own (CudaRunContext).
struct RunContext {
  explicit RunContext(DeviceKind d) : device(d) {}
  const DeviceKind device;
  void* workspace = nullptr;  // at least the kernel's workspace_bytes()
  size_t workspace_bytes = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual DeviceKind device() const = 0;

  // --- Questions, asked before prepare (defaults: plain inputs, nothing special).
  // The layouts the inputs must arrive in, given the layouts their producers offer
  // (`offered`, one per node input; kPlain for omitted ones). The default asks
  // input_layout() for each; a kernel whose inputs must agree (a binary op on equal shapes)
  // answers for all at once here.
  virtual std::vector<Layout> input_layouts(const std::vector<Layout>& offered) const;
  // The same asked with the inputs' descs (dtype, shape, the offered layout; the value where
  // known at build), which the planner knows: the default asks input_layouts().
  virtual std::vector<Layout> input_layouts_for(const std::vector<TensorDesc>& offered) const;
  // The layout input i must arrive in, given the one its producer offers. Default: kPlain.
  virtual Layout input_layout(int i, Layout offered) const { return Layout::kPlain; }
  // True when input i may arrive exactly as its producer stores it (dtype and layout), for
  // instance the model's float32 NCHW input to a kernel that converts it more cheaply itself
  // (fused with its own input transform). The plan then skips the conversion.
  virtual bool takes_offered(int i, const TensorDesc& offered) const { return false; }
  // True when input i is a constant the kernel reads from TensorDesc::value at prepare (and
  // packs itself); the plan then does not place it on the device and passes no data for it.
  virtual bool reads_on_host(int i) const { return false; }
  // Output 0 may be written over input `inplace_input()` (same bytes and layout) when no later
  // step reads that input; -1 when the kernel cannot work in place.
  virtual int inplace_input() const { return -1; }
  // True for pure views: output 0 is input 0's buffer with a new shape (or layout);
  // execute() is never called.
  virtual bool is_alias() const { return false; }

  // `in` has one entry per node input (not present for omitted inputs); `out` is pre-sized
  // to the node's outputs: fill dtype, shape and layout of each present output.
  virtual Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                         BuildContext& ctx) = 0;
  // Scratch device memory execute() needs (RunContext::workspace).
  virtual size_t workspace_bytes() const { return 0; }
  // The implementation prepare() chose, for profiles and `kiln inspect` ("onednn
  // brgconv:avx512_core", "cudnn IMPLICIT_PRECOMP_GEMM (0.041 ms)", "reference (...)");
  // empty for the reference kernels.
  virtual std::string tactic() const { return ""; }
  // The milliseconds prepare() measured for what it chose, on operands of the real shapes (a
  // kernel that times a library's algorithms itself); < 0 when it timed nothing, and the
  // planner times it where it must choose.
  virtual float timed_ms() const { return -1.f; }
  // in[i] / out[i] nullptr for omitted tensors.
  virtual Status execute(const std::vector<const TensorRef*>& in,
                         const std::vector<TensorRef*>& out, const RunContext& run) = 0;
};

// What a kernel factory is given besides the node.
struct BackendState {  // a backend's caches and options, shared by its kernels (oneDNN's)
  virtual ~BackendState() = default;
  // The choices it timed (key and value texts, keys starting with the backend's name), which
  // a plan file saves so that loading it chooses alike without timing.
  virtual std::vector<std::pair<std::string, std::string>> saved_choices() const { return {}; }
  // Takes back those of `entries` that are its own (others are ignored); an entry of its own
  // that does not parse is an error.
  virtual Status restore_choices(const std::vector<std::pair<std::string, std::string>>& entries) {
    return Status::ok();
  }
};
struct KernelParams {
  Precision precision = Precision::kFp32;  // the node's compute precision
  const BackendState* state = nullptr;     // the candidate's backend's, where it has one
};
using KernelFactory = Result<std::unique_ptr<Kernel>> (*)(const Node& node,
                                                          const KernelParams& params);

// One registered kernel candidate: a backend's kernel for one op kind on one device.
struct KernelCandidate {
  DeviceKind device = DeviceKind::kCpu;
  const char* backend = "";    // "onednn", "cuda", "reference"
  OpKind op = OpKind::kCount;  // kCount: any op (asked after the op's own candidates)
  // Whether it runs `node` (dtypes, attribute values), asked without making a kernel;
  // nullptr: ask the factory (it returns kUnsupported).
  bool (*supports)(const Node& node) = nullptr;
  KernelFactory make = nullptr;
};

// A backend's state for one engine (its caches, shared by the kernels it makes), made from the
// engine's options by the factory the backend registers.
struct BackendStateFactory {
  DeviceKind device = DeviceKind::kCpu;
  const char* backend = "";
  std::unique_ptr<BackendState> (*make)(const EngineOptions& options) = nullptr;
};

// An engine's backend states, by backend name.
struct BackendStates {
  std::vector<std::pair<std::string, std::unique_ptr<BackendState>>> by_backend;
  const BackendState* find(const char* backend) const;
};

// Every backend's kernels register here, one file per kernel. A candidate registered twice
// (same device, backend and op) aborts at startup.
class KernelRegistry {
 public:
  static bool add(const KernelCandidate& c);
  static bool add_state(const BackendStateFactory& f);
  // The candidates for `op` on `device`: the op's own in registration order per backend, then
  // those for any op (the reference kernels).
  static std::vector<const KernelCandidate*> candidates(OpKind op, DeviceKind device);
  // The candidate of `backend` for `op` (its own, or one for any op), or nullptr.
  static const KernelCandidate* find(OpKind op, DeviceKind device, const char* backend);
  // The states of the backends of `device` that registered one, for an engine of `options`.
  static BackendStates make_states(DeviceKind device, const EngineOptions& options);
};

// The candidates of `node` on `device` an engine may use: every one, or with `reference_only`
// (EngineOptions::backend = reference) the reference kernels alone.
std::vector<const KernelCandidate*> candidates_for(const Node& node, DeviceKind device,
                                                   bool reference_only);

// The reference kernel of `node` (a host step of any plan), or kUnsupported when the op has
// none.
Result<std::unique_ptr<Kernel>> make_reference_kernel(const Node& node);

// Host tensors as kernel operands (views: no copy; the tensors must outlive the refs).
TensorRef host_ref(const Tensor& t);
// A step's operands, kept with the step so that binding them again on every run allocates
// nothing once the shapes are seen: `in_ptr`/`out_ptr` are what execute() takes (nullptr
// for omitted operands).
struct KernelOperands {
  std::vector<TensorRef> in, out;
  std::vector<const TensorRef*> in_ptr;
  std::vector<TensorRef*> out_ptr;
  // `n_in` and `n_out` operands, all omitted.
  void reset(size_t n_in, size_t n_out);
  void set_in(size_t i, const TensorDesc& d, void* data);
  void set_out(size_t i, const TensorDesc& d, void* data);
};
// A host step's operands over Tensors.
struct HostOperands : KernelOperands {
  // Points the operands at `in` and `out` (nullptr for omitted tensors).
  void bind(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out);
};

// What the runtime's plan needs of a device besides its kernels: where constants go, the
// contexts its kernels prepare and run with, and the conversion and copy steps the plan
// inserts between kernels (runtime/plan.h). One per device of a Context; the CUDA one carries
// the Context's stream (backends/cuda/cuda_device.h).
class PlanDevice {
 public:
  virtual ~PlanDevice() = default;
  virtual DeviceKind kind() const = 0;
  // The dtype a value of graph dtype `dt` has on this device where a node computing in `p`
  // reads or writes it (float activations in the precision's dtype on CUDA).
  virtual DataType dtype_for(DataType dt, Precision p) const = 0;
  // The context kernels of this device prepare with; the plan sets its precision and notes
  // per node.
  virtual BuildContext& build_context() = 0;
  // Device memory holding `bytes` for the engine's lifetime, shared under `key` by every
  // plan of the engine (a weight uploaded once). The host keeps no copies: a plan points at
  // its host constants' own bytes.
  virtual Result<void*> place_constant(const std::string& key, const void* bytes, size_t n) = 0;
  // Runs `kernel` (of this device) on operands in this device's memory.
  virtual Status execute(Kernel& kernel, const KernelOperands& ops, void* workspace,
                         size_t workspace_bytes) = 0;
  // Writes `src` into `dst` (same logical shape) in `dst`'s dtype and layout, both here.
  virtual Status convert(const TensorRef& src, const TensorRef& dst) = 0;
  // Copies `n` bytes between host memory and this device's, after the work already given
  // to the device and before what follows; returns when both sides may be reused. The host
  // device never copies.
  virtual Status copy_to_host(void* host, const void* device, size_t n) = 0;
  virtual Status copy_from_host(void* device, const void* host, size_t n) = 0;

  // Optional: timing. Whether the planner times the candidates that accept a node, to keep
  // the fastest (EngineOptions::time_tactics on the GPU); default: no, the first one runs.
  virtual bool times_candidates() const { return false; }
  // The milliseconds of `kernel`, prepared for `in` (inputs read on the host carry their
  // value) and `out`, on scratch operands of those descriptions; kept in the device's timing
  // cache under `key`, so that a rebuild chooses alike.
  virtual Result<float> time_kernel(Kernel& kernel, const std::vector<TensorDesc>& in,
                                    const std::vector<TensorDesc>& out, const std::string& key) {
    return unsupported("this device times no kernels");
  }
};
// The host as a plan device: kernels run in the calling thread, constants are the graph's
// bytes, conversions change float dtypes (float32/float16/bfloat16) and layouts (plain, NHWC,
// oneDNN's nChw8c and nChw16c).
std::unique_ptr<PlanDevice> make_host_plan_device();
// A Tensor over a host operand's bytes (no copy), for code written on Tensors.
Tensor host_tensor(const TensorRef& r);

}  // namespace kiln
