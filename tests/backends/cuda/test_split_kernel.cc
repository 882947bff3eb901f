// Split CUDA kernel against the reference: channel splits of rank-4 activations (kept in
// NHWC when offered), other axes and ranks, the split input, equal pieces, opset 18's
// num_outputs with a short last piece, int64 data; fp32 and fp16.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct SplitCase {
  Shape x;
  int64_t axis;
  size_t outputs;
  std::vector<int64_t> split;  // empty: input omitted
  int64_t num_outputs = 0;     // 0: attribute absent
};

TEST(CudaSplitKernel, MatchesReference) {
  const std::vector<SplitCase> cases = {
      {{2, 17, 9, 11}, 1, 3, {3, 5, 9}}, {{2, 18, 9, 11}, 1, 3, {}},
      {{1, 64, 7, 5}, -3, 2, {}},        {{2, 17, 9, 11}, 2, 2, {4, 5}},
      {{2, 17, 9, 11}, 3, 3, {}, 3},     {{2, 17, 9, 11}, 0, 2, {}},
      {{6, 255}, 1, 3, {85, 85, 85}},    {{5, 7}, -1, 2, {0, 7}},
      {{2, 3, 4, 5, 6}, 4, 4, {}, 4},    {{33}, 0, 3, {}},
  };
  uint32_t seed = 1;
  for (const SplitCase& c : cases) {
    Attributes a;
    a.set("axis", c.axis);
    if (c.num_outputs) a.set("num_outputs", c.num_outputs);
    std::vector<Shape> shapes = {c.x};
    std::vector<Tensor> constants = {Tensor()};
    Tensor split(DataType::kInt64, {int64_t(c.split.size())});
    for (size_t i = 0; i < c.split.size(); ++i) split.data<int64_t>()[i] = c.split[i];
    if (!c.split.empty()) {
      shapes.push_back(split.shape());
      constants.push_back(split);
    }
    auto g = one_node(OpKind::Split, shapes, a, c.outputs, constants);
    Tensor x = random_tensor(c.x, seed++);
    std::vector<const Tensor*> in = {&x};
    if (!c.split.empty()) in.push_back(&split);
    SCOPED_TRACE(shape_str(c.x) + " axis " + std::to_string(c.axis) + " split " +
                 shape_str(c.split));
    expect_all_match(*g->node, in);
  }
}

TEST(CudaSplitKernel, Int64Data) {
  Attributes a;
  a.set("axis", int64_t{0});
  auto g = one_node(OpKind::Split, {{6}}, a, 2);
  g->node->inputs[0]->dtype = DataType::kInt64;
  Tensor x(DataType::kInt64, {6});
  for (int64_t i = 0; i < 6; ++i) x.data<int64_t>()[i] = i * 1001 - 3000;
  expect_cuda_matches_reference(*g->node, {&x}, Precision::kFp32);
}

TEST(CudaSplitKernel, Errors) {
  {  // split sizes computed at run time
    auto g = one_node(OpKind::Split, {{2, 6}, {2}}, {}, 2);
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // unequal without sizes: rejected at prepare
    Attributes a;
    a.set("axis", int64_t{1});
    auto g = one_node(OpKind::Split, {{2, 7}}, a, 2);
    Tensor x = random_tensor({2, 7}, 3);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
