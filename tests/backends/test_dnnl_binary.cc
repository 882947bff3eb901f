// oneDNN Add/Sub/Mul/Div against the reference on random data over broadcast patterns: which
// input broadcasts decides whether oneDNN runs it (dnnl_binary.cc).
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

struct BinaryCase {
  const char* name;
  Shape a, b;
  bool b_constant;
  bool onednn_for_div;  // whether Div runs on oneDNN (the dividend has the full shape)
};

const BinaryCase kCases[] = {
    {"same", {2, 3, 5, 7}, {2, 3, 5, 7}, false, true},
    {"per_channel_const", {2, 8, 6, 6}, {8, 1, 1}, true, true},
    {"se_scale", {2, 16, 7, 7}, {2, 16, 1, 1}, false, true},
    {"scalar", {3, 5}, {}, true, true},
    {"rank1_last", {4, 3, 10}, {10}, false, true},
    {"first_broadcasts", {1, 4, 1, 1}, {3, 4, 5, 6}, false, false},
    {"rank5", {2, 2, 3, 4, 5}, {1, 2, 1, 4, 1}, false, true},
    // Over a million elements (oneDNN's JIT kernels have failed only at such sizes).
    {"large_se", {4, 21, 112, 112}, {4, 21, 1, 1}, false, true},
};

TEST(DnnlBinary, MatchesReferenceOverBroadcasts) {
  uint32_t seed = 100;
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    for (const BinaryCase& c : kCases) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + c.name);
      Tensor a = random_tensor(c.a, ++seed), b = random_tensor(c.b, ++seed);
      if (op == OpKind::Div)  // divisors away from 0
        for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] += 2.f;
      const bool onednn = dnnl_matches_reference(op, {}, {{a}, {b, c.b_constant}});
      EXPECT_EQ(onednn, op != OpKind::Div || c.onednn_for_div);
    }
}

// Both inputs broadcast ([N,1] with [1,M]): oneDNN cannot; the reference kernel runs.
TEST(DnnlBinary, BothBroadcastingRunsTheReference) {
  Tensor a = random_tensor({4, 1}, 1), b = random_tensor({1, 5}, 2);
  EXPECT_FALSE(dnnl_matches_reference(OpKind::Add, {}, {{a}, {b}}));
}

// A fused activation rides along as a post-op.
TEST(DnnlBinary, FusedActivation) {
  Graph g;
  Tensor a = random_tensor({2, 4, 3, 3}, 3), b = random_tensor({2, 4, 3, 3}, 4);
  Node* n =
      g.add_node(OpKind::Add, "add", {f32_value(g, "a", a.shape()), f32_value(g, "b", b.shape())},
                 {f32_value(g, "y", a.shape())});
  n->epilogue.act = Activation::kRelu;
  ASSERT_TRUE(onednn_backend(2).supports(*n));
  std::unique_ptr<Kernel> kernel;
  expect_matches_reference(onednn_backend(2), *n, {&a, &b}, &kernel);
  EXPECT_FALSE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference());
}

// Integer arithmetic (shape computations) stays on the reference backend.
TEST(DnnlBinary, DeclinesOtherDtypes) {
  Graph g;
  Value* a = g.add_value("a");
  a->dtype = DataType::kInt64;
  Value* b = g.add_value("b");
  b->dtype = DataType::kInt64;
  Node* n = g.add_node(OpKind::Mul, "mul", {a, b}, {g.add_value("y")});
  EXPECT_FALSE(onednn_backend(2).supports(*n));
}

}  // namespace
}  // namespace kiln::test
