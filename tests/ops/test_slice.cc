#include <limits>

#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct SliceCase {
  Shape in;
  std::vector<int64_t> starts, ends, axes, steps;  // axes/steps empty: input omitted
  // Hand-computed window per axis of the input: first index, step, count.
  std::vector<int64_t> first, step, count;
};

TEST(Slice, TableOfWindows) {
  const std::vector<SliceCase> cases = {
      // the ONNX examples on a [20,10,5] input
      {{20, 10, 5}, {0, 0}, {3, 10}, {0, 1}, {1, 1}, {0, 0, 0}, {1, 1, 1}, {3, 10, 5}},
      {{20, 10, 5}, {0, 0, 3}, {20, 10, 4}, {}, {}, {0, 0, 3}, {1, 1, 1}, {20, 10, 1}},
      {{20, 10, 5}, {0, 0, 3}, {20, 10, 4}, {0, 1, 2}, {}, {0, 0, 3}, {1, 1, 1}, {20, 10, 1}},
      {{20, 10, 5}, {0, 0, 3}, {20, 10, 4}, {0, -2, -1}, {}, {0, 0, 3}, {1, 1, 1}, {20, 10, 1}},
      {{20, 10, 5}, {1}, {1000}, {1}, {1}, {0, 1, 0}, {1, 1, 1}, {20, 9, 5}},
      {{20, 10, 5}, {0}, {-1}, {1}, {1}, {0, 0, 0}, {1, 1, 1}, {20, 9, 5}},
      {{20, 10, 5}, {1000}, {1000}, {1}, {1}, {0, 0, 0}, {1, 1, 1}, {20, 0, 5}},
      {{20, 10, 5},
       {20, 10, 4},
       {0, 0, 1},
       {0, 1, 2},
       {-1, -3, -2},
       {19, 9, 4},
       {-1, -3, -2},
       {19, 3, 2}},
      // open ends and huge steps on a [5,6] input
      {{5, 6}, {1}, {kMax}, {1}, {2}, {0, 1}, {1, 2}, {5, 3}},
      {{5, 6}, {-1}, {kMin}, {0}, {-1}, {4, 0}, {-1, 1}, {5, 6}},
      {{5, 6}, {kMax}, {kMin}, {1}, {-2}, {0, 5}, {1, -2}, {5, 3}},
      {{5, 6}, {0}, {kMax}, {1}, {kMax}, {0, 0}, {1, 1}, {5, 1}},
      {{5, 6}, {-1}, {kMin}, {1}, {kMin}, {0, 5}, {1, 1}, {5, 1}},
      {{5, 6}, {-100}, {kMin}, {1}, {-1}, {0, 0}, {1, 1}, {5, 1}},
      {{5, 6}, {3}, {1}, {1}, {1}, {0, 0}, {1, 1}, {5, 0}},   // empty forward range
      {{5, 6}, {1}, {3}, {1}, {-1}, {0, 0}, {1, 1}, {5, 0}},  // empty backward range
      {{5, 6}, {-2, 1}, {kMax, -1}, {1, 0}, {1, 2}, {1, 4}, {2, 1}, {2, 2}},  // axes unsorted
      {{0, 3}, {0}, {kMax}, {0}, {-1}, {0, 0}, {1, 1}, {0, 3}},               // empty input dim
  };
  for (const SliceCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " starts " + shape_str(c.starts) + " ends " +
                   shape_str(c.ends) + " axes " + shape_str(c.axes) + " steps " +
                   shape_str(c.steps) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 41);
      Tensor starts = int64s(c.starts), ends = int64s(c.ends), axes = int64s(c.axes),
             steps = int64s(c.steps);
      std::vector<const Tensor*> ins = {&x, &starts, &ends, c.axes.empty() ? nullptr : &axes};
      if (!c.steps.empty()) ins.push_back(&steps);
      auto out = run_op(OpKind::Slice, {}, ins);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      expect_same((*out)[0], build_expected(x, c.count, [&](const std::vector<int64_t>& m) {
                    std::vector<int64_t> i(m.size());
                    for (size_t d = 0; d < m.size(); ++d) i[d] = c.first[d] + m[d] * c.step[d];
                    return ravel(i, c.in);
                  }));
    }
  }
}

TEST(Slice, Errors) {
  Tensor x = random_of(DataType::kFloat32, {4, 5});
  Tensor s1 = int64s({0}), e1 = int64s({3}), s2 = int64s({0, 0}), e2 = int64s({3, 3});
  Tensor zero = int64s({0}), ax2 = int64s({2}), ax_dup = int64s({1, -1}), ax1 = int64s({1});
  expect_error(OpKind::Slice, {}, {&x, &s1, &e1, &ax1, &zero}, "step 0 on axis 1");
  expect_error(OpKind::Slice, {}, {&x, &s1, &e1, &ax2}, "axes entry 2 out of range for rank 2");
  expect_error(OpKind::Slice, {}, {&x, &s2, &e2, &ax_dup}, "axis -1 repeated in axes");
  expect_error(OpKind::Slice, {}, {&x, &s1, &e2}, "starts has 1 entries, ends 2");
  expect_error(OpKind::Slice, {}, {&x, &s2, &e2, &ax1}, "must have the same length");
}

TEST(Slice, UnknownStartsValueIsAClearError) {
  Tensor ends = int64s({2});
  auto r = infer_op(OpKind::Slice, {},
                    {{DataType::kFloat32, {6}},
                     {DataType::kInt64, {1}, nullptr},
                     {DataType::kInt64, {1}, &ends}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("starts) must be a constant"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kiln::test
