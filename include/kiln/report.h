// What kiln reports about an engine and its runs: the model's statistics, the optimizer's
// passes, per-layer profiles, device timings and memory, value statistics, a Context's plan
// cache. Plain data; the tools print from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ModelStats {
  std::map<std::string, int64_t> op_counts;
  int64_t num_nodes = 0;
  int64_t num_parameters = 0;  // elements in initializers
  int64_t parameter_bytes = 0;
  double flops_per_image = 0;  // multiply-add = 2 FLOPs; symbolic batch taken as 1
};

// GPU times of one run, from CUDA events: host->device copies, the device compute, and
// device->host copies.
struct DeviceTiming {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
  // CUDA, in a Pipeline that orders its Contexts' compute: how long the compute waited for
  // another Context's, between the copies in and its start.
  double wait_ms = 0;
  // Host (wall-clock) times of the same run, on the Context's thread: waiting for the staging
  // buffers to be free and copying the inputs into them; reading the outputs out once the
  // device is done; and the whole run, from its call to its outputs. What run_ms holds beyond
  // these and the GPU's times is the launch and the wake-up after the device finished.
  double stage_ms = 0, finish_ms = 0, run_ms = 0;
  double stage_wait_ms = 0;  // of stage_ms, the wait for the staging buffers to be free
};

// One step of a device plan and its mean time in a profile.
struct LayerProfile {
  std::string name;    // the node's name (or what a conversion converts)
  std::string op;      // op kind; "CPU:<op>" for a node that fell back to the CPU
  std::string tactic;  // the chosen implementation (on the CPU: the backend's name)
  bool on_cpu = false;
  double ms = 0;
};

// What one run put in one float value (a node's output), for range checks and calibration.
struct ValueStats {
  std::string value;  // the value's name
  std::string node;   // its producer
  std::string op;
  int64_t count = 0;              // elements
  int64_t nonzero = 0;            // elements that are not 0
  int64_t below_fp16_normal = 0;  // non-zero elements with |x| < 2^-14 (fp16's smallest normal)
  int64_t nonfinite = 0;          // inf or NaN
  double max_abs = 0;             // over the finite elements
};

// Device memory a Context's current plan holds (bytes).
struct DeviceMemoryInfo {
  int64_t arena = 0;              // every activation, one reused allocation
  int64_t arena_lower_bound = 0;  // peak of live activation bytes: no arena can be smaller
  int64_t workspace = 0;          // library scratch, shared by the layers
  int64_t weights = 0;            // the engine's uploaded constants, shared by its contexts
  int64_t pinned_host = 0;        // host staging for inputs and outputs
  int64_t device_total() const { return arena + workspace + weights; }
};

// What a Context's runtime has done. A run whose input shapes (and, on the CPU, small inputs'
// values) a cached plan was built for neither builds nor allocates anything but its outputs.
// A Context's plans share one activation arena sized for the largest (on CUDA also one
// workspace; each plan keeps its own CUDA graph and pinned staging buffers).
struct ContextStats {
  // Plans built: a new input shape; where the shapes follow the data, each segment planned for
  // the values a run read back.
  int64_t plan_builds = 0;
  int64_t plan_runs = 0;          // runs that built no plan (every segment cached)
  int64_t plans_cached = 0;       // plans held now (the profiles' and at most max_cached_plans)
  int64_t arena_allocations = 0;  // times the arena (on CUDA: or workspace) was allocated or grown
  int64_t arena_bytes = 0;        // the arena's size now
  // What the builds changed that affects results, once each: on CUDA in fp16, constants
  // saturated to fp16's range ("fp16: constant 'eps': 1 of 1 values outside fp16's range...").
  std::vector<std::string> notes;
};

// One step of an execution plan (see PlanInfo).
struct PlanStepInfo {
  std::string kind;    // "kernel", "convert" (layout/dtype on one device), "copy" (host <-> GPU)
  std::string device;  // where it runs: "cpu", "cuda"
  std::string name;    // the node's name, or "convert <value>" / "copy <value>"
  std::string op;      // the op kind, "Convert", "Copy", or "CPU:<op>" for a host fallback
  std::string tactic;  // the implementation chosen, or why a node fell back to the host
  // The candidates asked before the one chosen that declined the node: "BACKEND: reason".
  std::vector<std::string> declined;
  // Where several candidates accepted the node and the device times them: each one's time,
  // "BACKEND: MS ms", the chosen one marked "(chosen)".
  std::vector<std::string> timed;
  // Each operand: "%SLOT:DEVICE DTYPE[SHAPE] [LAYOUT] @OFFSET" (in its device's arena),
  // "const", "external" (the caller's tensor) or "view of %SLOT"; "-" for an omitted one.
  std::vector<std::string> inputs, outputs;
};

// The plan of one set of input shapes, as data: what runs where, in which layout and dtype,
// and the memory. The same form for every device. Printed by `kiln inspect --plan-steps`,
// recorded in .kiln plan files.
struct PlanInfo {
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::vector<PlanStepInfo> steps;
  std::map<std::string, int64_t> arena_bytes;      // by device ("cpu", "cuda")
  std::map<std::string, int64_t> workspace_bytes;  // by device
  // A graph whose shapes follow its data is planned in segments: after the first
  // `after_steps` steps, `what` is read back to the host and the rest planned with it known
  // ("value 'k'", "NonZero 'nz' extent"). Empty for a plan in one piece.
  struct ReadBack {
    size_t after_steps = 0;
    std::string what;
  };
  std::vector<ReadBack> read_backs;
  // Where the plan stops before its end (a plan made ahead of the data: its first segment),
  // what the rest waits for; empty for a plan of the whole graph.
  std::string unfinished;
  // One line per step, then the arenas: what `kiln inspect --plan-steps` prints.
  std::string text() const;
  // The text without the tactics, whose timings differ from build to build: what must be
  // equal for two builds to have made the same plan.
  std::string structure() const;
};

// One optimizer pass of an engine's build: its name and the node count after it.
struct PassStep {
  std::string pass;
  int64_t nodes_after = 0;
};

// What an Engine's build did.
// An int8 engine's quantization (Precision::kInt8): where its scales came from and what each
// quantizable layer (Conv, Gemm, MatMul with constant weights) got.
struct QuantizationReport {
  std::string method;  // the calibration method: "entropy", "minmax", "percentile=99.99"
  // Where the scales came from: "calibrated on 512 samples of DIR", "cache FILE (kiln)".
  std::string source;
  int64_t samples = 0;
  double calibration_seconds = 0;  // 0 where the cache gave them
  struct Layer {
    std::string node;   // the node of the engine's graph
    std::string op;     // "Conv", "Gemm", "MatMul"
    std::string input;  // the value quantized
    double amax = 0;    // the input's calibrated magnitude: scale amax / 127
    // How it computes: "int8 simulated" (float math on the 8-bit values: quantize, then
    // dequantize, as the model's Q/DQ nodes describe it) until kiln has an 8-bit kernel for it.
    std::string runs;
  };
  std::vector<Layer> layers;
  // Quantizable layers left in float, one line each with the reason.
  std::vector<std::string> float_layers;
};

struct EngineReport {
  std::string graph_name;  // the ONNX graph's name
  int64_t opset = 0;       // the default domain's opset
  ModelStats imported;     // the model as imported, before any pass
  // The optimizer's passes in order (empty with EngineOptions::optimize off), and one line
  // per fused group ("conv1 + bn1 + relu1 → Conv[+ residual → Relu]").
  std::vector<PassStep> passes;
  std::vector<std::string> fused_groups;
  // What EngineOptions::fp32_values kept in fp32, one line a node ("node 'conv7' (Conv) in
  // fp32: writes 'x'"), and a line for each value no node of the engine's graph touches.
  std::vector<std::string> fp32_kept;
  // The plans of the shape profiles (EngineOptions::shape_profiles, then the ranges' opt),
  // built with the engine, in that order.
  std::vector<PlanInfo> plans;
  // Int8 engines: their quantization (empty method otherwise).
  QuantizationReport quantization;
};

}  // namespace kiln
