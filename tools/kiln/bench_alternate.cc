// `kiln bench MODEL --alternate 1,8,32`: one Context runs the batch sizes in rotation, as a
// dynamic batcher would. First each batch runs alone (its plan built, then timed), then the
// sizes alternate run by run; each batch's median latency in rotation is compared with its
// median alone, and the Context's plan builds and arena allocations during the rotation are
// printed (both should be 0: every size has its cached plan, all sharing one arena).

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli_common.h"

namespace kiln::cli {

namespace {

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One run's host wall time in ms.
Result<double> timed_run(Context& ctx, const std::map<std::string, Tensor>& feeds) {
  const double t0 = now_seconds();
  auto r = ctx.run(feeds);
  if (!r.is_ok()) return r.status();
  return (now_seconds() - t0) * 1e3;
}

}  // namespace

int bench_alternating(const Engine& e, const std::string& model, const GlobalOptions& g,
                      const std::vector<int64_t>& batches, const std::vector<std::string>& shapes,
                      double duration, uint32_t seed) {
  if (batches.size() < 2) return usage_error("--alternate needs at least two batch sizes");
  std::vector<std::map<std::string, Tensor>> feeds;
  for (int64_t b : batches) {
    auto f = random_inputs(e, b, shapes, seed);
    if (!f.is_ok()) return fail(f.status());
    feeds.push_back(std::move(*f));
  }
  auto ctx = e.create_context();
  const double per_phase = std::max(0.2, duration / (2.0 * batches.size()));
  // Alone: each batch's plan built (two runs: the CUDA graph is captured on the second), then
  // timed on its own.
  std::vector<std::vector<double>> alone(batches.size()), mixed(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    for (int w = 0; w < 2; ++w)
      if (auto t = timed_run(*ctx, feeds[i]); !t.is_ok()) return fail(t.status());
    const double start = now_seconds();
    while (alone[i].size() < 5 || now_seconds() - start < per_phase) {
      auto t = timed_run(*ctx, feeds[i]);
      if (!t.is_ok()) return fail(t.status());
      alone[i].push_back(*t);
    }
  }
  // The first round of the rotation re-binds and, on CUDA, captures each plan's graph again
  // where the arena grew after it was built: untimed.
  for (size_t i = 0; i < batches.size(); ++i)
    for (int w = 0; w < 2; ++w)
      if (auto t = timed_run(*ctx, feeds[i]); !t.is_ok()) return fail(t.status());
  const ContextStats before = ctx->stats();
  const double start = now_seconds();
  while (mixed[0].size() < 5 || now_seconds() - start < duration / 2)
    for (size_t i = 0; i < batches.size(); ++i) {
      auto t = timed_run(*ctx, feeds[i]);
      if (!t.is_ok()) return fail(t.status());
      mixed[i].push_back(*t);
    }
  const ContextStats after = ctx->stats();

  const std::string name = std::filesystem::path(model).filename().string();
  std::printf("%-24s %-6s %5s %12s %12s %9s %7s\n", "model", "device", "batch", "alone ms",
              "alternating", "ratio", "runs");
  for (size_t i = 0; i < batches.size(); ++i) {
    const double a = median_ms(alone[i]), m = median_ms(mixed[i]);
    std::printf("%-24s %-6s %5lld %12.4f %12.4f %9.3f %7zu\n", name.c_str(), g.device_name(),
                static_cast<long long>(batches[i]), a, m, a > 0 ? m / a : 0.0, mixed[i].size());
  }
  std::printf(
      "while alternating: %lld plan builds, %lld arena allocations, %lld runs through cached "
      "plans; %lld plans cached, arena %.1f MiB\n",
      static_cast<long long>(after.plan_builds - before.plan_builds),
      static_cast<long long>(after.arena_allocations - before.arena_allocations),
      static_cast<long long>(after.plan_runs - before.plan_runs),
      static_cast<long long>(after.plans_cached), after.arena_bytes / 1048576.0);
  std::printf("in all: %lld plan builds, %lld arena allocations\n",
              static_cast<long long>(after.plan_builds),
              static_cast<long long>(after.arena_allocations));
  return kExitOk;
}

}  // namespace kiln::cli
