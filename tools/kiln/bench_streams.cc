// `kiln bench MODEL --streams N`: a Pipeline of N Contexts (on CUDA, N streams) of one Engine
// (or one per --gpus entry) runs the same batch, M requests (--inflight, 2N by default) kept in
// flight by one submitting thread. It prints the throughput over the wall time (copies
// included), the latency of each request from submit to result, how many requests each
// Context ran, and on CUDA the mean time of each stage of a request (upload, wait for another
// stream's compute, compute, download) and how much of the copy time was hidden under compute.
// Compare with `--streams 1` for what the extra Contexts add.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <set>

#include "cli_common.h"
#include "kiln/gpu_monitor.h"
#include "kiln/pipeline.h"

namespace kiln::cli {

Status warm_pipeline(Pipeline& pipeline, const std::map<std::string, Tensor>& feeds, int streams,
                     double warmup) {
  // Every Context builds its plan (and, on CUDA, captures its graph on its second run), one
  // after the other; then rounds of 4N requests until `warmup` seconds have passed.
  const double w0 = now_seconds();
  KILN_RETURN_IF_ERROR(pipeline.warm_up(feeds));
  while (now_seconds() - w0 < warmup) {
    std::vector<std::future<Result<Outputs>>> f;
    for (int i = 0; i < 4 * streams; ++i) f.push_back(pipeline.submit(feeds));
    for (auto& x : f) KILN_RETURN_IF_ERROR(x.get().status());
  }
  return Status::ok();
}

Result<PipelineTiming> time_pipeline(Pipeline& pipeline, const std::map<std::string, Tensor>& feeds,
                                     size_t inflight, double duration,
                                     const std::vector<GpuMonitor*>& monitors) {
  struct InFlight {
    double submitted;
    std::future<Result<Outputs>> result;
  };
  std::deque<InFlight> pending;
  PipelineTiming t;
  for (GpuMonitor* m : monitors) m->start();
  const double start = now_seconds();
  Status failed = Status::ok();
  while (failed.is_ok() && (t.lat_ms.size() < 3 || now_seconds() - start < duration)) {
    while (pending.size() < inflight) pending.push_back({now_seconds(), pipeline.submit(feeds)});
    auto r = pending.front().result.get();
    const double ms = (now_seconds() - pending.front().submitted) * 1e3;
    pending.pop_front();
    if (r.is_ok()) {
      t.lat_ms.push_back(ms);
      continue;
    }
    // A GPU that failed retired its Contexts: the run goes on on the others while any is left.
    const PipelineStats now = pipeline.stats();
    const bool any_left = std::any_of(now.retired.begin(), now.retired.end(),
                                      [](const std::string& why) { return why.empty(); });
    if (r.status().code() == StatusCode::kUnavailable && any_left) {
      if (t.device_failures++ == 0) spdlog::error("{}", r.status().to_string());
      continue;
    }
    failed = r.status();
  }
  t.wall_s = now_seconds() - start;
  for (GpuMonitor* m : monitors) m->stop();
  t.at_end = pipeline.stats();                   // the drained requests not yet counted
  for (auto& p : pending) (void)p.result.get();  // drained, not counted
  KILN_RETURN_IF_ERROR(failed);
  return t;
}

int bench_streams(const std::vector<std::shared_ptr<const Engine>>& engines,
                  const std::string& model, const GlobalOptions& g, const StreamsBench& b,
                  const std::map<std::string, Tensor>& feeds, int64_t batch) {
  const int streams = b.streams;
  const double warmup = b.warmup, duration = b.duration;
  if (streams < 1 || streams > 64) return usage_error("--streams must be 1 to 64");
  if (b.inflight < 0 || b.inflight > 1024) return usage_error("--inflight must be 1 to 1024");
  const size_t inflight = static_cast<size_t>(b.inflight ? b.inflight : 2 * streams);
  PipelineOptions po;
  po.contexts = streams;
  po.max_queued = inflight;
  po.compute_order = b.compute_order;
  auto pipeline_or = Pipeline::create(engines, po);
  if (!pipeline_or.is_ok()) return fail(pipeline_or.status());
  Pipeline& pipeline = **pipeline_or;

  if (Status st = warm_pipeline(pipeline, feeds, streams, warmup); !st.is_ok()) return fail(st);
  const PipelineStats warm = pipeline.stats();
  if (g.cuda()) {
    const ComputeOrderTiming t = pipeline.compute_order_timing();
    std::printf("compute order: %s", pipeline.compute_ordered() ? "ordered" : "concurrent");
    if (t.rounds > 0)
      std::printf(
          " (timed at warm-up, median of %d rounds each: ordered %.1f, concurrent %.1f "
          "requests/s)\n",
          t.rounds, t.ordered_per_s, t.concurrent_per_s);
    else
      std::printf("\n");
  }

  auto timing = time_pipeline(pipeline, feeds, inflight, duration, b.monitors);
  if (!timing.is_ok()) return fail(timing.status());
  std::vector<double>& lat_ms = timing->lat_ms;
  const double total = timing->wall_s;
  const PipelineStats& timed = timing->at_end;
  std::sort(lat_ms.begin(), lat_ms.end());
  const double ips = static_cast<double>(batch) * lat_ms.size() / total;
  const std::string name = std::filesystem::path(model).filename().string();
  const std::string mode =
      std::to_string(streams) + " streams" +
      (g.cuda() ? std::string(" ") + precision_name(engines[0]->options().precision)
                : std::string());
  std::printf("%-24s %-6s %5s %-16s %6s %9s %9s %9s %9s %12s\n", "model", "device", "batch", "mode",
              "runs", "min ms", "median ms", "p90 ms", "p99 ms", "images/s");
  std::printf("%-24s %-6s %5lld %-16s %6zu %9.4g %9.4g %9.4g %9.4g %12.1f\n", name.c_str(),
              g.device_name(), static_cast<long long>(batch), mode.c_str(), lat_ms.size(),
              lat_ms[0], percentile(lat_ms, 50), percentile(lat_ms, 90), percentile(lat_ms, 99),
              ips);
  const PipelineStats s = pipeline.stats();
  std::printf("requests per context (timed and drained):");
  for (size_t k = 0; k < s.per_context.size(); ++k)
    std::printf(" %lld", static_cast<long long>(s.per_context[k] - warm.per_context[k]));
  std::printf("; %zu in flight, latency from submit to result\n", inflight);
  // GPUs that failed during the run: their requests failed, the others' went on.
  std::map<int, std::string> failed_gpus;
  for (size_t k = 0; k < s.retired.size(); ++k)
    if (!s.retired[k].empty())
      failed_gpus[pipeline.context_device(static_cast<int>(k))] = s.retired[k];
  for (const auto& [gpu, why] : failed_gpus)
    std::printf("GPU %d failed and its contexts retired: %s\n", gpu, why.c_str());
  if (timing->device_failures > 0)
    std::printf("%lld requests failed with their GPU; images/s counts the others\n",
                static_cast<long long>(timing->device_failures));
  if (engines.size() > 1) {
    std::printf("GPU of each context:");
    for (int k = 0; k < pipeline.contexts(); ++k) std::printf(" %d", pipeline.context_device(k));
    std::printf("\n");
    // Each GPU's share of the timed requests (its contexts' counts; the drained ones included,
    // as above).
    std::map<int, int64_t> by_gpu;
    int64_t all = 0;
    for (int k = 0; k < pipeline.contexts(); ++k) {
      const int64_t n = s.per_context[k] - warm.per_context[k];
      by_gpu[pipeline.context_device(k)] += n;
      all += n;
    }
    for (const auto& [gpu, n] : by_gpu)
      std::printf("GPU %d: %lld requests (%.1f%%), %.1f images/s\n", gpu, static_cast<long long>(n),
                  all ? 100.0 * n / all : 0.0, static_cast<double>(batch) * n / total);
  }
  if (g.cuda()) {
    // Stage times of the requests completed in the timed phase (some may have been submitted
    // in the warm-up's last moments: a small difference).
    const double n = static_cast<double>(timed.completed - warm.completed);
    const double up = timed.upload_ms - warm.upload_ms, down = timed.download_ms - warm.download_ms;
    const double comp = timed.compute_ms - warm.compute_ms, wait = timed.wait_ms - warm.wait_ms;
    if (n > 0) {
      std::printf(
          "per request (GPU event times, mean of %.0f): upload %.3f ms, wait for the compute "
          "order %.3f ms, compute %.3f ms, download %.3f ms\n",
          n, up / n, wait / n, comp / n, down / n);
      // The wall time not spent computing bounds the copy time left exposed; with the compute
      // ordered (one at a time per GPU), the summed compute is the GPU's busy time.
      std::set<int> distinct;
      for (int k = 0; k < pipeline.contexts(); ++k) distinct.insert(pipeline.context_device(k));
      const double gpus = static_cast<double>(std::max<size_t>(1, distinct.size()));
      const double exposed = std::max(0.0, total * 1e3 - comp / gpus);
      const double copies = (up + down) / gpus;
      if (copies > 0)
        std::printf(
            "copies hidden under compute: %.1f%% (%.1f ms of copies, at most %.1f ms of the "
            "%.1f ms wall time not computing)%s\n",
            100.0 * std::clamp(1.0 - exposed / copies, 0.0, 1.0), copies, exposed, total * 1e3,
            pipeline.compute_ordered() ? ""
                                       : "; computes overlap each other, so this is approximate");
    }
  }
  return kExitOk;
}

}  // namespace kiln::cli
