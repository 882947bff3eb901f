// Candidate oneDNN primitives for one conv, timed against each other (see dnnl_conv_plan.h).
//
// Why several candidates: oneDNN 2.6 on AVX-512 has two direct kernel families with
// different strengths (the brgemm kernels on nhwc, the older JIT kernels on nChw16c; e.g.
// a 3×3 stride-2 256-channel conv at 28² is 1.7× faster in nhwc, a 1×1 conv with a residual
// sum 1.7× faster in nChw16c) and Winograd only runs on nChw16c. Where the neighbours store
// one layout, running the conv in another costs a reorder on each side; whether that pays is
// measured, not guessed.

#include "backends/cpu/dnnl_conv_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to,
                           const dnnl::primitive_attr& attr = dnnl::primitive_attr()) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to, attr));
}

// A reorder's attribute that multiplies every element by `scales` (one, or one per slice of
// the dims in `mask`) before rounding to an integer type: to int8 codes, x · (1 / scale).
dnnl::primitive_attr scaled_by(int mask, const std::vector<float>& scales) {
  dnnl::primitive_attr attr;
  attr.set_output_scales(mask, scales);
  return attr;
}

// Which algorithm 3×3 stride-1 convs use is the backend's CpuConvAlgo (see dnnl_conv.cc).
// Direct by default: Winograd's transforms double the fp32 rounding error of deep nets (Wide
// ResNet-101 at batch 3: 1.0e-4 from float64 against ONNX Runtime's 4.7e-5), and fp32 must
// mean fp32.

size_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return static_cast<size_t>(n);
}

// Whether the timing scratch for these operands stays within reason (1 GiB of float each):
// a malformed model can declare shapes no machine holds, and the engine refuses those with a
// clear message when it runs them; timing must not die allocating them first.
bool timeable(const ConvOperands& ops) {
  constexpr int64_t kMaxElements = int64_t{1} << 28;
  for (const Shape* s : {&ops.x, &ops.y}) {
    int64_t n = 1;
    for (int64_t d : *s)
      if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) return false;
  }
  return true;
}

// oneDNN's reference conv is orders of magnitude slower than its JIT ones (a 7×7 stem conv
// from nchw to nhwc: 15 s at batch 8 instead of 6 ms); it is only worth having when
// nothing else exists.
bool is_reference_impl(const dnnl::convolution_forward::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

struct Answer {
  bool can = false;  // oneDNN can run the conv at all
  ConvChoice choice;
  double seconds = -1;  // the winner's time; negative when not timed (one candidate)
};

// The key holds what the answer depends on: the node's conv parameters and epilogue, the
// shapes and the stored layouts (the algorithm mode is the backend's). Not the thread count: the
// answer must not depend on who asks (a reference fallback asks outside the kernels' thread
// setting), so the first asker's count is the one measured.
std::string question_key(const Node& node, const ConvOperands& ops, const ConvGeometry& geo,
                         Precision precision) {
  // An int8 conv's plan depends on its scales only through their values, not their count.
  const Epilogue& ep = node.epilogue;
  const std::string codes =
      std::string(ep.input_uint8 ? "u8" : "s8") + " z" + std::to_string(ep.input_zero_point);
  std::string key = (ep.int8() ? "int8 " + codes : std::string(precision_name(precision))) + " " +
                    shape_str(ops.x) + shape_str(ops.w) + shape_str(geo.strides) +
                    shape_str(geo.dilations) + shape_str(geo.pad_begin) + shape_str(geo.pad_end) +
                    "g" + std::to_string(geo.group);
  const Epilogue& e = node.epilogue;
  key += " b" + std::to_string(bias_index(node) >= 0) + " r" +
         std::to_string(e.residual_input >= 0) + " a" + std::to_string(static_cast<int>(e.act)) +
         "," + std::to_string(e.alpha) + "," + std::to_string(e.beta);
  key += " l" + std::to_string(static_cast<int>(ops.src)) + "," +
         std::to_string(static_cast<int>(ops.dst)) + "," +
         std::to_string(static_cast<int>(ops.res));
  return key;
}

}  // namespace

bool int8_has_vnni() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return true;
    default: return false;
  }
}

// A backend's answers to "which plan for this conv", by question_key. One lock for the lookup
// and the measurement: two threads timing at once would slow each other's measurements down,
// and the second asker gets the first one's answer.
struct ConvAnswers {
  mutable std::mutex mu;
  std::map<std::string, Answer> answers;
};

std::shared_ptr<ConvAnswers> make_conv_answers() { return std::make_shared<ConvAnswers>(); }

namespace {
constexpr char kConvPrefix[] = "onednn conv ";
}  // namespace

void save_conv_answers(const ConvAnswers& a, ChoiceEntries& out) {
  std::lock_guard<std::mutex> lock(a.mu);
  for (const auto& [key, ans] : a.answers) {
    const ConvChoice& c = ans.choice;
    char v[160];
    std::snprintf(v, sizeof v, "%d %d %d %d %d %d %.9g", ans.can ? 1 : 0, static_cast<int>(c.algo),
                  static_cast<int>(c.src), static_cast<int>(c.dst), c.allow_ref ? 1 : 0,
                  c.res_binary ? 1 : 0, ans.seconds);
    out.emplace_back(kConvPrefix + key, v);
  }
}

Result<bool> restore_conv_answer(ConvAnswers& a, const std::string& key, const std::string& value) {
  if (key.rfind(kConvPrefix, 0) != 0) return false;
  int can, algo, src, dst, allow_ref, res_binary;
  double seconds;
  char extra;
  if (std::sscanf(value.c_str(), "%d %d %d %d %d %d %lg %c", &can, &algo, &src, &dst, &allow_ref,
                  &res_binary, &seconds, &extra) != 7 ||
      can < 0 || can > 1 || allow_ref < 0 || allow_ref > 1 || res_binary < 0 || res_binary > 1)
    return invalid_argument("oneDNN conv choice '" + key + "': cannot read '" + value + "'");
  Answer ans;
  ans.can = can == 1;
  ans.choice = ConvChoice{static_cast<dnnl::algorithm>(algo), static_cast<tag>(src),
                          static_cast<tag>(dst), allow_ref == 1, res_binary == 1};
  ans.seconds = seconds;
  std::lock_guard<std::mutex> lock(a.mu);
  a.answers[key.substr(sizeof kConvPrefix - 1)] = ans;
  return true;
}

ConvPlan ConvPlanner::make(const ConvChoice& c) {
  const dnnl::algorithm algo = c.algo;
  const tag src_fmt = c.src, dst_fmt = c.dst;
  const bool allow_ref = c.allow_ref, res_binary = c.res_binary;
  const int64_t groups = geo_.group;
  const Shape& ws = ops_.w;
  memory::dims w_dims =
      groups == 1 ? to_dims(ws) : memory::dims{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
  memory::dims strides = to_dims(geo_.strides), pad_l = to_dims(geo_.pad_begin),
               pad_r = to_dims(geo_.pad_end), dil;
  for (int64_t d : geo_.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps

  // bf16: the primitive reads bfloat16 input and weights and writes float32 (its accumulator),
  // so the stored activations stay float32 and the input is rounded by the input reorder.
  // int8 (Epilogue::input_scale): the same with int8 codes. The input reorder quantizes,
  // x · (1 / s) rounded half to even and saturated; the weights' codes are W[m] · (1 / s_w[m]);
  // the int32 sums are scaled back by s · s_w[m] per output channel (oneDNN's output scales),
  // which oneDNN 2.6 applies to the sum plus the bias: the bias is passed divided by them.
  // uint8 codes run as uint8 only where oneDNN has VNNI: without it, its u8×s8 pair sums
  // saturate at 16 bits (measured: outputs 0.2–0.45 off). There they run as int8 codes q − 128
  // with zero point z − 128 (the same grid), which oneDNN's s8 path guards (7-bit weights).
  const Epilogue& e = node_.epilogue;
  const bool u8 = e.input_uint8 && int8_has_vnni();
  const int zero_point = e.input_zero_point - (e.input_uint8 && !u8 ? 128 : 0);
  const dt in_dt = e.int8()                                          ? (u8 ? dt::u8 : dt::s8)
                   : shared_.precision_of(node_) == Precision::kBf16 ? dt::bf16
                                                                     : dt::f32;
  memory::desc src_md(to_dims(ops_.x), in_dt, src_fmt);
  memory::desc dst_md(to_dims(ops_.y), dt::f32, dst_fmt);
  memory::desc w_any(w_dims, e.int8() ? dt::s8 : in_dt, tag::any);
  const int b = bias_index(node_);
  memory::desc bias_md = b >= 0 ? memory::desc({ws[0]}, dt::f32, tag::x) : memory::desc();

  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algo, src_md, w_any,
                                       bias_md, dst_md, strides, dil, pad_l, pad_r);
  const int r = node_.epilogue.residual_input;
  dnnl::post_ops post;
  if (r >= 0 && res_binary)
    post.append_binary(dnnl::algorithm::binary_add, res_ext_);
  else if (r >= 0)
    post.append_sum(1.f);
  if (!append_activation(node_.epilogue, post))
    throw dnnl::error(dnnl_unimplemented, "activation has no oneDNN post-op");
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  ConvPlan p;
  if (e.int8()) {
    for (float sw : e.weight_scales) p.out_scales.push_back(e.input_scale * sw);
    attr.set_output_scales(1 << 1, p.out_scales);
    // The sums over (q_x − z): oneDNN subtracts the source's zero point (padding included).
    if (zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {zero_point});
  }
  p.choice = c;
  p.algo = algo;
  p.res_binary = r >= 0 && res_binary;
  p.pd = dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
  if (!allow_ref && is_reference_impl(p.pd))
    throw dnnl::error(dnnl_unimplemented, "only the reference conv for these layouts");
  p.prim = dnnl::convolution_forward(p.pd);

  // Pack the constant weights once into oneDNN's chosen layout.
  const Tensor& w = node_.inputs[1]->constant;
  memory::desc w_user(w_dims, dt::f32, groups == 1 ? tag::oihw : tag::goihw);
  memory user(w_user, cpu_engine(), const_cast<float*>(w.data<float>()));
  p.weights = memory(p.pd.weights_desc(), cpu_engine());
  dnnl::primitive_attr w_attr;
  if (e.int8()) {
    // Per output channel: dim 0 of oihw, dims 0 and 1 of goihw (g-major, as the channels).
    std::vector<float> inv;
    for (float sw : e.weight_scales) inv.push_back(1.f / sw);
    w_attr = scaled_by(groups == 1 ? 1 : 3, inv);
  }
  make_reorder(w_user, p.weights.get_desc(), w_attr).execute(stream_, user, p.weights);
  stream_.wait();

  // Where the primitive's layouts differ from the stored ones, reorder.
  p.src_reorder = p.pd.src_desc() != src_ext_;
  p.dst_direct = p.pd.dst_desc() == dst_ext_;
  if (p.src_reorder) {
    p.src_mem = memory(p.pd.src_desc(), cpu_engine());
    dnnl::primitive_attr quantize;
    if (e.int8()) {
      // x · (1 / s) + z, rounded and saturated to the codes' type.
      quantize = scaled_by(0, {1.f / e.input_scale});
      if (zero_point != 0) quantize.set_zero_points(DNNL_ARG_DST, 0, {zero_point});
    }
    p.src_reorder_prim = make_reorder(src_ext_, p.pd.src_desc(), quantize);
  }
  if (!p.dst_direct) {
    p.dst_mem = memory(p.pd.dst_desc(), cpu_engine());
    p.dst_reorder_prim = make_reorder(p.pd.dst_desc(), dst_ext_);
  }
  // The residual goes into dst by a reorder even where the layouts agree: oneDNN's copy
  // runs on all threads, memcpy on one while the others wait.
  p.res_same_layout = r >= 0 && !p.res_binary && res_ext_ == p.pd.dst_desc();
  if (r >= 0 && !p.res_binary) p.res_reorder_prim = make_reorder(res_ext_, p.pd.dst_desc());
  return p;
}

bool ConvPlanner::choose(const ConvOperands& ops, ConvPlan* best, double* seconds) {
  if (seconds) *seconds = 0;
  ops_ = ops;
  auto geo = conv_geometry(attrs_, ops.x, ops.w);
  if (!geo.is_ok()) return false;
  geo_ = *geo;
  stream_ = dnnl::stream(cpu_engine());
  x_.clear();
  src_ext_ = memory::desc(to_dims(ops.x), dt::f32, ops.src);
  dst_ext_ = memory::desc(to_dims(ops.y), dt::f32, ops.dst);
  res_ext_ = node_.epilogue.residual_input >= 0 ? memory::desc(to_dims(ops.y), dt::f32, ops.res)
                                                : memory::desc();

  const std::string key = question_key(node_, ops, geo_, shared_.precision_of(node_));
  std::lock_guard<std::mutex> lock(shared_.convs->mu);
  auto& answers = shared_.convs->answers;
  auto it = answers.find(key);
  // An answer without a time does not serve a question that wants one.
  if (it != answers.end() && (!seconds || !it->second.can || it->second.seconds >= 0)) {
    if (!it->second.can) return false;
    try {
      *best = make(it->second.choice);
      best->remembered = true;
      if (seconds) *seconds = it->second.seconds;
      return true;
    } catch (const dnnl::error&) {
      // Made before by this backend, so not expected; asked afresh below.
    }
  }

  std::vector<ConvPlan> cands;
  auto add = [&](dnnl::algorithm algo, tag src, tag dst, bool allow_ref, bool binary = false) {
    try {
      cands.push_back(make(ConvChoice{algo, src, dst, allow_ref, binary}));
    } catch (const dnnl::error&) {
      // No implementation for this algorithm / layout: one candidate fewer.
    }
  };
  const auto direct = dnnl::algorithm::convolution_direct;
  add(direct, ops.src, ops.dst, false);
  // A residual stored like dst can be read by a binary post-op (a third less time than
  // copy + sum for oneDNN 2.6's nChw16c 1×1 kernels, slower for some others: timed).
  const bool has_res = node_.epilogue.residual_input >= 0;
  if (has_res && ops.res == ops.dst) add(direct, ops.src, ops.dst, false, true);
  // oneDNN's own choice of layouts, with reorders where they differ: unless it is the first
  // candidate again. The same layouts may still be another kernel (oneDNN 2.6 serves nhwc
  // given as `any` by its brgemm kernels, given explicitly by its older 1×1 one).
  const size_t n_stored = cands.size();
  add(direct, tag::any, tag::any, true);
  if (n_stored >= 1 && cands.size() > n_stored &&
      cands.back().pd.src_desc() == cands[0].pd.src_desc() &&
      cands.back().pd.dst_desc() == cands[0].pd.dst_desc() &&
      std::string(cands.back().pd.impl_info_str()) == cands[0].pd.impl_info_str())
    cands.pop_back();

  const CpuConvAlgo mode = shared_.options.conv_algo;
  const bool wino_shape = geo_.group == 1 && ops.w[2] == 3 && ops.w[3] == 3 &&
                          geo_.strides[0] == 1 && geo_.strides[1] == 1 && geo_.dilations[0] == 1 &&
                          geo_.dilations[1] == 1;
  if (wino_shape && mode != CpuConvAlgo::kDirect && !node_.epilogue.int8()) {
    const size_t before = cands.size();
    add(dnnl::algorithm::convolution_winograd, tag::any, tag::any, true);
    if (mode == CpuConvAlgo::kWinograd && cands.size() > before) {
      ConvPlan wino = std::move(cands.back());
      cands.assign(1, std::move(wino));
    }
  }
  Answer& answer = answers[key];
  answer.can = pick(cands, best, seconds);
  if (answer.can) {
    answer.choice = best->choice;
    answer.seconds = seconds ? *seconds : -1;
  }
  return answer.can;
}

bool ConvPlanner::pick(std::vector<ConvPlan>& cands, ConvPlan* best, double* seconds) {
  if (cands.empty()) return false;
  size_t pick = 0;
  if (!timeable(ops_)) {
    if (seconds) *seconds = -1;  // untimed: the stored layouts as they are
  } else if (cands.size() > 1 || seconds) {
    // Alternating rounds, the best of each: load from other processes hits all alike.
    std::vector<double> t(cands.size(), 1e30);
    double warm = 1e30;  // warm-up: first touch of the scratch, caches
    for (ConvPlan& c : cands) warm = std::min(warm, time(c));
    // Long convs need fewer rounds to be told apart, and they dominate the build time of
    // large batches: rounds so that each candidate is timed for about kTimingBudget.
    const int rounds = std::clamp(static_cast<int>(kTimingBudget / warm), 1, kTimedRounds);
    for (int round = 0; round < rounds; ++round)
      for (size_t i = 0; i < cands.size(); ++i) t[i] = std::min(t[i], time(cands[i]));
    pick = static_cast<size_t>(std::min_element(t.begin(), t.end()) - t.begin());
    if (seconds) *seconds = t[pick];
    // The scratch is as large as the operands: kernels keep no copy of it.
    for (std::vector<float>* v : {&x_, &y_, &res_, &bias_}) std::vector<float>().swap(*v);
  }
  *best = std::move(cands[pick]);
  return true;
}

void ConvPlanner::run(ConvPlan& p, const float* x, float* y, const float* res, const float* bias) {
  memory src(src_ext_, cpu_engine(), const_cast<float*>(x));
  memory dst_user(dst_ext_, cpu_engine(), y);
  if (p.src_reorder) {
    p.src_reorder_prim.execute(stream_, src, p.src_mem);
    src = p.src_mem;
  }
  memory dmem = p.dst_direct ? dst_user : p.dst_mem;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dmem}};
  if (res && p.res_binary) {
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
        memory(res_ext_, cpu_engine(), const_cast<float*>(res));
  } else if (res) {
    // The sum post-op accumulates into dst: start dst as the residual.
    if (!p.res_same_layout || res != dmem.get_data_handle())
      p.res_reorder_prim.execute(
          stream_, {{DNNL_ARG_FROM, memory(res_ext_, cpu_engine(), const_cast<float*>(res))},
                    {DNNL_ARG_TO, dmem}});
  }
  if (bias && !p.out_scales.empty()) {
    // int8: oneDNN scales the bias with the sums (make()).
    p.bias_scaled.resize(p.out_scales.size());
    for (size_t m = 0; m < p.out_scales.size(); ++m) p.bias_scaled[m] = bias[m] / p.out_scales[m];
    bias = p.bias_scaled.data();
  }
  if (bias) args[DNNL_ARG_BIAS] = memory(p.pd.bias_desc(), cpu_engine(), const_cast<float*>(bias));
  p.prim.execute(stream_, args);
  if (!p.dst_direct) p.dst_reorder_prim.execute(stream_, p.dst_mem, dst_user);
  stream_.wait();
}

double ConvPlanner::time(ConvPlan& p) {
  // The data does not matter to the speed; it is filled so no denormals appear.
  if (x_.empty()) {
    x_.assign(count(ops_.x), 0.5f);
    y_.assign(count(ops_.y), 0.f);
    res_.assign(count(ops_.y), 0.25f);
    bias_.assign(static_cast<size_t>(ops_.w[0]), 0.1f);
  }
  const float* r = node_.epilogue.residual_input >= 0 ? res_.data() : nullptr;
  const float* b = bias_index(node_) >= 0 ? bias_.data() : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  run(p, x_.data(), y_.data(), r, b);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double conv_seconds(const DnnlShared& sh, const Node& node, const Shape& x, tag src, tag dst,
                    tag res) {
  auto attrs = parse_conv_attrs(node.attrs);
  if (!attrs.is_ok() || !node.inputs[1]->is_constant()) return -1;
  const Shape w = node.inputs[1]->constant.shape();
  auto geo = conv_geometry(*attrs, x, w);
  if (!geo.is_ok()) return -1;
  const ConvOperands ops{x, w, geo->output_shape(), src, dst, res};
  {
    // The layout decision asks the same questions many times: answer from memory without
    // making the plan.
    std::lock_guard<std::mutex> lock(sh.convs->mu);
    auto& answers = sh.convs->answers;
    auto it = answers.find(question_key(node, ops, *geo, sh.precision_of(node)));
    if (it != answers.end() && !it->second.can) return -1;
    if (it != answers.end() && it->second.seconds >= 0) return it->second.seconds;
  }
  ConvPlanner planner(node, *attrs, sh);
  ConvPlan plan;
  double secs = -1;
  try {
    if (!planner.choose(ops, &plan, &secs)) secs = -1;
  } catch (const dnnl::error&) {
    secs = -1;
  }
  return secs;
}

}  // namespace kiln::dnnl_cpu
