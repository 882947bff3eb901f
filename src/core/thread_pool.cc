#include "core/thread_pool.h"

namespace kiln {

ThreadPool::ThreadPool(int workers) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < n_) {
    const size_t i = next_++;
    void (*call)(void*, size_t) = call_;
    void* fn = fn_;
    lock.unlock();
    call(fn, i);
    lock.lock();
    if (++finished_ == n_) done_.notify_all();
  }
}

void ThreadPool::work() {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void ThreadPool::run(size_t n, void (*call)(void*, size_t), void* fn) {
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    call_ = call;
    fn_ = fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == n_; });
}

}  // namespace kiln
