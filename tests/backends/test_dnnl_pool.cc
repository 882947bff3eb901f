// oneDNN pools beyond the op case tables (tests/ops/cases/pool.cc, which run every window, pad
// and ceil mode against the reference): the nodes oneDNN leaves to the reference kernel.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

// MaxPool with its Indices output, 3-D pooling and non-float inputs stay on the reference.
TEST(DnnlPool, DeclinesIndicesOtherRanksAndDtypes) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  Graph g;
  Node* with_indices = g.add_node(OpKind::MaxPool, "p", {f32_value(g, "x", {1, 2, 4, 4})},
                                  {f32_value(g, "y", {1, 2, 3, 3}), g.add_value("i")}, a);
  EXPECT_FALSE(onednn_backend(1).supports(*with_indices));
  Attributes a3;
  a3.set("kernel_shape", std::vector<int64_t>{2, 2, 2});
  Node* pool3d = g.add_node(OpKind::MaxPool, "p3", {f32_value(g, "x3", {1, 2, 4, 4, 4})},
                            {f32_value(g, "y3", {1, 2, 3, 3, 3})}, a3);
  EXPECT_FALSE(onednn_backend(1).supports(*pool3d));
  Value* x16 = g.add_value("x16");
  x16->dtype = DataType::kFloat16;
  Value* y16 = g.add_value("y16");
  y16->dtype = DataType::kFloat16;
  Node* half = g.add_node(OpKind::AveragePool, "p16", {x16}, {y16}, a);
  EXPECT_FALSE(onednn_backend(1).supports(*half));
  Node* gap3d = g.add_node(OpKind::GlobalAveragePool, "gap3", {f32_value(g, "x4", {1, 2, 4, 4, 4})},
                           {f32_value(g, "y4", {})});
  EXPECT_FALSE(onednn_backend(1).supports(*gap3d));
}

}  // namespace
}  // namespace kiln::test
