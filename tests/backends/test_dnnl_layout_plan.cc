// The layout decision of the oneDNN backend (dnnl_layout_plan.cc) on tiny graphs: forced,
// per-group and per-value measured layouts give the reference's numbers, a blocked layout lets
// Winograd convs run between 1×1 convs without reorders, a group's plan is one answer for all
// its values and never costs more than either uniform layout, values joined by non-conv nodes
// share a layout, separate groups decide apart, a symbolic batch is planned at the run's batch
// (and every kernel agrees at each batch), and unknown spatial dims fall back to the stated rule.
#include <algorithm>
#include <string>

#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_net.h"

namespace kiln::test {
namespace {

using tag = dnnl::memory::format_tag;

// The blocked layout oneDNN has JIT kernels for here (tag::undef when none).
tag blocked_layout(const Value* storable_value) {
  const auto c = dnnl_cpu::layout_choice(onednn_shared(2), storable_value, 1);
  for (tag t : c.layouts)
    if (t != tag::nhwc) return t;
  return tag::undef;
}

// Builds `n` without the optimizer (which marks the graph outputs, as the decision needs); the
// values stay valid while the engine lives. Null when the build fails.
std::shared_ptr<Engine> build_unoptimized(Net& n, EngineOptions opts = EngineOptions()) {
  opts.optimize = false;
  auto engine = build_engine(std::move(n.g), opts);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  return engine.is_ok() ? std::move(engine).value() : nullptr;
}

struct Bottleneck {
  Value *x, *stem, *a, *b, *c, *s2, *d, *e, *f;
};

// stem 3×3 → [1×1 → 3×3 → 1×1 + residual] → 3×3 stride 2 → [1×1 (24 channels, off the
// 16-block) → 3×3 → 1×1 + residual]: ResNet-50's pattern on a small scale.
Bottleneck make_bottlenecks(Net& n, int64_t batch = 2) {
  Bottleneck v;
  v.x = n.input("x", {batch, 3, 12, 12});
  v.stem = n.conv(v.x, 32, 3, {batch, 32, 12, 12});
  v.a = n.conv(v.stem, 16, 1, {batch, 16, 12, 12});
  v.b = n.conv(v.a, 16, 3, {batch, 16, 12, 12});
  v.c = n.conv(v.b, 32, 1, {batch, 32, 12, 12}, true, v.stem);
  v.s2 = n.conv(v.c, 48, 3, {batch, 48, 6, 6}, true, nullptr, 2);
  v.d = n.conv(v.s2, 24, 1, {batch, 24, 6, 6});
  v.e = n.conv(v.d, 24, 3, {batch, 24, 6, 6});
  v.f = n.conv(v.e, 48, 1, {batch, 48, 6, 6}, false, v.s2);
  n.g->outputs() = {v.f};
  return v;
}

TEST(DnnlLayoutPlan, ForcedAndMeasuredLayoutsMatchReference) {
  for (CpuLayout layout : {CpuLayout::kNhwc, CpuLayout::kBlocked, CpuLayout::kAuto,
                           CpuLayout::kValue, CpuLayout::kAlternate})
    for (CpuConvAlgo algo : {CpuConvAlgo::kAuto, CpuConvAlgo::kWinograd}) {
      SCOPED_TRACE(std::string(cpu_layout_name(layout)) + " / " + cpu_conv_algo_name(algo));
      const auto make = [&](Net& n) {
        const Bottleneck v = make_bottlenecks(n);
        const tag blocked = blocked_layout(v.a);
        const auto& sh = onednn_shared(2, algo, layout);
        for (Value* s : {v.stem, v.a, v.b, v.c, v.s2, v.d, v.e}) {
          const tag t = dnnl_cpu::stored_format(sh, s, 2);
          if (layout == CpuLayout::kNhwc) {
            EXPECT_EQ(t, tag::nhwc) << s->name;
          }
          if (layout == CpuLayout::kBlocked && blocked != tag::undef) {
            EXPECT_EQ(t, s->dims[1].value % 16 == 0 || blocked == tag::nChw8c ? blocked : tag::nhwc)
                << s->name;
          }
        }
        // Alternating sets: neighbouring convs' outputs are stored differently, so convs run
        // between operands of two layouts (converting one side).
        if (layout == CpuLayout::kAlternate && blocked == tag::nChw16c) {
          EXPECT_NE(dnnl_cpu::stored_format(sh, v.stem, 2), dnnl_cpu::stored_format(sh, v.a, 2));
          EXPECT_NE(dnnl_cpu::stored_format(sh, v.a, 2), dnnl_cpu::stored_format(sh, v.b, 2));
        }
      };
      expect_auto_matches_reference(make, {0}, cpu_options(layout, algo));
    }
}

// Prepares `dnnl`'s kernel of `v`'s producer for the declared shapes.
std::unique_ptr<Kernel> prepared_producer(const KernelSource& dnnl, const Value* v) {
  const Node& node = *v->producer;
  auto k = dnnl.create_kernel(node);
  EXPECT_TRUE(k.is_ok());
  std::vector<TensorDesc> in, out(node.outputs.size());
  for (const Value* i : node.inputs) {
    Shape s;
    EXPECT_TRUE(i->static_shape(&s));
    // As the plan passes it: in the layout the backend stores the value in.
    in.push_back({DataType::kFloat32, s, i->is_constant() ? &i->constant : nullptr,
                  i->is_constant()
                      ? Layout::kPlain
                      : dnnl_cpu::stored_layout(*dnnl_cpu::shared_of(dnnl.state()), i, s)});
  }
  EXPECT_TRUE(prepare_host(**k, in, out).is_ok());
  return std::move(k).value();
}

// The point of a blocked layout: Winograd runs on nChw16c, so between 1×1 convs stored that
// way it needs no reorder; stored nhwc, it pays one on each side.
TEST(DnnlLayoutPlan, WinogradBetweenBlockedNeighboursRunsWithoutReorders) {
  Net n;
  const Bottleneck v = make_bottlenecks(n);
  const auto engine = build_unoptimized(n);
  ASSERT_NE(engine, nullptr);
  if (blocked_layout(v.a) != tag::nChw16c) GTEST_SKIP() << "no nChw16c kernels on this CPU";
  {
    const KernelSource& blocked = onednn_backend(2, CpuConvAlgo::kWinograd, CpuLayout::kBlocked);
    const auto s = dnnl_cpu::conv_plan_summary(*prepared_producer(blocked, v.b));
    EXPECT_TRUE(s.winograd);
    EXPECT_FALSE(s.src_reorder);
    EXPECT_FALSE(s.dst_reorder);
    // The 1×1 conv with the residual: its candidates are timed (stored layouts with the
    // residual copied or read by a binary post-op, or oneDNN's own layouts with reorders),
    // so which wins depends on this CPU and its load. Where it runs in the stored layouts,
    // it reads the residual where it is stored.
    const auto r = dnnl_cpu::conv_plan_summary(*prepared_producer(blocked, v.c));
    if (!r.src_reorder && !r.dst_reorder) {
      EXPECT_FALSE(r.res_reorder) << r.impl;
    }
  }
  {
    const KernelSource& nhwc = onednn_backend(2, CpuConvAlgo::kWinograd, CpuLayout::kNhwc);
    const auto s = dnnl_cpu::conv_plan_summary(*prepared_producer(nhwc, v.b));
    EXPECT_TRUE(s.winograd);
    EXPECT_TRUE(s.src_reorder);
    EXPECT_TRUE(s.dst_reorder);
  }
}

// The two-conv-group graph of the next tests: a and b are one group, d and e another (the
// Softmax reads c plain).
struct TwoGroups {
  Value *a, *b, *c, *d, *e;
  std::shared_ptr<Engine> engine;  // built unoptimized; keeps the values alive
};
TwoGroups make_two_groups(Net& n, CpuLayout layout) {
  TwoGroups v;
  Value* x = n.input("x", {1, 3, 10, 10});
  v.a = n.conv(x, 16, 3, {1, 16, 10, 10});
  v.b = n.conv(v.a, 32, 1, {1, 32, 10, 10});
  v.c = n.conv(v.b, 32, 3, {1, 32, 10, 10}, true, v.b);
  Value* r = n.unary(OpKind::Softmax, v.c);  // reads plain only: ends the first group
  v.d = n.conv(r, 64, 1, {1, 64, 10, 10});
  v.e = n.conv(v.d, 16, 1, {1, 16, 10, 10});
  n.g->outputs() = {n.conv(v.e, 16, 1, {1, 16, 10, 10})};
  v.engine = build_unoptimized(n, cpu_options(layout));
  return v;
}

// "auto": every value of a group reports one choice with the group's timings, the faster
// candidate; asking again gives the same answer (timings are kept), and a group cut off by
// a reference kernel is timed on its own convs.
TEST(DnnlLayoutPlan, AutoKeepsTheFasterMeasuredLayoutPerGroup) {
  Net n;
  const TwoGroups v = make_two_groups(n, CpuLayout::kAuto);
  ASSERT_NE(v.engine, nullptr);
  const auto& sh = dnnl_state(*v.engine);
  const auto first = dnnl_cpu::layout_choice(sh, v.a, 1);
  if (first.layouts.size() < 2) GTEST_SKIP() << "one candidate layout on this CPU";
  ASSERT_EQ(first.seconds.size(), first.layouts.size());
  const size_t fastest = static_cast<size_t>(
      std::min_element(first.seconds.begin(), first.seconds.end()) - first.seconds.begin());
  EXPECT_EQ(first.chosen, first.layouts[fastest]);
  EXPECT_DOUBLE_EQ(first.planned_seconds, first.seconds[fastest]);
  for (Value* x : {v.a, v.b}) {
    const auto same = dnnl_cpu::layout_choice(sh, x, 1);
    EXPECT_EQ(same.chosen, first.chosen) << x->name;
    EXPECT_EQ(same.seconds, first.seconds) << x->name;
  }
  EXPECT_FALSE(dnnl_cpu::storable(v.c));  // read by the Softmax
  const auto second = dnnl_cpu::layout_choice(sh, v.d, 1);
  ASSERT_EQ(second.seconds.size(), second.layouts.size());
  EXPECT_NE(second.seconds, first.seconds);
  EXPECT_EQ(dnnl_cpu::layout_choice(sh, v.e, 1).seconds, second.seconds);
}

// "value": per value. The plan's estimate is at most either uniform layout's time, every value of
// a group reports the same plan, asking again answers the same, and values that a pool,
// element-wise or binary node joins share their layout.
TEST(DnnlLayoutPlan, ValuePlansPerValueWithinTheUniformBound) {
  {
    Net n;
    const TwoGroups v = make_two_groups(n, CpuLayout::kValue);
    ASSERT_NE(v.engine, nullptr);
    const auto& sh = dnnl_state(*v.engine);
    const auto c = dnnl_cpu::layout_choice(sh, v.a, 1);
    if (c.layouts.size() < 2) GTEST_SKIP() << "one candidate layout on this CPU";
    ASSERT_EQ(c.seconds.size(), 2u);
    EXPECT_GE(c.planned_seconds, 0);
    EXPECT_LE(c.planned_seconds, std::min(c.seconds[0], c.seconds[1]) * (1 + 1e-9));
    const auto b = dnnl_cpu::layout_choice(sh, v.b, 1);
    EXPECT_EQ(b.seconds, c.seconds);
    EXPECT_EQ(b.planned_seconds, c.planned_seconds);
    EXPECT_EQ(dnnl_cpu::layout_choice(sh, v.a, 1).chosen, c.chosen);
  }
  // conv → MaxPool → Relu → Add(with a conv output) → conv: the pool's, Relu's and Add's
  // operands form one set.
  Net n;
  Value* x = n.input("x", {2, 3, 16, 16});
  Value* a = n.conv(x, 32, 3, {2, 32, 16, 16});
  Value* p = n.pool(OpKind::MaxPool, a, {2, 32, 8, 8}, pool_attrs(2, 2, 0));
  Value* r = n.unary(OpKind::Relu, p);
  Value* b = n.conv(r, 32, 1, {2, 32, 8, 8});
  Value* s = n.binary(OpKind::Add, r, b);
  n.g->outputs() = {n.conv(s, 16, 3, {2, 16, 8, 8})};
  const auto engine = build_unoptimized(n, cpu_options(CpuLayout::kValue));
  ASSERT_NE(engine, nullptr);
  const auto& sh = dnnl_state(*engine);
  if (dnnl_cpu::layout_choice(sh, a, 2).layouts.size() < 2) GTEST_SKIP() << "one candidate layout";
  const tag t = dnnl_cpu::stored_format(sh, a, 2);
  for (Value* v : {p, r, b, s}) EXPECT_EQ(dnnl_cpu::stored_format(sh, v, 2), t) << v->name;
}

// "auto" plans a symbolic batch as 1 and "value" at the batch of the run: one Context running
// batch 2 and then batch 3 (every kernel prepares again) agrees on every layout at each; a group
// whose batch is fixed is planned at its declared shapes, whatever batch is asked.
void symbolic_batch_case(CpuLayout layout) {
  const bool per_run = layout == CpuLayout::kValue;
  const auto& sh = onednn_shared(2, CpuConvAlgo::kDirect, layout);
  auto make = [](Net& n) {
    const Bottleneck v = make_bottlenecks(n);
    for (Value* s : {v.x, v.stem, v.a, v.b, v.c, v.s2, v.d, v.e, v.f}) s->dims[0] = Dim{-1, "N"};
  };
  expect_auto_matches_reference(make, {2, 3}, cpu_options(layout));
  Net n;
  make(n);
  const Value* a = n.g->inputs()[0]->consumers[0]->output(0);
  const auto c = dnnl_cpu::layout_choice(sh, a, 3);
  if (c.layouts.size() > 1) {
    EXPECT_EQ(c.seconds.size(), c.layouts.size());
    EXPECT_EQ(c.batch, per_run ? 3 : 1);
  }
  Net fixed;
  make_bottlenecks(fixed, 2);
  const Value* f = fixed.g->inputs()[0]->consumers[0]->output(0);
  if (c.layouts.size() > 1) {
    EXPECT_EQ(dnnl_cpu::layout_choice(sh, f, 2).batch, 1);
  }
}

TEST(DnnlLayoutPlan, SymbolicBatchIsPlannedAtOneOrTheRunsBatch) {
  for (CpuLayout mode : {CpuLayout::kAuto, CpuLayout::kValue}) {
    SCOPED_TRACE(cpu_layout_name(mode));
    symbolic_batch_case(mode);
  }
}

// Unknown spatial dims cannot be timed: the blocked layout where Winograd could run, the
// first candidate (oneDNN's nhwc on AVX-512) elsewhere.
TEST(DnnlLayoutPlan, UnknownSpatialDimsFallBackToTheWinogradRule) {
  for (int64_t k : {3, 1}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Net n;
    Value* x = n.input("x", {1, 16, 8, 8});
    Value* a = n.conv(x, 16, 1, {1, 16, 8, 8});
    Value* b = n.conv(a, 16, k, {1, 16, 8, 8});
    n.g->outputs() = {n.conv(b, 16, 1, {1, 16, 8, 8})};
    for (Value* v : {x, a, b}) v->dims[2] = v->dims[3] = Dim{-1, ""};
    const auto c = dnnl_cpu::layout_choice(onednn_shared(2), a, 1);
    if (c.layouts.size() < 2) GTEST_SKIP() << "one candidate layout on this CPU";
    EXPECT_TRUE(c.seconds.empty());
    EXPECT_EQ(c.chosen, k == 3 ? c.layouts[1] : c.layouts[0]);
  }
}

}  // namespace
}  // namespace kiln::test
