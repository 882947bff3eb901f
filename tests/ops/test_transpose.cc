#include <algorithm>

#include "ops/shape_op_test_util.h"

namespace kiln::test {
namespace {

// Expected transpose by the definition: out[m] = in[i] with i[perm[d]] = m[d].
Tensor transpose_expected(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape os(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) os[d] = x.dim(perm[d]);
  return build_expected(x, os, [&](const std::vector<int64_t>& m) {
    std::vector<int64_t> i(m.size());
    for (size_t d = 0; d < m.size(); ++d) i[perm[d]] = m[d];
    return ravel(i, x.shape());
  });
}

TEST(Transpose, EveryPermutationOfRank3And4) {
  for (Shape s : {Shape{2, 3, 4}, Shape{2, 3, 1, 5}}) {
    std::vector<int64_t> perm(s.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    do {
      for (DataType dt : movable_dtypes()) {
        SCOPED_TRACE(shape_str(s) + " perm " + shape_str(perm) + " " + dtype_name(dt));
        Tensor x = random_of(dt, s, 21);
        Attributes a;
        a.set("perm", perm);
        auto out = run_op(OpKind::Transpose, a, {&x});
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        expect_same((*out)[0], transpose_expected(x, perm));
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(Transpose, DefaultReversesAxes) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3, 4}, {2, 1, 0}}, {{5, 7}, {1, 0}}, {{6}, {0}}, {{}, {}}, {{3, 0, 2}, {2, 1, 0}}};
  for (const auto& [s, reversed] : cases) {
    SCOPED_TRACE(shape_str(s));
    Tensor x = random_of(DataType::kInt64, s, 4);
    auto out = run_op(OpKind::Transpose, {}, {&x});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_same((*out)[0], transpose_expected(x, reversed));
  }
}

TEST(Transpose, BadPermIsAnError) {
  Tensor x = random_of(DataType::kFloat32, {2, 3, 4});
  for (const std::vector<int64_t>& perm :
       std::vector<std::vector<int64_t>>{{0, 1, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    Attributes a;
    a.set("perm", perm);
    expect_error(OpKind::Transpose, a, {&x}, "is not a permutation of 0..2");
  }
  Attributes a;
  a.set("perm", std::vector<int64_t>{1, 0});
  expect_error(OpKind::Transpose, a, {&x}, "has 2 entries for rank 3");
}

}  // namespace
}  // namespace kiln::test
