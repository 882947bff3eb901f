#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct FlattenCase {
  Shape in;
  int64_t axis;
  Shape want;
};

TEST(Flatten, TableOfAxesAndDtypes) {
  const std::vector<FlattenCase> cases = {
      {{2, 3, 4, 5}, 0, {1, 120}},  {{2, 3, 4, 5}, 1, {2, 60}},
      {{2, 3, 4, 5}, 2, {6, 20}},   {{2, 3, 4, 5}, 3, {24, 5}},
      {{2, 3, 4, 5}, 4, {120, 1}},  {{2, 3, 4, 5}, -1, {24, 5}},
      {{2, 3, 4, 5}, -4, {1, 120}}, {{7}, 1, {7, 1}},
      {{3, 0, 2}, 1, {3, 0}},       {{}, 0, {1, 1}},
  };
  for (const FlattenCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " axis " + std::to_string(c.axis) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 3);
      Attributes a;
      a.set("axis", c.axis);
      auto out = run_op(OpKind::Flatten, a, {&x});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      // Flatten keeps row-major order: element i stays element i.
      expect_same((*out)[0], build_expected(x, c.want, [&](const std::vector<int64_t>& m) {
                    return m[0] * c.want[1] + m[1];
                  }));
    }
  }
}

TEST(Flatten, DefaultAxisIsOne) {
  Tensor x = random_of(DataType::kFloat32, {2, 3, 4}, 5);
  auto out = run_op(OpKind::Flatten, {}, {&x});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 12}));
}

TEST(Flatten, AxisOutOfRangeIsAnError) {
  Tensor x = random_of(DataType::kFloat32, {2, 3});
  for (int64_t axis : {3, -3}) {
    Attributes a;
    a.set("axis", axis);
    expect_error(OpKind::Flatten, a, {&x}, "out of range for rank 2");
  }
}

}  // namespace
}  // namespace kiln::test
