// `kiln bench --monitor / --monitor-csv`: NVML monitors of the GPUs a bench runs on, one a GPU,
// started and stopped around the timed phase.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/gpu_monitor.h"
#include "kiln/status.h"

namespace kiln::cli {

class BenchMonitors {
 public:
  // Nothing when `on` is false. Else one monitor for each distinct GPU in `gpus`, in the order
  // first listed; a GPU whose monitor cannot be opened (no NVML) is named on stderr and the
  // bench goes on without it. `csv`: the samples' file, NAME.gpuN.EXT per GPU with several.
  BenchMonitors(bool on, const std::string& csv, const std::vector<int>& gpus);
  const std::vector<GpuMonitor*>& monitors() const { return open_; }
  GpuMonitor* first() const { return open_.empty() ? nullptr : open_.front(); }
  void start();
  void stop();
  // Stops them, prints each one's min/median/max and writes each CSV.
  Status finish();

 private:
  std::string csv_;
  std::vector<int> gpus_;                           // distinct, in order
  std::vector<std::unique_ptr<GpuMonitor>> owned_;  // per gpus_ entry; null where not opened
  std::vector<GpuMonitor*> open_;
};

}  // namespace kiln::cli
