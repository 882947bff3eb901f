// CudaPlan's internals, shared by its build (cuda_plan.cc) and run (cuda_plan_run.cc) halves.
#pragma once

#include <deque>

#include "backends/cuda/cuda_plan.h"

namespace kiln {

// `t` as the bytes of dtype `dt` (float32 <-> float16 converted; other dtypes as they are).
std::vector<uint8_t> host_bytes_as(const Tensor& t, DataType dt);
// A host tensor of dtype `want` from `bytes` holding `shape` elements of dtype `dt`.
Tensor tensor_from_bytes(const void* bytes, DataType dt, const Shape& shape, DataType want);

// One device tensor of the plan. Its bytes live in an arena buffer, or at a fixed address
// (a constant uploaded to the WeightStore), or nowhere (a constant a kernel reads on the
// host).
struct PlanSlot {
  TensorDesc desc;
  int value_id = -1;  // the graph value it represents
  int buffer = -1;    // index into PlanImpl::buffers, or -1
  void* fixed = nullptr;
};

struct PlanBuffer {
  int64_t bytes = 0;
  int first = 0, last = 0;  // step indices, inclusive
  int64_t offset = 0;
};

enum class StepKind { kKernel, kConvert, kCpu };

struct PlanStep {
  StepKind kind = StepKind::kKernel;
  const Node* node = nullptr;
  std::unique_ptr<Kernel> kernel;  // kKernel
  std::vector<int> in, out;        // slot ids, -1 for omitted
  // kCpu: inputs known on the host (constants, shape values), and the reference's dtypes.
  std::vector<const Tensor*> host_in;
  std::vector<DataType> host_in_dtypes, host_out_dtypes;
  CudaStepInfo info;
};

struct CudaPlan::Impl {
  CudaPlanOptions options;
  CudaStreamHandles* handles = nullptr;
  std::vector<PlanSlot> slots;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;  // steps[0] is the input copy, the last the output copy
  std::vector<int> input_slots, output_slots;  // per graph input / output
  std::vector<DataType> output_dtypes;         // the graph's output dtypes
  std::vector<Shape> input_shapes;
  std::deque<Tensor> host_values;  // shape tensors evaluated at build
  // Nodes whose inputs computed at build (shapes, axes, pads...) are constants here: the
  // kernels see them as constants, as if the model had them so. Stable addresses.
  std::deque<Value> resolved_values;
  std::deque<Node> resolved_nodes;
  std::vector<CudaStepInfo> infos;
  std::vector<std::string> notes;  // CudaPlan::notes()
  CudaMemoryReport memory;
  CudaTiming timing;
  bool has_cpu_steps = false;

  // Device memory: the arena (all buffers) and one workspace shared by the steps, both the
  // Context's (CudaSharedMemory), bound at `bound_generation` (bind()).
  void* arena = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  uint64_t bound_generation = 0;
  bool bound = false;
  // Pinned host staging, one per input and output.
  std::vector<void*> in_staging, out_staging;
  cudaEvent_t ev[4] = {};  // start, inputs copied, compute done, outputs copied

  cudaGraphExec_t graph_exec = nullptr;    // whole run (copies + compute)
  cudaGraphExec_t compute_exec = nullptr;  // compute only
  bool ran_once = false;

  void* data(int slot) const {
    const PlanSlot& s = slots[slot];
    if (s.buffer >= 0) return static_cast<char*>(arena) + buffers[s.buffer].offset;
    return s.fixed;
  }
  // Enqueues steps [first, last) on the stream (no synchronization unless a CPU step).
  Status enqueue_steps(size_t first, size_t last);
  Status enqueue_step(size_t i);
  Status enqueue_copies_in();
  Status enqueue_copies_out();
  // Points the plan at the Context's shared memory, growing it when the plan needs more;
  // drops the CUDA graphs captured over an older arena.
  Status bind();
  void drop_graphs();
  ~Impl();
};

}  // namespace kiln
