// The per-tensor size limit: checked on shapes before any kernel sees them.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "runtime/tensor_limit.h"

namespace kiln {
namespace {

TEST(TensorLimit, SizesOverflowAndLimit) {
  EXPECT_TRUE(check_tensor_size(DataType::kFloat32, {2, 3}, 24).is_ok());
  Status s = check_tensor_size(DataType::kFloat32, {2, 3}, 23);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("[2,3] of float32 exceeds the per-tensor limit of 23"),
            std::string::npos)
      << s.to_string();
  // 2^40 · 2^40 · 4 bytes wraps int64; an empty tensor is never too large.
  const int64_t big = int64_t{1} << 40;
  EXPECT_FALSE(check_tensor_size(DataType::kFloat32, {big, big}, int64_t{1} << 62).is_ok());
  EXPECT_TRUE(check_tensor_size(DataType::kFloat32, {big, 0, big}, 1).is_ok());
  EXPECT_FALSE(check_tensor_size(DataType::kFloat32, {-1, 4}, 1 << 20).is_ok());
}

// At build, a fully known shape that is too large names the node producing it; symbolic
// shapes are left to the run, which checks the concrete ones.
TEST(TensorLimit, DeclaredSizesNameTheProducer) {
  Graph g;
  auto typed = [&](const std::string& name, std::vector<Dim> dims) {
    Value* v = g.add_value(name);
    v->dtype = DataType::kFloat32;
    v->has_shape = true;
    v->dims = std::move(dims);
    return v;
  };
  Value* x = typed("x", {Dim{-1, "batch"}, Dim{3, ""}});
  Value* y = typed("y", {Dim{4096, ""}, Dim{4096, ""}});
  g.add_node(OpKind::Relu, "big_relu", {x}, {y});
  EXPECT_TRUE(check_declared_sizes(g, int64_t{64} << 20).is_ok());
  Status s = check_declared_sizes(g, int64_t{1} << 20);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("big_relu"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("'y'"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace kiln
