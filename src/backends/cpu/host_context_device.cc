// The host as the runtime's device (backends/device.h): kernels compute in host memory, so a
// plan reads the caller's inputs and writes its outputs where they are; work is done when
// given, so events are clock readings and waiting is nothing.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "backends/device.h"

namespace kiln {

namespace {

class HostEvents final : public DeviceEvents {
 public:
  explicit HostEvents(size_t n) : at_(n) {}
  Status record(size_t i, bool) override {
    at_[i] = std::chrono::steady_clock::now();
    return Status::ok();
  }
  double elapsed_ms(size_t a, size_t b) const override {
    return std::chrono::duration<double, std::milli>(at_[b] - at_[a]).count();
  }
  Status wait(size_t) override { return Status::ok(); }  // done when given

 private:
  std::vector<std::chrono::steady_clock::time_point> at_;
};

class HostContextDevice final : public ContextDevice {
 public:
  HostContextDevice() : host_(make_host_plan_device()) {}
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  PlanDevice& plan_device() override { return *host_; }
  PlanDevice& host_plan_device() override { return *host_; }
  bool computes_in_host_memory() const override { return true; }
  int64_t arena_alignment() const override { return 64; }  // a cache line; AVX-512 loads
  Status make_current() override { return Status::ok(); }

  Status reserve(const int64_t arena[kDeviceKinds],
                 const int64_t workspace[kDeviceKinds]) override {
    const size_t cpu = device_index(DeviceKind::kCpu);
    const bool arena_ok = arena[cpu] <= mem_.arena_bytes[cpu];
    const bool workspace_ok = workspace[cpu] <= mem_.workspace_bytes[cpu];
    if (arena_ok && workspace_ok) return Status::ok();
    try {
      if (!arena_ok) arena_ = Tensor(DataType::kUInt8, {std::max<int64_t>(arena[cpu], 1)});
      if (!workspace_ok) workspace_ = Tensor(DataType::kUInt8, {workspace[cpu]});
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kResourceExhausted,
                    "out of memory allocating the " + std::to_string(arena[cpu]) +
                        "-byte activation arena (and a " + std::to_string(workspace[cpu]) +
                        "-byte workspace)");
    }
    mem_.arena[cpu] = arena_.raw();
    mem_.arena_bytes[cpu] = static_cast<int64_t>(arena_.nbytes());
    mem_.workspace[cpu] = workspace_.defined() ? workspace_.raw() : nullptr;
    mem_.workspace_bytes[cpu] =
        workspace_.defined() ? static_cast<int64_t>(workspace_.nbytes()) : 0;
    ++mem_.allocations;
    ++mem_.generation;
    return Status::ok();
  }
  const ContextMemory& memory() const override { return mem_; }

  Result<std::unique_ptr<DeviceEvents>> make_events(size_t n) override {
    return std::unique_ptr<DeviceEvents>(new HostEvents(n));
  }
  Status synchronize() override { return Status::ok(); }
  Status read(void* host, const void* device, size_t n) override {
    if (n) std::memcpy(host, device, n);
    return Status::ok();
  }
  Status when_done(std::function<void()> done) override {
    done();
    return Status::ok();
  }
  Status copy(void* dst, const void* src, size_t n) override {
    if (n) std::memcpy(dst, src, n);
    return Status::ok();
  }
  Status fill(void* device, size_t n, uint8_t byte) override {
    if (n) std::memset(device, byte, n);
    return Status::ok();
  }

 private:
  std::unique_ptr<PlanDevice> host_;
  Tensor arena_, workspace_;  // uint8
  ContextMemory mem_;
};

class HostEngineDevice final : public EngineDevice {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  Result<std::unique_ptr<ContextDevice>> make_context() override {
    return std::unique_ptr<ContextDevice>(new HostContextDevice());
  }
  // A host plan points at its constants' own bytes: nothing is placed.
  int64_t constant_bytes() const override { return 0; }
};

class HostProvider final : public DeviceProvider {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  int count() const override { return 1; }
  // "cpu avx512 vnni bf16": the instruction sets kernels (oneDNN's JIT code) and layouts
  // depend on, which plan files record.
  Result<std::string> tag(int) const override {
    std::string t = "cpu";
    __builtin_cpu_init();
    t += __builtin_cpu_supports("avx512f") ? " avx512"
         : __builtin_cpu_supports("avx2")  ? " avx2"
                                           : " sse";
    if (__builtin_cpu_supports("avx512vnni")) t += " vnni";
    if (__builtin_cpu_supports("avx512bf16")) t += " bf16";
    return t;
  }
  Result<std::unique_ptr<EngineDevice>> open(
      const EngineOptions&,
      const std::vector<std::pair<std::string, std::string>>&) const override {
    return std::unique_ptr<EngineDevice>(new HostEngineDevice());
  }
};

}  // namespace

KILN_REGISTER_DEVICE(HostProvider);

}  // namespace kiln
