#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct SqueezeCase {
  Shape in;
  std::vector<int64_t> axes;  // empty: input omitted (squeeze every 1)
  Shape want;
};

TEST(Squeeze, TableOfShapes) {
  const std::vector<SqueezeCase> cases = {
      {{1, 3, 4, 5}, {0}, {3, 4, 5}},
      {{1, 3, 1, 5}, {-2}, {1, 3, 5}},
      {{1, 3, 1, 5}, {2, 0}, {3, 5}},
      {{1, 3, 1, 5}, {}, {3, 5}},
      {{1, 1, 1}, {}, {}},
      {{2, 3}, {}, {2, 3}},
      {{1, 0, 1}, {-1}, {1, 0}},
  };
  for (const SqueezeCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " axes " + shape_str(c.axes) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 51);
      Tensor axes = int64s(c.axes);
      std::vector<const Tensor*> ins = {&x};
      if (!c.axes.empty()) ins.push_back(&axes);
      auto out = run_op(OpKind::Squeeze, {}, ins);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      // Dropping 1-dims keeps the row-major order of the elements.
      expect_same((*out)[0], build_expected(x, c.want, [&](const std::vector<int64_t>& m) {
                    return ravel(m, c.want);
                  }));
    }
  }
}

TEST(Squeeze, Errors) {
  Tensor x = random_of(DataType::kFloat32, {1, 3, 1});
  Tensor not_one = int64s({1}), out_of_range = int64s({3}), repeated = int64s({0, -3});
  expect_error(OpKind::Squeeze, {}, {&x, &not_one}, "cannot squeeze axis 1 of size 3");
  expect_error(OpKind::Squeeze, {}, {&x, &out_of_range}, "axes entry 3 out of range for rank 3");
  expect_error(OpKind::Squeeze, {}, {&x, &repeated}, "axis -3 repeated in axes");
}

TEST(Squeeze, UnknownAxesValueIsAClearError) {
  auto r = infer_op(OpKind::Squeeze, {},
                    {{DataType::kFloat32, {1, 2}}, {DataType::kInt64, {1}, nullptr}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("axes) must be a constant"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kiln::test
