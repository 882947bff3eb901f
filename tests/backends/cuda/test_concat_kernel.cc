// Concat CUDA kernel against the reference: channel concats of rank-4 activations (kept in
// NHWC when offered), other axes and ranks (plain), odd sizes that force narrow copies,
// integer shape tensors, a constant input; error cases.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct ConcatCase {
  std::vector<Shape> inputs;
  int64_t axis;
};

TEST(CudaConcatKernel, MatchesReference) {
  const std::vector<ConcatCase> cases = {
      {{{1, 3, 7, 5}, {1, 5, 7, 5}}, 1},
      {{{2, 17, 9, 11}, {2, 8, 9, 11}, {2, 1, 9, 11}}, 1},
      {{{2, 64, 14, 14}, {2, 32, 14, 14}, {2, 32, 14, 14}, {2, 128, 14, 14}}, -3},
      {{{2, 3, 4, 5}, {2, 3, 2, 5}}, 2},
      {{{2, 3, 4, 5}, {2, 3, 4, 7}}, -1},
      {{{1, 3, 4, 5}, {2, 3, 4, 5}}, 0},
      {{{3, 5}, {3, 7}, {3, 1}}, 1},
      {{{4, 6}, {2, 6}}, 0},
      {{{2, 3, 5}, {2, 4, 5}}, 1},
      {{{1, 2, 3, 4, 5}, {1, 2, 3, 1, 5}}, 3},
      {{{7}, {9}, {16}}, 0},
      {{{2, 8, 6, 6}}, 1},
      {{{2, 0, 6, 6}, {2, 8, 6, 6}}, 1},
  };
  uint32_t seed = 1;
  for (const ConcatCase& c : cases) {
    Attributes a;
    a.set("axis", c.axis);
    auto g = one_node(OpKind::Concat, c.inputs, a);
    std::vector<Tensor> xs;
    for (const Shape& s : c.inputs) xs.push_back(random_tensor(s, seed++));
    std::vector<const Tensor*> in;
    for (const Tensor& t : xs) in.push_back(&t);
    SCOPED_TRACE(shape_str(c.inputs[0]) + " axis " + std::to_string(c.axis));
    expect_all_match(*g->node, in);
  }
}

TEST(CudaConcatKernel, ConstantInputStaysPlain) {
  Tensor k = random_tensor({1, 4, 5, 6}, 11);
  Attributes a;
  a.set("axis", int64_t{1});
  auto g = one_node(OpKind::Concat, {{1, 3, 5, 6}, {1, 4, 5, 6}}, a, 1, {Tensor(), k});
  Tensor x = random_tensor({1, 3, 5, 6}, 12);
  expect_all_match(*g->node, {&x, &k});
}

TEST(CudaConcatKernel, Int64ShapeTensors) {
  Attributes a;
  a.set("axis", int64_t{0});
  auto g = one_node(OpKind::Concat, {{2}, {1}, {3}}, a);
  for (Value* v : g->node->inputs) v->dtype = DataType::kInt64;
  std::vector<Tensor> xs;
  int64_t next = -5;
  for (int64_t n : {2, 1, 3}) {
    Tensor t(DataType::kInt64, {n});
    for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = next++ * 1000003;
    xs.push_back(std::move(t));
  }
  for (Precision p : kPrecisions)
    expect_cuda_matches_reference(*g->node, {&xs[0], &xs[1], &xs[2]}, p);
}

TEST(CudaConcatKernel, Errors) {
  {  // no axis attribute
    auto g = one_node(OpKind::Concat, {{1, 3}, {1, 3}}, {});
    CudaKernelFactory f = CudaKernelRegistry::find(OpKind::Concat);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f(*g->node, Precision::kFp32).is_ok());
  }
  {  // shapes that disagree outside the axis fail at prepare
    Attributes a;
    a.set("axis", int64_t{1});
    auto g = one_node(OpKind::Concat, {{1, 3, 4, 4}, {1, 3, 5, 4}}, a);
    Tensor x0 = random_tensor({1, 3, 4, 4}, 1), x1 = random_tensor({1, 3, 5, 4}, 2);
    EXPECT_FALSE(run_cuda_node(*g->node, {&x0, &x1}, Precision::kFp32).is_ok());
  }
}

}  // namespace
}  // namespace kiln::test
