// GPU state read through NVML: memory, utilization, SM clock and power of one GPU, sampled every
// period on a thread of its own (`kiln bench --monitor`) or read when asked (kiln serve's
// nv_gpu_* metrics).
//
// NVML (libnvidia-ml, shipped with the driver) is opened at run time with dlopen rather than
// linked, so the kiln binary still starts on machines without an NVIDIA driver; there open()
// returns an error and the caller goes on without a monitor.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/status.h"

namespace kiln {

// One reading. A query that failed leaves its field NaN; the others are still recorded.
struct GpuSample {
  double t_s = 0;  // seconds since start()
  double mem_used_mib = 0;
  double util_pct = 0;  // percent of the last sample period a kernel was running
  double sm_mhz = 0;
  double power_w = 0;
  double mem_total_mib = 0;
};

struct GpuSeries {
  double min = 0, median = 0, max = 0;
};

// min/median/max of one field over the samples, NaNs ignored (all zero when none is left).
// The median of an even count is the mean of the middle two.
GpuSeries series(const std::vector<GpuSample>& s, double GpuSample::*field);

// Writes the samples as CSV, header t_s,mem_used_mib,util_pct,sm_mhz,power_w; a NaN field is
// written "nan". An error names the path.
Status write_samples_csv(const std::string& path, const std::vector<GpuSample>& samples);

class GpuMonitor {
 public:
  // Opens NVML from `library` for GPU `index`. An error names the library and what failed
  // (library not found, entry point missing, nvmlInit failed, no such GPU); never crashes.
  // `index` is NVML's numbering (PCI bus order). CUDA's can differ: CUDA_VISIBLE_DEVICES
  // renumbers, and CUDA's default order puts the fastest GPU first.
  static Result<std::unique_ptr<GpuMonitor>> open(int index, int period_ms = 100,
                                                  const std::string& library = "libnvidia-ml.so.1");
  // The GPU at PCI bus id `pci_bus_id` ("0000:1B:00.0", as cuda_pci_bus_id gives it): the
  // one a CUDA index means whatever CUDA_VISIBLE_DEVICES says. `label` is the number the
  // summary gives it (the CUDA index).
  static Result<std::unique_ptr<GpuMonitor>> open_pci(
      const std::string& pci_bus_id, int label, int period_ms = 100,
      const std::string& library = "libnvidia-ml.so.1");
  // CUDA's GPU `cuda_index`, found by its PCI bus id; where CUDA cannot name it (a build
  // without CUDA, or a GPU CUDA does not see), NVML's GPU of that index.
  static Result<std::unique_ptr<GpuMonitor>> open_cuda(
      int cuda_index, int period_ms = 100, const std::string& library = "libnvidia-ml.so.1");
  // Every GPU this process can use: those CUDA sees, or where it sees none, every GPU NVML
  // has. An error where NVML cannot be opened; an empty list where it has no GPU.
  static Result<std::vector<std::unique_ptr<GpuMonitor>>> open_all(
      int period_ms = 100, const std::string& library = "libnvidia-ml.so.1");
  ~GpuMonitor();  // stops the thread, shuts NVML down, closes the library
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // Starts sampling: one sample now, then one every period. A start() after stop() begins a
  // new series (the earlier samples are dropped); while running it does nothing.
  void start();
  void stop();  // joins the thread; idempotent. start() and stop() are called from one thread.
  std::vector<GpuSample> samples() const;
  // One reading now (t_s 0), without the sampling thread; safe from any thread.
  GpuSample read() const;
  // One line a field: "memory used MiB: min/median/max 812.0/830.5/901.0", "n/a" when every
  // sample of that field failed.
  std::string summary() const;
  Status write_csv(const std::string& path) const;
  const std::string& name() const { return name_; }  // "NVIDIA H200"; "" when NVML has none
  const std::string& uuid() const { return uuid_; }  // "GPU-8c1e…"; "" when NVML has none
  int index() const { return index_; }               // the number it was opened as

 private:
  struct Nvml;  // the library handle and the entry points used (gpu_monitor.cc)
  // open() and open_pci(): the GPU by NVML index, or by PCI bus id where one is given.
  static Result<std::unique_ptr<GpuMonitor>> open_device(int index, const std::string& pci_bus_id,
                                                         int period_ms, const std::string& library);
  GpuMonitor(std::unique_ptr<Nvml> nvml, int index, int period_ms);
  GpuSample sample(double t_s) const;
  void run();

  std::unique_ptr<Nvml> nvml_;
  int index_, period_ms_;
  std::string name_, uuid_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;     // guarded by mu_
  std::vector<GpuSample> samples_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kiln
