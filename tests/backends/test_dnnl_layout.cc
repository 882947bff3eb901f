// Activations stored in oneDNN's layout between oneDNN kernels (stored_blocked): small graphs run
// whole through the engine with the auto backend (oneDNN + reference) and with the
// reference backend alone, on random data. The graphs mix values that stay blocked
// (conv → conv → pool → conv with a residual), values read by a reference kernel too,
// graph outputs that are also read by a conv, channel counts off the block, and a pool
// that falls back to the reference kernel between blocked neighbours.
#include <cmath>
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_common.h"
#include "runtime/engine_impl.h"

namespace kiln::test {
namespace {

struct Net {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  uint32_t seed = 100;

  Value* input(const std::string& name, const Shape& s) {
    Value* v = f32_value(*g, name, s);
    g->inputs().push_back(v);
    return v;
  }
  // k×k conv, stride 1, "same" padding, bias, optional ReLU and residual.
  Value* conv(Value* x, int64_t cout, int64_t k, const Shape& out_shape, bool relu = true,
              Value* residual = nullptr) {
    const int64_t cin = x->dims[1].value, p = k / 2;
    // Weights ~ 1/sqrt(fan-in) keep activations near 1 through the chain.
    const float scale = 1.7f / std::sqrt(static_cast<float>(cin * k * k));
    Attributes a;
    a.set("pads", std::vector<int64_t>{p, p, p, p});
    std::vector<Value*> ins{
        x, g->add_constant("w", random_tensor({cout, cin, k, k}, ++seed, -scale, scale)),
        g->add_constant("b", random_tensor({cout}, ++seed))};
    if (residual) ins.push_back(residual);
    Value* y = f32_value(*g, "y", out_shape);
    Node* n = g->add_node(OpKind::Conv, "conv", ins, {y}, a);
    if (residual) n->epilogue.residual_input = 3;
    if (relu) n->epilogue.act = Activation::kRelu;
    return y;
  }
  Value* pool(OpKind op, Value* x, const Shape& out_shape, Attributes a) {
    Value* y = f32_value(*g, "p", out_shape);
    g->add_node(op, "pool", {x}, {y}, std::move(a));
    return y;
  }
  Value* unary(OpKind op, Value* x) {
    Shape s;
    x->static_shape(&s);
    Value* y = f32_value(*g, "u", s);
    g->add_node(op, "unary", {x}, {y});
    return y;
  }
};

Attributes pool_attrs(int64_t k, int64_t s, int64_t pad, bool ceil = false, bool incl = false) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  if (ceil) a.set("ceil_mode", int64_t{1});
  if (incl) a.set("count_include_pad", int64_t{1});
  return a;
}

// Runs the graph `make` builds with the auto and the reference backends on the same random
// inputs; expects every graph output to match.
template <typename Make>
void expect_auto_matches_reference(Make make) {
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> results[2];
  const char* backends[2] = {"auto", "reference"};
  for (int i = 0; i < 2; ++i) {
    Net net;
    make(net);
    if (inputs.empty())
      for (const Value* v : net.g->inputs()) {
        Shape s;
        ASSERT_TRUE(v->static_shape(&s));
        inputs[v->name] = random_tensor(s, 7 + static_cast<uint32_t>(inputs.size()));
      }
    EngineOptions opts;
    opts.backend = backends[i];
    opts.optimize = false;
    opts.threads = 2;
    auto engine = build_engine(std::move(net.g), opts);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto ctx = (*engine)->create_context();
    for (int run = 0; run < 2; ++run) {  // a second run reuses the prepared kernels
      auto out = ctx->run(inputs);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      results[i] = std::move(*out);
    }
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (const auto& [name, want] : results[1]) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(results[0].count(name));
    // Several convs deep, summation order differs (oneDNN blocks K): looser than one node,
    // far tighter than a layout mix-up would give.
    expect_near(results[0].at(name), want, 1e-4, 1e-3);
  }
}

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
    for (Value* v : {a, b, c, d}) EXPECT_TRUE(dnnl_cpu::stored_blocked(v)) << v->name;
  });
}

// The decision itself, after build_engine marked the graph outputs.
TEST(DnnlLayout, DecisionFollowsProducersAndReaders) {
  Net n;
  Value* x = n.input("x", {1, 3, 8, 8});
  Value* a = n.conv(x, 16, 3, {1, 16, 8, 8});           // conv → conv, conv residual
  Value* b = n.conv(a, 16, 3, {1, 16, 8, 8}, true, a);  // read by conv and by Relu
  Value* c = n.conv(b, 24, 1, {1, 24, 8, 8});           // 24 channels: off a 16-block
  Value* d = n.conv(c, 16, 1, {1, 16, 8, 8});           // graph output read by a conv
  Value* e = n.conv(d, 16, 3, {1, 16, 8, 8});
  Value* r = n.unary(OpKind::Relu, b);
  n.g->outputs() = {d, e, r};
  EngineOptions opts;
  opts.optimize = false;
  auto engine = build_engine(std::move(n.g), opts);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_FALSE(dnnl_cpu::stored_blocked(x));  // graph input
  using dnnl::memory;
  const memory::desc a_desc = dnnl_cpu::stored_desc(a, {1, 16, 8, 8});
  EXPECT_NE(a_desc, memory::desc({1, 16, 8, 8}, memory::data_type::f32, memory::format_tag::nchw))
      << "expected oneDNN to prefer a layout of its own on this CPU";
  EXPECT_TRUE(dnnl_cpu::stored_blocked(a));
  EXPECT_FALSE(dnnl_cpu::stored_blocked(b));  // a reference kernel reads it
  // nhwc takes any channel count; nChw16c/nChw8c only multiples of the block.
  const bool nhwc =
      a_desc == memory::desc({1, 16, 8, 8}, memory::data_type::f32, memory::format_tag::nhwc);
  EXPECT_EQ(dnnl_cpu::stored_blocked(c), nhwc);
  EXPECT_FALSE(dnnl_cpu::stored_blocked(d));  // graph output
  EXPECT_FALSE(dnnl_cpu::stored_blocked(e));
  EXPECT_FALSE(dnnl_cpu::stored_blocked(r));
}

// A blocked value also read by a reference kernel, a graph output also read by a conv, a
// channel count off the block.
TEST(DnnlLayout, MixedReadersGraphOutputsAndOddChannels) {
  expect_auto_matches_reference([](Net& n) {
    Value* x = n.input("x", {3, 5, 9, 10});
    Value* a = n.conv(x, 16, 3, {3, 16, 9, 10});
    Value* b = n.conv(a, 16, 3, {3, 16, 9, 10}, true, a);
    Value* c = n.conv(b, 24, 1, {3, 24, 9, 10});
    Value* d = n.conv(c, 32, 3, {3, 32, 9, 10}, false);
    Value* e = n.conv(d, 16, 3, {3, 16, 9, 10});
    Value* r = n.unary(OpKind::Sigmoid, b);
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
  EXPECT_TRUE(dnnl_cpu::stored_blocked(p));
  auto kernel = onednn_backend(1).create_kernel(*p->producer);
  ASSERT_TRUE(kernel.is_ok());
  std::vector<TensorDesc> in{{DataType::kFloat32, {2, 16, 12, 11}, nullptr}}, out(1);
  ASSERT_TRUE((*kernel)->prepare(in, out).is_ok());
  EXPECT_TRUE(static_cast<dnnl_cpu::DnnlKernel&>(**kernel).uses_reference());
}

}  // namespace
}  // namespace kiln::test
