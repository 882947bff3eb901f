#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct ShapeCase {
  Shape in;
  bool has_start, has_end;
  int64_t start, end;
  std::vector<int64_t> want;
};

TEST(Shape, TableOfStartEnd) {
  const std::vector<ShapeCase> cases = {
      {{3, 4, 5}, false, false, 0, 0, {3, 4, 5}},
      {{3, 4, 5}, true, false, 1, 0, {4, 5}},
      {{3, 4, 5}, false, true, 0, 1, {3}},
      {{3, 4, 5}, true, true, 1, 2, {4}},
      {{3, 4, 5}, false, true, 0, -1, {3, 4}},
      {{3, 4, 5}, true, false, -1, 0, {5}},
      {{3, 4, 5}, true, true, 1, -1, {4}},
      {{3, 4, 5}, true, false, -10, 0, {3, 4, 5}},  // clamped start
      {{3, 4, 5}, false, true, 0, 10, {3, 4, 5}},   // clamped end
      {{3, 4, 5}, true, true, 2, 1, {}},            // empty range
      {{2, 0, 7}, false, false, 0, 0, {2, 0, 7}},
      {{}, false, false, 0, 0, {}},
  };
  for (const ShapeCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " start " + std::to_string(c.start) + " end " +
                   std::to_string(c.end) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 71);
      Attributes a;
      if (c.has_start) a.set("start", c.start);
      if (c.has_end) a.set("end", c.end);
      auto out = run_op(OpKind::Shape, a, {&x});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      expect_same((*out)[0], int64s(c.want));
    }
  }
}

TEST(Shape, InferOnlyDescribesTheOutput) {
  auto r = infer_op(OpKind::Shape, {}, {{DataType::kFloat32, {2, 3, 4, 5}}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype, DataType::kInt64);
  EXPECT_EQ((*r)[0].shape, (Shape{4}));
  EXPECT_EQ((*r)[0].value, nullptr);  // folding is a pass's job
}

TEST(Shape, WrongInputCountIsAnError) {
  Tensor x = random_of(DataType::kFloat32, {2});
  expect_error(OpKind::Shape, {}, {&x, &x}, "expected 1 inputs, got 2");
}

}  // namespace
}  // namespace kiln::test
