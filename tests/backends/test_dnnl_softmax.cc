// oneDNN Softmax against the reference on random data, every axis of several ranks.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

TEST(DnnlSoftmax, MatchesReferenceOnEveryAxis) {
  uint32_t seed = 20;
  for (Shape s :
       {Shape{4, 1000}, Shape{2, 3, 5, 7}, Shape{9}, Shape{2, 1, 6}, Shape{4, 21, 112, 112}}) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      SCOPED_TRACE(shape_str(s) + " axis " + std::to_string(axis));
      Attributes a;
      a.set("axis", axis);
      Tensor x = random_tensor(s, ++seed, -6.f, 6.f);
      EXPECT_TRUE(dnnl_matches_reference(OpKind::Softmax, a, {{x}}));
    }
  }
  Tensor x = random_tensor({3, 10}, 1, -6.f, 6.f);  // default axis -1
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Softmax, {}, {{x}}));
}

}  // namespace
}  // namespace kiln::test
