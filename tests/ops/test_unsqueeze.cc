#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct UnsqueezeCase {
  Shape in;
  std::vector<int64_t> axes;
  Shape want;
};

TEST(Unsqueeze, TableOfShapes) {
  const std::vector<UnsqueezeCase> cases = {
      {{3, 4, 5}, {0}, {1, 3, 4, 5}},
      {{3, 4, 5}, {1}, {3, 1, 4, 5}},
      {{3, 4, 5}, {3}, {3, 4, 5, 1}},
      {{3, 4, 5}, {-1}, {3, 4, 5, 1}},
      {{3, 4, 5}, {-2}, {3, 4, 1, 5}},
      {{3, 4, 5}, {1, 4}, {3, 1, 4, 5, 1}},
      {{3, 4, 5}, {2, 4, 5}, {3, 4, 1, 5, 1, 1}},
      {{3, 4, 5}, {5, 4, 2}, {3, 4, 1, 5, 1, 1}},  // unsorted
      {{3, 4, 5}, {0, -1}, {1, 3, 4, 5, 1}},
      {{}, {0}, {1}},
      {{2, 0}, {1}, {2, 1, 0}},
  };
  for (const UnsqueezeCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " axes " + shape_str(c.axes) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 61);
      Tensor axes = int64s(c.axes);
      auto out = run_op(OpKind::Unsqueeze, {}, {&x, &axes});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      expect_same((*out)[0], build_expected(x, c.want, [&](const std::vector<int64_t>& m) {
                    return ravel(m, c.want);
                  }));
    }
  }
}

TEST(Unsqueeze, Errors) {
  Tensor x = random_of(DataType::kFloat32, {3, 4});
  Tensor out_of_range = int64s({3}), too_negative = int64s({-4}), repeated = int64s({1, -3});
  expect_error(OpKind::Unsqueeze, {}, {&x, &out_of_range}, "axes entry 3 out of range for rank 3");
  expect_error(OpKind::Unsqueeze, {}, {&x, &too_negative}, "axes entry -4 out of range");
  expect_error(OpKind::Unsqueeze, {}, {&x, &repeated}, "axis -3 repeated in axes");
  expect_error(OpKind::Unsqueeze, {}, {&x}, "expected 2 inputs, got 1");
}

TEST(Unsqueeze, UnknownAxesValueIsAClearError) {
  auto r = infer_op(OpKind::Unsqueeze, {},
                    {{DataType::kFloat32, {2}}, {DataType::kInt64, {1}, nullptr}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("axes) must be a constant"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kiln::test
