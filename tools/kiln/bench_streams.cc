// `kiln bench MODEL --streams N`: a Pipeline of N Contexts (on CUDA, N streams) of one Engine
// runs the same batch, 2N requests kept in flight by one submitting thread. It prints the
// throughput over the wall time (copies included), the latency of each request from submit to
// result, and how many requests each Context ran. Compare with `--streams 1` for what the
// extra Contexts add.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>

#include "cli_common.h"
#include "kiln/pipeline.h"

namespace kiln::cli {

int bench_streams(std::shared_ptr<const Engine> e, const std::string& model, const GlobalOptions& g,
                  int streams, const std::map<std::string, Tensor>& feeds, int64_t batch,
                  double warmup, double duration) {
  if (streams < 1 || streams > 64) return usage_error("--streams must be 1 to 64");
  const size_t inflight = static_cast<size_t>(2 * streams);
  auto pipeline_or = Pipeline::create(e, PipelineOptions{streams, inflight});
  if (!pipeline_or.is_ok()) return fail(pipeline_or.status());
  Pipeline& pipeline = **pipeline_or;

  // Warm-up: every Context builds its plan (and, on CUDA, captures its graph on its second
  // run), one after the other; then rounds of 4N requests until `warmup` seconds have passed.
  const double w0 = now_seconds();
  if (Status s = pipeline.warm_up(feeds); !s.is_ok()) return fail(s);
  while (now_seconds() - w0 < warmup) {
    std::vector<std::future<Result<Outputs>>> f;
    for (int i = 0; i < 4 * streams; ++i) f.push_back(pipeline.submit(feeds));
    for (auto& x : f) {
      auto r = x.get();
      if (!r.is_ok()) return fail(r.status());
    }
  }
  const PipelineStats warm = pipeline.stats();

  struct InFlight {
    double submitted;
    std::future<Result<Outputs>> result;
  };
  std::deque<InFlight> pending;
  std::vector<double> lat_ms;
  const double start = now_seconds();
  Status failed = Status::ok();
  while (failed.is_ok() && (lat_ms.size() < 3 || now_seconds() - start < duration)) {
    while (pending.size() < inflight) pending.push_back({now_seconds(), pipeline.submit(feeds)});
    auto r = pending.front().result.get();
    lat_ms.push_back((now_seconds() - pending.front().submitted) * 1e3);
    pending.pop_front();
    if (!r.is_ok()) failed = r.status();
  }
  const double total = now_seconds() - start;
  for (auto& p : pending) (void)p.result.get();  // drained, not counted
  if (!failed.is_ok()) return fail(failed);

  std::sort(lat_ms.begin(), lat_ms.end());
  const double ips = static_cast<double>(batch) * lat_ms.size() / total;
  const std::string name = std::filesystem::path(model).filename().string();
  const std::string mode =
      std::to_string(streams) + " streams" +
      (g.device == "cuda" ? std::string(" ") + precision_name(e->options().precision)
                          : std::string());
  std::printf("%-24s %-6s %5s %-16s %6s %9s %9s %9s %9s %12s\n", "model", "device", "batch", "mode",
              "runs", "min ms", "median ms", "p90 ms", "p99 ms", "images/s");
  std::printf("%-24s %-6s %5lld %-16s %6zu %9.4g %9.4g %9.4g %9.4g %12.1f\n", name.c_str(),
              g.device.c_str(), static_cast<long long>(batch), mode.c_str(), lat_ms.size(),
              lat_ms[0], percentile(lat_ms, 50), percentile(lat_ms, 90), percentile(lat_ms, 99),
              ips);
  const PipelineStats s = pipeline.stats();
  std::printf("requests per context (timed and drained):");
  for (size_t k = 0; k < s.per_context.size(); ++k)
    std::printf(" %lld", static_cast<long long>(s.per_context[k] - warm.per_context[k]));
  std::printf("; %zu in flight, latency from submit to result\n", inflight);
  return kExitOk;
}

}  // namespace kiln::cli
