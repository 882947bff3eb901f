// Gather CUDA kernel against the reference: constant int64/int32 indices of rank 0 to 2,
// negative and repeated indices, every axis, rows of odd byte sizes, int64 data; fp32 and
// fp16; the cases left to the CPU or rejected.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

Tensor indices(const Shape& shape, const std::vector<int64_t>& v, DataType dt) {
  Tensor t(dt, shape);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DataType::kInt64)
      t.data<int64_t>()[i] = v[i];
    else
      t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return t;
}

struct GatherCase {
  Shape x;
  int64_t axis;
  Shape idx_shape;
  std::vector<int64_t> idx;
};

TEST(CudaGatherKernel, MatchesReference) {
  const std::vector<GatherCase> cases = {
      {{2, 17, 9, 11}, 1, {3}, {0, 16, -2}},       {{2, 17, 9, 11}, 0, {}, {1}},
      {{2, 17, 9, 11}, -1, {2, 2}, {10, 0, 3, 3}}, {{2, 17, 9, 11}, 3, {}, {-1}},
      {{1, 3, 7, 5}, 2, {4}, {6, 5, 0, 6}},        {{10, 7}, 0, {2, 3}, {9, 0, 1, -10, 4, 4}},
      {{33}, 0, {5}, {32, 0, 7, 7, -1}},           {{4, 3, 2}, 1, {0}, {}},
  };
  uint32_t seed = 1;
  for (DataType dt : {DataType::kInt64, DataType::kInt32})
    for (const GatherCase& c : cases) {
      Attributes a;
      a.set("axis", c.axis);
      Tensor idx = indices(c.idx_shape, c.idx, dt);
      auto g = one_node(OpKind::Gather, {c.x, c.idx_shape}, a, 1, {Tensor(), idx});
      Tensor x = random_tensor(c.x, seed++);
      SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis) + " indices " +
                   shape_str(c.idx) + " " + dtype_name(dt));
      expect_all_match(*g->node, {&x, &idx});
    }
}

TEST(CudaGatherKernel, Int64Data) {
  Attributes a;
  a.set("axis", int64_t{0});
  Tensor idx = indices({2}, {3, 0}, DataType::kInt64);
  auto g = one_node(OpKind::Gather, {{4}, {2}}, a, 1, {Tensor(), idx});
  g->node->inputs[0]->dtype = DataType::kInt64;
  Tensor x = indices({4}, {11, -22, 33, 123456789}, DataType::kInt64);
  expect_cuda_matches_reference(*g->node, {&x, &idx}, Precision::kFp16);
}

TEST(CudaGatherKernel, Errors) {
  {  // indices computed at run time
    auto g = one_node(OpKind::Gather, {{4, 3}, {2}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // index out of range: rejected at prepare
    Tensor idx = indices({1}, {4}, DataType::kInt64);
    auto g = one_node(OpKind::Gather, {{4, 3}, {1}}, {}, 1, {Tensor(), idx});
    Tensor x = random_tensor({4, 3}, 2);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x, &idx}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
