#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

struct RangeCase {
  double start, limit, delta;
  std::vector<double> want;
};

TEST(Range, TableOfSequences) {
  const std::vector<RangeCase> cases = {
      {3, 9, 3, {3, 6}},  // the ONNX example
      {10, 4, -3, {10, 7}}, {0, 5, 1, {0, 1, 2, 3, 4}}, {5, 5, 1, {}},
      {5, 0, 1, {}},        {-2, 3, 2, {-2, 0, 2}},
  };
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kInt16, DataType::kInt32,
                      DataType::kInt64})
    for (const RangeCase& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(c.start) + ".." +
                   std::to_string(c.limit) + " by " + std::to_string(c.delta));
      Tensor s = make_tensor(dt, {}, {c.start}), l = make_tensor(dt, {}, {c.limit}),
             d = make_tensor(dt, {}, {c.delta});
      expect_near(run_ok(OpKind::Range, {}, {&s, &l, &d}),
                  make_tensor(dt, {static_cast<int64_t>(c.want.size())}, c.want), 0);
    }
  Tensor s = make_tensor(DataType::kFloat32, {}, {1}), l = make_tensor(DataType::kFloat32, {}, {2}),
         d = make_tensor(DataType::kFloat32, {}, {0.3});
  expect_near(run_ok(OpKind::Range, {}, {&s, &l, &d}),
              make_tensor(DataType::kFloat32, {4}, {1, 1.3, 1.6, 1.9}), 1e-6);
}

TEST(Range, Errors) {
  Tensor s = make_tensor(DataType::kInt64, {}, {0}), l = make_tensor(DataType::kInt64, {}, {4}),
         z = make_tensor(DataType::kInt64, {}, {0});
  expect_error(OpKind::Range, {}, {&s, &l, &z}, "delta (input 2) is 0");
  Tensor f = make_tensor(DataType::kFloat32, {}, {1});
  expect_error(OpKind::Range, {}, {&s, &f, &l}, "input 1: expected int64");
  Tensor v = make_tensor(DataType::kInt64, {2}, {1, 2});
  expect_error(OpKind::Range, {}, {&v, &l, &l}, "input 0 must be a scalar");
  Tensor u8 = make_tensor(DataType::kUInt8, {}, {1});
  expect_error(OpKind::Range, {}, {&u8, &u8, &u8}, "input 0: expected one of");
}

}  // namespace
}  // namespace kiln::test
