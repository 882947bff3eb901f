// A fixed set of worker threads for host work the runtime splits (staging copies of large
// inputs): started once by their owner, never per run. One caller at a time (the owning
// Context's thread); the caller works too.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  // `workers` threads besides the caller (0: the caller does everything).
  explicit ThreadPool(int workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }

  // Runs fn(i) for every i in [0, n) on the workers and the calling thread, and returns when
  // all have run. `fn` must not throw. Nothing is allocated.
  template <class F>
  void parallel_for(size_t n, F& fn) {
    run(
        n, [](void* f, size_t i) { (*static_cast<F*>(f))(i); }, &fn);
  }

 private:
  void run(size_t n, void (*call)(void*, size_t), void* fn);
  void work();
  // Takes and runs indices of the current job until none is left.
  void drain();

  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  size_t generation_ = 0;  // one per job, so a worker joins each job once
  // The current job.
  void (*call_)(void*, size_t) = nullptr;
  void* fn_ = nullptr;
  size_t n_ = 0, next_ = 0, finished_ = 0;
};

}  // namespace kiln
