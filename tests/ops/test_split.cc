#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct SplitCase {
  Shape in;
  int64_t axis;
  std::vector<int64_t> split;  // the `split` input; empty: omitted
  int64_t num_outputs_attr;    // opset 18 attribute; 0: absent
  std::vector<int64_t> want;   // piece sizes on the axis (one per output)
};

TEST(Split, TableOfShapesAndPieces) {
  const std::vector<SplitCase> cases = {
      {{6}, 0, {}, 0, {2, 2, 2}},         {{6}, 0, {2, 4}, 0, {2, 4}},
      {{2, 6}, 1, {}, 0, {3, 3}},         {{2, 6}, 1, {1, 0, 5}, 0, {1, 0, 5}},
      {{2, 6}, -1, {4, 2}, 0, {4, 2}},    {{4, 3, 2}, 0, {}, 0, {1, 1, 1, 1}},
      {{4, 3, 2}, -2, {1, 2}, 0, {1, 2}}, {{4, 3, 2}, 2, {}, 0, {1, 1}},
      {{0}, 0, {0, 0, 0}, 0, {0, 0, 0}},  {{3, 5}, 0, {}, 0, {3}},  // one output: a copy
      {{2, 7}, 1, {}, 3, {3, 3, 1}},  // num_outputs: last piece smaller
      {{2, 8}, 1, {}, 4, {2, 2, 2, 2}},
  };
  for (const SplitCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " axis " + std::to_string(c.axis) + " into " +
                   shape_str(c.want) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 31);
      Tensor split = int64s(c.split);
      Attributes a;
      a.set("axis", c.axis);
      if (c.num_outputs_attr) a.set("num_outputs", c.num_outputs_attr);
      std::vector<const Tensor*> ins = {&x};
      if (!c.split.empty()) ins.push_back(&split);
      auto out = run_op(OpKind::Split, a, ins, c.want.size());
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      ASSERT_EQ(out->size(), c.want.size());
      const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.in.size()) : c.axis;
      int64_t begin = 0;
      for (size_t k = 0; k < c.want.size(); ++k) {
        Shape ps = c.in;
        ps[axis] = c.want[k];
        expect_same((*out)[k], build_expected(x, ps, [&](std::vector<int64_t> m) {
                      m[axis] += begin;
                      return ravel(m, c.in);
                    }));
        begin += c.want[k];
      }
    }
  }
}

TEST(Split, Errors) {
  Tensor x = random_of(DataType::kFloat32, {2, 7});
  Attributes axis1;
  axis1.set("axis", int64_t{1});
  expect_error(OpKind::Split, axis1, {&x}, "axis dimension 7 cannot be split equally into 2", 2);
  Tensor sum_bad = int64s({3, 3});
  expect_error(OpKind::Split, axis1, {&x, &sum_bad}, "sums to 6, the axis has 7", 2);
  Tensor count_bad = int64s({3, 4});
  expect_error(OpKind::Split, axis1, {&x, &count_bad}, "has 2 entries for 3 outputs", 3);
  Tensor negative = int64s({8, -1});
  expect_error(OpKind::Split, axis1, {&x, &negative}, "negative size", 2);
  Attributes axis2;
  axis2.set("axis", int64_t{2});
  expect_error(OpKind::Split, axis2, {&x}, "axis 2 out of range for rank 2", 1);
}

TEST(Split, UnknownSplitValueIsAClearError) {
  auto r =
      infer_op(OpKind::Split, {}, {{DataType::kFloat32, {6}}, {DataType::kInt64, {2}, nullptr}}, 2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("split) must be a constant"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kiln::test
