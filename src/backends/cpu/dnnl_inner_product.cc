#include "backends/cpu/dnnl_inner_product.h"

#include <cstring>
#include <unordered_map>

#include "backends/cpu/dnnl_conv_plan.h"

namespace kiln::dnnl_cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

// A reorder of `from` into `to` that multiplies by `scales` (one, or one per slice of the dims
// in `mask`) and adds `zero_point` before rounding to an integer type.
dnnl::reorder scaled_reorder(const memory::desc& from, const memory::desc& to, int mask,
                             const std::vector<float>& scales, int zero_point = 0) {
  dnnl::primitive_attr attr;
  attr.set_output_scales(mask, scales);
  if (zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {zero_point});
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to, attr));
}

}  // namespace

bool InnerProduct::prepare(int64_t m, int64_t k, int64_t n, const float* w, bool w_nk, bool bias,
                           const Epilogue& e, bool bf16) {
  // int8 (Epilogue::input_scale, as a Conv's: fuse_int8_conv): X quantized by the input
  // reorder, the weights as codes W[n] / s_w[n], the int32 sums scaled back by s · s_w[n]
  // (oneDNN's output scales, applied to the sum plus the bias: run() passes the bias divided
  // by them). Without VNNI, oneDNN's u8×s8 pair sums saturate at 16 bits and its inner
  // product (unlike its conv) does not guard them (measured: outputs 8% off): there the weight
  // codes keep 7 bits, W[n] / (2 · s_w[n]), and uint8 codes run as int8 codes q − 128.
  const bool int8 = e.int8();
  const float w_step = int8 && !int8_has_vnni() ? 2.f : 1.f;
  const bool u8 = int8 && e.input_uint8 && int8_has_vnni();
  const int zero_point = e.input_zero_point - (int8 && e.input_uint8 && !u8 ? 128 : 0);
  const dt in_dt = int8 ? (u8 ? dt::u8 : dt::s8) : bf16 ? dt::bf16 : dt::f32;
  if (int8 && static_cast<int64_t>(e.weight_scales.size()) != n) return false;
  memory::desc src_md({m, k}, in_dt, tag::nc);
  memory::desc dst_md({m, n}, dt::f32, tag::nc);
  memory::desc w_any({n, k}, int8 ? dt::s8 : in_dt, tag::any);
  memory::desc bias_md = bias ? memory::desc({n}, dt::f32, tag::x) : memory::desc();
  dnnl::post_ops ops;
  if (e.residual_input >= 0) ops.append_sum(1.f);
  if (!append_activation(e, ops)) return false;
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  out_scales_.clear();
  if (int8) {
    for (float sw : e.weight_scales) out_scales_.push_back(e.input_scale * sw * w_step);
    attr.set_output_scales(1 << 1, out_scales_);
    if (zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {zero_point});
  }
  dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, src_md, w_any, bias_md,
                                         dst_md);
  pd_ = dnnl::inner_product_forward::primitive_desc(desc, attr, cpu_engine());
  prim_ = dnnl::inner_product_forward(pd_);
  stream_ = dnnl::stream(cpu_engine());
  // [N, K] is oi, [K, N] io: either way the weights of N outputs over K inputs.
  memory user(memory::desc({n, k}, dt::f32, w_nk ? tag::oi : tag::io), cpu_engine(),
              const_cast<float*>(w));
  weights_ = memory(pd_.weights_desc(), cpu_engine());
  if (int8) {
    std::vector<float> inv;
    for (float sw : e.weight_scales) inv.push_back(1.f / (sw * w_step));
    scaled_reorder(user.get_desc(), weights_.get_desc(), 1 << 0, inv)
        .execute(stream_, user, weights_);
  } else {
    dnnl::reorder(user, weights_).execute(stream_, user, weights_);
  }
  stream_.wait();
  const memory::desc x32({m, k}, dt::f32, tag::nc);
  src_q_ = bf16 || int8 ? memory(src_md, cpu_engine()) : memory();
  if (int8)
    src_reorder_ = scaled_reorder(x32, src_md, 0, {1.f / e.input_scale}, zero_point);
  else if (bf16)
    src_reorder_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), x32, cpu_engine(), src_md));
  return true;
}

void InnerProduct::run(const float* x, const float* bias, const float* residual, float* y,
                       int64_t y_numel) {
  if (residual && residual != y)  // the sum post-op accumulates into y
    std::memcpy(y, residual, sizeof(float) * static_cast<size_t>(y_numel));
  memory src;
  if (src_q_) {
    memory x32(memory::desc(src_q_.get_desc().dims(), dt::f32, tag::nc), cpu_engine(),
               const_cast<float*>(x));
    src_reorder_.execute(stream_, x32, src_q_);
    src = src_q_;
  } else {
    src = memory(pd_.src_desc(), cpu_engine(), const_cast<float*>(x));
  }
  if (bias && !out_scales_.empty()) {
    bias_scaled_.resize(out_scales_.size());
    for (size_t i = 0; i < out_scales_.size(); ++i) bias_scaled_[i] = bias[i] / out_scales_[i];
    bias = bias_scaled_.data();
  }
  memory dst(pd_.dst_desc(), cpu_engine(), y);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst}};
  if (bias) args[DNNL_ARG_BIAS] = memory(pd_.bias_desc(), cpu_engine(), const_cast<float*>(bias));
  prim_.execute(stream_, args);
  stream_.wait();
}

void InnerProductKernel::run(const std::vector<const TensorRef*>& in,
                             const std::vector<TensorRef*>& out) {
  const int r = node_.epilogue.residual_input;
  const int bi = bias_input();
  ip_.run(in[0]->as<float>(), bi >= 0 ? in[bi]->as<float>() : nullptr,
          r >= 0 ? in[r]->as<float>() : nullptr, out[0]->as<float>(), out[0]->desc.numel());
}

}  // namespace kiln::dnnl_cpu
