// The graph (backend) API path of the Conv kernel (conv_kernel.h, conv_graph.h).
//
// Variants: "fused" puts bias, residual and the activation (where graph_fuses) into the
// graph, an activation it cannot express runs as launch_epilogue afterwards; "conv only"
// (no residual) leaves bias and activation to launch_epilogue. Each variant also runs on an
// input whose channels are zero-padded to a multiple of 8 (paddable(): the RGB stem), the
// padded copy made by launch_pad_channels into the workspace, behind the plan's own.
// Candidates: the first kHeurA configs of heuristic mode A, each finalized into a plan that
// fits the workspace limit and timed; the fallback list's first kHeurFallback only when mode
// A yields no plan, and the conv-only variant only when the fused one yields none (on
// ResNet-50 fp16 every timed winner was a fused mode-A engine, and finalizing a plan can mean
// compiling a kernel at runtime: each candidate costs build time). Without timing, the first
// two plans that finalize are kept, in heuristic order. CudaBuildContext::max_tactics caps
// the plans finalized (and timed) per path.
// A cached choice records (variant, heuristic mode, rank, engine id); the plan is rebuilt
// from the same heuristic query and used only when the engine id matches.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <istream>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_kernel.h"
#include "backends/cuda/cudnn/pad_channels.h"
#include "backends/cuda/kernels/launch.h"

namespace kiln {
namespace {

constexpr int kHeurA = 10;
constexpr int kHeurFallback = 4;

}  // namespace

Result<std::shared_ptr<ConvGraph>> CudnnConvKernel::build_graph(cudnnHandle_t h, bool fused,
                                                                bool padded) const {
  ConvGraphSpec s = conv_graph_spec(geo_, x_desc_.dtype, nhwc());
  if (padded) s.c = s.cg = padded_channels();
  if (fused) {
    s.bias = bias_ >= 0;
    s.residual = epilogue_.residual_input >= 0;
    if (graph_fuses(epilogue_.act)) {
      s.act = epilogue_.act;
      s.alpha = epilogue_.alpha;
      s.beta = epilogue_.beta;
    }
  }
  auto graph = std::make_shared<ConvGraph>();
  KILN_RETURN_IF_ERROR(graph->build(h, s));
  return graph;
}

Result<std::unique_ptr<ConvPlan>> CudnnConvKernel::plan_for(cudnnHandle_t h, bool fused,
                                                            bool padded, int mode, int rank,
                                                            int64_t engine, bool strict,
                                                            bool runtime_compiled) const {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<ConvGraph> graph, build_graph(h, fused, padded));
  KILN_ASSIGN_OR_RETURN(std::vector<ConvEngineCfg> cfgs,
                        graph->engine_configs(static_cast<cudnnBackendHeurMode_t>(mode), strict,
                                              INT_MAX, runtime_compiled));
  for (const ConvEngineCfg& c : cfgs)
    if (c.rank == rank && c.engine == engine) return make_conv_plan(h, graph, c);
  return unsupported("the cached cuDNN engine is no longer offered");
}

bool CudnnConvKernel::graph_from_cache(CudaBuildContext& ctx, std::istream& is, ConvTactic& t) {
  int fused = 0, padded = 0, mode = 0, rank = 0;
  int64_t engine = -1;
  if (!(is >> fused >> padded >> mode >> rank >> engine >> t.ms)) return false;
  if (padded && (!paddable() || !filter_padded_)) return false;
  if (!fused && epilogue_.residual_input >= 0) return false;
  auto plan = plan_for(ctx.cudnn, fused != 0, padded != 0, mode, rank, engine, strict_fp32_,
                       ctx.runtime_fusion);
  if (!plan.is_ok()) return false;
  t.path = ConvPath::kGraph;
  t.fused = fused != 0;
  t.padded = padded != 0;
  t.plan = std::shared_ptr<ConvPlan>(std::move(*plan));
  t.workspace = t.padded ? conv_align_up(t.plan->workspace) + padded_x_bytes() : t.plan->workspace;
  return t.workspace <= ctx.workspace_limit;
}

Status CudnnConvKernel::launch_graph(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
                                     const void* residual, void* ws, const ConvTactic& t) const {
  const void* xin = x;
  if (t.padded) {
    void* xp = static_cast<uint8_t*>(ws) + conv_align_up(t.plan->workspace);
    const int64_t rows = x_desc_.numel() / geo_.in_channels;
    KILN_RETURN_IF_ERROR(launch_pad_channels(x_desc_.dtype, x, xp, rows, geo_.in_channels,
                                             padded_channels(), stream));
    xin = xp;
  }
  KILN_RETURN_IF_ERROR(execute_conv_plan(h, *t.plan, xin, t.padded ? filter_padded_ : filter_, y,
                                         bias_act_, residual, ws));
  if (t.fused) {
    if (epilogue_.act == Activation::kNone || graph_fuses(epilogue_.act)) return Status::ok();
    return launch_epilogue(y_desc_, y, nullptr, nullptr, epilogue_.act, epilogue_.alpha,
                           epilogue_.beta, stream);
  }
  if (!has_epilogue()) return Status::ok();
  return launch_epilogue(y_desc_, y, bias_f32_, residual, epilogue_.act, epilogue_.alpha,
                         epilogue_.beta, stream);
}

Status CudnnConvKernel::graph_candidates(CudaBuildContext& ctx, ConvScratch& s,
                                         std::vector<ConvTactic>& out) {
  std::vector<ConvTactic> plans;
  Status last = unsupported("cuDNN's heuristics offer no engine for the conv graph");
  const bool residual = epilogue_.residual_input >= 0;
  // Untimed: two plans (the second in case the first fails to launch), or the limit.
  const size_t enough = ctx.time_tactics ? ctx.tactic_count(SIZE_MAX) : ctx.tactic_count(2);
  for (bool padded : {false, true}) {
    if (padded && (!paddable() || !filter_padded_)) continue;
    const size_t variant_start = plans.size();
    for (bool fused : {true, false}) {
      // Without an epilogue both variants are the same graph; a residual must be fused
      // (the output may be written over it).
      if (!fused && (residual || !has_epilogue())) continue;
      if (!fused && plans.size() > variant_start) continue;
      if (plans.size() >= enough) continue;
      auto graph = build_graph(ctx.cudnn, fused, padded);
      if (!graph.is_ok()) {
        last = graph.status();
        continue;
      }
      const size_t graph_start = plans.size();
      for (auto [mode, max] : {std::pair{CUDNN_HEUR_MODE_A, kHeurA},
                               std::pair{CUDNN_HEUR_MODE_FALLBACK, kHeurFallback}}) {
        if (mode == CUDNN_HEUR_MODE_FALLBACK && plans.size() > graph_start) continue;
        auto cfgs = (*graph)->engine_configs(mode, strict_fp32_, max, ctx.runtime_fusion);
        if (!cfgs.is_ok()) {
          last = cfgs.status();
          continue;
        }
        for (const ConvEngineCfg& c : *cfgs) {
          if (plans.size() >= enough) break;
          auto plan = make_conv_plan(ctx.cudnn, *graph, c);
          if (!plan.is_ok()) {
            last = plan.status();
            continue;
          }
          ConvTactic t;
          t.path = ConvPath::kGraph;
          t.fused = fused;
          t.padded = padded;
          t.plan = std::shared_ptr<ConvPlan>(std::move(*plan));
          t.workspace =
              padded ? conv_align_up(t.plan->workspace) + padded_x_bytes() : t.plan->workspace;
          if (t.workspace > ctx.workspace_limit) continue;
          plans.push_back(std::move(t));
        }
      }
    }
  }
  if (plans.empty()) return last;
  size_t max_ws = 0;
  for (const ConvTactic& t : plans) max_ws = std::max(max_ws, t.workspace);
  KILN_RETURN_IF_ERROR(s.reserve_ws(max_ws));
  const size_t before = out.size();
  for (ConvTactic& t : plans) {
    auto launch = [&] {
      return launch_graph(ctx.cudnn, ctx.stream, s.x.get(), s.y.get(), s.r.get(), s.ws.get(), t);
    };
    Status st = Status::ok();
    if (ctx.time_tactics) {
      auto ms = time_launches(ctx.stream, launch);
      if (ms.is_ok()) t.ms = *ms;
      st = ms.status();
    } else {
      st = launch();
      if (st.is_ok()) st = cuda_status(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
    }
    if (!st.is_ok()) {
      cudaGetLastError();  // a failed candidate's launch error is not this kernel's
      last = st;
      continue;
    }
    out.push_back(t);
    if (!ctx.time_tactics) break;  // heuristic order: the first that runs
  }
  return out.size() > before ? Status::ok() : last;
}

}  // namespace kiln
