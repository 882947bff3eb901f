#include <sstream>

#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct ConcatCase {
  std::vector<Shape> ins;
  int64_t axis;
};

TEST(Concat, TableOfShapesAndAxes) {
  const std::vector<ConcatCase> cases = {
      {{{3}, {5}}, 0},
      {{{3}, {5}, {1}}, -1},
      {{{2, 3}, {4, 3}}, 0},
      {{{2, 3}, {2, 1}, {2, 4}}, 1},
      {{{2, 3}, {2, 5}}, -1},
      {{{2, 3}, {1, 3}}, -2},
      {{{2, 3, 4}, {2, 2, 4}}, 1},
      {{{2, 3, 4}, {2, 3, 1}, {2, 3, 2}}, 2},
      {{{2, 3, 4}, {5, 3, 4}}, -3},
      {{{2, 0, 4}, {2, 3, 4}, {2, 0, 4}}, 1},  // empty inputs contribute nothing
      {{{2, 3, 0}, {2, 3, 0}}, 0},             // empty output
      {{{4, 2}}, 1},                           // a single input is a copy
  };
  for (const ConcatCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      std::ostringstream trace;
      trace << "axis " << c.axis << " " << dtype_name(dt);
      for (const Shape& s : c.ins) trace << " " << shape_str(s);
      SCOPED_TRACE(trace.str());
      std::vector<Tensor> xs;
      for (size_t k = 0; k < c.ins.size(); ++k)
        xs.push_back(random_of(dt, c.ins[k], 100 + static_cast<uint32_t>(k)));
      std::vector<const Tensor*> ptrs;
      for (const Tensor& x : xs) ptrs.push_back(&x);
      Attributes a;
      a.set("axis", c.axis);
      auto out = run_op(OpKind::Concat, a, ptrs);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();

      // Expected: walk the output; find which input covers the index on the axis.
      const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.ins[0].size()) : c.axis;
      Shape os = c.ins[0];
      os[axis] = 0;
      for (const Shape& s : c.ins) os[axis] += s[axis];
      Tensor want(dt, os);
      const size_t es = dtype_size(dt);
      for (int64_t i = 0; i < want.numel(); ++i) {
        std::vector<int64_t> m = unravel(i, os);
        size_t k = 0;
        while (m[axis] >= c.ins[k][axis]) m[axis] -= c.ins[k++][axis];
        std::memcpy(static_cast<char*>(want.raw()) + i * es,
                    static_cast<const char*>(xs[k].raw()) + ravel(m, c.ins[k]) * es, es);
      }
      expect_same((*out)[0], want);
    }
  }
}

TEST(Concat, Errors) {
  Tensor a = random_of(DataType::kFloat32, {2, 3});
  Tensor b = random_of(DataType::kFloat32, {3, 3});
  Tensor c = random_of(DataType::kFloat32, {2, 3, 1});
  Tensor d = random_of(DataType::kInt64, {2, 3});
  Attributes axis1;
  axis1.set("axis", int64_t{1});
  expect_error(OpKind::Concat, axis1, {&a, &b}, "input 1 shape [3,3] does not match");
  expect_error(OpKind::Concat, axis1, {&a, &c}, "does not match input 0 shape [2,3]");
  expect_error(OpKind::Concat, axis1, {&a, &d}, "input 1: expected float32, got int64");
  Attributes axis2;
  axis2.set("axis", int64_t{2});
  expect_error(OpKind::Concat, axis2, {&a, &a}, "axis 2 out of range for rank 2");
  expect_error(OpKind::Concat, {}, {&a, &a}, "missing attribute axis");
}

}  // namespace
}  // namespace kiln::test
