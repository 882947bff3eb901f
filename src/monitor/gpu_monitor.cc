// GPU sampling through NVML opened with dlopen (see gpu_monitor.h for why it is not linked).
//
// This machine has no nvml.h, so the few NVML declarations used are written out below, as
// documented in the NVML API reference; all of them are stable C entry points of the driver's
// libnvidia-ml.so.1.
#include "kiln/gpu_monitor.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "kiln/engine.h"  // cuda_pci_bus_id, cuda_device_count

namespace kiln {
namespace {

using nvmlReturn_t = int;  // an enum in nvml.h; NVML_SUCCESS is 0
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM (an enum: int-sized)

using VoidFn = nvmlReturn_t();  // nvmlInit_v2, nvmlShutdown
using HandleByIndexFn = nvmlReturn_t(unsigned index, nvmlDevice_t* device);
using HandleByPciBusIdFn = nvmlReturn_t(const char* pci_bus_id, nvmlDevice_t* device);
using MemoryInfoFn = nvmlReturn_t(nvmlDevice_t, nvmlMemory_t*);
using UtilizationFn = nvmlReturn_t(nvmlDevice_t, nvmlUtilization_t*);
using ClockInfoFn = nvmlReturn_t(nvmlDevice_t, int type, unsigned* mhz);
using PowerUsageFn = nvmlReturn_t(nvmlDevice_t, unsigned* milliwatts);
using ErrorStringFn = const char*(nvmlReturn_t);
using NameFn = nvmlReturn_t(nvmlDevice_t, char* name, unsigned length);  // and nvmlDeviceGetUUID
using CountFn = nvmlReturn_t(unsigned* count);

// Looks `name` up; the first one missing is kept in `missing` so the error can name it.
template <class Fn>
void bind(void* handle, const char* name, Fn*& fn, const char*& missing) {
  fn = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (!fn && !missing) missing = name;
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// dlopen of the NVML library, or an error naming it.
Result<void*> load_nvml(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle) return handle;
  const char* e = dlerror();
  return unsupported("cannot load " + library +
                     " (NVML, needed to monitor the GPU): " + (e ? e : "unknown error"));
}

}  // namespace

// Owns the library: the destructor undoes exactly what open() got as far as doing, so every
// early error return in open() cleans up by itself.
struct GpuMonitor::Nvml {
  void* handle = nullptr;
  bool initialized = false;
  nvmlDevice_t device = nullptr;
  VoidFn* init = nullptr;
  VoidFn* shutdown = nullptr;
  HandleByIndexFn* handle_by_index = nullptr;
  HandleByPciBusIdFn* handle_by_pci = nullptr;  // open_pci only
  MemoryInfoFn* memory_info = nullptr;
  UtilizationFn* utilization = nullptr;
  ClockInfoFn* clock_info = nullptr;
  PowerUsageFn* power_usage = nullptr;
  ErrorStringFn* error_string = nullptr;
  NameFn* name = nullptr;  // optional: name() is "" without it
  NameFn* uuid = nullptr;  // optional: uuid() is "" without it

  ~Nvml() {
    if (initialized) shutdown();
    if (handle) dlclose(handle);
  }
  std::string error(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? s : "NVML error " + std::to_string(rc);
  }
};

GpuSeries series(const std::vector<GpuSample>& s, double GpuSample::*field) {
  std::vector<double> v;
  for (const GpuSample& x : s)
    if (!std::isnan(x.*field)) v.push_back(x.*field);
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {v.front(), n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.back()};
}

Status write_samples_csv(const std::string& path, const std::vector<GpuSample>& samples) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return not_found("cannot write '" + path + "': " + std::strerror(errno));
  std::fprintf(f, "t_s,mem_used_mib,util_pct,sm_mhz,power_w\n");
  for (const GpuSample& s : samples)  // NaN prints as "nan", which CSV readers take as missing
    std::fprintf(f, "%.3f,%.1f,%.0f,%.0f,%.3f\n", s.t_s, s.mem_used_mib, s.util_pct, s.sm_mhz,
                 s.power_w);
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) return not_found("cannot write '" + path + "'");
  return Status::ok();
}

Result<std::unique_ptr<GpuMonitor>> GpuMonitor::open(int index, int period_ms,
                                                     const std::string& library) {
  return open_device(index, "", period_ms, library);
}

Result<std::unique_ptr<GpuMonitor>> GpuMonitor::open_pci(const std::string& pci_bus_id, int label,
                                                         int period_ms,
                                                         const std::string& library) {
  if (pci_bus_id.empty()) return invalid_argument("GPU monitor: an empty PCI bus id");
  return open_device(label, pci_bus_id, period_ms, library);
}

Result<std::unique_ptr<GpuMonitor>> GpuMonitor::open_cuda(int cuda_index, int period_ms,
                                                          const std::string& library) {
  auto bus_id = cuda_pci_bus_id(cuda_index);
  return bus_id.is_ok() ? open_pci(*bus_id, cuda_index, period_ms, library)
                        : open(cuda_index, period_ms, library);
}

Result<std::vector<std::unique_ptr<GpuMonitor>>> GpuMonitor::open_all(int period_ms,
                                                                      const std::string& library) {
  int count = cuda_device_count();
  if (count == 0) {  // NVML's own count: open NVML once to read it
    KILN_ASSIGN_OR_RETURN(void* handle, load_nvml(library));
    auto* init = reinterpret_cast<VoidFn*>(dlsym(handle, "nvmlInit_v2"));
    auto* shutdown = reinterpret_cast<VoidFn*>(dlsym(handle, "nvmlShutdown"));
    auto* get_count = reinterpret_cast<CountFn*>(dlsym(handle, "nvmlDeviceGetCount_v2"));
    unsigned n = 0;
    nvmlReturn_t rc = -1;
    if (init && shutdown && get_count && (rc = init()) == kNvmlSuccess) {
      rc = get_count(&n);
      shutdown();
    }
    dlclose(handle);
    if (rc != kNvmlSuccess)
      return unsupported(library + ": cannot count its GPUs (NVML error " + std::to_string(rc) +
                         ")");
    count = static_cast<int>(n);
  }
  std::vector<std::unique_ptr<GpuMonitor>> monitors;
  for (int i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(auto m, open_cuda(i, period_ms, library));
    monitors.push_back(std::move(m));
  }
  return monitors;
}

Result<std::unique_ptr<GpuMonitor>> GpuMonitor::open_device(int index,
                                                            const std::string& pci_bus_id,
                                                            int period_ms,
                                                            const std::string& library) {
  if (index < 0) return invalid_argument("GPU index " + std::to_string(index) + " is negative");
  if (period_ms <= 0)
    return invalid_argument("GPU monitor period " + std::to_string(period_ms) +
                            " ms: must be positive");
  auto n = std::make_unique<Nvml>();
  KILN_ASSIGN_OR_RETURN(n->handle, load_nvml(library));
  const char* missing = nullptr;
  bind(n->handle, "nvmlInit_v2", n->init, missing);
  bind(n->handle, "nvmlShutdown", n->shutdown, missing);
  bind(n->handle, "nvmlDeviceGetHandleByIndex_v2", n->handle_by_index, missing);
  bind(n->handle, "nvmlDeviceGetMemoryInfo", n->memory_info, missing);
  bind(n->handle, "nvmlDeviceGetUtilizationRates", n->utilization, missing);
  bind(n->handle, "nvmlDeviceGetClockInfo", n->clock_info, missing);
  bind(n->handle, "nvmlDeviceGetPowerUsage", n->power_usage, missing);
  bind(n->handle, "nvmlErrorString", n->error_string, missing);
  if (!pci_bus_id.empty())
    bind(n->handle, "nvmlDeviceGetHandleByPciBusId_v2", n->handle_by_pci, missing);
  if (missing) return unsupported(library + " has no " + missing + " (driver too old?)");
  n->name = reinterpret_cast<NameFn*>(dlsym(n->handle, "nvmlDeviceGetName"));
  n->uuid = reinterpret_cast<NameFn*>(dlsym(n->handle, "nvmlDeviceGetUUID"));
  if (nvmlReturn_t rc = n->init(); rc != kNvmlSuccess)
    return unsupported(library + ": nvmlInit_v2 failed: " + n->error(rc));
  n->initialized = true;
  const nvmlReturn_t rc = pci_bus_id.empty()
                              ? n->handle_by_index(static_cast<unsigned>(index), &n->device)
                              : n->handle_by_pci(pci_bus_id.c_str(), &n->device);
  if (rc != kNvmlSuccess) {
    std::string why = pci_bus_id.empty()
                          ? library + ": no GPU " + std::to_string(index) +
                                " (nvmlDeviceGetHandleByIndex_v2: " + n->error(rc) + ")"
                          : library + ": no GPU at PCI bus id " + pci_bus_id + " (CUDA's GPU " +
                                std::to_string(index) +
                                "; nvmlDeviceGetHandleByPciBusId_v2: " + n->error(rc) + ")";
    return rc == kNvmlErrorInvalidArgument || rc == kNvmlErrorNotFound ? invalid_argument(why)
                                                                       : internal_error(why);
  }
  auto m = std::unique_ptr<GpuMonitor>(new GpuMonitor(std::move(n), index, period_ms));
  char name[96] = {};
  if (m->nvml_->name && m->nvml_->name(m->nvml_->device, name, sizeof name - 1) == kNvmlSuccess)
    m->name_ = name;
  char uuid[96] = {};
  if (m->nvml_->uuid && m->nvml_->uuid(m->nvml_->device, uuid, sizeof uuid - 1) == kNvmlSuccess)
    m->uuid_ = uuid;
  return m;
}

GpuMonitor::GpuMonitor(std::unique_ptr<Nvml> nvml, int index, int period_ms)
    : nvml_(std::move(nvml)), index_(index), period_ms_(period_ms) {}

// stop() joins the thread before nvml_ (the first member, so destroyed last) shuts NVML down.
GpuMonitor::~GpuMonitor() { stop(); }

void GpuMonitor::start() {
  if (thread_.joinable()) return;  // stop() joins, so a joinable thread is a running one
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = false;
    samples_.clear();
  }
  thread_ = std::thread(&GpuMonitor::run, this);
}

void GpuMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

GpuSample GpuMonitor::sample(double t_s) const {
  // Each query on its own: one unsupported on this GPU (power on some boards) leaves NaN in its
  // field and the others still count.
  const Nvml& n = *nvml_;
  GpuSample s{t_s, kNan, kNan, kNan, kNan, kNan};
  nvmlMemory_t mem{};
  if (n.memory_info(n.device, &mem) == kNvmlSuccess) {
    s.mem_used_mib = mem.used / 1048576.0;
    s.mem_total_mib = mem.total / 1048576.0;
  }
  nvmlUtilization_t util{};
  if (n.utilization(n.device, &util) == kNvmlSuccess) s.util_pct = util.gpu;
  unsigned mhz = 0, mw = 0;
  if (n.clock_info(n.device, kNvmlClockSm, &mhz) == kNvmlSuccess) s.sm_mhz = mhz;
  if (n.power_usage(n.device, &mw) == kNvmlSuccess) s.power_w = mw / 1000.0;
  return s;
}

void GpuMonitor::run() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_requested_) {
    // NVML is queried without the lock, so samples() and stop() never wait on the driver.
    lock.unlock();
    GpuSample s =
        sample(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    lock.lock();
    samples_.push_back(s);
    // Waiting on the condition variable rather than sleeping: stop() wakes it at once. The period
    // is counted from the end of a sample; t_s records when each one was really taken.
    cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [this] { return stop_requested_; });
  }
}

GpuSample GpuMonitor::read() const { return sample(0); }

std::vector<GpuSample> GpuMonitor::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

std::string GpuMonitor::summary() const {
  const std::vector<GpuSample> s = samples();
  char line[200];
  std::snprintf(line, sizeof line, "GPU %d: %zu samples, every %d ms\n", index_, s.size(),
                period_ms_);
  std::string out = line;
  const std::pair<const char*, double GpuSample::*> fields[] = {
      {"memory used MiB", &GpuSample::mem_used_mib},
      {"utilization %", &GpuSample::util_pct},
      {"SM clock MHz", &GpuSample::sm_mhz},
      {"power W", &GpuSample::power_w}};
  for (const auto& [name, field] : fields) {
    // series() gives zeros when every value is NaN; that must read "n/a", not "0.0".
    bool any = false;
    for (const GpuSample& x : s) any = any || !std::isnan(x.*field);
    const GpuSeries g = series(s, field);
    if (any)
      std::snprintf(line, sizeof line, "  %s: min/median/max %.1f/%.1f/%.1f\n", name, g.min,
                    g.median, g.max);
    else
      std::snprintf(line, sizeof line, "  %s: n/a\n", name);
    out += line;
  }
  return out;
}

Status GpuMonitor::write_csv(const std::string& path) const {
  return write_samples_csv(path, samples());
}

}  // namespace kiln
