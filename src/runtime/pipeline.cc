// Pipeline (kiln/pipeline.h): one worker thread per Context, fed from one FIFO queue.
#include "kiln/pipeline.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

struct Pipeline::Impl {
  struct Request {
    Outputs inputs;
    std::promise<Result<Outputs>> result;
  };

  std::shared_ptr<const Engine> engine;
  PipelineOptions options;
  std::vector<std::unique_ptr<Context>> contexts;
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
      {
        // Counted before the result is given: whoever holds a result sees it counted.
        std::lock_guard<std::mutex> lock(mu);
        ++stats.completed;
        stats.failed += out.is_ok() ? 0 : 1;
        ++stats.per_context[k];
      }
      r.result.set_value(std::move(out));
    }
  }
};

Result<std::unique_ptr<Pipeline>> Pipeline::create(std::shared_ptr<const Engine> engine,
                                                   const PipelineOptions& options) {
  if (!engine) return invalid_argument("Pipeline: no engine");
  if (options.contexts < 1 || options.contexts > 256)
    return invalid_argument("Pipeline: contexts must be 1 to 256, not " +
                            std::to_string(options.contexts));
  if (options.max_queued < 1) return invalid_argument("Pipeline: max_queued must be at least 1");
  auto impl = std::make_unique<Impl>();
  impl->engine = std::move(engine);
  impl->options = options;
  impl->stats.per_context.assign(static_cast<size_t>(options.contexts), 0);
  for (int k = 0; k < options.contexts; ++k)
    impl->contexts.push_back(impl->engine->create_context());
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

int Pipeline::contexts() const { return static_cast<int>(impl_->contexts.size()); }

}  // namespace kiln
