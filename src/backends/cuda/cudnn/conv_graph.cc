#include "backends/cuda/cudnn/conv_graph.h"

#include <limits>
#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_descs.h"

namespace kiln {
namespace {

constexpr int64_t kAlignment = 16;  // bytes; the plan's buffers are 256-aligned

// Virtual intermediates count from here, away from the variant pack's uids.
constexpr int64_t kUidVirtual = 100;

}  // namespace

ConvGraphSpec conv_graph_spec(const ConvGeometry& g, DataType dtype, bool nhwc) {
  ConvGraphSpec s;
  s.dtype = dtype;
  s.nhwc = nhwc;
  s.n = g.batch;
  s.c = g.in_channels;
  s.h = g.in_spatial[0];
  s.w = g.in_spatial[1];
  s.k = g.out_channels;
  s.cg = g.in_channels / g.group;
  s.r = g.kernel[0];
  s.s = g.kernel[1];
  s.ho = g.out_spatial[0];
  s.wo = g.out_spatial[1];
  for (int i = 0; i < 2; ++i) {
    s.pre[i] = g.pad_begin[i];
    s.post[i] = g.pad_end[i];
    s.stride[i] = g.strides[i];
    s.dilation[i] = g.dilations[i];
  }
  return s;
}

bool graph_fuses(Activation a) {
  switch (a) {
    case Activation::kNone:
    case Activation::kRelu:
    case Activation::kClip:
    case Activation::kLeakyRelu:
    case Activation::kSigmoid:
    case Activation::kTanh:
    case Activation::kSilu: return true;
    default: return false;
  }
}

Result<const BackendDesc*> ConvGraph::tensor(int64_t uid, DataType dt, bool is_virtual, bool filter,
                                             bool per_channel) {
  const ConvGraphSpec& s = spec_;
  std::vector<int64_t> dims, strides;
  if (filter) {
    dims = {s.k, s.cg, s.r, s.s};
    strides = s.nhwc ? std::vector<int64_t>{s.r * s.s * s.cg, 1, s.s * s.cg, s.cg}
                     : std::vector<int64_t>{s.cg * s.r * s.s, s.r * s.s, s.s, 1};
  } else if (per_channel) {
    dims = {1, s.k, 1, 1};
    strides = s.nhwc ? std::vector<int64_t>{s.k, 1, s.k, s.k} : std::vector<int64_t>{s.k, 1, 1, 1};
  } else if (uid == kUidX) {
    dims = {s.n, s.c, s.h, s.w};
    strides = s.nhwc ? std::vector<int64_t>{s.h * s.w * s.c, 1, s.w * s.c, s.c}
                     : std::vector<int64_t>{s.c * s.h * s.w, s.h * s.w, s.w, 1};
  } else {  // Y, Z and the intermediates
    dims = {s.n, s.k, s.ho, s.wo};
    strides = s.nhwc ? std::vector<int64_t>{s.ho * s.wo * s.k, 1, s.wo * s.k, s.k}
                     : std::vector<int64_t>{s.k * s.ho * s.wo, s.ho * s.wo, s.wo, 1};
  }
  auto t = std::make_unique<BackendDesc>();
  KILN_RETURN_IF_ERROR(t->create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  const cudnnDataType_t cdt = cudnn_dtype(dt);
  KILN_RETURN_IF_ERROR(t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &cdt));
  KILN_RETURN_IF_ERROR(t->set_i64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims));
  KILN_RETURN_IF_ERROR(t->set_i64s(CUDNN_ATTR_TENSOR_STRIDES, strides));
  KILN_RETURN_IF_ERROR(t->set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid));
  KILN_RETURN_IF_ERROR(t->set_i64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kAlignment));
  const bool v = is_virtual;
  KILN_RETURN_IF_ERROR(t->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  KILN_RETURN_IF_ERROR(t->finalize());
  owned_.push_back(std::move(t));
  return owned_.back().get();
}

Result<const BackendDesc*> ConvGraph::pointwise(cudnnPointwiseMode_t mode, const BackendDesc* x,
                                                const BackendDesc* b, const BackendDesc* y) {
  auto pw = std::make_unique<BackendDesc>();
  KILN_RETURN_IF_ERROR(pw->create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  KILN_RETURN_IF_ERROR(pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
  const Activation a = spec_.act;
  if (mode == CUDNN_POINTWISE_RELU_FWD) {
    // cuDNN: v < lower ? lower + slope·(v − lower) : min(v, upper). Scalars are doubles
    // (as cudnn-frontend sets them); upper stays within float for float math.
    double lower = 0.0, upper = std::numeric_limits<float>::max(), slope = 0.0;
    if (a == Activation::kClip) {
      lower = spec_.alpha;
      upper = spec_.beta;
    } else if (a == Activation::kLeakyRelu) {
      slope = spec_.alpha;
    }
    KILN_RETURN_IF_ERROR(
        pw->set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &lower));
    KILN_RETURN_IF_ERROR(
        pw->set(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &upper));
    KILN_RETURN_IF_ERROR(
        pw->set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &slope));
  } else if (mode == CUDNN_POINTWISE_SWISH_FWD) {
    const double one = 1.0;
    KILN_RETURN_IF_ERROR(pw->set(CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &one));
  }
  KILN_RETURN_IF_ERROR(pw->finalize());
  auto op = std::make_unique<BackendDesc>();
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x));
  if (b) KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y));
  const float one = 1.f;
  KILN_RETURN_IF_ERROR(op->set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one));
  if (b)
    KILN_RETURN_IF_ERROR(op->set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one));
  KILN_RETURN_IF_ERROR(op->finalize());
  owned_.push_back(std::move(pw));
  owned_.push_back(std::move(op));
  ops_.push_back(owned_.back().get());
  return owned_.back().get();
}

Status ConvGraph::build(cudnnHandle_t handle, const ConvGraphSpec& spec) {
  spec_ = spec;
  owned_.clear();
  ops_.clear();
  const ConvGraphSpec& s = spec_;
  if (s.act != Activation::kNone && !graph_fuses(s.act))
    return invalid_argument(std::string("graph conv cannot fuse ") + activation_name(s.act));
  const bool has_act = s.act != Activation::kNone;
  const int stages =
      (s.channel_scale ? 1 : 0) + (s.bias ? 1 : 0) + (s.residual ? 1 : 0) + (has_act ? 1 : 0);
  const DataType operand = s.operand == DataType::kUndefined ? s.dtype : s.operand;
  int64_t next_virtual = kUidVirtual;
  // The output of the next stage (the conv is stage 0): Y for the last one, else a virtual
  // float tensor.
  int produced = 0;
  auto stage_out = [&]() -> Result<const BackendDesc*> {
    const bool last = produced++ == stages;
    return last ? tensor(kUidY, s.dtype, false, false, false)
                : tensor(next_virtual++, DataType::kFloat32, true, false, false);
  };

  KILN_ASSIGN_OR_RETURN(const BackendDesc* x, tensor(kUidX, operand, false, false, false));
  KILN_ASSIGN_OR_RETURN(const BackendDesc* w, tensor(kUidW, operand, false, true, false));
  KILN_ASSIGN_OR_RETURN(const BackendDesc* cur, stage_out());

  auto conv = std::make_unique<BackendDesc>();
  KILN_RETURN_IF_ERROR(conv->create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(conv->set_i64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2));
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  KILN_RETURN_IF_ERROR(conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_RETURN_IF_ERROR(
      conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  KILN_RETURN_IF_ERROR(conv->set_i64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {s.pre[0], s.pre[1]}));
  KILN_RETURN_IF_ERROR(
      conv->set_i64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {s.post[0], s.post[1]}));
  KILN_RETURN_IF_ERROR(
      conv->set_i64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {s.dilation[0], s.dilation[1]}));
  KILN_RETURN_IF_ERROR(
      conv->set_i64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {s.stride[0], s.stride[1]}));
  KILN_RETURN_IF_ERROR(conv->finalize());

  auto op = std::make_unique<BackendDesc>();
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *cur));
  KILN_RETURN_IF_ERROR(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv));
  const float one = 1.f, zero = 0.f;
  KILN_RETURN_IF_ERROR(
      op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one));
  KILN_RETURN_IF_ERROR(
      op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero));
  KILN_RETURN_IF_ERROR(op->finalize());
  owned_.push_back(std::move(conv));
  owned_.push_back(std::move(op));
  ops_.push_back(owned_.back().get());

  if (s.channel_scale) {
    KILN_ASSIGN_OR_RETURN(const BackendDesc* sc,
                          tensor(kUidS, DataType::kFloat32, false, false, true));
    KILN_ASSIGN_OR_RETURN(const BackendDesc* out, stage_out());
    KILN_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_MUL, cur, sc, out).status());
    cur = out;
  }
  if (s.bias) {
    KILN_ASSIGN_OR_RETURN(const BackendDesc* b, tensor(kUidB, s.dtype, false, false, true));
    KILN_ASSIGN_OR_RETURN(const BackendDesc* out, stage_out());
    KILN_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, cur, b, out).status());
    cur = out;
  }
  if (s.residual) {
    KILN_ASSIGN_OR_RETURN(const BackendDesc* z, tensor(kUidZ, s.dtype, false, false, false));
    KILN_ASSIGN_OR_RETURN(const BackendDesc* out, stage_out());
    KILN_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, cur, z, out).status());
    cur = out;
  }
  if (has_act) {
    const cudnnPointwiseMode_t m = s.act == Activation::kSigmoid ? CUDNN_POINTWISE_SIGMOID_FWD
                                   : s.act == Activation::kTanh  ? CUDNN_POINTWISE_TANH_FWD
                                   : s.act == Activation::kSilu  ? CUDNN_POINTWISE_SWISH_FWD
                                                                 : CUDNN_POINTWISE_RELU_FWD;
    KILN_ASSIGN_OR_RETURN(const BackendDesc* out, stage_out());
    KILN_RETURN_IF_ERROR(pointwise(m, cur, nullptr, out).status());
  }

  KILN_RETURN_IF_ERROR(graph_.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(graph_.set_descs(CUDNN_ATTR_OPERATIONGRAPH_OPS, ops_));
  KILN_RETURN_IF_ERROR(graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  return graph_.finalize();
}

Result<std::vector<ConvEngineCfg>> ConvGraph::engine_configs(cudnnBackendHeurMode_t mode,
                                                             bool strict_fp32, int max,
                                                             bool runtime_compiled) const {
  BackendDesc heur;
  KILN_RETURN_IF_ERROR(heur.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph_));
  KILN_RETURN_IF_ERROR(heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  KILN_RETURN_IF_ERROR(heur.finalize());
  KILN_ASSIGN_OR_RETURN(int64_t count, heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr));
  if (count <= 0) return std::vector<ConvEngineCfg>{};
  std::vector<std::shared_ptr<BackendDesc>> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.push_back(std::make_shared<BackendDesc>());
    KILN_RETURN_IF_ERROR(cfgs.back()->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(cfgs.back()->get());
  }
  KILN_ASSIGN_OR_RETURN(count, heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, raw.data()));
  std::vector<ConvEngineCfg> out;
  for (int64_t i = 0; i < count && static_cast<int>(i) < static_cast<int>(cfgs.size()); ++i) {
    ConvEngineCfg c;
    c.cfg = cfgs[static_cast<size_t>(i)];
    c.mode = static_cast<int>(mode);
    c.rank = static_cast<int>(i);
    BackendDesc engine;
    KILN_RETURN_IF_ERROR(engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
    cudnnBackendDescriptor_t e = engine.get();
    KILN_RETURN_IF_ERROR(
        c.cfg->get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e).status());
    KILN_ASSIGN_OR_RETURN(c.engine, engine.get_i64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    KILN_ASSIGN_OR_RETURN(int64_t n_notes,
                          engine.get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, notes));
    bool reduced = false;
    for (int64_t j = 0; j < n_notes && j < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++j) {
      if (notes[j] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
          notes[j] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
        c.tensor_core = true;
      // fp16 accumulation would not match the float-accumulating reference.
      if (notes[j] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) reduced = true;
    }
    if (reduced || (strict_fp32 && c.tensor_core)) continue;
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    auto n_behavior = engine.get(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, behavior);
    for (int64_t j = 0; n_behavior.is_ok() && j < *n_behavior && j < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT;
         ++j)
      if (behavior[j] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) c.runtime_compiled = true;
    if (c.runtime_compiled && !runtime_compiled) continue;
    out.push_back(std::move(c));
    if (static_cast<int>(out.size()) >= max) break;
  }
  return out;
}

Result<std::unique_ptr<ConvPlan>> make_conv_plan(cudnnHandle_t handle,
                                                 std::shared_ptr<ConvGraph> graph,
                                                 const ConvEngineCfg& cfg) {
  auto p = std::make_unique<ConvPlan>();
  p->graph = std::move(graph);
  p->cfg = cfg;
  KILN_RETURN_IF_ERROR(p->plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(
      p->plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  KILN_RETURN_IF_ERROR(p->plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *cfg.cfg));
  KILN_RETURN_IF_ERROR(p->plan.finalize());
  KILN_ASSIGN_OR_RETURN(int64_t ws, p->plan.get_i64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
  p->workspace = static_cast<size_t>(ws < 0 ? 0 : ws);
  return p;
}

Status execute_conv_plan(cudnnHandle_t handle, const ConvPlan& p, const void* x, const void* w,
                         void* y, const void* b, const void* z, void* workspace, const void* sc) {
  const ConvGraphSpec& s = p.graph->spec();
  int64_t uids[6] = {kUidX, kUidW, kUidY, 0, 0, 0};
  void* ptrs[6] = {const_cast<void*>(x), const_cast<void*>(w), y, nullptr, nullptr, nullptr};
  int64_t n = 3;
  if (s.channel_scale) {
    uids[n] = kUidS;
    ptrs[n++] = const_cast<void*>(sc);
  }
  if (s.bias) {
    uids[n] = kUidB;
    ptrs[n++] = const_cast<void*>(b);
  }
  if (s.residual) {
    uids[n] = kUidZ;
    ptrs[n++] = const_cast<void*>(z);
  }
  BackendDesc pack;
  KILN_RETURN_IF_ERROR(pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  KILN_RETURN_IF_ERROR(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
  KILN_RETURN_IF_ERROR(
      pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
  KILN_RETURN_IF_ERROR(
      pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  KILN_RETURN_IF_ERROR(pack.finalize());
  KILN_CUDNN(cudnnBackendExecute(handle, p.plan.get(), pack.get()));
  return Status::ok();
}

}  // namespace kiln
