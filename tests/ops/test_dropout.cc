#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Dropout, InferenceIsIdentityWithAllTrueMask) {
  uint32_t seed = 1;
  for (DataType dt : kTestFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_of(dt, {2, 3, 4}, ++seed);
    Tensor ratio = Tensor::from_floats({}, {0.5f});
    Tensor off = make_tensor(DataType::kBool, {}, {0});
    // Data only; data + ratio; data + ratio + training_mode=false; with and without mask.
    for (const auto& ins : std::vector<std::vector<const Tensor*>>{
             {&x}, {&x, &ratio}, {&x, &ratio, &off}, {&x, nullptr, &off}}) {
      auto out = run_op(OpKind::Dropout, {}, ins, 2);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      expect_near((*out)[0], x, 0);
      expect_near((*out)[1], make_tensor(DataType::kBool, x.shape(), std::vector<double>(24, 1)),
                  0);
      expect_near(run_ok(OpKind::Dropout, {}, ins), x, 0);
    }
  }
}

TEST(Dropout, TrainingModeIsUnsupported) {
  Tensor x = random_of(DataType::kFloat32, {3}, 1);
  Tensor on = make_tensor(DataType::kBool, {}, {1});
  auto out = run_op(OpKind::Dropout, {}, {&x, nullptr, &on});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(out.status().message().find("training-mode Dropout"), std::string::npos);
}

// Training mode with ratio 0 drops nothing and scales by 1: the identity (PyTorch exports
// Swin's attention dropout, p = 0, so). Any other ratio stays unsupported.
TEST(Dropout, TrainingModeWithRatioZeroIsTheIdentity) {
  Tensor x = random_of(DataType::kFloat32, {2, 5}, 3);
  Tensor on = make_tensor(DataType::kBool, {}, {1});
  Tensor zero = Tensor::from_floats({}, {0.f});
  expect_near(run_ok(OpKind::Dropout, {}, {&x, &zero, &on}), x, 0);
  Tensor tenth = Tensor::from_floats({}, {0.1f});
  auto out = run_op(OpKind::Dropout, {}, {&x, &tenth, &on});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(out.status().message().find("ratio not 0"), std::string::npos);
}

TEST(Dropout, Errors) {
  Tensor i = random_of(DataType::kInt32, {3}, 1);
  expect_error(OpKind::Dropout, {}, {&i}, "got int32");
  Tensor x = random_of(DataType::kFloat32, {3}, 1);
  Tensor f = Tensor::from_floats({}, {1.f});
  expect_error(OpKind::Dropout, {}, {&x, nullptr, &f}, "training_mode): expected bool");
}

}  // namespace
}  // namespace kiln::test
