#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct ReshapeCase {
  Shape in;
  std::vector<int64_t> spec;
  int64_t allowzero;
  Shape want;
};

TEST(Reshape, TableOfShapes) {
  const std::vector<ReshapeCase> cases = {
      {{2, 3, 4}, {4, 2, 3}, 0, {4, 2, 3}},        // reordered
      {{2, 3, 4}, {24}, 0, {24}},                  // one dim
      {{2, 3, 4}, {2, 12}, 0, {2, 12}},            // reduced
      {{2, 3, 4}, {2, 3, 2, 2}, 0, {2, 3, 2, 2}},  // extended
      {{2, 3, 4}, {2, -1, 2}, 0, {2, 6, 2}},       // inferred
      {{2, 3, 4}, {-1, 2, 3, 4}, 0, {1, 2, 3, 4}},
      {{2, 3, 4}, {2, 0, 4, 1}, 0, {2, 3, 4, 1}},   // 0 copies dim 1
      {{2, 3, 4}, {2, 0, 1, -1}, 0, {2, 3, 1, 4}},  // 0 and -1 together
      {{2, 3, 4}, {0, 0, 0}, 0, {2, 3, 4}},
      {{0, 3, 4}, {3, 4, 0}, 1, {3, 4, 0}},  // allowzero keeps a literal 0
      {{0, 3, 4}, {0, 12}, 0, {0, 12}},
      {{1}, {}, 0, {}},  // to a scalar
  };
  for (const ReshapeCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " -> " + shape_str(c.spec) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 11);
      Tensor spec = int64s(c.spec);
      Attributes a;
      a.set("allowzero", c.allowzero);
      auto out = run_op(OpKind::Reshape, a, {&x, &spec});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      expect_same((*out)[0], build_expected(x, c.want, [&](const std::vector<int64_t>& m) {
                    return ravel(m, c.want);
                  }));
    }
  }
}

TEST(Reshape, Errors) {
  Tensor x = random_of(DataType::kFloat32, {2, 3, 4});
  struct Bad {
    std::vector<int64_t> spec;
    int64_t allowzero;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {{-1, -1}, 0, "two -1s"},
      {{5, 5}, 0, "cannot reshape [2,3,4] (24 elements) to [5,5]"},
      {{5, -1}, 0, "-1 cannot be inferred"},
      {{0, -1}, 1, "-1 cannot be inferred"},  // allowzero: a literal 0 next to -1
      {{2, 3, 4, 0}, 0, "has no input dimension to copy"},
      {{2, -2, 12}, 0, "invalid dimension -2"},
  };
  for (const Bad& b : bad) {
    Tensor spec = int64s(b.spec);
    Attributes a;
    a.set("allowzero", b.allowzero);
    expect_error(OpKind::Reshape, a, {&x, &spec}, b.needle);
  }
}

TEST(Reshape, UnknownShapeValueIsAClearError) {
  auto r = infer_op(OpKind::Reshape, {},
                    {{DataType::kFloat32, {2, 3}}, {DataType::kInt64, {2}, nullptr}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("shape) must be a constant"), std::string::npos)
      << r.status().to_string();
}

TEST(Reshape, InferUsesTheShapeValue) {
  Tensor spec = int64s({3, -1});
  auto r =
      infer_op(OpKind::Reshape, {}, {{DataType::kFloat16, {2, 3}}, {DataType::kInt64, {2}, &spec}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape, (Shape{3, 2}));
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  EXPECT_EQ((*r)[0].value, nullptr);  // folding is not the shape rule's job
}

}  // namespace
}  // namespace kiln::test
