#include "backends/cpu/dnnl_inner_product.h"

#include <cstring>
#include <unordered_map>

namespace kiln::dnnl_cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

bool InnerProduct::prepare(int64_t m, int64_t k, int64_t n, const float* w, bool w_nk, bool bias,
                           const Epilogue& e, bool bf16) {
  const dt in_dt = bf16 ? dt::bf16 : dt::f32;
  memory::desc src_md({m, k}, in_dt, tag::nc);
  memory::desc dst_md({m, n}, dt::f32, tag::nc);
  memory::desc w_any({n, k}, in_dt, tag::any);
  memory::desc bias_md = bias ? memory::desc({n}, dt::f32, tag::x) : memory::desc();
  dnnl::post_ops ops;
  if (e.residual_input >= 0) ops.append_sum(1.f);
  if (!append_activation(e, ops)) return false;
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, src_md, w_any, bias_md,
                                         dst_md);
  pd_ = dnnl::inner_product_forward::primitive_desc(desc, attr, cpu_engine());
  prim_ = dnnl::inner_product_forward(pd_);
  stream_ = dnnl::stream(cpu_engine());
  // [N, K] is oi, [K, N] io: either way the weights of N outputs over K inputs.
  memory user(memory::desc({n, k}, dt::f32, w_nk ? tag::oi : tag::io), cpu_engine(),
              const_cast<float*>(w));
  weights_ = memory(pd_.weights_desc(), cpu_engine());
  dnnl::reorder(user, weights_).execute(stream_, user, weights_);
  stream_.wait();
  src_bf16_ = bf16 ? memory(src_md, cpu_engine()) : memory();
  if (bf16)
    src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(
        cpu_engine(), memory::desc({m, k}, dt::f32, tag::nc), cpu_engine(), src_md));
  return true;
}

void InnerProduct::run(const float* x, const float* bias, const float* residual, float* y,
                       int64_t y_numel) {
  if (residual && residual != y)  // the sum post-op accumulates into y
    std::memcpy(y, residual, sizeof(float) * static_cast<size_t>(y_numel));
  memory src;
  if (src_bf16_) {
    memory x32(memory::desc(src_bf16_.get_desc().dims(), dt::f32, tag::nc), cpu_engine(),
               const_cast<float*>(x));
    src_reorder_.execute(stream_, x32, src_bf16_);
    src = src_bf16_;
  } else {
    src = memory(pd_.src_desc(), cpu_engine(), const_cast<float*>(x));
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
