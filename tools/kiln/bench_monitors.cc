#include "bench_monitors.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli_common.h"

namespace kiln::cli {

BenchMonitors::BenchMonitors(bool on, const std::string& csv, const std::vector<int>& gpus)
    : csv_(csv) {
  if (!on) return;
  for (int gpu : gpus)
    if (std::find(gpus_.begin(), gpus_.end(), gpu) == gpus_.end()) gpus_.push_back(gpu);
  for (int gpu : gpus_) {
    auto m = GpuMonitor::open_cuda(gpu);
    if (!m.is_ok()) {
      std::fprintf(stderr, "kiln: note: --monitor: %s; going on without it\n",
                   m.status().message().c_str());
      owned_.push_back(nullptr);
      continue;
    }
    owned_.push_back(std::move(m).value());
    open_.push_back(owned_.back().get());
  }
}

void BenchMonitors::start() {
  for (GpuMonitor* m : open_) m->start();
}

void BenchMonitors::stop() {
  for (GpuMonitor* m : open_) m->stop();
}

Status BenchMonitors::finish() {
  for (size_t i = 0; i < owned_.size(); ++i) {
    GpuMonitor* m = owned_[i].get();
    if (!m) continue;
    m->stop();
    std::printf("%s", m->summary().c_str());
    if (csv_.empty()) continue;
    std::filesystem::path path(csv_);
    if (gpus_.size() > 1)
      path.replace_filename(path.stem().string() + ".gpu" + std::to_string(gpus_[i]) +
                            path.extension().string());
    KILN_RETURN_IF_ERROR(m->write_csv(path.string()));
    std::printf("GPU samples written to %s\n", path.string().c_str());
  }
  return Status::ok();
}

}  // namespace kiln::cli
