// ReduceMean, ReduceMax, ReduceL2 and ReduceSum CUDA kernels against the reference: leading, inner,
// trailing and alternating axes, all axes, keepdims 0/1, negative axes, size-1 axes, long
// contiguous reductions (warp path), ReduceSum's axes input and noop_with_empty_axes;
// fp32 and fp16.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct ReduceCase {
  Shape x;
  std::vector<int64_t> axes;  // empty: none given
  int64_t keepdims = 1;
};

const std::vector<ReduceCase> kCases = {
    {{2, 17, 9, 11}, {2, 3}},
    {{2, 17, 9, 11}, {1}, 0},
    {{2, 17, 9, 11}, {-1}},
    {{2, 17, 9, 11}, {}},
    {{2, 17, 9, 11}, {0, 2}, 0},
    {{2, 17, 9, 11}, {1, 3}},
    {{1, 3, 7, 5}, {0, 1, 2, 3}, 0},
    {{3, 1, 7}, {1}},
    {{3, 1, 7}, {0, 1}, 0},
    {{4, 5000}, {1}},
    {{4, 5000}, {0}, 0},
    {{33}, {0}, 0},
    {{2, 3, 4, 5, 6}, {1, 3}},
    {{2, 3, 4, 5, 6}, {-1, -2, 0}, 0},
    {{8, 2048, 7, 7}, {2, 3}},
};

TEST(CudaReduceKernel, MeanAndMaxMatchReference) {
  uint32_t seed = 1;
  for (OpKind op : {OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceL2})
    for (const ReduceCase& c : kCases) {
      Attributes a;
      if (!c.axes.empty()) a.set("axes", c.axes);
      a.set("keepdims", c.keepdims);
      auto g = one_node(op, {c.x}, a);
      Tensor x = random_tensor(c.x, seed++, -2.f, 2.f);
      SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(c.x) + " axes " + shape_str(c.axes) +
                   " keepdims " + std::to_string(c.keepdims));
      expect_all_match(*g->node, {&x});
    }
}

TEST(CudaReduceKernel, SumMatchesReference) {
  uint32_t seed = 100;
  for (const ReduceCase& c : kCases) {
    Attributes a;
    a.set("keepdims", c.keepdims);
    Tensor axes(DataType::kInt64, {int64_t(c.axes.size())});
    for (size_t i = 0; i < c.axes.size(); ++i) axes.data<int64_t>()[i] = c.axes[i];
    auto g = one_node(OpKind::ReduceSum, {c.x, axes.shape()}, a, 1, {Tensor(), axes});
    Tensor x = random_tensor(c.x, seed++, 0.f, 2.f);
    SCOPED_TRACE(shape_str(c.x) + " axes " + shape_str(c.axes));
    expect_all_match(*g->node, {&x, &axes});
  }
  {  // no axes input: everything
    auto g = one_node(OpKind::ReduceSum, {{3, 5, 7}}, {});
    Tensor x = random_tensor({3, 5, 7}, seed++);
    expect_all_match(*g->node, {&x});
  }
  {  // empty axes with noop_with_empty_axes: a copy
    Attributes a;
    a.set("noop_with_empty_axes", int64_t{1});
    Tensor axes(DataType::kInt64, {0});
    auto g = one_node(OpKind::ReduceSum, {{3, 5, 7}, {0}}, a, 1, {Tensor(), axes});
    Tensor x = random_tensor({3, 5, 7}, seed++);
    expect_all_match(*g->node, {&x, &axes});
  }
}

TEST(CudaReduceKernel, Errors) {
  {  // integer input
    Attributes a;
    a.set("axes", std::vector<int64_t>{1});
    auto g = one_node(OpKind::ReduceMax, {{2, 3}}, a);
    g->node->inputs[0]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // axes computed at run time
    auto g = one_node(OpKind::ReduceSum, {{2, 3}, {1}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // repeated axis: rejected at prepare
    Attributes a;
    a.set("axes", std::vector<int64_t>{1, -1});
    auto g = one_node(OpKind::ReduceMean, {{2, 3}}, a);
    Tensor x = random_tensor({2, 3}, 7);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
