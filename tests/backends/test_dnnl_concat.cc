// oneDNN Concat against the reference on random data: every axis, several inputs, negative
// axes; empty inputs go to the reference kernel.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

TEST(DnnlConcat, MatchesReferenceOnEveryAxis) {
  uint32_t seed = 30;
  const Shape base{2, 3, 4, 5};
  for (int64_t axis = -4; axis < 4; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const size_t d = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
    std::vector<OpInput> ins;
    for (int64_t len : {1, 3, 2}) {
      Shape s = base;
      s[d] = len;
      ins.push_back({random_tensor(s, ++seed)});
    }
    ins[1].constant = true;  // an initializer among the inputs
    Attributes a;
    a.set("axis", axis);
    EXPECT_TRUE(dnnl_matches_reference(OpKind::Concat, a, ins));
  }
}

TEST(DnnlConcat, LargeChannelConcat) {
  Attributes a;
  a.set("axis", int64_t{1});
  EXPECT_TRUE(dnnl_matches_reference(
      OpKind::Concat, a,
      {{random_tensor({4, 21, 112, 112}, 6)}, {random_tensor({4, 11, 112, 112}, 7)}}));
}

TEST(DnnlConcat, OneInputAndRankOne) {
  Attributes a;
  a.set("axis", int64_t{0});
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Concat, a, {{random_tensor({7}, 1)}}));
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Concat, a,
                                     {{random_tensor({7}, 2)}, {random_tensor({3}, 3)}}));
}

TEST(DnnlConcat, EmptyInputRunsTheReference) {
  Attributes a;
  a.set("axis", int64_t{1});
  Tensor empty(DataType::kFloat32, {2, 0, 3});
  EXPECT_FALSE(dnnl_matches_reference(
      OpKind::Concat, a, {{random_tensor({2, 4, 3}, 4)}, {empty}, {random_tensor({2, 1, 3}, 5)}}));
}

}  // namespace
}  // namespace kiln::test
