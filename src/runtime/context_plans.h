// A Context's plans, and the one run sequence for every device.
//
// Plans are cached per key (the inputs' dtypes and shapes, and the bytes of every integer or
// bool input of at most kKeyedInputElements elements: a value shapes may be computed from):
// the shape profiles' plans (plan()) for the Context's life, and at most
// EngineOptions::max_cached_plans others, the least recently used dropped first. All plans
// share the Context's memory on its device (backends/device.h's ContextMemory), grown to the
// largest. A run:
//   - takes the inputs: where the device computes in host memory, the plan reads them where
//     the caller holds them and writes the outputs in place; elsewhere they are staged
//     (DeviceIo) and copied in;
//   - gives the device the copies in, the compute (the steps, or the captured compute), and
//     the copies out, between timing events; in a compute order, the compute waits for the
//     compute let in before it;
//   - waits, and returns the outputs as host tensors in the graph's dtypes.
// Where the engine captures runs (CUDA graphs), a whole run staged through staging is
// captured once it has run eagerly, and replayed after.
//
// A graph whose shapes follow the data is planned in segments (runtime/plan.h): a run goes
// through the first segment, reads back what it must, and takes the rest from the segment's
// continuations, cached per value read (at most max_cached_plans each), or plans it. Such a run
// is synchronous, copies its inputs and outputs directly, and is never captured.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "runtime/plan.h"

namespace kiln {

// Sees every value a run computes, on its device, before its memory is reused.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Output `i` of `node`: `ref` in `device`'s memory (host memory where the device computes
  // there).
  virtual Status observe(const Node& node, size_t i, const TensorRef& ref,
                         ContextDevice& device) = 0;
};

// The float32 value an observer sees (`ref`, in `device`'s memory) as a host float32 tensor
// of its logical shape, in its logical element order, whatever dtype and layout the device
// holds it in; `scratch` holds the bytes read back where the device computes outside host
// memory.
Result<Tensor> observed_float32(const TensorRef& ref, ContextDevice& device,
                                std::vector<uint8_t>& scratch);

class ContextPlans {
 public:
  explicit ContextPlans(const Engine::Impl& engine);
  ~ContextPlans();
  ContextPlans(const ContextPlans&) = delete;
  ContextPlans& operator=(const ContextPlans&) = delete;

  // Runs the engine on `inputs` (one per graph input, in order, already checked against the
  // declared types) through the cached plan of their key, or a new one; `outputs` gets one
  // host tensor per graph output. `observer`, where given, sees every value computed.
  Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
             RunObserver* observer = nullptr);
  // A run given to the device and left to finish: `done` gets the outputs (or the error) on
  // a thread of the device's once they are ready, or before this returns where the device
  // computes in host memory. `targets` (one per graph output, or none): where an output is
  // defined, the output is written into it (host or device memory) and returned; where
  // `on_device`, the other outputs stay in the device's memory. An error before anything was
  // given to the device is returned, and `done` is not called.
  using Done = std::function<void(Result<std::vector<Tensor>>)>;
  // `stream` (the device's, or null): the run follows the work given to it so far and the
  // work given to it later follows the run.
  Status enqueue(const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& targets,
                 bool on_device, void* stream, Done done);
  // Builds (or finds) the plan of inputs of these dtypes and shapes (a value where known at
  // build) without running it, and keeps it for the Context's life: the engine's shape
  // profiles. A graph whose shapes follow the
  // data is planned up to its first read-back (PlanInfo::unfinished says what it waits for).
  Result<PlanInfo> plan(const std::vector<TensorDesc>& inputs);
  // Waits until everything given to the device is done.
  Status wait();

  // The last run's device times (copies in, compute, copies out; the compute order's wait).
  Result<DeviceTiming> last_timing() const;
  // The last run's compute again (its inputs restored on the device), `iterations` times.
  Result<std::vector<double>> time_compute(int iterations);
  // The last run's plan again, each step timed alone (mean ms of `iterations`).
  Result<std::vector<LayerProfile>> profile_steps(int iterations);
  Result<DeviceMemoryInfo> memory() const;
  Result<PlanInfo> last_plan_info() const;
  ContextStats stats() const;
  // Whether the last run replayed captured work.
  bool replayed() const;
  // Joins a compute order (a Pipeline's Contexts of one device).
  Status join(std::shared_ptr<ComputeOrder> order);

  struct Entry;

 private:
  Result<ContextDevice*> device();
  // The cached plan of `descs`, or a new one (its first segment where the shapes follow the
  // data); a `profile` plan is never dropped, nor counted against max_cached_plans.
  Result<Entry*> find_or_build(const std::vector<TensorDesc>& descs, bool* cached,
                               bool profile = false);
  // The continuation of segment `e` for the values it read back, cached or planned.
  Result<Entry*> find_or_build_next(Entry& e, const std::vector<Tensor>& read);
  Status built(Entry& e);  // counts a new plan
  // A run through the segments of `top`'s chain. `step_ms`, where given, gets each step's time
  // added (the chain's steps in order, each timed alone).
  Status run_segments(Entry& top, const std::vector<const Tensor*>& inputs,
                      std::vector<Tensor>& outputs, RunObserver* observer,
                      std::vector<double>* step_ms = nullptr);
  Status run_segment_steps(Plan& p, RunObserver* observer, std::vector<double>* step_ms,
                           size_t first_step);
  Status bind(Entry& e);
  // A planned run in two halves: start() stages the inputs and gives the device the run (the
  // outputs of a device that computes in host memory are written into `outputs`, made here);
  // finish(), once the device is done, fills `outputs`.
  // `device_out`: per output, the tensor it is kept in on the device, or none.
  Status start(Entry& e, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
               const std::vector<Tensor>& targets, bool on_device, RunObserver* observer,
               std::vector<Tensor>& device_out);
  Status finish(Entry& e, std::vector<Tensor>& outputs, const std::vector<Tensor>& targets,
                const std::vector<Tensor>& device_out);
  // The copies in, the compute and the copies out, between the entry's events.
  Status enqueue_run(Entry& e, RunObserver* observer, bool capturing, bool* waited,
                     const std::vector<const void*>& copied_out);
  Status enqueue_compute(Entry& e, RunObserver* observer);
  Status observe_step(const PlanStep& st, RunObserver& observer);
  // With EngineOptions::poison_memory: `p`'s part of the arena (from its arena_base) filled
  // with 0xFF bytes, so a step that leaves part of its output unwritten shows.
  Status poison(Plan& p);
  // For time_compute and profile_steps: the last run's inputs back in place.
  Status keep_inputs(Entry& e, const char* what);
  Status restore_inputs(Entry& e);
  std::vector<void*> input_slots(const Entry& e) const;
  Result<Entry*> last(const char* what) const;
  // The plan of the last run as data: its chain's segments one after the other.
  PlanInfo chain_info(const Entry& top) const;

  const Engine::Impl& e_;
  std::unique_ptr<ContextDevice> device_;
  PlanDevices devices_;
  std::shared_ptr<ComputeOrder> order_;
  std::vector<std::unique_ptr<Entry>> plans_;  // most recently used first
  std::vector<const void*> in_data_;           // scratch for set_plan_io
  std::vector<void*> out_data_;
  ContextStats stats_;
};

}  // namespace kiln
