// EngineOptions: the per-layer CUDA workspace limit (an explicit value wins, 0 included; the
// default follows the precision), and the switches' names, which the CLI and plan files use:
// every name parses back to its value, and anything else is refused naming the accepted ones.
#include <gtest/gtest.h>

#include <string>

#include "kiln/options.h"

namespace kiln {
namespace {

TEST(EngineOptions, WorkspaceLimitDefaultsByPrecision) {
  EngineOptions o;
  EXPECT_LT(o.workspace_limit, 0);
  EXPECT_EQ(o.precision, Precision::kFp32);
  EXPECT_EQ(effective_workspace_limit(o), kFp32WorkspaceLimit);
  for (Precision p : {Precision::kTf32, Precision::kFp16}) {
    o.precision = p;
    EXPECT_EQ(effective_workspace_limit(o), kWorkspaceLimit) << precision_name(p);
  }
  EXPECT_GT(kFp32WorkspaceLimit, kWorkspaceLimit);
}

TEST(EngineOptions, ExplicitWorkspaceLimitWins) {
  EngineOptions o;
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16}) {
    o.precision = p;
    for (int64_t limit : {int64_t{0}, int64_t{123456}, int64_t{4} << 30}) {
      o.workspace_limit = limit;
      EXPECT_EQ(effective_workspace_limit(o), limit) << precision_name(p);
    }
  }
}

// Each of the `count` enumerators of E has a distinct name that parses back to it.
template <typename E>
void expect_round_trip(const char* (*name)(E), Result<E> (*parse)(const std::string&), int count,
                       const std::string& bad) {
  std::string seen;
  for (int i = 0; i < count; ++i) {
    const E e = static_cast<E>(i);
    const std::string n = name(e);
    EXPECT_NE(n, "?");
    EXPECT_EQ(seen.find("|" + n + "|"), std::string::npos) << n << " twice";
    seen += "|" + n + "|";
    auto back = parse(n);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, e) << n;
  }
  EXPECT_STREQ(name(static_cast<E>(count)), "?");
  auto r = parse(bad);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
  for (int i = 0; i < count; ++i)
    EXPECT_NE(msg.find(name(static_cast<E>(i))), std::string::npos) << msg;
}

TEST(EngineOptions, SwitchNamesRoundTripAndBadNamesAreRefused) {
  expect_round_trip<Precision>(precision_name, parse_precision, 4, "fp8");
  expect_round_trip<CudnnConvPath>(cudnn_conv_path_name, parse_cudnn_conv_path, 3, "LEGACY");
  expect_round_trip<SpaceToDepth>(space_to_depth_name, parse_space_to_depth, 3, "");
  expect_round_trip<CpuConvAlgo>(cpu_conv_algo_name, parse_cpu_conv_algo, 3, "fft");
  expect_round_trip<CpuLayout>(cpu_layout_name, parse_cpu_layout, 5, "nchw");
  auto r = parse_precision("fp8");
  EXPECT_NE(r.status().message().find("expected fp32, tf32, fp16 or bf16"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace kiln
