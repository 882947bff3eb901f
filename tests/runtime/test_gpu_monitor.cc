// kiln/gpu_monitor.h: NVML opened at run time (`kiln bench --monitor`, kiln serve's GPU metrics).
// The error paths, series() and the CSV writer need no library; the readings are tested against
// tests/fakes/fake_nvml.cc (two GPUs of fixed readings, the second without power readings);
// the real driver's sampling test runs where the library and a GPU are present.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "kiln/engine.h"
#include "kiln/gpu_monitor.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() /
         ("kiln_test_gpu_monitor_" + std::to_string(::getpid()) + "_" + name);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(GpuMonitor, MissingLibraryIsAnErrorNamingIt) {
  auto m = GpuMonitor::open(0, 100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(m.status().message().find("libkiln-no-such-nvml.so"), std::string::npos)
      << m.status().message();
}

TEST(GpuMonitor, BadArgumentsAreRefusedBeforeLoading) {
  auto m = GpuMonitor::open(-1, 100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
  m = GpuMonitor::open(0, 0, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
}

// By PCI bus id (the CUDA GPU's, whatever CUDA_VISIBLE_DEVICES says): the same errors, and an
// empty id refused.
TEST(GpuMonitor, ByPciBusIdRefusesWhatItCannotOpen) {
  auto m = GpuMonitor::open_pci("0000:1B:00.0", 0, 100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(m.status().message().find("libkiln-no-such-nvml.so"), std::string::npos);
  m = GpuMonitor::open_pci("", 0, 100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
  m = GpuMonitor::open_pci("0000:1B:00.0", -1, 100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
}

TEST(GpuMonitor, SeriesIgnoresNan) {
  std::vector<GpuSample> s = {{0.0, 3, 50, kNan, 100},
                              {0.1, kNan, 70, kNan, 120},
                              {0.2, 1, 10, kNan, 90},
                              {0.3, 2, 90, kNan, 300},
                              {0.4, 10, 30, kNan, 110}};
  GpuSeries mem = series(s, &GpuSample::mem_used_mib);  // 1 2 3 10: even count
  EXPECT_DOUBLE_EQ(mem.min, 1);
  EXPECT_DOUBLE_EQ(mem.median, 2.5);
  EXPECT_DOUBLE_EQ(mem.max, 10);
  GpuSeries util = series(s, &GpuSample::util_pct);  // 10 30 50 70 90: odd count
  EXPECT_DOUBLE_EQ(util.min, 10);
  EXPECT_DOUBLE_EQ(util.median, 50);
  EXPECT_DOUBLE_EQ(util.max, 90);
  GpuSeries power = series(s, &GpuSample::power_w);
  EXPECT_DOUBLE_EQ(power.min, 90);
  EXPECT_DOUBLE_EQ(power.median, 110);
  EXPECT_DOUBLE_EQ(power.max, 300);
  GpuSeries clock = series(s, &GpuSample::sm_mhz);  // all NaN
  EXPECT_EQ(clock.min, 0);
  EXPECT_EQ(clock.median, 0);
  EXPECT_EQ(clock.max, 0);
  GpuSeries none = series({}, &GpuSample::t_s);
  EXPECT_EQ(none.min, 0);
  EXPECT_EQ(none.median, 0);
  EXPECT_EQ(none.max, 0);
}

TEST(GpuMonitor, CsvHasHeaderAndRows) {
  const fs::path p = temp_path("samples.csv");
  std::vector<GpuSample> s = {{0, 1024.5, 87, 1980, 412.25}, {0.1, 1030, kNan, 1965, 400}};
  Status st = write_samples_csv(p.string(), s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(slurp(p),
            "t_s,mem_used_mib,util_pct,sm_mhz,power_w\n"
            "0.000,1024.5,87,1980,412.250\n"
            "0.100,1030.0,nan,1965,400.000\n");
  fs::remove(p);
}

TEST(GpuMonitor, CsvToAnUnwritablePathNamesIt) {
  Status st = write_samples_csv("/nonexistent-dir/x.csv", {});
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/x.csv"), std::string::npos) << st.message();
}

// Through the fake NVML: the readings, the name and UUID, a field the GPU cannot read left NaN,
// and every GPU opened where CUDA sees none.
TEST(GpuMonitor, ReadsTheFakeNvml) {
  auto a = GpuMonitor::open(0, 100, KILN_FAKE_NVML);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ((*a)->name(), "Fake GPU A");
  EXPECT_EQ((*a)->uuid(), "GPU-00000000-1111-2222-3333-444444444444");
  GpuSample s = (*a)->read();
  EXPECT_DOUBLE_EQ(s.mem_total_mib, 80 * 1024.0);
  EXPECT_DOUBLE_EQ(s.mem_used_mib, 3 * 1024.0);
  EXPECT_DOUBLE_EQ(s.util_pct, 42);
  EXPECT_DOUBLE_EQ(s.sm_mhz, 1755);
  EXPECT_DOUBLE_EQ(s.power_w, 312.5);
  auto b = GpuMonitor::open_pci("00000000:2C:00.0", 7, 100, KILN_FAKE_NVML);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ((*b)->name(), "Fake GPU B");
  EXPECT_EQ((*b)->index(), 7);
  s = (*b)->read();
  EXPECT_DOUBLE_EQ(s.mem_used_mib, 512);
  EXPECT_TRUE(std::isnan(s.power_w));  // this GPU cannot read its power
  auto none = GpuMonitor::open(2, 100, KILN_FAKE_NVML);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no GPU 2"), std::string::npos) << none.status().message();
  if (cuda_device_count() > 0) GTEST_SKIP() << "open_all follows CUDA's GPUs on this machine";
  auto all = GpuMonitor::open_all(100, KILN_FAKE_NVML);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1]->uuid(), "GPU-55555555-6666-7777-8888-999999999999");
  auto missing = GpuMonitor::open_all(100, "libkiln-no-such-nvml.so");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("libkiln-no-such-nvml.so"), std::string::npos);
}

TEST(GpuMonitor, SamplesTheFakeNvmlOnItsThread) {
  auto m = GpuMonitor::open(0, 5, KILN_FAKE_NVML);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  (*m)->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  (*m)->stop();
  std::vector<GpuSample> s = (*m)->samples();
  ASSERT_GE(s.size(), 3u);
  for (const GpuSample& x : s) EXPECT_DOUBLE_EQ(x.util_pct, 42);
  EXPECT_NE((*m)->summary().find("utilization %: min/median/max 42.0/42.0/42.0"), std::string::npos)
      << (*m)->summary();
}

TEST(GpuMonitor, SamplesGpu0) {
  // Probe the library first: its absence is a skip, but with it present open() must work.
  void* probe = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!probe) GTEST_SKIP() << "libnvidia-ml.so.1 is not installed (no NVIDIA driver)";
  dlclose(probe);
  auto m = GpuMonitor::open(0, 20);
  // A driver library without a usable GPU (a container without devices) cannot initialize.
  if (!m.is_ok() && m.status().code() == StatusCode::kUnsupported)
    GTEST_SKIP() << "NVML present but unusable: " << m.status().message();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  GpuMonitor& mon = **m;
  mon.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const auto before_stop = std::chrono::steady_clock::now();
  mon.stop();
  // stop() wakes the thread instead of waiting out the period (20 ms here); a sample already
  // being taken still finishes, so allow for one NVML query.
  EXPECT_LT(std::chrono::steady_clock::now() - before_stop, std::chrono::seconds(1));
  mon.stop();  // idempotent
  std::vector<GpuSample> s = mon.samples();
  ASSERT_GE(s.size(), 2u);
  EXPECT_LT(s.front().t_s, 0.05);  // the first sample is taken at once
  for (size_t i = 1; i < s.size(); ++i) EXPECT_GT(s[i].t_s, s[i - 1].t_s);
  ASSERT_FALSE(std::isnan(s.front().mem_used_mib));  // memory is queryable on every GPU
  EXPECT_GT(s.front().mem_used_mib, 0);
  const std::string summary = mon.summary();
  EXPECT_NE(summary.find("memory used MiB: min/median/max"), std::string::npos) << summary;
  EXPECT_NE(summary.find("power W:"), std::string::npos) << summary;
  const fs::path p = temp_path("gpu0.csv");
  Status st = mon.write_csv(p.string());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::string csv = slurp(p);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(s.size() + 1)) << csv;
  fs::remove(p);
  std::printf("%s", summary.c_str());
}

}  // namespace
}  // namespace kiln
