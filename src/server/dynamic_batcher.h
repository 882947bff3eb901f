// The dynamic batcher of one model: requests queue up, and each instance (a Context of the
// model's Pipeline) takes a batch from the queue when it is free.
//
//   DynamicBatcher b(options, [&](Outputs batch) { return pipeline->submit(batch).get(); });
//   auto admitted = b.submit(std::move(request));        // refused at once when full
//   Result<Outputs> outputs = admitted->result.get();
//
// Forming a batch (when an instance is free):
//   - requests of the same shapes (batch_key) join in queue order, highest priority first,
//     counting their rows, up to max_batch_size; a request never splits;
//   - a batch of max_batch_size rows goes at once, and so does one of a preferred size (the
//     largest that the queued requests fill exactly); any other waits for more requests until
//     its oldest request has waited max_queue_delay, then goes with what there is;
//   - the batch is padded with zero rows up to the smallest declared size that holds it
//     (batch_sizes(): the preferred sizes, else the powers of two, and max_batch_size), so that
//     only the plans built at load ever run.
// Each request gets its own rows of the outputs (views of the batch's), exactly once: its result,
// or an error that names what was wrong. With preserve_ordering, results are given in the order
// the requests were admitted.
//
// Request controls: a priority level (1 is the highest; 0 takes the default), a queue timeout
// (the level's policy: its default, or the request's own where overrides are allowed; REJECT
// fails a request still queued at its deadline with kUnavailable, DELAY lets it wait on), and
// max_queue_size per level (submit refuses at once, kUnavailable "Exceeds maximum queue size").
// cancel() takes a queued request out (a client that went away). drain() stops admitting,
// runs everything admitted, and returns when the last result is given.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/pipeline.h"
#include "server/batch_rows.h"

namespace kiln::server {

struct QueuePolicy {
  enum class TimeoutAction { kReject, kDelay };
  TimeoutAction timeout_action = TimeoutAction::kReject;
  uint64_t default_timeout_us = 0;  // 0: no timeout
  bool allow_timeout_override = false;
  uint32_t max_queue_size = 0;  // requests waiting at this level; 0: no bound
};

struct BatcherOptions {
  int64_t max_batch_size = 0;                  // rows; 0: each request runs alone, unpadded
  std::vector<int64_t> preferred_batch_sizes;  // rows
  uint64_t max_queue_delay_us = 0;
  bool preserve_ordering = false;
  uint32_t priority_levels = 0;         // 0 or 1: one level
  uint32_t default_priority_level = 0;  // the level of a request that names none (0: 1)
  QueuePolicy default_policy;
  std::map<uint32_t, QueuePolicy> priority_policies;  // per level, where not the default
  int instances = 1;                                  // batches running at once
  // false: each batch is one request (its rows, padded), as without dynamic_batching.
  bool join_requests = true;
  // Batches joined in pinned host memory (JoinBuffers::pinned), for a CUDA engine to copy by
  // DMA without its staging copy.
  bool pinned_join = false;
};

// The sizes a batch is padded to, ascending: the preferred sizes (and max_batch_size), else the
// powers of two below max_batch_size and max_batch_size itself. Empty where max_batch_size is 0.
std::vector<int64_t> batch_sizes(const BatcherOptions& o);

// What a request's result says of how it ran (for statistics and metrics).
struct RequestTiming {
  double queue_us = 0;      // admitted → its batch started
  double compute_us = 0;    // its batch's run, all of it (gather_us and device included)
  double gather_us = 0;     // of compute_us: joining the batch's rows on the host
  DeviceTiming device;      // of compute_us: the batch's copies, compute and order wait
  int64_t batch_rows = 0;   // the batch it ran in, before padding
  int64_t padded_rows = 0;  // and after
};

// Where set, a request's result goes to this callback (on a batcher thread, never under its
// lock) instead of the future: a protocol that answers asynchronously holds no thread per
// request.
using ResultCallback = std::function<void(Result<Outputs> result, const RequestTiming& timing)>;

// A request as queued: its inputs, rows first, and its controls.
struct BatchRequest {
  Outputs inputs;
  uint32_t priority = 0;    // 0: the default level
  uint64_t timeout_us = 0;  // 0: the level's default
  ResultCallback on_result;
};

struct BatcherStats {
  int64_t admitted = 0, refused = 0, completed = 0, failed = 0, cancelled = 0, timed_out = 0;
  int64_t batches = 0, rows = 0, padded_rows = 0;
  std::map<int64_t, int64_t> batch_rows_histogram;  // batch size (rows, before padding) → count
  int64_t queued = 0;                               // waiting now
};

// Runs one batch (the instance's Context, through the Pipeline) and returns its outputs; it may
// fill `timing` with the run's device timing.
using RunBatch = std::function<Result<Outputs>(const Outputs& batch, DeviceTiming* timing)>;

class DynamicBatcher {
 public:
  struct Admitted {
    uint64_t id = 0;
    std::future<Result<Outputs>> result;    // invalid where the request has on_result
    std::shared_ptr<RequestTiming> timing;  // filled before the result is given
  };

  DynamicBatcher(BatcherOptions options, RunBatch run);
  ~DynamicBatcher();  // drains
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Admits a request, or refuses it at once: kInvalidArgument for inputs that cannot batch
  // (rows over max_batch_size, no batch dimension, an unknown priority), kUnavailable where its
  // level's queue is full or the batcher drains.
  Result<Admitted> submit(BatchRequest request);
  // Takes a request still queued out of the queue: its result becomes kCancelled (true). One
  // already running, or an unknown id: false.
  bool cancel(uint64_t id);
  // Stops admitting, finishes every admitted request, and joins the instances.
  void drain();
  BatcherStats stats() const;
  const BatcherOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending;
  struct Batch;

  void instance_loop();
  // Under the lock: the batch to run now, or none (then *wake is when to look again).
  bool take_batch(Batch* batch, Clock::time_point* wake);
  std::vector<size_t> pick(const std::deque<std::shared_ptr<Pending>>& q, int64_t* rows) const;
  int64_t trim_to_preferred(const std::deque<std::shared_ptr<Pending>>& q,
                            std::vector<size_t>* picked) const;
  void expire(Clock::time_point now);
  void run_batch(Batch& batch, JoinBuffers& buffers);
  void finish(const std::shared_ptr<Pending>& p, Result<Outputs> result);
  void deliver_in_order();
  // Gives the results made ready under the lock: unlocks, sets them, locks again.
  void give_ready(std::unique_lock<std::mutex>& lock);
  uint32_t level_of(uint32_t priority) const;
  const QueuePolicy& policy(uint32_t level) const;

  BatcherOptions options_;
  RunBatch run_;
  std::vector<int64_t> sizes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::deque<std::shared_ptr<Pending>>> queues_;  // by level, 1 first
  std::map<uint64_t, std::shared_ptr<Pending>> held_;  // preserve_ordering: done, not given
  std::vector<std::shared_ptr<Pending>> ready_;        // done, in order, to be given
  uint64_t next_id_ = 1, next_to_deliver_ = 1;
  bool draining_ = false;
  bool giving_ = false;  // a thread is giving ready_ (one at a time, so that order holds)
  int running_ = 0;
  BatcherStats stats_;
  std::vector<std::thread> instances_;
};

}  // namespace kiln::server
