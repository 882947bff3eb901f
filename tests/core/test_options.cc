// EngineOptions' per-layer CUDA workspace limit: an explicit value wins (0 included); the
// default follows the precision.
#include <gtest/gtest.h>

#include "kiln/options.h"

namespace kiln {
namespace {

TEST(EngineOptions, WorkspaceLimitDefaultsByPrecision) {
  EngineOptions o;
  EXPECT_LT(o.workspace_limit, 0);
  o.precision = "fp32";
  EXPECT_EQ(effective_workspace_limit(o), kFp32WorkspaceLimit);
  for (const char* p : {"tf32", "fp16"}) {
    o.precision = p;
    EXPECT_EQ(effective_workspace_limit(o), kWorkspaceLimit) << p;
  }
  EXPECT_GT(kFp32WorkspaceLimit, kWorkspaceLimit);
}

TEST(EngineOptions, ExplicitWorkspaceLimitWins) {
  EngineOptions o;
  for (const char* p : {"fp32", "tf32", "fp16"}) {
    o.precision = p;
    for (int64_t limit : {int64_t{0}, int64_t{123456}, int64_t{4} << 30}) {
      o.workspace_limit = limit;
      EXPECT_EQ(effective_workspace_limit(o), limit) << p;
    }
  }
}

}  // namespace
}  // namespace kiln
