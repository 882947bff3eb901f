// The execution plan, one shape for every device: a graph lowered for one set of input shapes.
//
// build_plan() walks the graph in the engine's order. For each node it asks the registry's
// candidates of the plan's main device in order (on the host: oneDNN's, then the reference
// kernel) and takes the first that takes the node (one that declines, at creation or at
// prepare, says why, and the plan records it); where none of the main device does, the
// reference kernel on the host (a fallback is just a step on another device). Each value a step
// reads is asked for on the step's device, in the layout and dtype the kernel wants: the plan keeps
// every form a value has (a slot: device, dtype, shape, layout, bytes) and inserts the steps that
// make a missing one, a conversion on one device or a copy between the host and the device. Shape
// arithmetic whose inputs are known at build (Shape, and small tensors computed from constants) is
// evaluated then, and its results reach the kernels as constants. Each kernel prepares once
// (algorithm choice by timing, weights placed on its device). Then plan_memory() gives every
// slot that is not a constant a place in its device's arena, from the slots' lifetimes, with
// in-place reuse where a kernel allows it.
//
// A graph whose shapes follow its data is planned in segments. The build stops at the first node
// whose output shapes need values it does not know: either small values computed from the data
// (a shape, k, a count: read back before that node, and the rest planned with them known), or
// the data itself (NonZero, NonMaxSuppression: the node runs on buffers of its bound, OpDef::
// bound, and only its real extent is read back). The stopped plan is a segment: it lists what
// to read back (Plan::read_back) and keeps the builder's state (Plan::resume), from which
// build_plan_after() plans the rest once the values are read, in the same arena after the
// segment's buffers. The rest is planned per value read where it depends on it (keys_plan), and
// once where only the graph's outputs read a bounded node's outputs (their real extent is set
// on the outputs after the run).
//
// The executor (run_plan_steps) walks the steps on the devices' run contexts; nothing is
// allocated or prepared there. A plan is data: plan_info() gives it as kiln/report.h's PlanInfo.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/device.h"
#include "ir/graph.h"
#include "kiln/options.h"
#include "kiln/report.h"
#include "kiln/status.h"

namespace kiln {

// One form of a graph value: where it lives and how its bytes are ordered.
// A value's quantization: real = scale · (q − zero_point), one scale per tensor (axis −1) or
// one per index of `axis`. Set on the slots of a value that the engine computes in 8 bits;
// empty elsewhere.
struct QuantScale {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;  // empty: all zero
  int axis = -1;

  bool empty() const { return scale.empty(); }
  // " q(scale 0.5)", " q(scale 0.5 zero 3)", " q(axis 1: 4 scales 0.1..0.7)"; "" when empty.
  std::string text() const;
};

struct PlanSlot {
  TensorDesc desc;  // dtype, shape, layout (value unset)
  DeviceKind device = DeviceKind::kCpu;
  int value_id = -1;      // the graph value it holds
  int buffer = -1;        // index into Plan::buffers (in its device's arena), or -1
  void* fixed = nullptr;  // a constant's bytes (placed by the device), or nullptr
  // Another slot whose bytes this one views (a Reshape's output, NHWC of [N,C,1,1]); -1.
  int alias_of = -1;
  // A graph input or output held by the caller, pointed at for each run (set_plan_io).
  bool external = false;
  QuantScale quant;  // the value's 8-bit scale (PlanOptions::value_scales), or empty
};

struct PlanBuffer {
  DeviceKind device = DeviceKind::kCpu;
  int64_t bytes = 0;
  int64_t offset = 0;  // in its device's arena
};

enum class PlanStepKind : uint8_t {
  kKernel,   // a kernel of `device`
  kConvert,  // layout/dtype conversion on `device`
  kCopy,     // between the host and `device` (in[0] on one side, out[0] on the other)
};

struct PlanStep {
  PlanStepKind kind = PlanStepKind::kKernel;
  DeviceKind device = DeviceKind::kCpu;
  const Node* node = nullptr;         // kKernel
  std::unique_ptr<Kernel> kernel;     // kKernel
  std::vector<int> in, out;           // slot ids, -1 for omitted
  bool fallback = false;              // a host kernel standing in for the main device's
  int order_index = -1;               // kKernel: the node's index in the engine's order
  LayerProfile info;                  // name, op, tactic, on_cpu (ms unset)
  std::vector<std::string> declined;  // kKernel: candidates asked first, "BACKEND: reason"
  std::vector<std::string> timed;     // kKernel: candidates timed, "BACKEND: MS ms [chosen]"
  KernelOperands operands;            // bound to the arenas by bind_plan()
};

// Values of at most this many elements may be shapes, axes or pads: an integer or bool graph
// input that small is part of a CPU plan's key, and a value that small (or of an integer
// dtype) computed from the data makes the shapes after it follow the data.
inline constexpr int64_t kKeyedInputElements = 16;

// Graph inputs of an integer or bool dtype with at most kKeyedInputElements elements are part
// of a plan's key (shapes, axes, pads given as inputs): values computed from them alone are
// fixed in the plan.
inline bool is_keyed_input(const Tensor& t) {
  return t.numel() <= kKeyedInputElements && !dtype_is_float(t.dtype());
}

// A value read back to the host at the end of a segment.
struct ReadBack {
  int slot = -1;  // where it is, plain, on its device
  // The extent of a bounded node's outputs (an int64 [1] its kernel writes), or a small value
  // (`value_id`, in graph dtype `dtype`) whose contents the rest of the plan needs.
  bool extent = false;
  int value_id = -1;
  DataType dtype = DataType::kUndefined;
  std::vector<int> bounded_values;  // extent: the node's outputs, by value id
  int axis = 0;                     // extent: the axis it sets on them
  // Whether the rest of the plan depends on what is read: a plan of the rest per value read.
  bool keys_plan = true;
  std::string what;  // for the plan's text: "NonZero 'nz' extent", "value 'k'"
};

// The builder's state where a segment stops (plan_builder.cc).
struct PlanContinuation;

struct Plan {
  DeviceKind main = DeviceKind::kCpu;  // where the kernels run unless they fall back
  std::vector<PlanSlot> slots;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
  std::vector<int> input_slots, output_slots;  // per graph input / output, on `main`
  std::vector<DataType> output_dtypes;         // the graph's output dtypes
  std::vector<Shape> input_shapes;
  std::deque<Tensor> host_values;  // values computed at build (shape arithmetic)
  // Nodes whose inputs computed at build (shapes, axes, pads...) are constants here: the
  // kernels see them as constants, as if the model had them so. Stable addresses.
  std::deque<Value> resolved_values;
  std::deque<Node> resolved_nodes;
  std::vector<std::string> notes;  // what the build changed that a user should know of
  bool has_fallback = false;       // some step runs on the host in a plan for another device
  // A segment (see above): what to read back after its steps, the state build_plan_after
  // resumes from, the slots later segments read (kept to the end of this one), and which
  // segment of its chain it is. Empty read_back: the plan is complete.
  std::vector<ReadBack> read_back;
  std::shared_ptr<const PlanContinuation> resume;
  std::vector<int> live_out;
  int segment = 0;
  // Buffers [0, inherited_buffers) are the earlier segments', where they placed them: this
  // segment places its own after them (arena_base, per device).
  int inherited_buffers = 0;
  int64_t arena_base[kDeviceKinds] = {};

  // Per device: the arena's size, its lower bound (the peak of live bytes), the largest
  // workspace a kernel asked for, and where they are bound (bind_plan).
  int64_t arena_bytes[kDeviceKinds] = {};
  int64_t arena_lower_bound[kDeviceKinds] = {};
  size_t workspace_bytes[kDeviceKinds] = {};
  void* arena[kDeviceKinds] = {};
  void* workspace[kDeviceKinds] = {};

  // Operands bound to external slots (PlanOptions::external_io), re-pointed by set_plan_io at
  // every run: (step, output?, operand index, slot).
  struct ExternalOperand {
    int step;
    bool out;
    int index;
    int slot;
  };
  std::vector<ExternalOperand> external;

  void* data(int slot) const {
    const PlanSlot& s = slots[slot];
    if (s.alias_of >= 0) return data(s.alias_of);
    if (s.buffer < 0) return s.fixed;
    const PlanBuffer& b = buffers[s.buffer];
    return static_cast<char*>(arena[device_index(b.device)]) + b.offset;
  }
};

// The devices a plan runs on, by DeviceKind (the host always; the main device).
struct PlanDevices {
  PlanDevice* by_kind[kDeviceKinds] = {};
  PlanDevice& operator[](DeviceKind d) const { return *by_kind[device_index(d)]; }
};

struct PlanOptions {
  DeviceKind main = DeviceKind::kCpu;
  // The engine's backend states (oneDNN's caches), given to the candidates of their backend.
  const BackendStates* states = nullptr;
  // EngineOptions::backend = reference: the reference kernels alone.
  bool reference_only = false;
  Precision precision = Precision::kFp32;
  std::map<std::string, Precision> precision_overrides;  // by node name
  int64_t max_tensor_bytes = int64_t{8} << 30;
  int64_t arena_alignment = 256;
  // The graph inputs are read, and the outputs a kernel writes are written, where the caller
  // holds them (set_plan_io), not in the arena: host plans.
  bool external_io = false;
  // EngineOptions::reuse_memory: off gives every value bytes of its own for the whole run.
  bool reuse_memory = true;
  // Quantization scales by value name (from calibration or Q/DQ nodes), set on every slot of
  // that value. A name the graph has no value of is an error.
  const std::map<std::string, QuantScale>* value_scales = nullptr;
};

// Lowers `graph` (nodes in `order`) for inputs of `input_descs` (dtype and shape, graph
// order; an input whose `value` is set is known at build, and copied) into `plan`, with memory
// planned but not bound. Graph inputs are written into their slots before each run, and the
// outputs read from theirs after it.
Status build_plan(const Graph& graph, const std::vector<const Node*>& order,
                  const std::vector<TensorDesc>& input_descs, const PlanOptions& options,
                  const PlanDevices& devices, Plan& plan);

// Plans the rest of the graph after segment `before` (whose Plan::read_back gave `read`, one
// host tensor each, in graph dtype), with the same options and devices; `plan` may stop again.
// `before` must outlive `plan`.
Status build_plan_after(const Graph& graph, const std::vector<const Node*>& order,
                        const Plan& before, const std::vector<Tensor>& read,
                        const PlanOptions& options, const PlanDevices& devices, Plan& plan);

// The plan's read-back values (after its steps ran and the devices are done), as host tensors
// in their graph dtypes; the key of the continuation they select (the bytes of those that key
// it).
Result<std::vector<Tensor>> read_plan_values(const Plan& plan, const PlanDevices& devices);
std::string read_back_key(const Plan& plan, const std::vector<Tensor>& read);

// Points the plan at arenas and workspaces (per device, at least the plan's sizes) and binds
// every step's operands to them.
void bind_plan(Plan& plan, void* const arena[kDeviceKinds], void* const workspace[kDeviceKinds]);

// Points the plan's external graph inputs and outputs (PlanOptions::external_io) at the
// caller's bytes for the next run: one pointer per graph input and per graph output, graph
// order (an output whose slot is not external, or repeats an earlier output's, is ignored:
// read it from Plan::data after the run).
void set_plan_io(Plan& plan, const std::vector<const void*>& inputs,
                 const std::vector<void*>& outputs);
// Whether graph output `i` is written in place by set_plan_io's pointer.
bool plan_output_in_place(const Plan& plan, size_t i);

// Runs steps [first, last) on their devices (bound first).
Status run_plan_steps(Plan& plan, const PlanDevices& devices, size_t first, size_t last);

// The plan as data (kiln/report.h): its steps with their operands, its arenas; the inputs'
// shapes named by `graph`'s inputs.
PlanInfo plan_info(const Plan& plan, const Graph& graph);

// `t` as the bytes of dtype `dt` (float32/float16/bfloat16 converted; other dtypes as
// they are).
std::vector<uint8_t> host_bytes_as(const Tensor& t, DataType dt);
// A host tensor of dtype `want` from `bytes` holding `shape` elements of dtype `dt`.
Tensor tensor_from_bytes(const void* bytes, DataType dt, const Shape& shape, DataType want);

}  // namespace kiln
