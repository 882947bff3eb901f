// oneDNN Conv: 2-D fp32, any groups/strides/dilations/pads (auto_pad resolved by the shared
// conv_geometry), the node's epilogue as post-ops. Weights are constants, reordered once
// per prepared shape into the layout oneDNN picks (format_tag::any). oneDNN picks the
// activation layouts too (blocked nChw16c on AVX-512, which selects the direct JIT kernels
// instead of the generic GEMM path); values between oneDNN nodes are stored in that layout
// (stored_blocked), so a conv reorders only where a neighbour needs nchw.
//
// 3×3 stride-1 undilated ungrouped convs may run oneDNN's Winograd instead, which does
// about half the multiplies but wants nChw16c (so it reorders from and to the stored
// layout) and rounds differently. KILN_DNNL_CONV_ALGO picks: "auto" (default; both are
// timed at prepare on the real shapes, reorders included, the faster is kept), "direct"
// (never Winograd) or "winograd" (wherever oneDNN can create it; direct elsewhere).

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backends/cpu/dnnl_common.h"
#include "ops/conv.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
}

// Which algorithm 3×3 stride-1 convs use, from KILN_DNNL_CONV_ALGO: "direct", "winograd"
// (where oneDNN can create it; direct elsewhere) or "auto" (default: both are timed at
// prepare on the real shapes and layouts, reorders included, and the faster is kept).
enum class AlgoMode { kAuto, kDirect, kWinograd };

// Read at every prepare (a cheap getenv) so tests can switch it between kernels.
AlgoMode algo_mode() {
  const char* env = std::getenv("KILN_DNNL_CONV_ALGO");
  const std::string v = env ? env : "";
  if (v == "direct") return AlgoMode::kDirect;
  if (v == "winograd") return AlgoMode::kWinograd;
  return AlgoMode::kAuto;
}

// A primitive for one algorithm plus the reorders between its layouts and the stored ones.
struct Plan {
  dnnl::algorithm algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory weights;
  bool src_reorder = false, dst_direct = true, res_copy = true;
  memory src_mem, dst_mem;  // oneDNN-layout scratch where the layouts differ
  dnnl::reorder src_reorder_prim, dst_reorder_prim, res_reorder_prim;
};

class DnnlConvKernel final : public DnnlKernel {
 public:
  DnnlConvKernel(const Node& node, int threads, ConvAttrs attrs)
      : DnnlKernel(node, threads), attrs_(std::move(attrs)) {}

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& xs = in[0].shape;
    const Shape& ws = in[1].shape;
    if (xs.size() != 4 || ws.size() != 4) return false;
    auto geo = conv_geometry(attrs_, xs, ws);
    if (!geo.is_ok()) return false;
    const ConvGeometry& g = *geo;
    stream_ = dnnl::stream(cpu_engine());
    // How the neighbours store the activations (blocked between oneDNN nodes, else nchw).
    src_ext_ = stored_desc(node_.inputs[0], xs);
    dst_ext_ = stored_desc(node_.outputs[0], out[0].shape);
    const int r = node_.epilogue.residual_input;
    if (r >= 0) res_ext_ = stored_desc(node_.inputs[r], out[0].shape);

    const bool wino_shape = g.group == 1 && ws[2] == 3 && ws[3] == 3 && g.strides[0] == 1 &&
                            g.strides[1] == 1 && g.dilations[0] == 1 && g.dilations[1] == 1;
    const AlgoMode mode = algo_mode();
    if (!wino_shape || mode == AlgoMode::kDirect) {
      plan_ = make_plan(dnnl::algorithm::convolution_direct, g, xs, ws, out[0].shape);
      return true;
    }
    std::optional<Plan> wino;
    try {
      wino = make_plan(dnnl::algorithm::convolution_winograd, g, xs, ws, out[0].shape);
    } catch (const dnnl::error&) {
      // No Winograd implementation for these channels / post-ops: direct it is.
    }
    if (wino && mode == AlgoMode::kWinograd) {
      plan_ = std::move(*wino);
      return true;
    }
    plan_ = make_plan(dnnl::algorithm::convolution_direct, g, xs, ws, out[0].shape);
    if (wino && winograd_is_faster(*wino, xs, out[0].shape)) plan_ = std::move(*wino);
    return true;
  }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    const int r = node_.epilogue.residual_input, b = bias_index(node_);
    run_plan(plan_, in[0]->data<float>(), out[0]->data<float>(),
             r >= 0 ? in[r]->data<float>() : nullptr, b >= 0 ? in[b]->data<float>() : nullptr);
  }

 public:
  // Which algorithm the prepared shapes use (tests check what ran).
  dnnl::algorithm algorithm() const { return plan_.algo; }

 private:
  Plan make_plan(dnnl::algorithm algo, const ConvGeometry& g, const Shape& xs, const Shape& ws,
                 const Shape& ys) {
    const int64_t groups = g.group;
    memory::dims src_dims = to_dims(xs), dst_dims = to_dims(ys);
    memory::dims w_dims =
        groups == 1 ? to_dims(ws) : memory::dims{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
    memory::dims strides = to_dims(g.strides), pad_l = to_dims(g.pad_begin),
                 pad_r = to_dims(g.pad_end), dil;
    for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps

    memory::desc src_md(src_dims, dt::f32, tag::any);
    memory::desc dst_md(dst_dims, dt::f32, tag::any);
    memory::desc w_any(w_dims, dt::f32, tag::any);
    const int b = bias_index(node_);
    memory::desc bias_md = b >= 0 ? memory::desc({ws[0]}, dt::f32, tag::x) : memory::desc();

    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algo, src_md, w_any,
                                         bias_md, dst_md, strides, dil, pad_l, pad_r);
    const int r = node_.epilogue.residual_input;
    dnnl::post_ops ops;
    if (r >= 0) ops.append_sum(1.f);
    if (!append_activation(node_.epilogue, ops))
      throw dnnl::error(dnnl_unimplemented, "activation has no oneDNN post-op");
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    Plan p;
    p.algo = algo;
    p.pd = dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
    p.prim = dnnl::convolution_forward(p.pd);

    // Pack the constant weights once into oneDNN's chosen layout.
    const Tensor& w = node_.inputs[1]->constant;
    memory::desc w_user(w_dims, dt::f32, groups == 1 ? tag::oihw : tag::goihw);
    memory user(w_user, cpu_engine(), const_cast<float*>(w.data<float>()));
    p.weights = memory(p.pd.weights_desc(), cpu_engine());
    dnnl::reorder(user, p.weights).execute(stream_, user, p.weights);
    stream_.wait();

    // Where oneDNN's choice differs from how the neighbours store a value (the graph's
    // input, a value a reference kernel reads, a channel count off the block, Winograd's
    // nChw16c between nhwc neighbours), reorder; everything is made here so run() only
    // executes.
    p.src_reorder = p.pd.src_desc() != src_ext_;
    p.dst_direct = p.pd.dst_desc() == dst_ext_;
    if (p.src_reorder) {
      p.src_mem = memory(p.pd.src_desc(), cpu_engine());
      p.src_reorder_prim = make_reorder(src_ext_, p.pd.src_desc());
    }
    if (!p.dst_direct) {
      p.dst_mem = memory(p.pd.dst_desc(), cpu_engine());
      p.dst_reorder_prim = make_reorder(p.pd.dst_desc(), dst_ext_);
    }
    p.res_copy = r >= 0 && res_ext_ == p.pd.dst_desc();
    if (r >= 0 && !p.res_copy) p.res_reorder_prim = make_reorder(res_ext_, p.pd.dst_desc());
    return p;
  }

  void run_plan(Plan& p, const float* x, float* y, const float* res, const float* bias) {
    memory src(src_ext_, cpu_engine(), const_cast<float*>(x));
    memory dst_user(dst_ext_, cpu_engine(), y);
    if (p.src_reorder) {
      p.src_reorder_prim.execute(stream_, src, p.src_mem);
      src = p.src_mem;
    }
    memory dmem = p.dst_direct ? dst_user : p.dst_mem;
    // The sum post-op accumulates into dst: start dst as the residual.
    if (res) {
      if (!p.res_copy)
        p.res_reorder_prim.execute(
            stream_, {{DNNL_ARG_FROM, memory(res_ext_, cpu_engine(), const_cast<float*>(res))},
                      {DNNL_ARG_TO, dmem}});
      else if (res != dmem.get_data_handle())
        std::memcpy(dmem.get_data_handle(), res, p.pd.dst_desc().get_size());
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dmem}};
    if (bias)
      args[DNNL_ARG_BIAS] = memory(p.pd.bias_desc(), cpu_engine(), const_cast<float*>(bias));
    p.prim.execute(stream_, args);
    if (!p.dst_direct) p.dst_reorder_prim.execute(stream_, p.dst_mem, dst_user);
    stream_.wait();
  }

  // Times `wino` against the direct plan_ (reorders included) on scratch operands in the
  // stored layouts: the best of a few runs each, alternating, so load from other processes
  // hits both alike. The data does not matter to the speed; it is filled so no denormals
  // appear.
  bool winograd_is_faster(Plan& wino, const Shape& xs, const Shape& ys) {
    auto count = [](const Shape& s) {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      return static_cast<size_t>(n);
    };
    std::vector<float> x(count(xs), 0.5f), y(count(ys)), res(count(ys), 0.25f);
    std::vector<float> bias(static_cast<size_t>(node_.inputs[1]->constant.shape()[0]), 0.1f);
    const float* r = node_.epilogue.residual_input >= 0 ? res.data() : nullptr;
    const float* b = bias_index(node_) >= 0 ? bias.data() : nullptr;
    auto time_once = [&](Plan& p) {
      const auto t0 = std::chrono::steady_clock::now();
      run_plan(p, x.data(), y.data(), r, b);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    time_once(plan_);  // warm-up: first touch of the scratch, caches
    time_once(wino);
    double best_direct = 1e30, best_wino = 1e30;
    for (int i = 0; i < kTimedRuns; ++i) {
      best_wino = std::min(best_wino, time_once(wino));
      best_direct = std::min(best_direct, time_once(plan_));
    }
    return best_wino < best_direct;
  }

  static constexpr int kTimedRuns = 4;
  ConvAttrs attrs_;
  dnnl::stream stream_;
  memory::desc src_ext_, dst_ext_, res_ext_;  // as the neighbours store them
  Plan plan_;
};

}  // namespace

bool conv_uses_winograd(const Kernel& kernel) {
  auto* k = dynamic_cast<const DnnlConvKernel*>(&kernel);
  return k && !k->uses_reference() && k->algorithm() == dnnl::algorithm::convolution_winograd;
}

bool conv_supported(const Node& node) {
  if (node.op != OpKind::Conv || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Value* w = node.inputs[1];
  if (!is_f32(node.inputs[0]) || !is_f32(w) || !w->is_constant()) return false;
  if (w->constant.dtype() != DataType::kFloat32 || w->constant.rank() != 4) return false;
  if (!is_f32(node.outputs[0])) return false;
  const int b = bias_index(node);
  if (b >= 0 && !is_f32(node.inputs[b])) return false;
  const int r = node.epilogue.residual_input;
  if (r >= 0 && (r >= static_cast<int>(node.inputs.size()) || !is_f32(node.inputs[r])))
    return false;
  return parse_conv_attrs(node.attrs).is_ok();
}

std::unique_ptr<Kernel> make_conv_kernel(const Node& node, int threads) {
  auto attrs = parse_conv_attrs(node.attrs);
  return std::make_unique<DnnlConvKernel>(node, threads, attrs.is_ok() ? *attrs : ConvAttrs{});
}

}  // namespace kiln::dnnl_cpu
