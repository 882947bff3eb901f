#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

// Random indices in [-n, n) of the given type (negative ones count from the end).
Tensor random_indices(DataType dt, const Shape& shape, int64_t n, uint32_t seed) {
  Tensor t(dt, shape);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(-n, n - 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::kInt64)
      t.data<int64_t>()[i] = dist(gen);
    else
      t.data<int32_t>()[i] = static_cast<int32_t>(dist(gen));
  }
  return t;
}

struct GatherCase {
  Shape data;
  int64_t axis;
  Shape indices;
};

TEST(Gather, TableOfAxesAndIndexShapes) {
  const std::vector<GatherCase> cases = {
      {{5, 4, 3}, 0, {3}}, {{5, 4, 3}, 1, {2, 2}},    {{5, 4, 3}, 2, {4}}, {{5, 4, 3}, -1, {2, 3}},
      {{5, 4, 3}, -3, {}}, {{5, 4, 3}, 1, {2, 1, 3}}, {{7}, 0, {10}},      {{3, 3}, 1, {1, 2}},
      {{5, 4}, 0, {0}},    {{2, 4, 0}, 1, {3}},
  };
  for (const GatherCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      for (DataType it : {DataType::kInt64, DataType::kInt32}) {
        SCOPED_TRACE(shape_str(c.data) + " axis " + std::to_string(c.axis) + " indices " +
                     shape_str(c.indices) + " " + dtype_name(dt) + "/" + dtype_name(it));
        const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.data.size()) : c.axis;
        const int64_t n = c.data[axis];
        Tensor x = random_of(dt, c.data, 81);
        Tensor idx = random_indices(it, c.indices, n, 82);
        Attributes a;
        a.set("axis", c.axis);
        auto out = run_op(OpKind::Gather, a, {&x, &idx});
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();

        // out[a.., j.., b..] = data[a.., idx[j..], b..]
        const int64_t q = static_cast<int64_t>(c.indices.size());
        Shape os(c.data.begin(), c.data.begin() + axis);
        os.insert(os.end(), c.indices.begin(), c.indices.end());
        os.insert(os.end(), c.data.begin() + axis + 1, c.data.end());
        Tensor want = build_expected(x, os, [&](const std::vector<int64_t>& m) {
          std::vector<int64_t> j(m.begin() + axis, m.begin() + axis + q);
          int64_t v = static_cast<int64_t>(idx.at_double(ravel(j, c.indices)));
          std::vector<int64_t> src(m.begin(), m.begin() + axis);
          src.push_back(v < 0 ? v + n : v);
          src.insert(src.end(), m.begin() + axis + q, m.end());
          return ravel(src, c.data);
        });
        expect_same((*out)[0], want);
      }
    }
  }
}

TEST(Gather, HandComputedExample) {
  Tensor x = Tensor::from_floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor idx = Tensor::from_int64s({2, 2}, {0, 1, -1, 2});
  auto out = run_op(OpKind::Gather, {}, {&x, &idx});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_same((*out)[0],
              Tensor::from_floats({2, 2, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
}

TEST(Gather, Errors) {
  Tensor x = random_of(DataType::kFloat32, {4, 3});
  Tensor high = Tensor::from_int64s({2}, {0, 4});
  Tensor low = Tensor::from_int64s({2}, {-5, 0});
  expect_error(OpKind::Gather, {}, {&x, &high}, "index 4 out of range for axis 0 of size 4");
  expect_error(OpKind::Gather, {}, {&x, &low}, "index -5 out of range");
  Tensor f = random_tensor({2});
  expect_error(OpKind::Gather, {}, {&x, &f}, "expected int32 or int64, got float32");
  Tensor ok = Tensor::from_int64s({1}, {0});
  Attributes a;
  a.set("axis", int64_t{2});
  expect_error(OpKind::Gather, a, {&x, &ok}, "axis 2 out of range for rank 2");
}

}  // namespace
}  // namespace kiln::test
