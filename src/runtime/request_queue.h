// RequestQueue: the Pipeline's scheduling, apart from what runs a request. One worker thread per
// runner takes requests from one FIFO queue; each request gets its own result exactly once.
//
// Runners are grouped by device (a GPU's Contexts share a group). A runner that returns
// StatusCode::kUnavailable (its device failed) fails that request and retires its whole group:
// the group's other workers stop taking requests, and the others go on with the queue. Once
// every group has failed, the queued requests and any submitted later fail at once, naming
// the last failure; nothing waits forever.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

using Outputs = std::map<std::string, Tensor>;

class RequestQueue {
 public:
  struct Runner {
    std::function<Result<Outputs>(const Outputs&)> run;
    int group = 0;  // runners of one device share a group
  };
  // Called for every result before it is given (so that whoever holds a result sees it
  // counted): k is the runner that ran it, or runners.size() for a request failed unrun since
  // every device had failed.
  using OnDone = std::function<void(size_t k, const Result<Outputs>&)>;

  RequestQueue(std::vector<Runner> runners, size_t max_queued, OnDone on_done);
  // Finishes every request already submitted.
  ~RequestQueue();
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // A request queued: its id (for cancel) and its result to come.
  struct Queued {
    uint64_t id = 0;
    std::future<Result<Outputs>> result;
  };
  // Called on the runner's thread after a request ran, after on_done and before its result is
  // given, with the runner k that ran it and the result (not for a request failed unrun).
  using OnRan = std::function<void(size_t k, const Result<Outputs>& out)>;
  // Blocks while max_queued requests wait.
  Queued submit(Outputs inputs, OnRan on_ran = nullptr);
  // Returns at once: kUnavailable when max_queued requests wait (nothing is queued then).
  Result<Queued> try_submit(Outputs inputs);
  // A request still waiting in the queue is taken out and its result becomes kCancelled
  // (true); one a runner took already, or that has finished, runs to its end (false).
  bool cancel(uint64_t id);
  // Per runner: the device failure that retired it, empty while it runs.
  std::vector<std::string> retired() const;

 private:
  struct Request {
    uint64_t id = 0;
    Outputs inputs;
    OnRan on_ran;
    std::promise<Result<Outputs>> result;
  };
  void work(size_t k);
  // Queues `r` (under the lock held by `lock`) and wakes a runner; with no runner left, fails it.
  Queued enqueue(Request r, std::unique_lock<std::mutex>& lock);
  // Gives `r` the result `out`, counted through on_done_ as unrun.
  void fail_unrun(Request& r, const Status& why);
  bool group_failed(int group) const;  // under mu_

  std::vector<Runner> runners_;
  size_t max_queued_;
  OnDone on_done_;
  mutable std::mutex mu_;
  std::condition_variable has_work_, has_room_;
  std::deque<Request> queue_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::map<int, std::string> failed_groups_;  // group -> its failure
  std::vector<std::string> retired_;
  size_t live_;        // runners not retired
  Status all_failed_;  // once no runner is left
  std::vector<std::thread> workers_;
};

}  // namespace kiln
