#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

struct ExpandCase {
  Shape in;
  std::vector<int64_t> shape;
  Shape want;
};

TEST(Expand, TableOfShapes) {
  const std::vector<ExpandCase> cases = {
      {{3, 1}, {2, 1, 6}, {2, 3, 6}},  // the ONNX examples
      {{3, 1}, {3, 4}, {3, 4}},
      {{1}, {2, 3}, {2, 3}},
      {{}, {4}, {4}},
      {{2, 3}, {1, 1}, {2, 3}},  // 1s keep the input's dims
      {{2, 3}, {3}, {2, 3}},     // shorter shape
      {{2, 1, 4}, {5, 1, 3, 1}, {5, 2, 3, 4}},
      {{1, 3}, {0, 3}, {0, 3}},
      {{2, 3}, {}, {2, 3}},
  };
  for (const ExpandCase& c : cases) {
    for (DataType dt : movable_dtypes()) {
      SCOPED_TRACE(shape_str(c.in) + " to " + shape_str(c.shape) + " " + dtype_name(dt));
      Tensor x = random_of(dt, c.in, 91);
      Tensor shape = int64s(c.shape);
      auto out = run_op(OpKind::Expand, {}, {&x, &shape});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      // Right-aligned: an input dim of 1 always reads index 0.
      const size_t off = c.want.size() - c.in.size();
      expect_same((*out)[0], build_expected(x, c.want, [&](const std::vector<int64_t>& m) {
                    std::vector<int64_t> i(c.in.size());
                    for (size_t d = 0; d < c.in.size(); ++d) i[d] = c.in[d] == 1 ? 0 : m[off + d];
                    return ravel(i, c.in);
                  }));
    }
  }
}

TEST(Expand, Errors) {
  Tensor x = random_of(DataType::kFloat32, {2, 3});
  Tensor bad = int64s({4, 3, 2}), negative = int64s({-1, 3});
  expect_error(OpKind::Expand, {}, {&x, &bad}, "do not broadcast");
  expect_error(OpKind::Expand, {}, {&x, &negative}, "negative dimension");
}

TEST(Expand, UnknownShapeValueIsAClearError) {
  auto r =
      infer_op(OpKind::Expand, {}, {{DataType::kFloat32, {2}}, {DataType::kInt64, {1}, nullptr}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("shape) must be a constant"), std::string::npos)
      << r.status().to_string();
}

}  // namespace
}  // namespace kiln::test
