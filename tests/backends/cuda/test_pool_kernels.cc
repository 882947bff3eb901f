// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool CUDA kernels against the
// reference: odd shapes and channel counts (each vector width of the NHWC kernels), every
// padding mode, ceil mode, dilations, count_include_pad, ResNet-sized cases; fp32 and fp16;
// plain and NHWC offered.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;  // empty: attribute absent
  std::string auto_pad;                                   // empty: absent
  int64_t ceil_mode = 0;
};

Attributes pool_attrs(const PoolCase& c) {
  Attributes a;
  a.set("kernel_shape", c.kernel);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.auto_pad.empty()) a.set("auto_pad", c.auto_pad);
  if (c.ceil_mode) a.set("ceil_mode", c.ceil_mode);
  return a;
}

// Shared by both pools (no dilations).
const std::vector<PoolCase> kCases = {
    {{1, 3, 7, 5}, {2, 2}, {2, 2}, {}, {}, ""},
    {{2, 17, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1},
    {{2, 17, 9, 11}, {3, 2}, {1, 2}, {1, 0, 0, 1}, {}, ""},
    {{1, 8, 10, 10}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
    {{1, 16, 6, 7}, {2, 3}, {2, 2}, {}, {}, "SAME_LOWER"},
    {{2, 24, 8, 8}, {3, 3}, {1, 1}, {}, {}, "VALID"},
    {{1, 5, 13, 13}, {5, 5}, {3, 3}, {2, 2, 2, 2}, {}, "", 1},
    {{3, 4, 5, 6}, {1, 1}, {2, 3}, {}, {}, ""},
    {{1, 2, 12, 9}, {4, 3}, {3, 2}, {1, 1, 2, 2}, {}, "", 1},
    {{2, 32, 15, 15}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, ""},
    {{1, 64, 7, 7}, {7, 7}, {1, 1}, {}, {}, ""},
};

TEST(CudaPoolKernel, MaxPoolMatchesReference) {
  std::vector<PoolCase> cases = kCases;
  cases.push_back({{2, 17, 9, 11}, {3, 2}, {1, 1}, {2, 1, 1, 0}, {2, 3}, ""});
  cases.push_back({{1, 8, 11, 10}, {2, 2}, {2, 1}, {1, 1, 1, 1}, {3, 2}, "", 1});
  cases.push_back({{1, 6, 9, 9}, {3, 3}, {2, 2}, {}, {2, 2}, "SAME_UPPER"});
  uint32_t seed = 1;
  for (const PoolCase& c : cases) {
    auto g = one_node(OpKind::MaxPool, {c.x}, pool_attrs(c));
    Tensor x = random_tensor(c.x, seed++, -3.f, 3.f);
    SCOPED_TRACE(shape_str(c.x) + " kernel " + shape_str(c.kernel));
    expect_all_match(*g->node, {&x});
  }
}

TEST(CudaPoolKernel, AveragePoolMatchesReference) {
  uint32_t seed = 100;
  for (int64_t include_pad : {0, 1})
    for (const PoolCase& c : kCases) {
      Attributes a = pool_attrs(c);
      a.set("count_include_pad", include_pad);
      auto g = one_node(OpKind::AveragePool, {c.x}, a);
      Tensor x = random_tensor(c.x, seed++, -3.f, 3.f);
      SCOPED_TRACE(shape_str(c.x) + " kernel " + shape_str(c.kernel) + " count_include_pad " +
                   std::to_string(include_pad));
      expect_all_match(*g->node, {&x});
    }
}

TEST(CudaPoolKernel, ResNetSized) {
  {
    PoolCase c{{4, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, ""};
    auto g = one_node(OpKind::MaxPool, {c.x}, pool_attrs(c));
    Tensor x = random_tensor(c.x, 7, -4.f, 4.f);
    expect_all_match(*g->node, {&x});
  }
  {
    PoolCase c{{8, 256, 14, 14}, {2, 2}, {2, 2}, {}, {}, ""};
    auto g = one_node(OpKind::AveragePool, {c.x}, pool_attrs(c));
    Tensor x = random_tensor(c.x, 8);
    expect_all_match(*g->node, {&x});
  }
}

TEST(CudaPoolKernel, MaxPoolPassesNaN) {
  PoolCase c{{1, 8, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, ""};
  auto g = one_node(OpKind::MaxPool, {c.x}, pool_attrs(c));
  Tensor x = random_tensor(c.x, 9);
  x.data<float>()[3 * 36 + 7] = NAN;  // channel 3, (1, 1): inside windows (0,0),(0,1),(1,0),(1,1)
  for (Layout l : kLayouts) {
    auto got = run_cuda_node(*g->node, {&x}, Precision::kFp32, l);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const float* y = got->outputs[0].data<float>();
    for (int64_t p = 0; p < 9; ++p) {
      bool want_nan = p == 0 || p == 1 || p == 3 || p == 4;
      EXPECT_EQ(std::isnan(y[3 * 9 + p]), want_nan) << "position " << p;
      EXPECT_FALSE(std::isnan(y[2 * 9 + p]));
    }
  }
}

TEST(CudaPoolKernel, GlobalPoolsMatchReference) {
  const std::vector<Shape> shapes = {{1, 3, 7, 5},
                                     {2, 17, 9, 11},
                                     {2, 8, 1, 1},
                                     {3, 2, 4, 4},
                                     {2, 24, 3, 5},
                                     {1, 40, 56, 56},
                                     {2, 5, 17},
                                     {1, 3, 2, 3, 4},
                                     {8, 2048, 7, 7},
                                     // few channels on large maps: split along H·W
                                     {4, 32, 112, 112},
                                     {3, 24, 56, 56},
                                     {2, 1, 64, 64}};
  uint32_t seed = 200;
  for (OpKind op : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool})
    for (const Shape& s : shapes) {
      auto g = one_node(op, {s}, {});
      Tensor x = random_tensor(s, seed++, -2.f, 2.f);
      SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(s));
      expect_all_match(*g->node, {&x});
    }
}

TEST(CudaPoolKernel, GlobalAveragePoolResNetBatch) {
  Shape s = {256, 2048, 7, 7};
  auto g = one_node(OpKind::GlobalAveragePool, {s}, {});
  Tensor x = random_tensor(s, 300, 0.f, 4.f);
  expect_cuda_matches_reference(*g->node, {&x}, Precision::kFp16, Layout::kNHWC);
}

TEST(CudaPoolKernel, UnsupportedCases) {
  {  // MaxPool's Indices output
    PoolCase c{{1, 3, 7, 5}, {2, 2}, {2, 2}, {}, {}, ""};
    auto g = one_node(OpKind::MaxPool, {c.x}, pool_attrs(c), 2);
    expect_factory_unsupported(*g->node);
  }
  {  // 3-D pooling
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{2, 2, 2});
    auto g = one_node(OpKind::MaxPool, {{1, 3, 4, 4, 4}}, a);
    expect_factory_unsupported(*g->node);
  }
  {  // 1-D pooling
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{2});
    auto g = one_node(OpKind::AveragePool, {{1, 3, 8}}, a);
    expect_factory_unsupported(*g->node);
  }
  {  // integer input
    PoolCase c{{1, 3, 7, 5}, {2, 2}, {2, 2}, {}, {}, ""};
    auto g = one_node(OpKind::MaxPool, {c.x}, pool_attrs(c));
    g->node->inputs[0]->dtype = DataType::kInt8;
    expect_factory_unsupported(*g->node);
  }
  {  // integer input to a global pool
    auto g = one_node(OpKind::GlobalMaxPool, {{1, 3, 7, 5}}, {});
    g->node->inputs[0]->dtype = DataType::kInt32;
    expect_factory_unsupported(*g->node);
  }
}

}  // namespace
}  // namespace kiln::test
