// Pipeline (kiln/pipeline.h): one worker thread per Context, fed from one FIFO queue.
#include "kiln/pipeline.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/cuda_runtime.h"
#include "runtime/engine_impl.h"

namespace kiln {

struct Pipeline::Impl {
  struct Request {
    Outputs inputs;
    std::promise<Result<Outputs>> result;
  };

  std::vector<std::shared_ptr<const Engine>> engines;
  PipelineOptions options;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<int> devices;  // per context: its GPU, or -1
  std::vector<std::thread> workers;

  mutable std::mutex mu;
  std::condition_variable has_work, has_room;
  std::deque<Request> queue;
  bool stopping = false;
  PipelineStats stats;

  void work(size_t k) {
    for (;;) {
      Request r;
      {
        std::unique_lock<std::mutex> lock(mu);
        has_work.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping, and every request taken
        r = std::move(queue.front());
        queue.pop_front();
      }
      has_room.notify_one();
      Result<Outputs> out = contexts[k]->run(r.inputs);
      Result<DeviceTiming> t = contexts[k]->last_device_timing();
      {
        // Counted before the result is given: whoever holds a result sees it counted.
        std::lock_guard<std::mutex> lock(mu);
        ++stats.completed;
        stats.failed += out.is_ok() ? 0 : 1;
        ++stats.per_context[k];
        if (out.is_ok() && t.is_ok()) {
          stats.upload_ms += t->h2d_ms;
          stats.compute_ms += t->compute_ms;
          stats.download_ms += t->d2h_ms;
          stats.wait_ms += t->wait_ms;
        }
      }
      r.result.set_value(std::move(out));
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
  std::map<int, std::shared_ptr<CudaComputeOrder>> orders;  // by GPU
  for (int k = 0; k < options.contexts; ++k) {
    const Engine& e = *engines[static_cast<size_t>(k) % engines.size()];
    impl->contexts.push_back(e.create_context());
    const bool cuda = e.options().device == Device::kCuda;
    const int gpu = cuda ? e.options().device_index : -1;
    impl->devices.push_back(gpu);
    if (cuda && options.ordered_compute) {
      auto& order = orders[gpu];
      if (!order) order = make_cuda_compute_order();
      KILN_RETURN_IF_ERROR(
          cuda_join_compute_order(engine_impl(e), context_impl(*impl->contexts.back()).cuda, order)
              .with_context("Pipeline context " + std::to_string(k)));
    }
  }
  for (size_t k = 0; k < impl->contexts.size(); ++k)
    impl->workers.emplace_back([p = impl.get(), k] { p->work(k); });
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pipeline::~Pipeline() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->has_work.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

Status Pipeline::warm_up(const Outputs& inputs, int runs) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stats.submitted > 0)
      return invalid_argument("Pipeline::warm_up: requests were submitted already");
  }
  // The workers wait on the empty queue and touch no Context meanwhile.
  for (size_t k = 0; k < impl_->contexts.size(); ++k)
    for (int i = 0; i < runs; ++i)
      KILN_RETURN_IF_ERROR(impl_->contexts[k]->run(inputs).status().with_context(
          "warming up context " + std::to_string(k)));
  return Status::ok();
}

std::future<Result<Outputs>> Pipeline::submit(Outputs inputs) {
  Impl& p = *impl_;
  Impl::Request r;
  r.inputs = std::move(inputs);
  std::future<Result<Outputs>> f = r.result.get_future();
  {
    std::unique_lock<std::mutex> lock(p.mu);
    p.has_room.wait(lock, [&] { return p.queue.size() < p.options.max_queued; });
    p.queue.push_back(std::move(r));
    ++p.stats.submitted;
  }
  p.has_work.notify_one();
  return f;
}

PipelineStats Pipeline::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
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
