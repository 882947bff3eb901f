// The CPU backend's Resize beyond the op case tables (tests/ops/cases/resize.cc, which run
// every mode, coordinate transform and rounding rule through oneDNN and the reference): sizes
// computed in the graph.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

// Sizes computed in the graph (segmentation exports take them from a Shape): read when the
// kernel is prepared, and a new value with the same input shape prepares it again.
TEST(DnnlResize, ComputedSizesFollowTheirValues) {
  Graph g;
  Attributes a;
  a.set("mode", std::string("linear"));
  Value* sizes = g.add_value("sizes");
  sizes->dtype = DataType::kInt64;
  Value* y = g.add_value("y");
  y->dtype = DataType::kFloat32;
  Node* n = g.add_node(OpKind::Resize, "r",
                       {f32_value(g, "x", {1, 3, 5, 6}), nullptr, nullptr, sizes}, {y}, a);
  ASSERT_TRUE(onednn_backend(2).supports(*n));
  auto kernel = onednn_backend(2).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  const Tensor x = random_tensor({1, 3, 5, 6}, 17);
  for (std::vector<int64_t> s :
       {std::vector<int64_t>{1, 3, 10, 12}, {1, 3, 7, 4}, {1, 3, 10, 12}}) {
    SCOPED_TRACE(shape_str(s));
    const Tensor st = Tensor::from_int64s({4}, s);
    auto got = prepare_and_run(**kernel, {&x, nullptr, nullptr, &st});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->shape(), Shape(s.begin(), s.end()));
    EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(**kernel).prepared());
    auto want = run_backend(reference_backend(), *n, {&x, nullptr, nullptr, &st});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    expect_near(*got, (*want)[0], 1e-6, 1e-5);
  }
}

}  // namespace
}  // namespace kiln::test
