// Activations stored in oneDNN's layouts between oneDNN kernels (stored_format): small graphs
// run whole through the engine with the auto backend (oneDNN + reference) and with the
// reference backend alone, on random data. The graphs mix values that stay blocked
// (conv → conv → pool → conv with a residual), values also read by a kernel that reads plain
// only (Softmax),
// graph outputs that are also read by a conv, channel counts off the block, and a pool
// that falls back to the reference kernel between blocked neighbours.
#include <algorithm>
#include <string>

#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/dnnl_test_net.h"

namespace kiln::test {
namespace {

// conv → conv → maxpool → conv(+ residual) → conv: the intermediate values stay blocked;
// the last conv's output (a graph output) is plain.
TEST(DnnlLayout, ConvChainWithPoolAndResidual) {
  expect_auto_matches_reference([](Net& n) {
    Value* x = n.input("x", {2, 3, 12, 11});
    Value* a = n.conv(x, 16, 3, {2, 16, 12, 11});
    Value* b = n.conv(a, 32, 3, {2, 32, 12, 11});
    Value* c = n.pool(OpKind::MaxPool, b, {2, 32, 6, 6}, pool_attrs(3, 2, 1));
    Value* d = n.conv(c, 32, 3, {2, 32, 6, 6}, true, c);
    n.g->outputs() = {n.conv(d, 16, 1, {2, 16, 6, 6}, false)};
    const auto& sh = onednn_shared(2);
    for (Value* v : {a, b, c, d}) EXPECT_TRUE(dnnl_cpu::stored_blocked(sh, v, 1)) << v->name;
  });
}

// The decision itself, after build_engine marked the graph outputs.
TEST(DnnlLayout, DecisionFollowsProducersAndReaders) {
  Net n;
  Value* x = n.input("x", {1, 3, 8, 8});
  Value* a = n.conv(x, 16, 3, {1, 16, 8, 8});           // conv → conv, conv residual
  Value* b = n.conv(a, 16, 3, {1, 16, 8, 8}, true, a);  // read by conv and by Softmax
  Value* c = n.conv(b, 24, 1, {1, 24, 8, 8});           // 24 channels: off a 16-block
  Value* d = n.conv(c, 16, 1, {1, 16, 8, 8});           // graph output read by a conv
  Value* e = n.conv(d, 16, 3, {1, 16, 8, 8});
  Value* r = n.unary(OpKind::Softmax, b);
  n.g->outputs() = {d, e, r};
  EngineOptions opts;
  opts.optimize = false;
  auto engine = build_engine(std::move(n.g), opts);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const auto& sh = dnnl_state(**engine);             // the engine's own decision
  EXPECT_FALSE(dnnl_cpu::stored_blocked(sh, x, 1));  // graph input
  // Which layout the group takes (nhwc, nChw16c or nChw8c) comes from timings on this CPU;
  // what must hold on every CPU: a conv-to-conv value is stored in one of the layouts oneDNN
  // has JIT kernels for, and the stored format is the choice, or nhwc off the block.
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto a_choice = dnnl_cpu::layout_choice(sh, a, 1);
  if (a_choice.layouts.empty()) GTEST_SKIP() << "oneDNN has no JIT conv layout on this CPU";
  EXPECT_NE(std::find(a_choice.layouts.begin(), a_choice.layouts.end(), a_choice.chosen),
            a_choice.layouts.end());
  const memory::desc a_desc = dnnl_cpu::stored_desc(sh, a, {1, 16, 8, 8});
  EXPECT_EQ(a_desc, memory::desc({1, 16, 8, 8}, memory::data_type::f32, a_choice.chosen));
  EXPECT_TRUE(dnnl_cpu::stored_blocked(sh, a, 1));
  EXPECT_FALSE(dnnl_cpu::stored_blocked(sh, b, 1));  // a kernel that reads plain only reads it
  // nhwc takes any channel count; nChw16c/nChw8c only multiples of the block (24 is one of
  // 8, not of 16), so a blocked group stores a value off the block in nhwc where oneDNN has
  // nhwc kernels, and plain where it has none.
  const auto choice = dnnl_cpu::layout_choice(sh, c, 1);
  const bool has_nhwc = std::count(choice.layouts.begin(), choice.layouts.end(), tag::nhwc) > 0;
  const int block = choice.chosen == tag::nChw16c ? 16 : choice.chosen == tag::nChw8c ? 8 : 0;
  const tag want = choice.chosen == tag::nhwc || (block && 24 % block == 0) ? choice.chosen
                   : has_nhwc                                               ? tag::nhwc
                                                                            : tag::nchw;
  EXPECT_EQ(dnnl_cpu::stored_format(sh, c, 1), want)
      << "chosen " << static_cast<int>(choice.chosen) << ", block " << block;
  EXPECT_EQ(dnnl_cpu::stored_blocked(sh, c, 1), want != tag::nchw);
  EXPECT_FALSE(dnnl_cpu::stored_blocked(sh, d, 1));  // graph output
  EXPECT_FALSE(dnnl_cpu::stored_blocked(sh, e, 1));
  EXPECT_FALSE(dnnl_cpu::stored_blocked(sh, r, 1));
}

// A blocked value also read by a plain-only kernel, a graph output also read by a conv, a
// channel count off the block.
TEST(DnnlLayout, MixedReadersGraphOutputsAndOddChannels) {
  expect_auto_matches_reference([](Net& n) {
    Value* x = n.input("x", {3, 5, 9, 10});
    Value* a = n.conv(x, 16, 3, {3, 16, 9, 10});
    Value* b = n.conv(a, 16, 3, {3, 16, 9, 10}, true, a);
    Value* c = n.conv(b, 24, 1, {3, 24, 9, 10});
    Value* d = n.conv(c, 32, 3, {3, 32, 9, 10}, false);
    Value* e = n.conv(d, 16, 3, {3, 16, 9, 10});
    Value* r = n.unary(OpKind::Softmax, b);
    Value* p = n.pool(OpKind::AveragePool, e, {3, 16, 5, 5}, pool_attrs(2, 2, 0, true));
    Value* f = n.conv(p, 16, 3, {3, 16, 5, 5}, true, p);
    n.g->outputs() = {d, r, f};
  });
}

// An AveragePool that counts padding with ceil-mode overflow falls back to the reference
// kernel, between a blocked input and a blocked output.
TEST(DnnlLayout, ReferenceFallbackBetweenBlockedNeighbours) {
  expect_auto_matches_reference([](Net& n) {
    Value* x = n.input("x", {2, 3, 12, 11});
    Value* a = n.conv(x, 16, 3, {2, 16, 12, 11});
    Value* p = n.pool(OpKind::AveragePool, a, {2, 16, 6, 6}, pool_attrs(3, 2, 0, true, true));
    Value* q = n.conv(p, 32, 3, {2, 32, 6, 6});
    Value* m = n.pool(OpKind::MaxPool, q, {2, 32, 3, 3}, pool_attrs(2, 2, 0));
    n.g->outputs() = {m};
  });
  // The pool above does take the fallback path.
  Net n;
  Value* x = n.input("x", {2, 3, 12, 11});
  Value* a = n.conv(x, 16, 3, {2, 16, 12, 11});
  Value* p = n.pool(OpKind::AveragePool, a, {2, 16, 6, 6}, pool_attrs(3, 2, 0, true, true));
  n.conv(p, 32, 3, {2, 32, 6, 6});
  const auto& sh = onednn_shared(1);
  EXPECT_TRUE(dnnl_cpu::stored_blocked(sh, p, 1));
  auto kernel = onednn_backend(1).create_kernel(*p->producer);
  ASSERT_TRUE(kernel.is_ok());
  // Passed plain, the blocked input is refused: it would be read as the wrong elements.
  std::vector<TensorDesc> in{{DataType::kFloat32, {2, 16, 12, 11}, nullptr}}, out(1);
  const Status refused = prepare_host(**kernel, in, out);
  EXPECT_EQ(refused.code(), StatusCode::kInternal) << refused.to_string();
  EXPECT_NE(refused.message().find("oneDNN's layout plan stores it"), std::string::npos)
      << refused.to_string();
  in[0].layout = dnnl_cpu::stored_layout(sh, a, in[0].shape);
  EXPECT_NE(in[0].layout, Layout::kPlain);
  // In its stored layout it is taken; oneDNN has no primitive for these shapes, so the kernel
  // declines them (the planner then takes the reference kernel, converting the layouts).
  const Status declined = prepare_host(**kernel, in, out);
  EXPECT_EQ(declined.code(), StatusCode::kUnsupported) << declined.to_string();
}

// A squeeze-and-excitation block (EfficientNet's): conv → GlobalAveragePool → 1×1 conv →
// 1×1 conv with Sigmoid → Mul scaling the conv's output per channel → conv. The Mul reads and
// writes the group's stored layout, so no value of the block is kept plain; also with the
// scale as the Mul's first input, channels off the block, a Sub/Div/Add of two stored
// values, and a symbolic batch that changes between runs.
void se_block(Net& n, int64_t c, bool scale_first, OpKind join) {
  Value* x = n.input("x", {2, 3, 10, 9});
  x->dims[0] = Dim{-1, "batch"};
  Value* a = n.conv(x, c, 3, {2, c, 10, 9});
  Value* s = n.pool(OpKind::GlobalAveragePool, a, {2, c, 1, 1}, {});
  Value* t = n.conv(s, 8, 1, {2, 8, 1, 1});
  Value* u = n.conv(t, c, 1, {2, c, 1, 1}, false);
  u->producer->epilogue.act = Activation::kSigmoid;
  Value* m = scale_first ? n.binary(OpKind::Mul, u, a) : n.binary(OpKind::Mul, a, u);
  Value* b = n.conv(m, c, 3, {2, c, 10, 9});
  Value* j = n.binary(join, b, m);  // two stored values of one shape
  n.g->outputs() = {n.conv(j, 16, 1, {2, 16, 10, 9}, false)};
  for (Value* v : {a, s, t, u, m, b, j}) EXPECT_TRUE(dnnl_cpu::storable(v)) << v->name;
  if (c % 16 == 0) {
    const auto& sh = onednn_shared(2);
    EXPECT_TRUE(dnnl_cpu::stored_blocked(sh, a, 1));
    EXPECT_TRUE(dnnl_cpu::stored_blocked(sh, m, 1));
  }
}

TEST(DnnlLayout, SqueezeExcitationMulKeepsTheStoredLayout) {
  for (bool scale_first : {false, true})
    for (int64_t c : {32, 24})
      for (OpKind join : {OpKind::Add, OpKind::Sub, OpKind::Div}) {
        SCOPED_TRACE(std::to_string(c) + " channels" + (scale_first ? ", scale first " : " ") +
                     op_name(join));
        expect_auto_matches_reference([&](Net& n) { se_block(n, c, scale_first, join); }, {2, 3});
      }
}

// HardSwish as exporters write it (x · HardSigmoid(x)) between convs: the unary op and the
// Mul keep the stored layout. A graph input (plain) through Relu into a conv, and added to a
// stored value: the kernels convert between the layouts themselves.
TEST(DnnlLayout, ElementwiseChainsAndMixedLayouts) {
  for (int64_t c : {32, 24}) {
    SCOPED_TRACE(std::to_string(c) + " channels");
    expect_auto_matches_reference(
        [&](Net& n) {
          Value* x = n.input("x", {2, 3, 9, 10});
          x->dims[0] = Dim{-1, "batch"};
          Value* a = n.conv(x, c, 3, {2, c, 9, 10}, false);
          Value* h = n.unary(OpKind::HardSigmoid, a);
          Value* m = n.binary(OpKind::Mul, a, h);
          Value* b = n.conv(m, 3, 3, {2, 3, 9, 10}, false);
          Value* r = n.unary(OpKind::Relu, x);     // plain in, stored out
          Value* s = n.binary(OpKind::Add, b, x);  // stored + plain
          Value* d = n.conv(r, 16, 1, {2, 16, 9, 10});
          Value* e = n.conv(s, 16, 1, {2, 16, 9, 10});
          n.g->outputs() = {d, e};
          for (Value* v : {a, h, m, b, r, s}) EXPECT_TRUE(dnnl_cpu::storable(v)) << v->name;
          EXPECT_FALSE(dnnl_cpu::storable(x));
        },
        {2, 3});
  }
}

// Concat of conv outputs (an ASPP head, a YOLO neck): with every input's channels a multiple
// of 16 it keeps the stored layout, along channels or along a spatial axis; with other
// channel counts it stays plain. Both match the reference.
TEST(DnnlLayout, ConcatOfConvOutputs) {
  for (bool aligned : {true, false})
    for (int64_t axis : {1, 2}) {
      SCOPED_TRACE(std::string(aligned ? "aligned" : "off-block") + " axis " +
                   std::to_string(axis));
      expect_auto_matches_reference(
          [&](Net& n) {
            const int64_t c1 = aligned ? 32 : 24, c2 = aligned ? (axis == 1 ? 48 : 32) : 40;
            Value* x = n.input("x", {2, 3, 8, 9});
            x->dims[0] = Dim{-1, "batch"};
            Value* a = n.conv(x, c1, 3, {2, c1, 8, 9});
            Value* b = n.conv(x, axis == 1 ? c2 : c1, 1, {2, axis == 1 ? c2 : c1, 8, 9});
            const Shape ys = axis == 1 ? Shape{2, c1 + c2, 8, 9} : Shape{2, c1, 16, 9};
            Value* cat = n.concat({a, b}, axis, ys);
            n.g->outputs() = {n.conv(cat, 16, 3, {2, 16, ys[2], 9})};
            EXPECT_EQ(dnnl_cpu::storable(cat), aligned);
            EXPECT_EQ(dnnl_cpu::storable(a), aligned);
          },
          {2, 3});
    }
}

// A Mul whose other operand is neither the output's shape nor [N, C, 1, 1] (a spatial map)
// keeps its inputs plain, and still matches.
TEST(DnnlLayout, SpatialBroadcastOperandStaysPlain) {
  expect_auto_matches_reference([](Net& n) {
    Value* x = n.input("x", {2, 3, 8, 8});
    Value* map = n.input("map", {2, 1, 8, 8});
    Value* a = n.conv(x, 16, 3, {2, 16, 8, 8});
    Value* m = n.binary(OpKind::Mul, a, map);
    n.g->outputs() = {n.conv(m, 16, 3, {2, 16, 8, 8})};
    EXPECT_TRUE(dnnl_cpu::storable(a));
    EXPECT_FALSE(dnnl_cpu::storable(map));  // a graph input
    EXPECT_TRUE(dnnl_cpu::storable(m));
  });
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// The reference kernels read row-major tensors only: an input the plan records in another
// layout is refused at prepare, naming it, instead of being read as the wrong elements.
TEST(ReferenceKernel, RefusesAnInputThatIsNotPlain) {
  Graph g;
  Node* n = g.add_node(OpKind::Relu, "relu", {f32_value(g, "x", {1, 16, 4, 4})},
                       {f32_value(g, "y", {1, 16, 4, 4})});
  auto kernel = reference_backend().create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  for (Layout l : {Layout::kNHWC, Layout::kNChw8c, Layout::kNChw16c}) {
    std::vector<TensorDesc> in{{DataType::kFloat32, {1, 16, 4, 4}, nullptr, l}}, out(1);
    const Status s = prepare_host(**kernel, in, out);
    EXPECT_EQ(s.code(), StatusCode::kInternal) << layout_name(l);
    EXPECT_NE(s.message().find(std::string("arrives ") + layout_name(l)), std::string::npos)
        << s.to_string();
  }
  std::vector<TensorDesc> in{{DataType::kFloat32, {1, 16, 4, 4}, nullptr}}, out(1);
  EXPECT_TRUE(prepare_host(**kernel, in, out).is_ok());
}

}  // namespace
}  // namespace kiln::test
