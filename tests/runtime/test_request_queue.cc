// RequestQueue (the Pipeline's scheduling): a device that fails retires its runners and no
// one else's; every request gets its own result exactly once; once every device has failed,
// nothing waits, and later requests fail at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/request_queue.h"

namespace kiln {
namespace {

Outputs request(int id) { return {{"id", Tensor::from_floats({1}, {static_cast<float>(id)})}}; }
int id_of(const Outputs& o) { return static_cast<int>(o.at("id").to_floats()[0]); }

// A runner that echoes its request (after a short pause, so the runners share the work), or,
// once `broken` is set, fails as a GPU that faulted does. `after` > 0: it sets `broken`
// itself on its device's `after`-th run.
RequestQueue::Runner runner(int group, std::atomic<bool>* broken, std::atomic<int>* runs,
                            int after) {
  return {[=](const Outputs& in) -> Result<Outputs> {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            if (after > 0 && runs->fetch_add(1) + 1 == after) broken->store(true);
            if (broken && broken->load())
              return unavailable("cudaGraphLaunch: CUDA error cudaErrorIllegalAddress");
            return in;
          },
          group};
}

TEST(RequestQueue, AFailedDeviceRetiresItsRunnersAndTheOthersFinishTheQueue) {
  std::atomic<bool> broken{false}, never{false};
  std::atomic<int> runs{0}, unused{0};
  std::vector<RequestQueue::Runner> runners = {
      runner(0, &broken, &runs, 5), runner(0, &broken, &runs, 5),  // GPU 0 faults on run 5
      runner(1, &never, &unused, 0), runner(1, &never, &unused, 0)};
  std::atomic<int> done{0}, unrun{0};
  RequestQueue q(std::move(runners), 8, [&](size_t k, const Result<Outputs>&) {
    ++done;
    if (k == 4) ++unrun;
  });
  constexpr int kRequests = 300;
  std::vector<std::future<Result<Outputs>>> f;
  for (int i = 0; i < kRequests; ++i) f.push_back(q.submit(request(i)).result);
  int ok = 0, failed = 0;
  for (int i = 0; i < kRequests; ++i) {
    Result<Outputs> r = f[i].get();
    if (r.is_ok()) {
      EXPECT_EQ(id_of(*r), i) << "each request gets its own result";
      ++ok;
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
      EXPECT_NE(r.status().message().find("cudaErrorIllegalAddress"), std::string::npos);
      ++failed;
    }
  }
  // The run that found the fault, and at most one other of GPU 0's in flight with it.
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 2);
  EXPECT_EQ(ok + failed, kRequests);
  EXPECT_EQ(done.load(), kRequests);
  EXPECT_EQ(unrun.load(), 0);
  // Run 5 faults; the other runner's run in flight may still pass, and its next one fails.
  EXPECT_LE(runs.load(), 7) << "GPU 0 took no request after its fault was seen";
  const std::vector<std::string> retired = q.retired();
  ASSERT_EQ(retired.size(), 4u);
  EXPECT_NE(retired[0].find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_NE(retired[1].find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_TRUE(retired[2].empty());
  EXPECT_TRUE(retired[3].empty());
  // The queue still serves.
  Result<Outputs> later = q.submit(request(7)).result.get();
  ASSERT_TRUE(later.is_ok()) << later.status().to_string();
  EXPECT_EQ(id_of(*later), 7);
}

TEST(RequestQueue, OnceEveryDeviceFailedNothingWaits) {
  std::atomic<bool> broken{false};
  std::atomic<int> runs{0};
  std::vector<RequestQueue::Runner> runners = {runner(0, &broken, &runs, 3),
                                               runner(0, &broken, &runs, 3)};
  std::atomic<int> done{0};
  RequestQueue q(std::move(runners), 2, [&](size_t, const Result<Outputs>&) { ++done; });
  // Submitters blocked on the full queue (2 waiting at most) are let go when the last device
  // fails; every request gets an answer.
  constexpr int kThreads = 3, kPerThread = 40;
  std::vector<std::vector<std::future<Result<Outputs>>>> f(kThreads);
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t)
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) f[t].push_back(q.submit(request(t * 100 + i)).result);
    });
  for (std::thread& s : submitters) s.join();
  int ok = 0, failed = 0;
  for (auto& per_thread : f)
    for (auto& fut : per_thread) {
      ASSERT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready);
      Result<Outputs> r = fut.get();
      if (r.is_ok()) {
        ++ok;
        continue;
      }
      ++failed;
      EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    }
  // Runs 1 and 2, and the other runner's run in flight with run 3 (the fault) may pass.
  EXPECT_GE(ok, 2);
  EXPECT_LE(ok, 3);
  EXPECT_EQ(ok + failed, kThreads * kPerThread);
  EXPECT_EQ(done.load(), kThreads * kPerThread);
  Result<Outputs> later = q.submit(request(1)).result.get();
  ASSERT_FALSE(later.is_ok());
  EXPECT_EQ(later.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(later.status().message().find("every device of the Pipeline has failed"),
            std::string::npos)
      << later.status().to_string();
  EXPECT_NE(later.status().message().find("cudaErrorIllegalAddress"), std::string::npos);
}

// Other errors (a bad request) retire nothing.
TEST(RequestQueue, ARequestErrorRetiresNothing) {
  std::vector<RequestQueue::Runner> runners = {{[](const Outputs& in) -> Result<Outputs> {
                                                  if (id_of(in) % 3 == 0)
                                                    return invalid_argument("bad request");
                                                  return in;
                                                },
                                                0}};
  RequestQueue q(std::move(runners), 4, nullptr);
  std::vector<std::future<Result<Outputs>>> f;
  for (int i = 0; i < 30; ++i) f.push_back(q.submit(request(i)).result);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(f[i].get().is_ok(), i % 3 != 0) << i;
  EXPECT_TRUE(q.retired()[0].empty());
}

// A full queue refuses try_submit at once, with kUnavailable, and queues nothing; a request
// still waiting can be cancelled (kCancelled), one running cannot; nothing admitted is lost.
TEST(RequestQueue, TrySubmitRefusesAtOnceWhenFullAndQueuedWorkCanBeCancelled) {
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  std::atomic<int> started{0};
  std::vector<RequestQueue::Runner> runners = {{[&](const Outputs& in) -> Result<Outputs> {
                                                  ++started;
                                                  std::unique_lock<std::mutex> lock(gate_mu);
                                                  gate_cv.wait(lock, [&] { return open; });
                                                  return in;
                                                },
                                                0}};
  std::atomic<int> done{0}, cancelled_seen{0};
  RequestQueue q(std::move(runners), 3, [&](size_t, const Result<Outputs>& r) {
    ++done;
    if (!r.is_ok() && r.status().code() == StatusCode::kCancelled) ++cancelled_seen;
  });
  // The runner takes request 0 and holds it; 1, 2 and 3 fill the queue.
  auto first = q.try_submit(request(0));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<RequestQueue::Queued> admitted;
  for (int i = 1; i <= 3; ++i) {
    auto r = q.try_submit(request(i));
    ASSERT_TRUE(r.is_ok()) << i << ": " << r.status().to_string();
    admitted.push_back(std::move(*r));
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto refused = q.try_submit(request(4));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("queue is full"), std::string::npos)
      << refused.status().to_string();
  EXPECT_LT(waited, 5.0) << "try_submit must not wait for room";
  // Request 2 is waiting: cancelled, and its room goes to the next.
  EXPECT_TRUE(q.cancel(admitted[1].id));
  EXPECT_FALSE(q.cancel(admitted[1].id)) << "a request is cancelled once";
  EXPECT_FALSE(q.cancel(first->id)) << "the running request runs to its end";
  EXPECT_FALSE(q.cancel(12345)) << "an unknown id";
  Result<Outputs> c = admitted[1].result.get();
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCancelled) << c.status().to_string();
  auto more = q.try_submit(request(5));
  ASSERT_TRUE(more.is_ok()) << more.status().to_string();
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  Result<Outputs> r0 = first->result.get();
  ASSERT_TRUE(r0.is_ok());
  EXPECT_EQ(id_of(*r0), 0);
  for (int k : {0, 2}) {
    Result<Outputs> r = admitted[k].result.get();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(id_of(*r), k + 1);
  }
  Result<Outputs> r5 = more->result.get();
  ASSERT_TRUE(r5.is_ok());
  EXPECT_EQ(id_of(*r5), 5);
  EXPECT_EQ(done.load(), 5);  // 0, 1, 3 and 5 ran; 2 was cancelled; 4 was never admitted
  EXPECT_EQ(cancelled_seen.load(), 1);
}

}  // namespace
}  // namespace kiln
