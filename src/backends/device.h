// A device as the runtime's one Context sees it: what an engine keeps on it, and what each
// Context needs of it besides kernels (its memory, a run's copies in and out, timing events,
// the capture of work for replay, waiting). The runtime (src/runtime) holds one plan cache
// and one run sequence for every device, and reaches a device only through these interfaces;
// each backend registers its provider (KILN_REGISTER_DEVICE) for its DeviceKind.
//
// Each entry is required (pure virtual) or optional: an optional entry's default says what a
// device without it does (no capture: steps run one by one; no compute order: none), and the
// runtime does without.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "kiln/engine.h"

namespace kiln {

// Per device (indexed by DeviceKind).
inline constexpr size_t kDeviceKinds = 2;
inline size_t device_index(DeviceKind d) { return static_cast<size_t>(d); }

// The memory all plans of one Context share, per device kind: one activation arena and one
// workspace, each grown to the largest a plan has needed and never shrunk (plans run one at a
// time on the Context, so they can all use the same bytes). `generation` changes whenever an
// address does: a plan bound to an older one binds again (and drops captured work).
struct ContextMemory {
  void* arena[kDeviceKinds] = {};
  void* workspace[kDeviceKinds] = {};
  int64_t arena_bytes[kDeviceKinds] = {};
  int64_t workspace_bytes[kDeviceKinds] = {};
  int64_t allocations = 0;  // how often a buffer was (re)allocated
  uint64_t generation = 0;
};

// A plan's inputs and outputs on a device that does not compute in host memory: the staging
// of the caller's tensors and the copies between them and the plan's slots.
class DeviceIo {
 public:
  virtual ~DeviceIo() = default;
  // Takes the caller's input `i` for the next run: memory the device copies from in place
  // (pinned host memory, the device's own) is kept as a pointer, other host memory is copied
  // into staging now.
  virtual Status stage_input(size_t i, const Tensor& t) = 0;
  // Whether the last staged inputs all went through staging (a captured run copies from
  // there, so it may replay only then).
  virtual bool all_staged() const = 0;
  // Enqueues the copies of the staged inputs into the plan's input slots (`slots[i]`), and of
  // the output slots into staging (a null slot: that output is not copied).
  virtual Status copy_in(const std::vector<void*>& slots) = 0;
  virtual Status copy_out(const std::vector<const void*>& slots) = 0;
  // Output `i`'s bytes on the host once the run is done.
  virtual const void* output(size_t i) const = 0;
  // Repeating the last run's compute (time_compute, profiles): keep_inputs copies the last
  // staged inputs aside on the device once; restore_inputs enqueues them into the slots again.
  virtual Status keep_inputs(const char* what, const std::vector<void*>& slots) = 0;
  virtual Status restore_inputs(const std::vector<void*>& slots) = 0;
};

// `n` timing points recorded in the order of the device's work.
class DeviceEvents {
 public:
  virtual ~DeviceEvents() = default;
  // `capturing`: the record becomes part of work being captured.
  virtual Status record(size_t i, bool capturing = false) = 0;
  // Milliseconds from point `a` to point `b`, once the work is done (0 where unknown).
  virtual double elapsed_ms(size_t a, size_t b) const = 0;
  // Waits until the device has reached point `i` (at once where it was never recorded).
  virtual Status wait(size_t i) = 0;
};

// Work recorded once and replayed (a CUDA graph).
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
};

// Orders the compute of several Contexts of one device one after another while their copies
// overlap (a Pipeline's); on or off for a time with no run in flight.
class ComputeOrder {
 public:
  virtual ~ComputeOrder() = default;
  virtual void set_enabled(bool on) = 0;
};

// One Context's device: created by the engine's device, used by one thread at a time.
class ContextDevice {
 public:
  virtual ~ContextDevice() = default;

  // --- Required.
  virtual DeviceKind kind() const = 0;
  // The plan devices of this Context: this device, and the host (the same for the CPU).
  virtual PlanDevice& plan_device() = 0;
  virtual PlanDevice& host_plan_device() = 0;
  // True when kernels compute in host memory: plans then read the caller's inputs and write
  // its outputs where they are (PlanOptions::external_io), with no DeviceIo.
  virtual bool computes_in_host_memory() const = 0;
  // What a plan aligns each value in the arena to (bytes).
  virtual int64_t arena_alignment() const = 0;
  // Makes this device the calling thread's (a Context may be used from any thread).
  virtual Status make_current() = 0;
  // Grows the shared memory to at least `arena` and `workspace` bytes per device kind.
  virtual Status reserve(const int64_t arena[kDeviceKinds],
                         const int64_t workspace[kDeviceKinds]) = 0;
  virtual const ContextMemory& memory() const = 0;
  virtual Result<std::unique_ptr<DeviceEvents>> make_events(size_t n) = 0;
  // Waits until the work given so far is done.
  virtual Status synchronize() = 0;
  // Copies `n` bytes of a value on this device to the host (waits): run observers, and the
  // sizes a segmented plan reads back.
  virtual Status read(void* host, const void* device, size_t n) = 0;
  // Calls `done` on some thread once the work given so far is done (at once where it is).
  // `done` must not call the device's API (CUDA's callback thread).
  virtual Status when_done(std::function<void()> done) = 0;
  // Copies `n` bytes, in the order of the device's work, between any memories it reaches
  // (its own, the host's).
  virtual Status copy(void* dst, const void* src, size_t n) = 0;

  // --- Optional.
  // Staging for a plan's inputs and outputs of these byte sizes (required where
  // computes_in_host_memory() is false).
  virtual Result<std::unique_ptr<DeviceIo>> make_io(const std::vector<size_t>& in_bytes,
                                                    const std::vector<size_t>& out_bytes) {
    return unsupported(std::string(device_kind_name(kind())) + " has no staging");
  }
  // A tensor in the device's memory, the caller's to keep, allocated in the order of its work
  // (device-resident outputs).
  virtual Result<Tensor> allocate(DataType dtype, const Shape& shape) {
    return unsupported(std::string(device_kind_name(kind())) + " keeps no tensors");
  }
  // Fills device memory with `byte` in the order of its work (poisoned arenas).
  virtual Status fill(void* device, size_t n, uint8_t byte) {
    return unsupported("fill is not supported here");
  }
  // Capture: the work given between begin and end is recorded, not run, and replayed by
  // launch(). A device without returns false from can_capture().
  virtual bool can_capture() const { return false; }
  virtual Status begin_capture() { return unsupported("capture is not supported here"); }
  // Ends the capture whatever `enqueued` says (so the device is usable again).
  virtual Result<std::unique_ptr<CapturedWork>> end_capture(const Status& enqueued) {
    return unsupported("capture is not supported here");
  }
  virtual Status launch(CapturedWork& work) { return unsupported("capture is not supported"); }
  // The compute order this Context joined (ComputeOrder): enter_compute enqueues the wait for
  // the compute let in before and says whether there was one; leave_compute marks this
  // Context's compute, given since, as the last. Without an order: no wait.
  virtual Result<bool> enter_compute() { return false; }
  virtual Status leave_compute() { return Status::ok(); }
  virtual Status join(std::shared_ptr<ComputeOrder> order) {
    return unsupported("this device orders no compute");
  }
  // A caller's stream of this device (a cudaStream_t). follow: the work given to this Context
  // next starts after the work the stream holds now; precede: the work given to the stream
  // later starts after the work given to this Context so far. Neither waits on the host.
  // Without streams: kInvalidArgument.
  virtual Status follow(void* stream) {
    return invalid_argument("a stream is given to GPU engines only");
  }
  virtual Status precede(void* stream) {
    return invalid_argument("a stream is given to GPU engines only");
  }
};

// What an engine keeps on its device (uploaded constants, the timing cache), shared by its
// Contexts.
class EngineDevice {
 public:
  virtual ~EngineDevice() = default;
  virtual DeviceKind kind() const = 0;
  // A Context's device; its kernels built with the engine's options.
  virtual Result<std::unique_ptr<ContextDevice>> make_context() = 0;
  // Bytes of constants placed on the device.
  virtual int64_t constant_bytes() const = 0;
  // Called after a plan was built: keeps what the build learned (a timing cache file).
  virtual Status plan_built() { return Status::ok(); }
  // The timing cache's entries, for plan files and another engine of the same device.
  virtual std::vector<std::pair<std::string, std::string>> tactic_entries() const { return {}; }
  // A compute order for Contexts of this engine's device (nullptr: the device has none).
  virtual std::shared_ptr<ComputeOrder> make_compute_order() const { return nullptr; }
  // Whether the Context's whole run may be captured and replayed (EngineOptions::cuda_graph
  // on a device that can).
  virtual bool capture_runs() const { return false; }
};

// A kind of device: how many there are, what identifies one, and opening an engine on one.
class DeviceProvider {
 public:
  virtual ~DeviceProvider() = default;
  virtual DeviceKind kind() const = 0;
  virtual int count() const = 0;
  // Identifies the device and its libraries, for timing caches and plan files.
  virtual Result<std::string> tag(int index) const = 0;
  // The engine's state on device `options.device_index`; `tactics` pre-fill its timing cache.
  virtual Result<std::unique_ptr<EngineDevice>> open(
      const EngineOptions& options,
      const std::vector<std::pair<std::string, std::string>>& tactics) const = 0;

  // --- Optional: memory the public API hands out (kiln/engine.h).
  virtual Result<Tensor> copy_to_device(const Tensor& t, int index) const {
    return unsupported("this device holds no tensors of the caller's");
  }
  // Host memory the device copies from by DMA (a plain tensor where it has none).
  virtual Result<Tensor> pinned_tensor(DataType dtype, Shape shape) const {
    return Tensor(dtype, std::move(shape));
  }
  // Page-locks caller-owned memory in place (false: nothing to do here); unregister undoes it.
  virtual Result<bool> register_host(void* data, size_t bytes) const { return false; }
  virtual void unregister_host(void* data) const {}
  virtual Result<std::string> bus_id(int index) const {
    return unsupported("this device has no bus id");
  }
};

// The provider registered for `kind`, or nullptr (a build without that backend).
const DeviceProvider* device_provider(DeviceKind kind);
bool register_device_provider(std::unique_ptr<DeviceProvider> provider);

#define KILN_DEVICE_CONCAT2(a, b) a##b
#define KILN_DEVICE_CONCAT(a, b) KILN_DEVICE_CONCAT2(a, b)
#define KILN_REGISTER_DEVICE(Provider)                                      \
  static const bool KILN_DEVICE_CONCAT(kiln_device_registered_, __LINE__) = \
      ::kiln::register_device_provider(std::make_unique<Provider>())

}  // namespace kiln
