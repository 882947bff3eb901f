// The CUDA unary and binary elementwise kernels against the reference: every op over
// tables of shapes (odd sizes, ResNet-sized) x precision (fp32, fp16) x offered layout
// (plain, NHWC), broadcasts (per channel, per batch, scalar, general, constant operands,
// operands swapped), integer arithmetic, and the factory's refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "one_node_graph.h"

namespace kiln::test {
namespace {

const Shape kShapes[] = {{1, 3, 7, 5}, {2, 17, 9, 11}, {4, 64, 56, 56}, {3, 1000}, {13}};
const Precision kPrecisions[] = {Precision::kFp32, Precision::kFp16, Precision::kBf16};
const Layout kLayouts[] = {Layout::kPlain, Layout::kNHWC};

std::string where(const Shape& s, Precision p, Layout l) {
  return shape_str(s) + " " + precision_name(p) + " offered " + layout_name(l);
}

// --- unary ---

struct UnaryCase {
  const char* label;
  OpKind op;
  Attributes attrs;
  float lo, hi;  // input range
};

std::vector<UnaryCase> unary_cases() {
  Attributes leaky, hard_sigmoid;
  leaky.set("alpha", 0.1f);
  hard_sigmoid.set("alpha", 0.3f);
  hard_sigmoid.set("beta", 0.4f);
  return {
      {"Relu", OpKind::Relu, {}, -3, 3},
      {"LeakyRelu", OpKind::LeakyRelu, leaky, -3, 3},
      {"LeakyRelu default", OpKind::LeakyRelu, {}, -3, 3},
      {"Sigmoid", OpKind::Sigmoid, {}, -8, 8},
      {"Tanh", OpKind::Tanh, {}, -4, 4},
      {"HardSigmoid", OpKind::HardSigmoid, hard_sigmoid, -5, 5},
      {"HardSigmoid default", OpKind::HardSigmoid, {}, -5, 5},
      {"HardSwish", OpKind::HardSwish, {}, -5, 5},
      {"Clip no bounds", OpKind::Clip, {}, -8, 8},
      {"Softplus", OpKind::Softplus, {}, -20, 20},
      {"Exp", OpKind::Exp, {}, -4, 4},
      {"Sqrt", OpKind::Sqrt, {}, 0.01f, 9},
      {"Erf", OpKind::Erf, {}, -3, 3},
      {"Neg", OpKind::Neg, {}, -3, 3},
      {"Abs", OpKind::Abs, {}, -3, 3},
      {"Reciprocal", OpKind::Reciprocal, {}, 0.25f, 4},
      {"Log", OpKind::Log, {}, 0.01f, 50},
  };
}

TEST(CudaUnary, MatchesReference) {
  for (const UnaryCase& c : unary_cases())
    for (const Shape& s : kShapes)
      for (Precision p : kPrecisions)
        for (Layout l : kLayouts) {
          SCOPED_TRACE(std::string(c.label) + " " + where(s, p, l));
          OneNodeGraph g(c.op, {random_tensor(s, 3, c.lo, c.hi)}, c.attrs);
          expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
        }
}

TEST(CudaClip, ConstantBounds) {
  const Tensor lo = Tensor::from_floats({}, {-0.5f});
  const Tensor hi = Tensor::from_floats({}, {0.75f});
  const Tensor six = Tensor::from_floats({1}, {6.f});
  const Tensor zero = Tensor::from_floats({}, {0.f});
  struct Bounds {
    const char* label;
    In min, max;
  };
  const Bounds bounds[] = {
      {"min and max", In::make_constant(lo), In::make_constant(hi)},
      {"relu6", In::make_constant(zero), In::make_constant(six)},
      {"min only", In::make_constant(lo), In()},
      {"max only", In(), In::make_constant(hi)},
      {"min > max", In::make_constant(hi), In::make_constant(lo)},
  };
  for (const Bounds& b : bounds)
    for (const Shape& s : kShapes)
      for (Precision p : kPrecisions)
        for (Layout l : kLayouts) {
          SCOPED_TRACE(std::string(b.label) + " " + where(s, p, l));
          std::vector<In> in = {random_tensor(s, 5, -8, 8), b.min};
          if (b.max.tensor.defined()) in.push_back(b.max);
          OneNodeGraph g(OpKind::Clip, in);
          expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
        }
}

TEST(CudaUnary, FactoryRefusals) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 1);
  const Tensor bound = Tensor::from_floats({}, {0.5f});
  // A computed Clip bound cannot be read at prepare.
  EXPECT_EQ(OneNodeGraph(OpKind::Clip, {x, bound}).create().code(), StatusCode::kUnsupported);
  EXPECT_EQ(OneNodeGraph(OpKind::Clip, {x, In(), bound}).create().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(OneNodeGraph(OpKind::Clip, {x, In::make_constant(bound)}).create().is_ok());
  // Integer and float64 tensors stay on the CPU.
  const Tensor ints = int_tensor(DataType::kInt64, {2, 3}, 1, -5, 5);
  EXPECT_EQ(OneNodeGraph(OpKind::Relu, {ints}).create().code(), StatusCode::kUnsupported);
  EXPECT_EQ(OneNodeGraph(OpKind::Clip, {ints}).create().code(), StatusCode::kUnsupported);
  Tensor f64(DataType::kFloat64, {4});
  for (int i = 0; i < 4; ++i) f64.data<double>()[i] = i - 1.5;
  EXPECT_EQ(OneNodeGraph(OpKind::Exp, {f64}).create().code(), StatusCode::kUnsupported);
}

// --- binary ---

struct BinaryCase {
  Shape a, b;
  bool b_constant = false;
};

const BinaryCase kBinaryCases[] = {
    {{1, 3, 7, 5}, {1, 3, 7, 5}},  // same shape
    {{2, 17, 9, 11}, {2, 17, 9, 11}},
    {{4, 64, 56, 56}, {4, 64, 56, 56}},
    {{3, 1000}, {3, 1000}},
    {{2, 17, 9, 11}, {1, 17, 1, 1}},  // per channel
    {{2, 17, 9, 11}, {17, 1, 1}},
    {{4, 64, 56, 56}, {1, 64, 1, 1}},
    {{2, 17, 9, 11}, {2, 17, 1, 1}},  // squeeze-excite: per (batch, channel)
    {{3, 24, 5, 7}, {3, 24, 1, 1}},   // ... with whole vectors of channels (NHWC fast path)
    {{3, 24, 1, 1}, {3, 24, 5, 7}},
    {{1, 17, 1, 1}, {2, 17, 9, 11}},  // small operand first
    {{2, 17, 1, 1}, {2, 17, 9, 11}},
    {{2, 17, 9, 11}, {2, 1, 1, 1}},  // per batch
    {{2, 17, 9, 11}, {}},            // scalar
    {{2, 17, 9, 11}, {1}},
    {{}, {2, 17, 9, 11}},
    {{3, 1000}, {1000}},  // Gemm-style bias
    {{3, 1000}, {3, 1}},
    {{2, 17, 9, 11}, {11}},  // general broadcasts
    {{2, 1, 9, 11}, {2, 17, 1, 11}},
    {{1, 3, 7, 5}, {1, 3, 7, 1}},
    {{3, 1}, {1, 4}},
    {{2, 3, 1, 4, 5}, {3, 4, 1}},        // rank 5
    {{2, 17, 9, 11}, {17, 1, 1}, true},  // constant operands
    {{2, 17, 9, 11}, {}, true},
    {{1, 3, 7, 5}, {1, 3, 7, 5}, true},
    {{2, 17, 9, 11}, {9, 11}, true},
};

TEST(CudaBinary, FloatMatchesReference) {
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow})
    for (const BinaryCase& c : kBinaryCases)
      for (Precision p : kPrecisions)
        for (Layout l : kLayouts) {
          SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(c.a) + " op " + shape_str(c.b) +
                       (c.b_constant ? " (constant)" : "") + " " + precision_name(p) + " offered " +
                       layout_name(l));
          // Pow: positive bases; every op: divisors away from zero.
          const float lo = op == OpKind::Pow ? 0.5f : -2.f;
          const Tensor a = random_tensor(c.a, 21, lo, 2.f);
          const Tensor b = op == OpKind::Pow ? random_tensor(c.b, 22, -2.f, 2.f)
                                             : random_tensor(c.b, 22, 0.5f, 2.f);
          OneNodeGraph g(op, {a, c.b_constant ? In::make_constant(b) : In(b)});
          expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
        }
}

// Equal-shaped rank-4 operands meet in the layout input 0 is offered: two plain tensors (a
// ConvNeXt MLP's [N,H,W,C] activations) stay plain, two NHWC ones stay NHWC.
TEST(CudaBinary, EqualShapesFollowInputZero) {
  const Tensor a = random_tensor({2, 5, 7, 16}, 31), b = random_tensor({2, 5, 7, 16}, 32);
  OneNodeGraph g(OpKind::Mul, {a, b});
  for (Precision p : kPrecisions) {
    auto kernel = make_cuda_kernel(*g.node, p);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
    for (Layout first : kLayouts)
      for (Layout second : kLayouts) {
        const std::vector<Layout> want = (*kernel)->input_layouts({first, second});
        EXPECT_EQ(want, (std::vector<Layout>{first, first}));
      }
    for (Layout l : kLayouts) expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
  }
}

TEST(CudaBinary, PowWithConstantIntegerExponent) {
  for (Precision p : kPrecisions) {
    OneNodeGraph g(OpKind::Pow, {random_tensor({2, 17, 9, 11}, 4, 0.5f, 2.f),
                                 In::make_constant(Tensor::from_int64s({}, {3}))});
    expect_cuda_matches_reference(*g.node, g.inputs(), p, Layout::kNHWC);
  }
}

TEST(CudaBinary, IntegerMatchesReference) {
  struct IntCase {
    Shape a, b;
    bool b_constant;
  };
  const IntCase cases[] = {
      {{4}, {4}, false},      {{2, 3}, {3}, false},
      {{4}, {}, true},        {{2, 1, 3}, {1, 4, 1}, false},
      {{5, 7}, {5, 7}, true}, {{1000}, {1000}, false},
  };
  for (DataType dt : {DataType::kInt64, DataType::kInt32})
    for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
      for (const IntCase& c : cases) {
        SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(dt) + " " + shape_str(c.a) +
                     " op " + shape_str(c.b));
        const Tensor a = int_tensor(dt, c.a, 31, -1000, 1000);
        const Tensor b = int_tensor(dt, c.b, 32, -9, 9, /*nonzero=*/true);
        OneNodeGraph g(op, {a, c.b_constant ? In::make_constant(b) : In(b)});
        expect_cuda_matches_reference(*g.node, g.inputs(), Precision::kFp16, Layout::kPlain);
      }
}

TEST(CudaBinary, IntegerWrapsAndTruncates) {
  const Tensor a = Tensor::from_int64s({4}, {INT64_MAX, -7, 7, INT64_MIN});
  const Tensor b = Tensor::from_int64s({4}, {1, 2, -2, -1});
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    SCOPED_TRACE(op_name(op));
    OneNodeGraph g(op, {a, b});
    expect_cuda_matches_reference(*g.node, g.inputs(), Precision::kFp32, Layout::kPlain);
  }
}

TEST(CudaBinary, FactoryRefusals) {
  const Tensor x = random_tensor({2, 3}, 1);
  const Tensor ints = int_tensor(DataType::kInt64, {2, 3}, 1, -5, 5, true);
  EXPECT_EQ(OneNodeGraph(OpKind::Add, {x, ints}).create().code(), StatusCode::kUnsupported);
  // Pow with an integer base, or a computed integer exponent.
  EXPECT_EQ(OneNodeGraph(OpKind::Pow, {ints, ints}).create().code(), StatusCode::kUnsupported);
  EXPECT_EQ(OneNodeGraph(OpKind::Pow, {x, ints}).create().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(OneNodeGraph(OpKind::Pow, {x, In::make_constant(ints)}).create().is_ok());
  const Tensor u8 = int_tensor(DataType::kUInt8, {2, 3}, 1, 1, 9);
  EXPECT_EQ(OneNodeGraph(OpKind::Mul, {u8, u8}).create().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace kiln::test
