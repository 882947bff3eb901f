// The timing cache file (backends/tactic_cache.h): round trip; a file for another device or a
// damaged one gives nothing and is replaced on save; many writers saving one file at once (each
// its own cache, as Contexts of several engines or processes would) lose no entry and leave no
// temporary file behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/tactic_cache.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(testing::TempDir()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(TacticCache, RoundTripAndOtherDevices) {
  const fs::path dir = fresh_dir("tactic_round_trip");
  const std::string path = (dir / "t.cache").string();
  TacticCache a;
  a.put("conv|fp16|n1c64", "7 0.031");
  a.put("gemm|fp32|m8", "2");
  ASSERT_TRUE(a.save(path, "gpu A").is_ok());
  TacticCache b;
  ASSERT_TRUE(b.load(path, "gpu A"));
  EXPECT_EQ(b.entries(), a.entries());
  TacticCache c;
  EXPECT_FALSE(c.load(path, "gpu B"));  // another device's timings are not ours
  EXPECT_EQ(c.size(), 0u);
  // Saving for another device replaces the file instead of merging the foreign entries.
  c.put("conv|fp16|n1c64", "3");
  ASSERT_TRUE(c.save(path, "gpu B").is_ok());
  TacticCache d;
  ASSERT_TRUE(d.load(path, "gpu B"));
  EXPECT_EQ(d.entries(), c.entries());
  // A damaged file gives nothing; a save replaces it.
  { std::ofstream(path) << "kiln-timing-cache v1\tgpu A\nno tab here\n"; }
  TacticCache e;
  EXPECT_FALSE(e.load(path, "gpu A"));
  EXPECT_EQ(e.size(), 0u);
  ASSERT_TRUE(a.save(path, "gpu A").is_ok());
  TacticCache f;
  ASSERT_TRUE(f.load(path, "gpu A"));
  EXPECT_EQ(f.entries(), a.entries());
}

TEST(TacticCache, ConcurrentWritersLoseNothing) {
  const fs::path dir = fresh_dir("tactic_concurrent");
  const std::string path = (dir / "t.cache").string();
  constexpr int kWriters = 8, kSaves = 5;
  std::vector<std::thread> threads;
  std::vector<Status> status(kWriters * kSaves, Status::ok());
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      TacticCache mine;
      for (int s = 0; s < kSaves; ++s) {
        mine.put("w" + std::to_string(w) + "|k" + std::to_string(s), std::to_string(w * 100 + s));
        status[w * kSaves + s] = mine.save(path, "gpu A");
      }
    });
  for (auto& t : threads) t.join();
  for (const Status& s : status) EXPECT_TRUE(s.is_ok()) << s.to_string();
  TacticCache all;
  ASSERT_TRUE(all.load(path, "gpu A"));
  EXPECT_EQ(all.size(), static_cast<size_t>(kWriters * kSaves));
  std::string v;
  ASSERT_TRUE(all.get("w3|k4", &v));
  EXPECT_EQ(v, "304");
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(TacticCache, UnwritableDirectoryIsAnError) {
  TacticCache a;
  a.put("k", "v");
  const Status s = a.save("/nonexistent-dir/t.cache", "gpu A");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/t.cache"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace kiln
