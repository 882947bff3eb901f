// Helpers for tests of the oneDNN layouts: tiny conv/pool graphs built in a few lines, run
// whole through the engine with the auto backend (oneDNN + reference) and with the reference
// backend alone, under the CPU layout and conv options a test sets.
#pragma once

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "backends/backend_test_util.h"
#include "backends/dnnl_test_util.h"
#include "runtime/engine_impl.h"

namespace kiln::test {

// The oneDNN state (layout decision, conv choices) of a CPU engine built with the auto backend.
inline const dnnl_cpu::DnnlShared& dnnl_state(const Engine& e) {
  return *dnnl_cpu::shared_of(engine_impl(e).states.find("onednn"));
}

// CPU engine options with `layout` and `algo`.
inline EngineOptions cpu_options(CpuLayout layout, CpuConvAlgo algo = CpuConvAlgo::kDirect) {
  EngineOptions o;
  o.cpu_layout = layout;
  o.cpu_conv_algo = algo;
  return o;
}

struct Net {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  uint32_t seed = 100;

  Value* input(const std::string& name, const Shape& s) {
    Value* v = f32_value(*g, name, s);
    g->inputs().push_back(v);
    return v;
  }
  // k×k conv, stride `stride`, "same" padding, bias, optional ReLU and residual. A symbolic
  // batch of `x` carries over to the output.
  Value* conv(Value* x, int64_t cout, int64_t k, const Shape& out_shape, bool relu = true,
              Value* residual = nullptr, int64_t stride = 1) {
    const int64_t cin = x->dims[1].value, p = k / 2;
    // Weights ~ 1/sqrt(fan-in) keep activations near 1 through the chain.
    const float scale = 1.7f / std::sqrt(static_cast<float>(cin * k * k));
    Attributes a;
    a.set("pads", std::vector<int64_t>{p, p, p, p});
    if (stride != 1) a.set("strides", std::vector<int64_t>{stride, stride});
    std::vector<Value*> ins{
        x, g->add_constant("w", random_tensor({cout, cin, k, k}, ++seed, -scale, scale)),
        g->add_constant("b", random_tensor({cout}, ++seed))};
    if (residual) ins.push_back(residual);
    Value* y = f32_value(*g, "y", out_shape);
    y->dims[0] = x->dims[0];
    Node* n = g->add_node(OpKind::Conv, "conv", ins, {y}, a);
    if (residual) n->epilogue.residual_input = 3;
    if (relu) n->epilogue.act = Activation::kRelu;
    return y;
  }
  Value* pool(OpKind op, Value* x, const Shape& out_shape, Attributes a) {
    Value* y = f32_value(*g, "p", out_shape);
    y->dims[0] = x->dims[0];
    g->add_node(op, "pool", {x}, {y}, std::move(a));
    return y;
  }
  // A binary op whose output has `a`'s dims, or `b`'s where `a` broadcasts.
  Value* binary(OpKind op, Value* a, Value* b) {
    Value* y = g->add_value("e");
    y->dtype = DataType::kFloat32;
    y->has_shape = true;
    y->dims = a->dims[2].value == 1 && b->dims[2].value != 1 ? b->dims : a->dims;
    g->add_node(op, "binary", {a, b}, {y});
    return y;
  }
  Value* concat(const std::vector<Value*>& xs, int64_t axis, const Shape& out_shape) {
    Value* y = f32_value(*g, "cat", out_shape);
    y->dims[0] = xs[0]->dims[0];
    Attributes a;
    a.set("axis", axis);
    g->add_node(OpKind::Concat, "concat", xs, {y}, a);
    return y;
  }
  Value* unary(OpKind op, Value* x) {
    Value* y = g->add_value("u");
    y->dtype = x->dtype;
    y->has_shape = x->has_shape;
    y->dims = x->dims;
    g->add_node(op, "unary", {x}, {y});
    return y;
  }
};

inline Attributes pool_attrs(int64_t k, int64_t s, int64_t pad, bool ceil = false,
                             bool incl = false) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  if (ceil) a.set("ceil_mode", int64_t{1});
  if (incl) a.set("count_include_pad", int64_t{1});
  return a;
}

// Runs the graph `make` builds with the auto and the reference backends on the same random
// inputs, once per batch in `batches` on one Context (0: the inputs' declared shapes, which
// must then be static; otherwise it replaces a symbolic dim 0, so the kernels prepare again);
// expects every graph output to match. `base` sets the CPU options (layout, conv algorithm).
inline void expect_auto_matches_reference(const std::function<void(Net&)>& make,
                                          std::vector<int64_t> batches = {0},
                                          const EngineOptions& base = EngineOptions()) {
  std::vector<std::map<std::string, Tensor>> inputs(batches.size());
  std::vector<std::map<std::string, Tensor>> results[2];
  for (int i = 0; i < 2; ++i) {
    Net net;
    make(net);
    for (size_t b = 0; b < batches.size(); ++b)
      if (inputs[b].empty())
        for (const Value* v : net.g->inputs()) {
          Shape s;
          for (const Dim& d : v->dims) s.push_back(d.known() ? d.value : batches[b]);
          ASSERT_GT(s[0], 0) << "batch 0 needs static input shapes";
          inputs[b][v->name] =
              random_tensor(s, 7 + static_cast<uint32_t>(b * 10 + inputs[b].size()));
        }
    EngineOptions opts = base;
    opts.backend = i == 0 ? KernelChoice::kAuto : KernelChoice::kReference;
    opts.optimize = false;
    opts.threads = 2;
    auto engine = build_engine(std::move(net.g), opts);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto ctx = (*engine)->create_context();
    for (size_t b = 0; b < batches.size(); ++b)
      for (int run = 0; run < 2; ++run) {  // a second run reuses the prepared kernels
        auto out = ctx->run(inputs[b]);
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        if (run == 1) results[i].push_back(std::move(*out));
      }
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(batches[b]));
    ASSERT_EQ(results[0][b].size(), results[1][b].size());
    for (const auto& [name, want] : results[1][b]) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(results[0][b].count(name));
      // Several convs deep, summation order differs (oneDNN blocks K, Winograd transforms):
      // looser than one node, far tighter than a layout mix-up would give.
      expect_near(results[0][b].at(name), want, 1e-4, 1e-3);
    }
  }
}

}  // namespace kiln::test
