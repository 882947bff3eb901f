#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

TEST(Relu, MatchesDefinitionOnRandomData) {
  Tensor x = random_tensor({2, 3, 4, 5}, 7);
  auto out = run_op(OpKind::Relu, {}, {&x});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  Tensor want(DataType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) want.data<float>()[i] = std::max(x.data<float>()[i], 0.f);
  expect_near((*out)[0], want, 0);
}

TEST(Relu, WrongInputCountIsAnError) {
  Tensor x = random_tensor({3});
  auto out = run_op(OpKind::Relu, {}, {&x, &x});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("test_node"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
