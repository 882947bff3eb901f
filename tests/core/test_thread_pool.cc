// ThreadPool: every index of every job runs exactly once, with or without workers, over many
// jobs in a row (workers rejoin each new job), and the pool's threads are the ones it started.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace kiln {
namespace {

TEST(ThreadPool, EveryIndexRunsOnceInEveryJob) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    ThreadPool pool(workers);
    EXPECT_EQ(pool.workers(), workers);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{64}}) {
      for (int job = 0; job < 50; ++job) {
        std::vector<std::atomic<int>> hits(n);
        auto fn = [&](size_t i) { hits[i].fetch_add(1); };
        pool.parallel_for(n, fn);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
      }
    }
  }
}

TEST(ThreadPool, WorkersShareTheJob) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each index waits a little, so the workers take some of them.
  auto fn = [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  };
  pool.parallel_for(32, fn);
  EXPECT_GT(ids.size(), 1u);
  EXPECT_LE(ids.size(), 4u);
}

}  // namespace
}  // namespace kiln
