#include "ops/pool_test_util.h"

namespace kiln::test {
namespace {

const DataType kMaxPoolTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                  DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8};

TEST(MaxPool, MatchesNaiveOnEveryCaseAndDtype) {
  uint32_t seed = 10;
  for (const PoolCase& c : kPoolCases)
    for (DataType dt : kMaxPoolTypes) {
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      Tensor x = dt == DataType::kUInt8 ? random_of(dt, c.in, ++seed, 0, 255)
                                        : random_of(dt, c.in, ++seed, -100, 100);
      NaivePoolResult want = naive_pool(x, c, NaiveKind::kMax);
      expect_near(run_ok(OpKind::MaxPool, pool_attrs(c), {&x}), want.y, 0);
    }
}

TEST(MaxPool, IndicesRowAndColumnMajor) {
  uint32_t seed = 500;
  for (const PoolCase& c : kPoolCases)
    for (int64_t order : {0, 1}) {
      SCOPED_TRACE(c.name + " storage_order=" + std::to_string(order));
      Tensor x = random_of(DataType::kFloat32, c.in, ++seed);
      Attributes a = pool_attrs(c);
      a.set("storage_order", order);
      auto out = run_op(OpKind::MaxPool, a, {&x}, 2);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      NaivePoolResult want = naive_pool(x, c, NaiveKind::kMax, order == 1);
      expect_near((*out)[0], want.y, 0);
      expect_near((*out)[1], want.indices, 0);
    }
}

// ONNX's maxpool_with_argmax_2d_precomputed_strides example, by hand.
TEST(MaxPool, HandComputedColumnMajorIndices) {
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i) v[i] = i + 1;
  Tensor x = make_tensor(DataType::kFloat32, {1, 1, 5, 5}, v);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("storage_order", int64_t{1});
  auto out = run_op(OpKind::MaxPool, a, {&x}, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_near((*out)[0], make_tensor(DataType::kFloat32, {1, 1, 2, 2}, {7, 9, 17, 19}), 0);
  expect_near((*out)[1], make_tensor(DataType::kInt64, {1, 1, 2, 2}, {6, 16, 8, 18}), 0);
}

TEST(MaxPool, IndicesCountWholeTensorOffset) {
  // Indices are into the whole (N, C, ...) tensor, not the plane: batch 1, channel 1 of a
  // [2,2,3,3] input with a 3x3 window picks the plane max at offset 27 + argmax.
  Tensor x = random_of(DataType::kFloat32, {2, 2, 3, 3}, 3);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  auto out = run_op(OpKind::MaxPool, a, {&x}, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (int64_t p = 0; p < 4; ++p) {
    int64_t best = p * 9;
    for (int64_t i = p * 9; i < p * 9 + 9; ++i)
      if (x.at_double(i) > x.at_double(best)) best = i;
    EXPECT_EQ((*out)[1].data<int64_t>()[p], best);
    EXPECT_EQ((*out)[0].data<float>()[p], x.data<float>()[best]);
  }
}

TEST(MaxPool, NanPropagates) {
  Tensor x = make_tensor(DataType::kFloat32, {1, 1, 4}, {1, NAN, 3, 2});
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2});
  Tensor y = run_ok(OpKind::MaxPool, a, {&x});
  ASSERT_EQ(y.numel(), 3);
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_TRUE(std::isnan(y.data<float>()[1]));
  EXPECT_EQ(y.data<float>()[2], 3.f);
}

struct ErrorCase {
  std::string name;
  Shape in;
  DataType dt;
  Attributes attrs;
  std::string needle;
  size_t outputs = 1;
};

Attributes with_kernel(std::vector<int64_t> k,
                       std::vector<std::pair<std::string, AttrValue>> more = {}) {
  Attributes a;
  a.set("kernel_shape", std::move(k));
  for (auto& [name, v] : more) a.set(name, v);
  return a;
}

TEST(MaxPool, Errors) {
  using V = std::vector<int64_t>;
  const DataType f = DataType::kFloat32;
  const std::vector<ErrorCase> cases = {
      {"no kernel_shape", {1, 1, 4, 4}, f, {}, "kernel_shape is required"},
      {"kernel rank", {1, 1, 4, 4}, f, with_kernel({2}), "expected 2 (one per spatial dim)"},
      {"strides rank", {1, 1, 4, 4}, f, with_kernel({2, 2}, {{"strides", V{1}}}), "strides"},
      {"zero stride", {1, 1, 4, 4}, f, with_kernel({2, 2}, {{"strides", V{1, 0}}}), "≥ 1"},
      {"pads count", {1, 1, 4, 4}, f, with_kernel({2, 2}, {{"pads", V{1, 1}}}), "expected 4"},
      {"negative pad",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"pads", V{0, -1, 0, 0}}}),
       "must be ≥ 0"},
      {"pad ≥ kernel",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"pads", V{2, 0, 0, 0}}}),
       "smaller than the kernel"},
      {"window too big", {1, 1, 4, 4}, f, with_kernel({5, 2}), "does not fit"},
      {"dilated window too big",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"dilations", V{4, 1}}}),
       "does not fit"},
      {"auto_pad",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"auto_pad", std::string("SAME")}}),
       "auto_pad 'SAME'"},
      {"ceil_mode",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"ceil_mode", int64_t{2}}}),
       "ceil_mode must be 0 or 1"},
      {"storage_order",
       {1, 1, 4, 4},
       f,
       with_kernel({2, 2}, {{"storage_order", int64_t{3}}}),
       "storage_order"},
      {"rank 2", {4, 4}, f, with_kernel({2}), "rank ≥ 3"},
      {"int32", {1, 1, 4, 4}, DataType::kInt32, with_kernel({2, 2}), "int32"},
      {"three outputs", {1, 1, 4, 4}, f, with_kernel({2, 2}), "outputs", 3},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = random_of(c.dt, c.in, 1);
    expect_error(OpKind::MaxPool, c.attrs, {&x}, c.needle, c.outputs);
  }
}

}  // namespace
}  // namespace kiln::test
