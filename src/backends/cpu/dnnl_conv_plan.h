// How one oneDNN Conv runs (dnnl_conv_plan.cc): the candidate primitives for a conv node on
// concrete shapes, given how its neighbours store the operands, timed against each other so
// the fastest is kept. The conv kernel (dnnl_conv.cc) runs the chosen plan; the layout
// decision (dnnl_layout_plan.cc) asks what a conv would cost under each candidate layout.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/dnnl_common.h"
#include "ops/conv.h"

namespace kiln::dnnl_cpu {

// Which candidate a plan is: enough to make the same primitive again.
struct ConvChoice {
  dnnl::algorithm algo = dnnl::algorithm::convolution_direct;
  dnnl::memory::format_tag src = dnnl::memory::format_tag::any;  // `any`: oneDNN picks
  dnnl::memory::format_tag dst = dnnl::memory::format_tag::any;
  bool allow_ref = false;   // oneDNN's slow reference conv accepted
  bool res_binary = false;  // the residual read by a binary post-op
};

// One way to run the conv: a primitive for one algorithm and activation layout, plus the
// reorders between that layout and the stored ones. Everything is made when the plan is
// built, so running it only executes.
struct ConvPlan {
  ConvChoice choice;
  bool remembered = false;  // made from the backend's earlier answer, not timed now
  dnnl::algorithm algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  dnnl::memory weights;
  bool src_reorder = false, dst_direct = true;
  bool res_same_layout = true;  // the residual is stored as dst is: in place needs no copy
  // The residual is added by a binary post-op reading it where it is stored, instead of a
  // sum post-op into dst pre-filled with it (a copy of the whole tensor each run).
  bool res_binary = false;
  dnnl::memory src_mem, dst_mem;  // scratch in the primitive's layouts where they differ
  // int8 convs (Epilogue::int8): the output scales s · s_w[m], and the bias divided by them
  // (rewritten on each run: the bias is an input).
  std::vector<float> out_scales, bias_scaled;
  dnnl::reorder src_reorder_prim, dst_reorder_prim, res_reorder_prim;
};

// The operands of one conv node on concrete shapes, and the layouts its neighbours store the
// activations in (nchw where they keep the logical layout).
struct ConvOperands {
  Shape x, w, y;
  dnnl::memory::format_tag src = dnnl::memory::format_tag::nchw;
  dnnl::memory::format_tag dst = dnnl::memory::format_tag::nchw;
  dnnl::memory::format_tag res = dnnl::memory::format_tag::nchw;  // when the node has one
};

// Builds, times and runs the plans of one conv node. Not thread-safe; one per kernel (or
// per layout question).
class ConvPlanner {
 public:
  ConvPlanner(const Node& node, const ConvAttrs& attrs, const DnnlShared& shared)
      : node_(node), attrs_(attrs), shared_(shared) {}

  // The fastest plan for `ops` under the backend's CpuConvAlgo (dnnl_conv.cc describes it).
  // Candidates: the direct conv on the stored layouts as they are (a residual stored like dst
  // added by a sum post-op or read by a binary one), the direct conv on the layout oneDNN
  // prefers with reorders around it, and Winograd where it exists; when more
  // than one can be made they are timed on scratch operands and `seconds` (if given) gets
  // the winner's time (0 when nothing was timed). False when oneDNN can run none of them.
  //
  // The answer is remembered by the backend (DnnlShared::convs), keyed by what it depends on (the
  // conv's parameters and epilogue, the shapes, the stored layouts, the algorithm mode): the same
  // question gets the same plan again without timing. So a context that prepares a shape
  // again, or another context of the engine, runs the same primitives and gives the same
  // bits (candidates round differently, and timing noise could pick another one).
  bool choose(const ConvOperands& ops, ConvPlan* best, double* seconds = nullptr);

  // Runs `p` on operands stored as in `ops`; `res` and `bias` may be null.
  void run(ConvPlan& p, const float* x, float* y, const float* res, const float* bias);

  // Times `p` on scratch operands: the best of a few runs after a warm-up, in seconds.
  double time(ConvPlan& p);

 private:
  // A plan for `algo` with the activations in `src_fmt` / `dst_fmt` (`any`: oneDNN picks),
  // the residual (if any) added by a binary post-op when `res_binary`; throws dnnl::error
  // when oneDNN has no implementation (or, unless `allow_ref`, only its slow reference one).
  ConvPlan make(const ConvChoice& c);
  // Times the candidates and picks one (choose without a remembered answer).
  bool pick(std::vector<ConvPlan>& cands, ConvPlan* best, double* seconds);

  static constexpr int kTimedRounds = 3;         // at most, after one warm-up run
  static constexpr double kTimingBudget = 3e-3;  // seconds of timed runs per candidate
  const Node& node_;
  const ConvAttrs& attrs_;
  const DnnlShared& shared_;
  ConvOperands ops_;
  dnnl::memory::desc src_ext_, dst_ext_, res_ext_;  // as the neighbours store them
  ConvGeometry geo_;
  dnnl::stream stream_;
  std::vector<float> x_, y_, res_, bias_;  // scratch for timing
};

// Seconds the fastest plan of conv `node` takes on input shape `x` with its input, output and
// residual stored in `src`, `dst`, `res` (format tags; nchw where the neighbour keeps the
// logical layout). Measured once per distinct question by the backend `sh` and remembered, so
// the layout decision that asks it is the same for every kernel that asks. Negative when
// oneDNN cannot run the conv.
double conv_seconds(const DnnlShared& sh, const Node& node, const Shape& x,
                    dnnl::memory::format_tag src, dnnl::memory::format_tag dst,
                    dnnl::memory::format_tag res);

// Whether oneDNN's int8 kernels run with VNNI here (8-bit dot products into 32 bits), as it
// runs: ONEDNN_MAX_CPU_ISA caps it. Without VNNI its u8×s8 pair sums saturate at 16 bits, so
// uint8 codes run as int8 ones, and its s8 path keeps 7 bits of each weight code.
bool int8_has_vnni();

}  // namespace kiln::dnnl_cpu
