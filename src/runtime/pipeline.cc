// Pipeline (kiln/pipeline.h): its Contexts as the runners of a RequestQueue, one worker thread
// each, fed from one FIFO queue.
#include "kiln/pipeline.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "runtime/context_plans.h"
#include "runtime/engine_impl.h"
#include "runtime/request_queue.h"

namespace kiln {

struct Pipeline::Impl {
  std::vector<std::shared_ptr<const Engine>> engines;
  PipelineOptions options;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<int> devices;  // per context: its GPU, or -1
  // Each GPU's compute order (on a device that has one), joined by all its Contexts (on or
  // off).
  std::map<int, std::shared_ptr<ComputeOrder>> orders;
  bool ordered = false;
  ComputeOrderTiming order_timing;
  bool caller_submitted = false;  // submit() was called (warm_up's own rounds do not count)

  void set_ordered(bool on) {
    for (auto& [gpu, order] : orders) order->set_enabled(on);
    ordered = on && !orders.empty();
  }
  // A request into the queue, counted (`by_caller`: from Pipeline::submit, not warm_up).
  std::future<Result<Outputs>> submit(Outputs inputs, bool by_caller,
                                      DeviceTiming* timing = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.submitted;
      caller_submitted = caller_submitted || by_caller;
    }
    RequestQueue::OnRan on_ran;
    if (timing)
      on_ran = [this, timing](size_t k, const Result<Outputs>& out) {
        if (out.is_ok() && last_timing[k]) *timing = *last_timing[k];
      };
    return queue->submit(std::move(inputs), std::move(on_ran)).result;
  }
  // One round of `inputs` through the queue, 2 per Context in flight, until at least
  // `requests` after the pipeline filled were submitted and `seconds` passed: requests per
  // second in the steady state, or the first error.
  Result<double> time_round(const Outputs& inputs, size_t requests, double seconds);

  mutable std::mutex mu;  // stats
  PipelineStats stats;
  std::unique_ptr<RequestQueue> queue;  // last: its workers stop first

  std::vector<int64_t> plan_builds;  // per Context, as of its last run (under mu)
  // Per Context: its last run's device timing, read once in done() and given to the request
  // that asked for it (RequestQueue::OnRan, next on the same worker, the slot's only user).
  std::vector<std::optional<DeviceTiming>> last_timing;
  // After each result, on the thread that ran it (k: the Context, or contexts.size() for a
  // request failed unrun).
  void done(size_t k, const Result<Outputs>& out) {
    Result<DeviceTiming> t = k < contexts.size() ? contexts[k]->last_device_timing()
                                                 : Result<DeviceTiming>(internal_error("unrun"));
    const int64_t builds = k < contexts.size() ? contexts[k]->stats().plan_builds : 0;
    if (k < contexts.size()) last_timing[k] = t.is_ok() ? std::optional(*t) : std::nullopt;
    std::lock_guard<std::mutex> lock(mu);
    if (k < contexts.size()) plan_builds[k] = builds;
    ++stats.completed;
    stats.failed += out.is_ok() ? 0 : 1;
    stats.cancelled += !out.is_ok() && out.status().code() == StatusCode::kCancelled ? 1 : 0;
    if (k < contexts.size()) ++stats.per_context[k];
    if (out.is_ok() && t.is_ok()) {
      stats.upload_ms += t->h2d_ms;
      stats.compute_ms += t->compute_ms;
      stats.download_ms += t->d2h_ms;
      stats.wait_ms += t->wait_ms;
    }
  }
};

Result<std::unique_ptr<Pipeline>> Pipeline::create(std::shared_ptr<const Engine> engine,
                                                   const PipelineOptions& options) {
  return create(std::vector<std::shared_ptr<const Engine>>{std::move(engine)}, options);
}

Result<std::unique_ptr<Pipeline>> Pipeline::create(
    const std::vector<std::shared_ptr<const Engine>>& engines, const PipelineOptions& options) {
  if (engines.empty()) return invalid_argument("Pipeline: no engine");
  for (const auto& e : engines)
    if (!e) return invalid_argument("Pipeline: no engine");
  if (options.contexts < 1 || options.contexts > 256)
    return invalid_argument("Pipeline: contexts must be 1 to 256, not " +
                            std::to_string(options.contexts));
  if (options.max_queued < 1) return invalid_argument("Pipeline: max_queued must be at least 1");
  if (!(options.order_round_seconds >= 0 && options.order_round_seconds <= 60))
    return invalid_argument("Pipeline: order_round_seconds must be 0 to 60, not " +
                            std::to_string(options.order_round_seconds));
  for (const auto& e : engines) {
    const auto& a = engines[0]->inputs();
    const auto& b = e->inputs();
    bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); ++i)
      same = a[i].name == b[i].name && a[i].dtype == b[i].dtype;
    if (!same) return invalid_argument("Pipeline: its engines take different inputs");
  }
  auto impl = std::make_unique<Impl>();
  impl->engines = engines;
  impl->options = options;
  impl->stats.per_context.assign(static_cast<size_t>(options.contexts), 0);
  for (int k = 0; k < options.contexts; ++k) {
    const Engine& e = *engines[static_cast<size_t>(k) % engines.size()];
    impl->contexts.push_back(e.create_context());
    const bool cuda = e.options().device == Device::kCuda;
    const int gpu = cuda ? e.options().device_index : -1;
    impl->devices.push_back(gpu);
    auto& order = impl->orders[gpu];
    if (!order) order = engine_impl(e).device->make_compute_order();
    if (!order) {
      impl->orders.erase(gpu);
      continue;
    }
    KILN_RETURN_IF_ERROR(context_impl(*impl->contexts.back())
                             .plans->join(order)
                             .with_context("Pipeline context " + std::to_string(k)));
  }
  impl->set_ordered(options.compute_order != PipelineOptions::ComputeOrder::kConcurrent);
  // The profiles' plans, built with each Context; no worker runs yet.
  for (const auto& ctx : impl->contexts) impl->plan_builds.push_back(ctx->stats().plan_builds);
  impl->last_timing.assign(impl->contexts.size(), std::nullopt);
  // The Contexts of one GPU fail together (a faulted GPU fails all of the process's work
  // there); each CPU Context is a group of its own.
  std::vector<RequestQueue::Runner> runners;
  for (size_t k = 0; k < impl->contexts.size(); ++k) {
    Context* ctx = impl->contexts[k].get();
    const int gpu = impl->devices[k];
    runners.push_back({[ctx, gpu](const Outputs& in) {
                         Result<Outputs> out = ctx->run(in);
                         if (!out.is_ok() && out.status().code() == StatusCode::kUnavailable)
                           return Result<Outputs>(out.status().with_context(
                               "GPU " + std::to_string(gpu) + " failed; its Contexts retired"));
                         return out;
                       },
                       gpu >= 0 ? gpu : -1 - static_cast<int>(k)});
  }
  Impl* p = impl.get();
  impl->queue = std::make_unique<RequestQueue>(
      std::move(runners), options.max_queued,
      [p](size_t k, const Result<Outputs>& out) { p->done(k, out); });
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pipeline::~Pipeline() = default;

Status Pipeline::warm_up(const Outputs& inputs, int runs) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->caller_submitted)
      return invalid_argument("Pipeline::warm_up: requests were submitted already");
  }
  // The workers wait on the empty queue and touch no Context meanwhile.
  for (size_t k = 0; k < impl_->contexts.size(); ++k)
    for (int i = 0; i < runs; ++i)
      KILN_RETURN_IF_ERROR(impl_->contexts[k]->run(inputs).status().with_context(
          "warming up context " + std::to_string(k)));
  Impl& p = *impl_;
  std::map<int, int> per_gpu;
  for (int gpu : p.devices)
    if (gpu >= 0) ++per_gpu[gpu];
  bool shared = false;
  for (const auto& [gpu, n] : per_gpu) shared = shared || n > 1;
  if (p.options.compute_order != PipelineOptions::ComputeOrder::kTimed || !shared)
    return Status::ok();
  // Alternating rounds, concurrent first; nothing is in flight between two rounds.
  constexpr int kRounds = 3;
  const size_t requests = 4 * p.contexts.size();
  std::vector<double> each[2];  // [0] concurrent, [1] ordered
  for (int r = 0; r < 2 * kRounds; ++r) {
    const bool on = r % 2 == 1;
    p.set_ordered(on);
    KILN_ASSIGN_OR_RETURN(double per_s,
                          p.time_round(inputs, requests, p.options.order_round_seconds));
    each[on].push_back(per_s);
  }
  for (auto& v : each) std::sort(v.begin(), v.end());
  p.order_timing = {each[1][kRounds / 2], each[0][kRounds / 2], kRounds};
  p.set_ordered(p.order_timing.ordered_per_s >= p.order_timing.concurrent_per_s);
  return Status::ok();
}

Result<double> Pipeline::Impl::time_round(const Outputs& inputs, size_t requests, double seconds) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  // Results are taken in submission order; the rate is counted from the first `contexts.size()`
  // completions (the pipeline filled) to the last one, so that the filling is not counted and
  // the drain is: ordered computes complete one by one, concurrent ones in bursts.
  const size_t fill = contexts.size();
  std::deque<std::future<Result<Outputs>>> pending;
  size_t submitted = 0, done = 0;
  clock::time_point filled = start;
  Status failed = Status::ok();
  while (failed.is_ok() && (submitted < requests + fill || elapsed() < seconds)) {
    while (pending.size() < 2 * contexts.size()) {
      pending.push_back(submit(inputs, false));
      ++submitted;
    }
    Result<Outputs> out = pending.front().get();
    pending.pop_front();
    if (!out.is_ok()) failed = out.status();
    if (++done == fill) filled = clock::now();
  }
  for (auto& f : pending) {  // the drain, counted
    Result<Outputs> out = f.get();
    if (failed.is_ok() && !out.is_ok()) failed = out.status();
    ++done;
  }
  const double s = std::chrono::duration<double>(clock::now() - filled).count();
  KILN_RETURN_IF_ERROR(failed.with_context("timing the compute order"));
  if (done <= fill || s <= 0)
    return internal_error("timing the compute order: no request completed");
  return static_cast<double>(done - fill) / s;
}

bool Pipeline::compute_ordered() const { return impl_->ordered; }
ComputeOrderTiming Pipeline::compute_order_timing() const { return impl_->order_timing; }

std::future<Result<Outputs>> Pipeline::submit(Outputs inputs) {
  return impl_->submit(std::move(inputs), true);
}

std::future<Result<Outputs>> Pipeline::submit(Outputs inputs, DeviceTiming* timing) {
  return impl_->submit(std::move(inputs), true, timing);
}

Result<Pipeline::Submitted> Pipeline::try_submit(Outputs inputs) {
  {
    // Counted before it is queued, as submit() does, so no result is seen uncounted.
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->stats.submitted;
    impl_->caller_submitted = true;
  }
  Result<RequestQueue::Queued> q = impl_->queue->try_submit(std::move(inputs));
  if (!q.is_ok()) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    --impl_->stats.submitted;
    ++impl_->stats.refused;
    return q.status();
  }
  return Submitted{q->id, std::move(q->result)};
}

bool Pipeline::cancel(uint64_t id) { return impl_->queue->cancel(id); }

PipelineStats Pipeline::stats() const {
  PipelineStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    s = impl_->stats;
    for (int64_t n : impl_->plan_builds) s.plan_builds += n;
  }
  s.retired = impl_->queue->retired();
  return s;
}

Result<DeviceMemoryInfo> Pipeline::device_memory() const {
  DeviceMemoryInfo sum;
  std::set<const Engine*> counted;
  for (size_t k = 0; k < impl_->contexts.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(DeviceMemoryInfo m, impl_->contexts[k]->device_memory());
    sum.arena += m.arena;
    sum.arena_lower_bound += m.arena_lower_bound;
    sum.workspace += m.workspace;
    sum.pinned_host += m.pinned_host;
    if (counted.insert(impl_->engines[k % impl_->engines.size()].get()).second)
      sum.weights += m.weights;
  }
  return sum;
}

int Pipeline::contexts() const { return static_cast<int>(impl_->contexts.size()); }

int Pipeline::context_device(int k) const {
  return k >= 0 && static_cast<size_t>(k) < impl_->devices.size() ? impl_->devices[k] : -1;
}

}  // namespace kiln
