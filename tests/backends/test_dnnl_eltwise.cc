// oneDNN activations beyond the op case tables (tests/ops/cases/activations.cc): Clip's
// bounds, constant and computed, and a kernel prepared again for new shapes.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

TEST(DnnlEltwise, ClipBoundsFromConstants) {
  Tensor x = random_tensor({2, 8, 4, 4}, 5, -3.f, 3.f);
  const Tensor lo = Tensor::from_floats({}, {-0.5f}), hi = Tensor::from_floats({}, {0.75f});
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Clip, {}, {{x}, {lo, true}, {hi, true}}));
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Clip, {}, {{x}, {lo, true}}));              // no max
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Clip, {}, {{x}, {Tensor()}, {hi, true}}));  // no min
  EXPECT_TRUE(dnnl_matches_reference(OpKind::Clip, {}, {{x}}));                          // neither
  // min > max: ONNX gives max everywhere, which oneDNN's clip does not: the reference runs.
  EXPECT_FALSE(dnnl_matches_reference(OpKind::Clip, {}, {{x}, {hi, true}, {lo, true}}));
}

// Bounds computed in the graph: the kernel reads them when prepared, and prepares again when
// their values change while every shape stays the same.
TEST(DnnlEltwise, ClipWithComputedBoundsFollowsTheirValues) {
  Graph g;
  Node* n =
      g.add_node(OpKind::Clip, "clip",
                 {f32_value(g, "x", {2, 8, 4, 4}), f32_value(g, "lo", {}), f32_value(g, "hi", {})},
                 {f32_value(g, "y", {2, 8, 4, 4})});
  ASSERT_TRUE(onednn_backend(2).supports(*n));
  auto kernel = onednn_backend(2).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  const Tensor x = random_tensor({2, 8, 4, 4}, 9, -3.f, 3.f);
  for (auto [lo, hi] : {std::pair{-0.5f, 0.5f}, std::pair{-2.f, 1.f}, std::pair{-0.5f, 0.5f}}) {
    SCOPED_TRACE(std::to_string(lo) + ", " + std::to_string(hi));
    const Tensor tl = Tensor::from_floats({}, {lo}), th = Tensor::from_floats({}, {hi});
    auto got = prepare_and_run(**kernel, {&x, &tl, &th});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(**kernel).prepared());
    auto want = run_backend(reference_backend(), *n, {&x, &tl, &th});
    ASSERT_TRUE(want.is_ok());
    expect_near(*got, (*want)[0], 0, 0);
  }
}

// Re-prepared for a new shape, the kernel still matches (the view is the element count).
TEST(DnnlEltwise, ReprepareOnShapeChange) {
  Graph g;
  Node* n =
      g.add_node(OpKind::Sigmoid, "s", {f32_value(g, "x", {1, 4})}, {f32_value(g, "y", {1, 4})});
  auto kernel = onednn_backend(2).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  for (Shape s : {Shape{1, 4}, Shape{3, 5, 2}, Shape{1, 4}}) {
    Tensor x = random_tensor(s, 11);
    auto got = prepare_and_run(**kernel, {&x});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto want = run_backend(reference_backend(), *n, {&x});
    ASSERT_TRUE(want.is_ok());
    expect_near(*got, (*want)[0], 1e-6, 1e-5);
  }
}

}  // namespace
}  // namespace kiln::test
