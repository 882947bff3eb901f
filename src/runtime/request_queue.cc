#include "runtime/request_queue.h"

#include <algorithm>

namespace kiln {

RequestQueue::RequestQueue(std::vector<Runner> runners, size_t max_queued, OnDone on_done)
    : runners_(std::move(runners)),
      max_queued_(max_queued),
      on_done_(std::move(on_done)),
      retired_(runners_.size()),
      live_(runners_.size()) {
  for (size_t k = 0; k < runners_.size(); ++k) workers_.emplace_back([this, k] { work(k); });
}

RequestQueue::~RequestQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  has_work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool RequestQueue::group_failed(int group) const { return failed_groups_.count(group) > 0; }

void RequestQueue::work(size_t k) {
  const int group = runners_[k].group;
  for (;;) {
    Request r;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_work_.wait(lock, [&] { return stopping_ || !queue_.empty() || group_failed(group); });
      if (group_failed(group) || queue_.empty()) {
        // Retired (another runner of this device failed), or stopping with nothing left.
        if (group_failed(group) && retired_[k].empty()) {
          retired_[k] = failed_groups_[group];
          --live_;
        }
        break;  // below: the queue goes to the runners left
      }
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    has_room_.notify_one();
    Result<Outputs> out = runners_[k].run(r.inputs);
    const bool device_failed = !out.is_ok() && out.status().code() == StatusCode::kUnavailable;
    if (device_failed) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!group_failed(group)) failed_groups_[group] = out.status().message();
    }
    if (on_done_) on_done_(k, out);
    if (r.on_ran) r.on_ran(k, out);
    r.result.set_value(std::move(out));
    if (device_failed) has_work_.notify_all();  // the group's idle runners retire too
  }
  // A runner that retired may have been the one woken for a request: wake the others. The
  // last runner to go fails what is left, and submit() fails from now on.
  has_work_.notify_all();
  std::deque<Request> orphans;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_ > 0 || !all_failed_.is_ok()) return;
    std::string why;
    for (const auto& [g, message] : failed_groups_) why += (why.empty() ? "" : "; ") + message;
    if (why.empty()) return;  // stopping normally
    all_failed_ = unavailable("every device of the Pipeline has failed: " + why);
    orphans.swap(queue_);
  }
  has_room_.notify_all();
  for (Request& r : orphans) fail_unrun(r, all_failed_);
}

void RequestQueue::fail_unrun(Request& r, const Status& why) {
  Result<Outputs> out(why);
  if (on_done_) on_done_(runners_.size(), out);
  r.result.set_value(std::move(out));
}

RequestQueue::Queued RequestQueue::enqueue(Request r, std::unique_lock<std::mutex>& lock) {
  Queued q;
  q.id = r.id = next_id_++;
  q.result = r.result.get_future();
  if (all_failed_.is_ok()) {
    queue_.push_back(std::move(r));
    lock.unlock();
    has_work_.notify_one();
    return q;
  }
  const Status why = all_failed_;
  lock.unlock();
  fail_unrun(r, why);
  return q;
}

RequestQueue::Queued RequestQueue::submit(Outputs inputs, OnRan on_ran) {
  Request r;
  r.inputs = std::move(inputs);
  r.on_ran = std::move(on_ran);
  std::unique_lock<std::mutex> lock(mu_);
  has_room_.wait(lock, [&] { return queue_.size() < max_queued_ || !all_failed_.is_ok(); });
  return enqueue(std::move(r), lock);
}

Result<RequestQueue::Queued> RequestQueue::try_submit(Outputs inputs) {
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.size() >= max_queued_ && all_failed_.is_ok())
    return unavailable("the queue is full (" + std::to_string(max_queued_) +
                       " requests waiting): try again later");
  Request r;
  r.inputs = std::move(inputs);
  return enqueue(std::move(r), lock);
}

bool RequestQueue::cancel(uint64_t id) {
  Request r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it =
        std::find_if(queue_.begin(), queue_.end(), [&](const Request& q) { return q.id == id; });
    if (it == queue_.end()) return false;
    r = std::move(*it);
    queue_.erase(it);
  }
  has_room_.notify_one();
  fail_unrun(r, cancelled("request " + std::to_string(id) + " was cancelled before it ran"));
  return true;
}

std::vector<std::string> RequestQueue::retired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retired_;
}

}  // namespace kiln
