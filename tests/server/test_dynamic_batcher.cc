// The dynamic batcher (src/server/dynamic_batcher.h) with a model of its own: each batch's
// outputs are its inputs times two plus the batch's row (so a request given another's rows is
// caught), and a gate that holds the instance where a test needs the queue to fill first.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "server/batch_rows.h"
#include "server/dynamic_batcher.h"

namespace kiln::server {
namespace {

using namespace std::chrono_literals;

// A request of `rows` rows of 3 floats: row r of request `id` holds id * 1000 + r + k / 10.
Outputs request_of(int id, int64_t rows) {
  std::vector<float> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int k = 0; k < 3; ++k) v.push_back(id * 1000.f + r + k / 10.f);
  return {{"x", Tensor::from_floats({rows, 3}, v)}};
}

// y = 2x for the rows; the batch's padding rows (zeros) must come out as zeros too.
Tensor doubled(const Tensor& x) {
  std::vector<float> v = x.to_floats();
  for (float& f : v) f *= 2;
  return Tensor::from_floats(x.shape(), v);
}

class FakeModel {
 public:
  // Holds every batch until release() where `hold` is set.
  explicit FakeModel(bool hold = false) : held_(hold) {}
  RunBatch run() {
    return [this](const Outputs& batch, DeviceTiming*) -> Result<Outputs> {
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++started_;
        cv_.notify_all();
        cv_.wait(lock, [&] { return !held_; });
        sizes_.push_back(batch.at("x").dim(0));
      }
      return Outputs{{"y", doubled(batch.at("x"))}};
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  void wait_started(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_ >= n; });
  }
  std::vector<int64_t> sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_;
  int started_ = 0;
  std::vector<int64_t> sizes_;
};

// Admits a request the test expects to be admitted.
DynamicBatcher::Admitted admit(DynamicBatcher& b, Outputs inputs) {
  auto a = b.submit({std::move(inputs)});
  EXPECT_TRUE(a.is_ok()) << a.status().to_string();
  return a.is_ok() ? std::move(a).value() : DynamicBatcher::Admitted{};
}

void expect_answer(Result<Outputs> r, int id, int64_t rows) {
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Tensor& y = r->at("y");
  ASSERT_EQ(y.shape(), (Shape{rows, 3})) << "request " << id;
  const Tensor want = doubled(request_of(id, rows).at("x"));
  for (int64_t i = 0; i < y.numel(); ++i)
    ASSERT_EQ(y.data<float>()[i], want.data<float>()[i]) << "request " << id << " element " << i;
}

TEST(BatchSizes, PreferredElsePowersOfTwo) {
  BatcherOptions o;
  EXPECT_TRUE(batch_sizes(o).empty());
  o.max_batch_size = 12;
  EXPECT_EQ(batch_sizes(o), (std::vector<int64_t>{1, 2, 4, 8, 12}));
  o.preferred_batch_sizes = {8, 4, 40};
  EXPECT_EQ(batch_sizes(o), (std::vector<int64_t>{4, 8, 12}));
}

TEST(BatchRows, JoinPadsAndSplitsBack) {
  Outputs a = request_of(1, 2), b = request_of(2, 1);
  Outputs batch = join_rows({&a, &b}, 4);
  ASSERT_EQ(batch.at("x").shape(), (Shape{4, 3}));
  EXPECT_EQ(batch.at("x").data<float>()[9], 0.f);  // padding
  auto second = rows_of_outputs(batch, 4, 2, 1);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(second->at("x").data<float>()[0], 2000.f);
  EXPECT_FALSE(rows_of_outputs(batch, 5, 0, 1).is_ok());
  EXPECT_FALSE(rows_of({{"x", Tensor::from_floats({}, {1.f})}}).is_ok());
  EXPECT_FALSE(
      rows_of({{"x", Tensor::from_floats({2}, {1, 2})}, {"z", Tensor::from_floats({3}, {1, 2, 3})}})
          .is_ok());
  EXPECT_NE(batch_key(request_of(1, 2)), batch_key({{"x", Tensor::from_floats({1, 2}, {1, 2})}}));
}

// An instance's join buffers: the next batch reuses the memory where it fits (its padding
// zeroed again over the last batch's rows), grows it where it does not, and gives it up where
// a batch's outputs share it.
TEST(BatchRows, JoinBuffersAreReusedGrownAndGivenUpUnderOutputs) {
  JoinBuffers buffers;
  Outputs a = request_of(1, 3), b = request_of(2, 1);
  Outputs first = join_rows({&a, &b}, 4, &buffers);
  const void* memory = first.at("x").raw();
  Outputs second = join_rows({&b}, 2, &buffers);
  EXPECT_EQ(second.at("x").raw(), memory) << "a smaller batch reuses the memory";
  EXPECT_EQ(second.at("x").data<float>()[0], 2000.f);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(second.at("x").data<float>()[i], 0.f) << "padding " << i;
  Outputs c = request_of(3, 6);
  Outputs third = join_rows({&c}, 8, &buffers);
  EXPECT_EQ(third.at("x").shape(), (Shape{8, 3}));
  EXPECT_EQ(third.at("x").data<float>()[0], 3000.f);
  EXPECT_EQ(third.at("x").data<float>()[18], 0.f);
  const void* grown = third.at("x").raw();
  keep_outputs_apart(buffers, {{"y", Tensor::from_floats({1}, {1.f})}});
  EXPECT_EQ(join_rows({&a}, 3, &buffers).at("x").raw(), grown) << "outputs elsewhere";
  keep_outputs_apart(buffers, {{"y", Tensor::view_of(third.at("x"), 12, DataType::kFloat32, {3})}});
  Outputs fourth = join_rows({&a}, 3, &buffers);
  EXPECT_NE(fourth.at("x").raw(), grown) << "an output in the memory keeps it";
  EXPECT_EQ(third.at("x").data<float>()[0], 1000.f) << "the old memory lives on with its views";
  // Pinned where asked (ordinary memory on a machine without a GPU), joined the same way.
  JoinBuffers pinned;
  pinned.pinned = true;
  Outputs p = join_rows({&a, &b}, 4, &pinned);
  EXPECT_EQ(p.at("x").data<float>()[0], 1000.f);
  EXPECT_EQ(p.at("x").data<float>()[9], 2000.f);
  EXPECT_EQ(p.at("x").data<float>()[11], 2000.2f);
  EXPECT_EQ(join_rows({&b}, 1, &pinned).at("x").raw(), p.at("x").raw());
}

// A batch of many parts of uneven sizes: every row lands in its place, and the padding is
// zeros.
TEST(BatchRows, ManyUnevenPartsJoinInOrder) {
  std::vector<Outputs> requests;
  std::mt19937 gen(3);
  int64_t rows = 0;
  for (int i = 0; i < 37; ++i) {
    const int64_t r = 1 + static_cast<int64_t>(gen() % 5);
    std::vector<float> v(static_cast<size_t>(r) * 65536);
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(i * 1'000'000 + k);
    requests.push_back({{"x", Tensor::from_floats({r, 65536}, v)}});
    rows += r;
  }
  std::vector<const Outputs*> parts;
  for (const Outputs& r : requests) parts.push_back(&r);
  Outputs batch = join_rows(parts, rows + 3);
  const Tensor& x = batch.at("x");
  ASSERT_EQ(x.shape(), (Shape{rows + 3, 65536}));
  const float* got = x.data<float>();
  size_t at = 0;
  for (const Outputs& r : requests) {
    const Tensor& part = r.at("x");
    ASSERT_EQ(std::memcmp(got + at, part.data<float>(), part.nbytes()), 0) << "at " << at;
    at += static_cast<size_t>(part.numel());
  }
  for (size_t k = at; k < static_cast<size_t>(x.numel()); ++k) ASSERT_EQ(got[k], 0.f) << k;
}

// The instance held, 64 single-row requests queue up; released, they run in
// ceil(64 / max_batch_size) full batches, each request getting its own rows.
TEST(DynamicBatcher, BatchesFormWhileTheInstanceIsBusy) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 8;
  o.max_queue_delay_us = 0;
  DynamicBatcher b(o, model.run());
  auto first = b.submit({request_of(0, 1)});
  ASSERT_TRUE(first.is_ok());
  model.wait_started(1);  // the instance runs request 0 and is held there
  std::vector<DynamicBatcher::Admitted> admitted;
  for (int i = 1; i <= 64; ++i) {
    auto a = b.submit({request_of(i, 1)});
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    admitted.push_back(std::move(*a));
  }
  model.release();
  expect_answer(first->result.get(), 0, 1);
  for (int i = 1; i <= 64; ++i) {
    expect_answer(admitted[i - 1].result.get(), i, 1);
    EXPECT_EQ(admitted[i - 1].timing->batch_rows, 8);
  }
  EXPECT_EQ(model.sizes(), (std::vector<int64_t>{1, 8, 8, 8, 8, 8, 8, 8, 8}));
  const BatcherStats s = b.stats();
  EXPECT_EQ(s.batches, 9);
  EXPECT_EQ(s.batch_rows_histogram.at(8), 8);
  EXPECT_EQ(s.completed, 65);
  EXPECT_EQ(s.queued, 0);
}

// Requests of several rows count their rows and never split; a batch is padded to a declared
// size; shapes that differ do not batch together.
TEST(DynamicBatcher, RowsCountPaddingAndShapes) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 8;
  o.max_queue_delay_us = 0;
  DynamicBatcher b(o, model.run());
  auto blocker = b.submit({request_of(0, 1)});
  model.wait_started(1);
  auto a = b.submit({request_of(1, 5)});
  auto c = b.submit({request_of(2, 4)});  // 5 + 4 > 8: waits for the next batch
  auto d = b.submit({request_of(3, 2)});  // joins the first: 7 rows, padded to 8
  auto other = b.submit(BatchRequest{Outputs{{"x", Tensor::from_floats({1, 2}, {1, 2})}}});
  ASSERT_TRUE(a.is_ok() && c.is_ok() && d.is_ok() && other.is_ok());
  EXPECT_FALSE(b.submit({request_of(4, 9)}).is_ok());  // over max_batch_size
  model.release();
  expect_answer(a->result.get(), 1, 5);
  expect_answer(c->result.get(), 2, 4);
  expect_answer(d->result.get(), 3, 2);
  ASSERT_TRUE(other->result.get().is_ok());
  EXPECT_EQ(a->timing->batch_rows, 7);
  EXPECT_EQ(a->timing->padded_rows, 8);
  EXPECT_EQ(c->timing->batch_rows, 4);
  EXPECT_EQ(model.sizes(), (std::vector<int64_t>{1, 8, 4, 1}));
}

// A lone request waits out max_queue_delay for company, then goes alone.
TEST(DynamicBatcher, ALoneRequestGoesAfterTheDelay) {
  FakeModel model;
  BatcherOptions o;
  o.max_batch_size = 16;
  o.max_queue_delay_us = 20000;
  DynamicBatcher b(o, model.run());
  const auto t0 = std::chrono::steady_clock::now();
  auto a = b.submit({request_of(1, 1)});
  ASSERT_TRUE(a.is_ok());
  expect_answer(a->result.get(), 1, 1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_GE(a->timing->queue_us, 19000);
}

// Preferred sizes: a batch goes as soon as the queue fills one exactly.
TEST(DynamicBatcher, APreferredSizeGoesAtOnce) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 16;
  o.preferred_batch_sizes = {4};
  o.max_queue_delay_us = 10'000'000;  // never reached in this test
  DynamicBatcher b(o, model.run());
  auto blocker = b.submit({request_of(0, 4)});
  model.wait_started(1);
  std::vector<DynamicBatcher::Admitted> admitted;
  for (int i = 1; i <= 6; ++i) admitted.push_back(admit(b, request_of(i, 1)));
  model.release();
  for (int i = 1; i <= 4; ++i) expect_answer(admitted[i - 1].result.get(), i, 1);
  EXPECT_EQ(model.sizes(), (std::vector<int64_t>{4, 4}));  // 5 and 6 wait for two more
  for (int i = 7; i <= 8; ++i) admitted.push_back(admit(b, request_of(i, 1)));
  for (int i = 5; i <= 8; ++i) expect_answer(admitted[i - 1].result.get(), i, 1);
  EXPECT_EQ(model.sizes(), (std::vector<int64_t>{4, 4, 4}));
}

// max_queue_size refuses at once (kUnavailable), losing nothing admitted; cancel takes a
// queued request out; a REJECT timeout fails one that waited too long.
TEST(DynamicBatcher, QueueLimitCancelAndTimeout) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 1;
  o.default_policy.max_queue_size = 3;
  o.default_policy.allow_timeout_override = true;
  DynamicBatcher b(o, model.run());
  auto blocker = b.submit({request_of(0, 1)});
  model.wait_started(1);
  auto a = b.submit({request_of(1, 1)});
  auto c = b.submit({request_of(2, 1)});
  BatchRequest quick{request_of(3, 1)};
  quick.timeout_us = 1000;
  auto t = b.submit(std::move(quick));
  ASSERT_TRUE(a.is_ok() && c.is_ok() && t.is_ok());
  auto refused = b.submit({request_of(4, 1)});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("Exceeds maximum queue size"), std::string::npos);
  EXPECT_TRUE(b.cancel(c->id));
  EXPECT_FALSE(b.cancel(c->id));
  EXPECT_EQ(c->result.get().status().code(), StatusCode::kCancelled);
  std::this_thread::sleep_for(5ms);
  model.release();
  expect_answer(a->result.get(), 1, 1);
  auto late = t->result.get();
  ASSERT_FALSE(late.is_ok());
  EXPECT_EQ(late.status().code(), StatusCode::kUnavailable);
  const BatcherStats s = b.stats();
  EXPECT_EQ(s.refused, 1);
  EXPECT_EQ(s.cancelled, 1);
  EXPECT_EQ(s.timed_out, 1);
}

// The highest priority level runs first.
TEST(DynamicBatcher, PriorityLevels) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 1;
  o.priority_levels = 2;
  o.default_priority_level = 2;
  DynamicBatcher b(o, model.run());
  auto blocker = b.submit({request_of(0, 1)});
  model.wait_started(1);
  auto low = b.submit({request_of(1, 1)});
  BatchRequest urgent{request_of(2, 1)};
  urgent.priority = 1;
  auto high = b.submit(std::move(urgent));
  BatchRequest bad{request_of(3, 1)};
  bad.priority = 3;
  EXPECT_EQ(b.submit(std::move(bad)).status().code(), StatusCode::kInvalidArgument);
  model.release();
  expect_answer(high->result.get(), 2, 1);
  expect_answer(low->result.get(), 1, 1);
  EXPECT_LT(high->timing->queue_us, low->timing->queue_us);
}

// 1000 requests of mixed sizes from 8 threads on 3 instances: every answer is the request's
// own, none lost, none twice; with preserve_ordering, results come in admission order.
TEST(DynamicBatcher, ManyConcurrentRequestsOfMixedSizes) {
  for (const bool ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "preserve_ordering" : "unordered");
    FakeModel model;
    BatcherOptions o;
    o.max_batch_size = 16;
    o.max_queue_delay_us = 200;
    o.instances = 3;
    o.preserve_ordering = ordered;
    DynamicBatcher b(o, model.run());
    std::atomic<int> next{0}, bad{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c)
      clients.emplace_back([&, c] {
        std::mt19937 gen(c);
        for (int i = next++; i < 1000; i = next++) {
          const int64_t rows = 1 + gen() % 5;
          auto a = b.submit({request_of(i, rows)});
          if (!a.is_ok()) {
            ++bad;
            continue;
          }
          Result<Outputs> r = a->result.get();
          const Tensor want = doubled(request_of(i, rows).at("x"));
          if (!r.is_ok() || r->at("y").to_floats() != want.to_floats()) ++bad;
        }
      });
    for (std::thread& t : clients) t.join();
    EXPECT_EQ(bad.load(), 0);
    const BatcherStats s = b.stats();
    EXPECT_EQ(s.completed, 1000);
    EXPECT_EQ(s.failed, 0);
    EXPECT_LT(s.batches, 1000);  // batches formed
  }
}

// preserve_ordering: a batch that finishes first waits to be given until the ones admitted
// before it are.
TEST(DynamicBatcher, PreserveOrderingHoldsLaterResults) {
  std::mutex mu;
  std::condition_variable cv;
  bool release_first = false;
  RunBatch run = [&](const Outputs& batch, DeviceTiming*) -> Result<Outputs> {
    if (batch.at("x").data<float>()[0] == 0.f) {  // request 0's batch waits to be released
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release_first; });
    }
    return Outputs{{"y", doubled(batch.at("x"))}};
  };
  BatcherOptions o;
  o.max_batch_size = 1;
  o.instances = 2;
  o.preserve_ordering = true;
  DynamicBatcher b(o, run);
  auto first = b.submit({request_of(0, 1)});
  auto second = b.submit({request_of(1, 1)});
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  EXPECT_EQ(second->result.wait_for(50ms), std::future_status::timeout);  // ran, held back
  {
    std::lock_guard<std::mutex> lock(mu);
    release_first = true;
  }
  cv.notify_all();
  expect_answer(first->result.get(), 0, 1);
  expect_answer(second->result.get(), 1, 1);
}

// drain() runs everything admitted, then refuses.
TEST(DynamicBatcher, DrainFinishesWhatWasAdmitted) {
  FakeModel model(/*hold=*/true);
  BatcherOptions o;
  o.max_batch_size = 4;
  o.max_queue_delay_us = 1'000'000;
  DynamicBatcher b(o, model.run());
  std::vector<DynamicBatcher::Admitted> admitted;
  for (int i = 0; i < 6; ++i) admitted.push_back(admit(b, request_of(i, 1)));
  std::thread releaser([&] {
    std::this_thread::sleep_for(10ms);
    model.release();
  });
  b.drain();
  releaser.join();
  for (int i = 0; i < 6; ++i) expect_answer(admitted[i].result.get(), i, 1);
  EXPECT_EQ(b.submit({request_of(9, 1)}).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kiln::server
