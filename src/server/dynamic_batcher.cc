#include "server/dynamic_batcher.h"

#include <algorithm>

#include "server/batch_rows.h"

namespace kiln::server {

std::vector<int64_t> batch_sizes(const BatcherOptions& o) {
  if (o.max_batch_size <= 0) return {};
  std::vector<int64_t> sizes;
  for (int64_t s : o.preferred_batch_sizes)
    if (s > 0 && s <= o.max_batch_size) sizes.push_back(s);
  if (sizes.empty())
    for (int64_t s = 1; s < o.max_batch_size; s *= 2) sizes.push_back(s);
  sizes.push_back(o.max_batch_size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

struct DynamicBatcher::Pending {
  uint64_t id = 0;
  uint32_t level = 1;
  Outputs inputs;
  int64_t rows = 0;
  std::string key;
  Clock::time_point admitted, deadline = Clock::time_point::max();
  bool delayed = false;  // a DELAY timeout passed: it waits behind the others
  std::promise<Result<Outputs>> promise;
  ResultCallback on_result;
  std::shared_ptr<RequestTiming> timing = std::make_shared<RequestTiming>();
  Result<Outputs> result = internal_error("no result");
};

struct DynamicBatcher::Batch {
  std::vector<std::shared_ptr<Pending>> requests;
  int64_t rows = 0, padded = 0;
};

DynamicBatcher::DynamicBatcher(BatcherOptions options, RunBatch run)
    : options_(std::move(options)), run_(std::move(run)), sizes_(batch_sizes(options_)) {
  for (uint32_t level = 1; level <= std::max<uint32_t>(1, options_.priority_levels); ++level)
    queues_[level];
  for (int i = 0; i < std::max(1, options_.instances); ++i)
    instances_.emplace_back([this] { instance_loop(); });
}

DynamicBatcher::~DynamicBatcher() { drain(); }

uint32_t DynamicBatcher::level_of(uint32_t priority) const {
  if (priority != 0) return priority;
  return options_.default_priority_level != 0 ? options_.default_priority_level : 1;
}

const QueuePolicy& DynamicBatcher::policy(uint32_t level) const {
  auto it = options_.priority_policies.find(level);
  return it != options_.priority_policies.end() ? it->second : options_.default_policy;
}

Result<DynamicBatcher::Admitted> DynamicBatcher::submit(BatchRequest request) {
  auto p = std::make_shared<Pending>();
  p->level = level_of(request.priority);
  if (!queues_.count(p->level))
    return invalid_argument("priority " + std::to_string(request.priority) +
                            " is not one of the model's levels 1.." +
                            std::to_string(queues_.size()));
  if (options_.max_batch_size > 0) {
    KILN_ASSIGN_OR_RETURN(p->rows, rows_of(request.inputs));
    if (p->rows < 1 || p->rows > options_.max_batch_size)
      return invalid_argument("a request of " + std::to_string(p->rows) +
                              " rows: the model takes 1 to max_batch_size " +
                              std::to_string(options_.max_batch_size));
    p->key = batch_key(request.inputs);
  }
  const QueuePolicy& pol = policy(p->level);
  uint64_t timeout = pol.default_timeout_us;
  if (request.timeout_us != 0 && pol.allow_timeout_override) timeout = request.timeout_us;
  p->inputs = std::move(request.inputs);
  p->on_result = std::move(request.on_result);
  p->admitted = Clock::now();
  if (timeout != 0) p->deadline = p->admitted + std::chrono::microseconds(timeout);
  Admitted a;
  if (!p->on_result) a.result = p->promise.get_future();
  a.timing = p->timing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& q = queues_[p->level];
    if (draining_) {
      ++stats_.refused;
      return unavailable("the server is shutting down");
    }
    if (pol.max_queue_size != 0 && q.size() >= pol.max_queue_size) {
      ++stats_.refused;
      return unavailable("Exceeds maximum queue size");
    }
    a.id = p->id = next_id_++;
    q.push_back(std::move(p));
    ++stats_.admitted;
    ++stats_.queued;
  }
  cv_.notify_all();
  return a;
}

bool DynamicBatcher::cancel(uint64_t id) {
  std::shared_ptr<Pending> found;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [level, q] : queues_) {
      auto it = std::find_if(q.begin(), q.end(), [id](const auto& p) { return p->id == id; });
      if (it == q.end()) continue;
      found = *it;
      q.erase(it);
      --stats_.queued;
      ++stats_.cancelled;
      break;
    }
    if (!found) return false;
    finish(found, cancelled("request " + std::to_string(id) + " was cancelled while queued"));
    deliver_in_order();
    give_ready(lock);
  }
  cv_.notify_all();
  return true;
}

// Under the lock: a REJECT deadline that passed fails the request; a DELAY one sends it to the
// back of its level, once.
void DynamicBatcher::expire(Clock::time_point now) {
  for (auto& [level, q] : queues_) {
    const QueuePolicy& pol = policy(level);
    std::deque<std::shared_ptr<Pending>> kept, delayed;
    for (auto& p : q) {
      if (p->deadline > now || p->delayed) {
        kept.push_back(std::move(p));
      } else if (pol.timeout_action == QueuePolicy::TimeoutAction::kDelay) {
        p->delayed = true;
        delayed.push_back(std::move(p));
      } else {
        --stats_.queued;
        ++stats_.timed_out;
        finish(p, unavailable("Request timeout expired after waiting in the queue"));
      }
    }
    for (auto& p : delayed) kept.push_back(std::move(p));
    q = std::move(kept);
  }
}

// The head request of `q` and the later ones of its shapes, in order, up to max_batch_size rows
// (the head alone where the model does not batch).
std::vector<size_t> DynamicBatcher::pick(const std::deque<std::shared_ptr<Pending>>& q,
                                         int64_t* rows) const {
  std::vector<size_t> picked;
  *rows = 0;
  if (options_.max_batch_size == 0) {
    *rows = 1;
    return {0};
  }
  if (!options_.join_requests) {
    *rows = q.front()->rows;
    return {0};
  }
  for (size_t i = 0; i < q.size() && *rows < options_.max_batch_size; ++i) {
    if (q[i]->key != q.front()->key || *rows + q[i]->rows > options_.max_batch_size) continue;
    picked.push_back(i);
    *rows += q[i]->rows;
  }
  return picked;
}

// The largest preferred size the picked requests fill exactly, keeping them in order (0: none).
int64_t DynamicBatcher::trim_to_preferred(const std::deque<std::shared_ptr<Pending>>& q,
                                          std::vector<size_t>* picked) const {
  std::vector<int64_t> preferred = options_.preferred_batch_sizes;
  std::sort(preferred.rbegin(), preferred.rend());
  for (int64_t target : preferred) {
    std::vector<size_t> kept;
    int64_t rows = 0;
    for (size_t i : *picked)
      if (rows + q[i]->rows <= target) {
        kept.push_back(i);
        rows += q[i]->rows;
      }
    if (rows == target) {
      *picked = std::move(kept);
      return target;
    }
  }
  return 0;
}

bool DynamicBatcher::take_batch(Batch* batch, Clock::time_point* wake) {
  const Clock::time_point now = Clock::now();
  expire(now);
  deliver_in_order();
  *wake = Clock::time_point::max();
  for (auto& [level, q] : queues_) {
    if (q.empty()) continue;
    int64_t rows = 0;
    std::vector<size_t> picked = pick(q, &rows);
    // A full batch, or a preferred size, goes at once; else the oldest waits out its delay.
    const auto due = q.front()->admitted + std::chrono::microseconds(options_.max_queue_delay_us);
    if (options_.join_requests && options_.max_batch_size > 0 && rows < options_.max_batch_size) {
      const int64_t preferred = trim_to_preferred(q, &picked);
      if (preferred > 0) {
        rows = preferred;
      } else if (now < due && !draining_) {
        *wake = due;
        for (const auto& p : q)
          if (!p->delayed) *wake = std::min(*wake, p->deadline);
        return false;  // a lower level waits behind a higher one
      }
    }
    for (size_t k = picked.size(); k-- > 0;) {
      batch->requests.insert(batch->requests.begin(), q[picked[k]]);
      q.erase(q.begin() + static_cast<std::ptrdiff_t>(picked[k]));
    }
    batch->rows = rows;
    batch->padded = rows;
    for (int64_t size : sizes_)
      if (size >= rows) {
        batch->padded = size;
        break;
      }
    stats_.queued -= static_cast<int64_t>(picked.size());
    return true;
  }
  return false;
}

void DynamicBatcher::instance_loop() {
  JoinBuffers buffers;  // this instance's, reused by each of its batches
  buffers.pinned = options_.pinned_join;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Batch batch;
    Clock::time_point wake;
    const bool took = take_batch(&batch, &wake);
    if (took) ++running_;
    // Requests that timed out while queued: given here, unless another thread is giving (it
    // gives these too, and wakes this one when done).
    if (!ready_.empty() && !giving_) {
      give_ready(lock);
      if (!took) continue;  // the queue may have changed while unlocked
    }
    if (took) {
      lock.unlock();
      run_batch(batch, buffers);
      lock.lock();
      --running_;
      deliver_in_order();
      give_ready(lock);
      cv_.notify_all();
      continue;
    }
    // Done when nothing is queued and no other thread still gives results (see give_ready).
    if (draining_ && stats_.queued == 0 && ready_.empty() && !giving_) return;
    if (wake == Clock::time_point::max())
      cv_.wait(lock);
    else
      cv_.wait_until(lock, wake);
  }
}

void DynamicBatcher::run_batch(Batch& batch, JoinBuffers& buffers) {
  using us = std::chrono::duration<double, std::micro>;
  const Clock::time_point start = Clock::now();
  Result<Outputs> out = internal_error("not run");
  DeviceTiming device;
  double gather_us = 0;
  if (options_.max_batch_size == 0) {
    out = run_(batch.requests.front()->inputs, &device);
  } else {
    std::vector<const Outputs*> parts;
    for (const auto& p : batch.requests) parts.push_back(&p->inputs);
    Outputs joined = join_rows(parts, batch.padded, &buffers);
    gather_us = us(Clock::now() - start).count();
    out = run_(joined, &device);
    if (out.is_ok()) keep_outputs_apart(buffers, *out);
  }
  const double compute_us = us(Clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.batches;
  stats_.rows += batch.rows;
  stats_.padded_rows += batch.padded;
  ++stats_.batch_rows_histogram[batch.rows];
  int64_t first = 0;
  for (const auto& p : batch.requests) {
    p->timing->queue_us = std::chrono::duration<double, std::micro>(start - p->admitted).count();
    p->timing->compute_us = compute_us;
    p->timing->gather_us = gather_us;
    p->timing->device = device;
    p->timing->batch_rows = batch.rows;
    p->timing->padded_rows = batch.padded;
    if (!out.is_ok())
      finish(p, out.status());
    else if (options_.max_batch_size == 0)
      finish(p, *out);
    else
      finish(p, rows_of_outputs(*out, batch.padded, first, p->rows));
    first += p->rows;
  }
}

// Under the lock: records the result; deliver_in_order gives it.
void DynamicBatcher::finish(const std::shared_ptr<Pending>& p, Result<Outputs> result) {
  ++stats_.completed;
  if (!result.is_ok()) ++stats_.failed;
  p->result = std::move(result);
  if (options_.preserve_ordering)
    held_[p->id] = p;
  else
    ready_.push_back(p);
}

// Under the lock: with preserve_ordering, gives the results whose turn has come.
void DynamicBatcher::deliver_in_order() {
  if (!options_.preserve_ordering) return;
  for (auto it = held_.find(next_to_deliver_); it != held_.end();
       it = held_.find(next_to_deliver_)) {
    ready_.push_back(std::move(it->second));
    held_.erase(it);
    ++next_to_deliver_;
  }
}

void DynamicBatcher::give_ready(std::unique_lock<std::mutex>& lock) {
  if (giving_) return;  // the thread giving now gives these too, in order
  giving_ = true;
  while (!ready_.empty()) {
    std::vector<std::shared_ptr<Pending>> given;
    given.swap(ready_);
    lock.unlock();
    for (const auto& p : given)
      if (p->on_result)
        p->on_result(std::move(p->result), *p->timing);
      else
        p->promise.set_value(std::move(p->result));
    lock.lock();
  }
  giving_ = false;
  cv_.notify_all();
}

void DynamicBatcher::drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : instances_)
    if (t.joinable()) t.join();
}

BatcherStats DynamicBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace kiln::server
