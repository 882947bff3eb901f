// oneDNN Conv against the reference Conv on random data: a table of geometries (strides,
// pads, dilations, groups, depthwise, auto_pad) × epilogues (every activation, residual).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_util.h"

namespace kiln::test {
namespace {

struct Geometry {
  const char* name;
  Shape x, w;
  bool bias;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  const char* auto_pad;  // nullptr: absent
};

const Geometry kGeometries[] = {
    {"1x1", {1, 8, 5, 5}, {16, 8, 1, 1}, true, 1, {}, {}, {}, nullptr},
    {"3x3_pad1", {2, 3, 9, 7}, {4, 3, 3, 3}, true, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"3x3_stride2_asym_pad",
     {1, 5, 11, 10},
     {6, 5, 3, 3},
     false,
     1,
     {2, 2},
     {},
     {0, 1, 2, 1},
     nullptr},
    {"7x7_stride2_pad3", {1, 3, 20, 20}, {8, 3, 7, 7}, true, 1, {2, 2}, {}, {3, 3, 3, 3}, nullptr},
    {"dilated", {1, 4, 12, 12}, {4, 4, 3, 3}, true, 1, {}, {2, 3}, {2, 3, 2, 3}, nullptr},
    {"grouped", {1, 8, 7, 7}, {12, 2, 3, 3}, true, 4, {1, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"depthwise", {2, 16, 10, 10}, {16, 1, 3, 3}, true, 16, {}, {}, {1, 1, 1, 1}, nullptr},
    {"depthwise_mult2_stride2",
     {1, 8, 9, 9},
     {16, 1, 5, 5},
     false,
     8,
     {2, 2},
     {},
     {2, 2, 2, 2},
     nullptr},
    {"same_upper", {1, 3, 8, 7}, {5, 3, 4, 3}, true, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {"same_lower", {1, 3, 8, 7}, {5, 3, 4, 3}, true, 1, {2, 1}, {}, {}, "SAME_LOWER"},
    {"valid", {1, 2, 9, 6}, {3, 2, 2, 3}, false, 1, {3, 1}, {}, {}, "VALID"},
    {"wide_channels", {1, 64, 8, 8}, {32, 64, 3, 3}, true, 1, {}, {}, {1, 1, 1, 1}, nullptr},
};

struct Epi {
  const char* name;
  Activation act;
  float alpha, beta;
  bool residual;
};

const Epi kEpilogues[] = {
    {"none", Activation::kNone, 0, 0, false},
    {"relu", Activation::kRelu, 0, 0, false},
    {"clip", Activation::kClip, 0.f, 0.5f, false},
    {"leaky", Activation::kLeakyRelu, 0.1f, 0, false},
    {"sigmoid", Activation::kSigmoid, 0, 0, false},
    {"tanh", Activation::kTanh, 0, 0, false},
    {"silu", Activation::kSilu, 0, 0, false},
    {"hardsigmoid", Activation::kHardSigmoid, 0.2f, 0.5f, false},
    {"hardswish", Activation::kHardSwish, 0, 0, false},
    {"residual", Activation::kNone, 0, 0, true},
    {"residual_relu", Activation::kRelu, 0, 0, true},
    {"residual_clip", Activation::kClip, -0.3f, 0.6f, true},
    {"residual_silu", Activation::kSilu, 0, 0, true},
    {"gelu", Activation::kGelu, 0, 0, false},
};

// Builds the Conv node (W constant, as the backend requires), runs both backends.
// A Conv node in `g` with pads 1 on every side (a 3×3 kernel keeps the size) reading `ins`
// (input, weights, then bias or residual) and writing `y`, or a float32 "y" of no declared shape.
Node* pad1_conv(Graph& g, const std::vector<Value*>& ins, Value* y = nullptr) {
  Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  if (!y) {
    y = g.add_value("y");
    y->dtype = DataType::kFloat32;
  }
  return g.add_node(OpKind::Conv, "conv", ins, {y}, a);
}

void check_conv(const Geometry& c, const Epi& e, uint32_t seed) {
  Graph g;
  Tensor x = random_tensor(c.x, seed), w = random_tensor(c.w, seed + 1);
  Tensor b = random_tensor({c.w[0]}, seed + 2);
  const Attributes a = conv_attrs(c);
  std::vector<Value*> ins{f32_value(g, "x", c.x), g.add_constant("w", w)};
  std::vector<const Tensor*> tensors{&x, &w};
  if (c.bias) {
    ins.push_back(f32_value(g, "b", {c.w[0]}));
    tensors.push_back(&b);
  }
  Value* y = f32_value(g, "y", {});
  y->has_shape = false;
  Node* n = g.add_node(OpKind::Conv, "conv", ins, {y}, a);
  // The residual has the output's shape, which the reference shape rule gives.
  Tensor residual;
  if (e.residual) {
    auto plain = run_op(OpKind::Conv, a, tensors);
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    residual = random_tensor((*plain)[0].shape(), seed + 3);
    g.set_input(n, n->inputs.size(), f32_value(g, "r", residual.shape()));
    tensors.push_back(&residual);
    n->epilogue.residual_input = static_cast<int>(n->inputs.size()) - 1;
  }
  n->epilogue.act = e.act;
  n->epilogue.alpha = e.alpha;
  n->epilogue.beta = e.beta;
  const KernelSource& dnnl = onednn_backend(2);
  ASSERT_TRUE(dnnl.supports(*n));
  std::unique_ptr<Kernel> kernel;
  expect_matches_reference(dnnl, *n, tensors, &kernel);
  ASSERT_TRUE(kernel);
  EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).prepared());
}

TEST(DnnlConv, MatchesReferenceOverGeometriesAndEpilogues) {
  uint32_t seed = 10;
  for (const Geometry& c : kGeometries)
    for (const Epi& e : kEpilogues) {
      SCOPED_TRACE(std::string(c.name) + " / " + e.name);
      check_conv(c, e, seed += 7);
    }
}

// The same kernel re-prepared for a new input shape (batch and spatial change).
TEST(DnnlConv, ReprepareOnShapeChange) {
  Graph g;
  Tensor w = random_tensor({4, 3, 3, 3}, 5), b = random_tensor({4}, 6);
  Node* n = pad1_conv(
      g, {f32_value(g, "x", {1, 3, 6, 6}), g.add_constant("w", w), f32_value(g, "b", {4})});
  auto kernel = onednn_backend(1).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  for (Shape xs : {Shape{1, 3, 6, 6}, Shape{3, 3, 5, 9}, Shape{1, 3, 6, 6}}) {
    Tensor x = random_tensor(xs, 7);
    std::vector<const Tensor*> in{&x, &w, &b};
    auto want = run_op(OpKind::Conv, n->attrs, in);
    ASSERT_TRUE(want.is_ok());
    auto got = prepare_and_run(**kernel, in);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    expect_near(*got, (*want)[0], 1e-5, 1e-4);
    EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(**kernel).prepared());
  }
}

// What the backend does not claim: weights that are not constants, non-float inputs.
TEST(DnnlConv, DeclinesNonConstantWeightsAndOtherDtypes) {
  Graph g;
  Value* w = f32_value(g, "w", {4, 3, 3, 3});
  Node* n = g.add_node(OpKind::Conv, "conv", {f32_value(g, "x", {1, 3, 6, 6}), w},
                       {f32_value(g, "y", {1, 4, 4, 4})});
  EXPECT_FALSE(onednn_backend(1).supports(*n));
  Graph g2;
  Value* x16 = g2.add_value("x");
  x16->dtype = DataType::kFloat16;
  Node* n2 =
      g2.add_node(OpKind::Conv, "conv", {x16, g2.add_constant("w", random_tensor({4, 3, 3, 3}))},
                  {g2.add_value("y")});
  EXPECT_FALSE(onednn_backend(1).supports(*n2));
}

// Winograd (forced through KILN_DNNL_CONV_ALGO) against the reference on 3×3 stride-1 convs.
struct WinoCase {
  const char* name;
  Shape x;
  int64_t k;
  bool bias;
  Epi epi;
  bool must_winograd;  // channels oneDNN's Winograd takes; the others may run either
};

const WinoCase kWinoCases[] = {
    {"c16_k16_relu", {1, 16, 14, 14}, 16, true, kEpilogues[1], true},
    {"c64_k32_none_nobias", {2, 64, 9, 11}, 32, false, kEpilogues[0], true},
    {"c32_k64_residual_relu", {1, 32, 13, 13}, 64, true, kEpilogues[10], true},
    {"c48_k16_residual", {3, 48, 7, 8}, 16, true, kEpilogues[9], true},
    {"c256_k64_relu_big_reduction", {1, 256, 14, 14}, 64, true, kEpilogues[1], true},
    {"c24_k40_relu_off_block", {1, 24, 10, 10}, 40, true, kEpilogues[1], false},
    {"c3_k16_residual_relu", {2, 3, 12, 12}, 16, true, kEpilogues[10], false},
    {"c16_k20_clip", {1, 16, 8, 8}, 20, true, kEpilogues[2], false},
};

// Winograd F(4×4, 3×3) computes in transformed tiles (transform coefficients up to ~5, 36
// products per tile element), so its rounding error is relative not to the output, which can
// cancel to ~0, but to the magnitude of what it sums: |got - want| <= c · eps · Σ|x|·|w|
// (bias and residual are added exactly). Measured on these shapes: c ≈ 1–5 (worst
// 5.7e-7 · Σ|x||w|); the bound 4e-6 ≈ 34 · eps(fp32) leaves a 7× margin yet is far below
// what one wrong tap costs (~|x||w| ≈ 0.25 against a bound of ≤ 2.3e-3 at C = 256). Σ|x|·|w|
// is the reference conv of |x| and |w|.
// Whether oneDNN has a Winograd convolution on this CPU (2.6 has one for AVX-512 only): a
// plain 3×3 f32 conv it must take where it has one at all.
bool cpu_has_winograd() {
  try {
    using dnnl::memory;
    const memory::desc x({1, 32, 16, 16}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc w({32, 32, 3, 3}, memory::data_type::f32, memory::format_tag::any);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_winograd, x, w, memory::desc(),
                                      x, {1, 1}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(d, dnnl_cpu::cpu_engine());
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

void check_winograd(const WinoCase& c, uint32_t seed) {
  Graph g;
  const Shape ws{c.k, c.x[1], 3, 3};
  Tensor x = random_tensor(c.x, seed), w = random_tensor(ws, seed + 1);
  Tensor b = random_tensor({c.k}, seed + 2);
  std::vector<Value*> ins{f32_value(g, "x", c.x), g.add_constant("w", w)};
  std::vector<const Tensor*> tensors{&x, &w};
  if (c.bias) {
    ins.push_back(f32_value(g, "b", {c.k}));
    tensors.push_back(&b);
  }
  const Shape ys{c.x[0], c.k, c.x[2], c.x[3]};
  Node* n = pad1_conv(g, ins, f32_value(g, "y", ys));
  Tensor residual = random_tensor(ys, seed + 3);
  if (c.epi.residual) {
    g.set_input(n, n->inputs.size(), f32_value(g, "r", ys));
    tensors.push_back(&residual);
    n->epilogue.residual_input = static_cast<int>(n->inputs.size()) - 1;
  }
  n->epilogue.act = c.epi.act;
  n->epilogue.alpha = c.epi.alpha;
  n->epilogue.beta = c.epi.beta;
  std::unique_ptr<Kernel> kernel;
  auto got = run_backend(onednn_backend(2, CpuConvAlgo::kWinograd), *n, tensors, &kernel);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = run_backend(reference_backend(), *n, tensors);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(*kernel).prepared());
  const bool wino = dnnl_cpu::conv_uses_winograd(*kernel);
  if (!cpu_has_winograd()) {
    EXPECT_FALSE(wino) << "Winograd reported on a CPU where oneDNN has none";
  } else if (c.must_winograd) {
    EXPECT_TRUE(wino);
  }

  Tensor ax = x, aw = w;
  for (int64_t i = 0; i < ax.numel(); ++i) ax.data<float>()[i] = std::fabs(ax.data<float>()[i]);
  for (int64_t i = 0; i < aw.numel(); ++i) aw.data<float>()[i] = std::fabs(aw.data<float>()[i]);
  auto scale = run_op(OpKind::Conv, n->attrs, {&ax, &aw});
  ASSERT_TRUE(scale.is_ok());
  const Tensor& gt = (*got)[0];
  const Tensor& wt = (*want)[0];
  ASSERT_EQ(gt.shape(), wt.shape());
  double worst = 0;
  int misses = 0;
  for (int64_t i = 0; i < gt.numel(); ++i) {
    const double bound = 4e-6 * (*scale)[0].at_double(i) + 1e-6;
    const double err = std::fabs(gt.at_double(i) - wt.at_double(i));
    worst = std::max(worst, err / bound);
    if (!(err <= bound) && ++misses <= 5)
      ADD_FAILURE() << "element " << i << ": " << gt.at_double(i) << " vs " << wt.at_double(i)
                    << " (bound " << bound << ")";
  }
  ::testing::Test::RecordProperty(
      std::string(c.name) + (wino ? "_winograd" : "_direct") + "_worst_err_over_bound",
      std::to_string(worst));
}

TEST(DnnlConv, ForcedWinogradMatchesReference) {
  if (!cpu_has_winograd())
    GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU (it needs AVX-512); "
                    "ForcedWinogradFallsBackToDirect checks what runs instead";
  uint32_t seed = 300;
  for (const WinoCase& c : kWinoCases) {
    SCOPED_TRACE(c.name);
    check_winograd(c, seed += 5);
  }
}

// Where oneDNN has no Winograd, asking for it runs its direct convolution (not the
// reference kernel), still within the bound above.
TEST(DnnlConv, ForcedWinogradFallsBackToDirect) {
  if (cpu_has_winograd())
    GTEST_SKIP() << "oneDNN has Winograd on this CPU; ForcedWinogradMatchesReference checks it";
  uint32_t seed = 300;
  for (const WinoCase& c : kWinoCases) {
    SCOPED_TRACE(c.name);
    check_winograd(c, seed += 5);
  }
}

// Forced direct never picks Winograd; auto picks either and still matches the reference.
TEST(DnnlConv, DirectAndAutoModes) {
  Graph g;
  Tensor w = random_tensor({32, 32, 3, 3}, 41), x = random_tensor({1, 32, 16, 16}, 42);
  Node* n = pad1_conv(g, {f32_value(g, "x", x.shape()), g.add_constant("w", w)},
                      f32_value(g, "y", {1, 32, 16, 16}));
  n->epilogue.act = Activation::kRelu;
  {
    std::unique_ptr<Kernel> kernel;
    expect_matches_reference(onednn_backend(2, CpuConvAlgo::kDirect), *n, {&x, &w}, &kernel);
    ASSERT_TRUE(kernel);
    EXPECT_FALSE(dnnl_cpu::conv_uses_winograd(*kernel));
  }
  {
    auto got = run_backend(onednn_backend(2, CpuConvAlgo::kAuto), *n, {&x, &w});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto want = run_backend(reference_backend(), *n, {&x, &w});
    ASSERT_TRUE(want.is_ok());
    expect_near((*got)[0], (*want)[0], 1e-4, 1e-4);  // Winograd's bound at C=32 (see above)
  }
}

// Candidates round differently (Winograd against direct, blocked against nhwc) and their
// timings are noisy, so a conv must not pick again when it meets a shape it has already been
// prepared for: the same question gets the backend's earlier plan, untimed, and the same bits
// (a context that went to another batch and back, or a second context of the engine).
TEST(DnnlConv, SameShapeAgainGivesTheSamePlanAndBits) {
  const KernelSource& dnnl = onednn_backend(2, CpuConvAlgo::kAuto);
  Graph g;
  // 3×3 stride 1 with a residual and an unusual size: Winograd and direct both exist, and
  // no other test asks this question first.
  Tensor w = random_tensor({32, 48, 3, 3}, 51), b = random_tensor({32}, 52);
  Node* n = pad1_conv(g, {f32_value(g, "x", {3, 48, 13, 11}), g.add_constant("w", w),
                          f32_value(g, "b", {32}), f32_value(g, "r", {3, 32, 13, 11})});
  n->epilogue.residual_input = 3;
  n->epilogue.act = Activation::kRelu;
  auto run = [&](Kernel& k, const Shape& xs, dnnl_cpu::ConvPlanSummary* plan) {
    Tensor x = random_tensor(xs, 53);
    Tensor r = random_tensor({xs[0], 32, xs[2], xs[3]}, 54);
    auto got = prepare_and_run(k, {&x, &w, &b, &r});
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    *plan = dnnl_cpu::conv_plan_summary(k);
    return got.is_ok() ? *got : Tensor();
  };
  auto first = dnnl.create_kernel(*n);
  auto second = dnnl.create_kernel(*n);
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  const Shape s{3, 48, 13, 11}, other{1, 48, 7, 9};
  dnnl_cpu::ConvPlanSummary p1, p_other, p2, p3;
  Tensor y1 = run(**first, s, &p1);
  EXPECT_FALSE(p1.remembered) << "timed on first sight";
  run(**first, other, &p_other);
  Tensor y2 = run(**first, s, &p2);
  Tensor y3 = run(**second, s, &p3);
  for (const auto* p : {&p2, &p3}) {
    EXPECT_TRUE(p->remembered);
    EXPECT_EQ(p->impl, p1.impl);
    EXPECT_EQ(p->winograd, p1.winograd);
    EXPECT_EQ(p->src_reorder, p1.src_reorder);
    EXPECT_EQ(p->res_binary, p1.res_binary);
  }
  ASSERT_TRUE(y1.defined());
  ASSERT_EQ(y1.shape(), y2.shape());
  ASSERT_EQ(y1.shape(), y3.shape());
  EXPECT_EQ(std::memcmp(y1.data<float>(), y2.data<float>(), y1.numel() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(y1.data<float>(), y3.data<float>(), y1.numel() * sizeof(float)), 0);
  // The answers are the backend's (an Engine's), not the process's: a new backend asks afresh.
  OnednnOptions fresh_options;
  fresh_options.threads = 2;
  fresh_options.conv_algo = CpuConvAlgo::kAuto;
  const KernelSource fresh("onednn", make_onednn_state(fresh_options));
  auto third = fresh.create_kernel(*n);
  ASSERT_TRUE(third.is_ok());
  dnnl_cpu::ConvPlanSummary p4;
  run(**third, s, &p4);
  EXPECT_FALSE(p4.remembered);
}

// Bad shapes are reported by prepare as errors, as the reference does.
TEST(DnnlConv, PrepareRejectsMismatchedChannels) {
  Graph g;
  Tensor w = random_tensor({4, 3, 3, 3});
  Value* y = g.add_value("y");
  y->dtype = DataType::kFloat32;
  Node* n = g.add_node(OpKind::Conv, "conv",
                       {f32_value(g, "x", {1, 5, 6, 6}), g.add_constant("w", w)}, {y});
  auto kernel = onednn_backend(1).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  std::vector<TensorDesc> descs{{DataType::kFloat32, {1, 5, 6, 6}, nullptr},
                                {DataType::kFloat32, w.shape(), &w}};
  std::vector<TensorDesc> out(1);
  EXPECT_FALSE(prepare_host(**kernel, descs, out).is_ok());
}

}  // namespace
}  // namespace kiln::test
