// oneDNN MaxPool / AveragePool / GlobalAveragePool against the reference kernels on random data
// over a table of kernels, strides, pads, dilations, ceil mode, auto_pad and count_include_pad.
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

struct PoolCase {
  const char* name;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  const char* auto_pad;  // nullptr: absent
  bool ceil_mode;
  bool count_include_pad;  // AveragePool only
};

const PoolCase kCases[] = {
    {"2x2_s2", {2, 3, 8, 8}, {2, 2}, {2, 2}, {}, {}, nullptr, false, false},
    {"3x3_s2_pad1", {1, 16, 15, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, nullptr, false, false},
    {"3x3_s2_pad1_incl", {1, 16, 15, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, nullptr, false, true},
    {"asym_pad", {1, 4, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}, {}, nullptr, false, false},
    {"asym_pad_incl", {1, 4, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}, {}, nullptr, false, true},
    {"ceil", {1, 3, 10, 10}, {3, 3}, {2, 2}, {}, {}, nullptr, true, false},
    {"ceil_pad", {1, 3, 9, 12}, {2, 3}, {2, 2}, {1, 0, 0, 1}, {}, nullptr, true, false},
    // Ceil-mode overflow counted as padding: falls back to the reference, same result.
    {"ceil_incl", {1, 3, 10, 10}, {3, 3}, {2, 2}, {}, {}, nullptr, true, true},
    {"same_upper", {1, 5, 7, 8}, {3, 2}, {2, 3}, {}, {}, "SAME_UPPER", false, false},
    {"same_lower_incl", {1, 5, 7, 8}, {3, 3}, {2, 2}, {}, {}, "SAME_LOWER", false, true},
    {"valid", {1, 2, 9, 7}, {4, 2}, {3, 1}, {}, {}, "VALID", false, false},
    {"global_7x7", {2, 32, 7, 7}, {7, 7}, {}, {}, {}, nullptr, false, false},
};

void check_pool(OpKind op, const PoolCase& c, std::vector<int64_t> dilations, uint32_t seed) {
  Graph g;
  Attributes a;
  a.set("kernel_shape", c.kernel);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!dilations.empty()) a.set("dilations", dilations);
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  if (c.ceil_mode) a.set("ceil_mode", int64_t{1});
  if (op == OpKind::AveragePool && c.count_include_pad) a.set("count_include_pad", int64_t{1});
  Value* y = g.add_value("y");
  y->dtype = DataType::kFloat32;
  Node* n = g.add_node(op, "pool", {f32_value(g, "x", c.x)}, {y}, a);
  const Backend& dnnl = onednn_backend(2);
  ASSERT_TRUE(dnnl.supports(*n));
  Tensor x = random_tensor(c.x, seed);
  std::unique_ptr<Kernel> kernel;
  expect_matches_reference(dnnl, *n, {&x}, &kernel);
  ASSERT_TRUE(kernel);
  // Only AveragePool counting padding over ceil-mode overflow runs the reference.
  const bool want_reference = op == OpKind::AveragePool && c.count_include_pad && c.ceil_mode;
  EXPECT_EQ(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference(), want_reference);
}

TEST(DnnlPool, MaxPoolMatchesReference) {
  uint32_t seed = 100;
  for (const PoolCase& c : kCases) {
    SCOPED_TRACE(c.name);
    check_pool(OpKind::MaxPool, c, {}, ++seed);
  }
}

TEST(DnnlPool, DilatedMaxPoolMatchesReference) {
  uint32_t seed = 200;
  for (const PoolCase& c : kCases) {
    if (c.auto_pad || c.kernel[0] == 7) continue;  // keep the dilated window inside X
    SCOPED_TRACE(c.name);
    check_pool(OpKind::MaxPool, c, {2, 2}, ++seed);
  }
}

TEST(DnnlPool, AveragePoolMatchesReference) {
  uint32_t seed = 300;
  for (const PoolCase& c : kCases) {
    SCOPED_TRACE(c.name);
    check_pool(OpKind::AveragePool, c, {}, ++seed);
  }
}

// GlobalAveragePool: one average over each plane, odd and 1×1 planes included; a 3-D input
// stays on the reference.
TEST(DnnlPool, GlobalAveragePoolMatchesReference) {
  uint32_t seed = 400;
  for (Shape xs :
       {Shape{2, 32, 7, 7}, Shape{1, 3, 5, 9}, Shape{3, 17, 1, 1}, Shape{1, 1280, 7, 7}}) {
    SCOPED_TRACE(shape_str(xs));
    Graph g;
    Value* y = g.add_value("y");
    y->dtype = DataType::kFloat32;
    Node* n = g.add_node(OpKind::GlobalAveragePool, "gap", {f32_value(g, "x", xs)}, {y});
    const Backend& dnnl = onednn_backend(2);
    ASSERT_TRUE(dnnl.supports(*n));
    Tensor x = random_tensor(xs, ++seed);
    std::unique_ptr<Kernel> kernel;
    expect_matches_reference(dnnl, *n, {&x}, &kernel);
    ASSERT_TRUE(kernel);
    EXPECT_FALSE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).uses_reference());
  }
  Graph g;
  Node* gap3d = g.add_node(OpKind::GlobalAveragePool, "gap3", {f32_value(g, "x3", {1, 2, 4, 4, 4})},
                           {f32_value(g, "y3", {})});
  EXPECT_FALSE(onednn_backend(1).supports(*gap3d));
}

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
}

}  // namespace
}  // namespace kiln::test
