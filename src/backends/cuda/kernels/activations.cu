// The activation ops that are also fused epilogues (ir/epilogue.h): Relu, LeakyRelu,
// Sigmoid, Tanh, HardSigmoid, HardSwish, Clip. One family file: each op is its Activation
// and the reading of its alpha/beta, the kernel is unary.cuh's.
//
// Clip's min and max (inputs 1 and 2, optional) must be constants; they are read at
// prepare. A computed bound sends the node to the CPU.
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "backends/cuda/kernels/unary.cuh"
#include "core/half.h"
#include "ops/activation_attrs.h"

namespace kiln {

namespace {

using cuda::UnaryKernel;

template <Activation A>
struct ActOp {
  float alpha = 0.f;
  float beta = 0.f;
  __device__ float operator()(float x) const { return cuda::activate<A>(x, alpha, beta); }
};

template <Activation A>
Result<std::unique_ptr<CudaKernel>> make_act(const Node& node, const char* op, float alpha,
                                             float beta) {
  return cuda::make_unary(node, op, ActOp<A>{alpha, beta});
}

Result<std::unique_ptr<CudaKernel>> make_relu(const Node& node, Precision) {
  return make_act<Activation::kRelu>(node, "Relu", 0.f, 0.f);
}
Result<std::unique_ptr<CudaKernel>> make_leaky_relu(const Node& node, Precision) {
  return make_act<Activation::kLeakyRelu>(node, "LeakyRelu", leaky_relu_attrs(node).alpha, 0.f);
}
Result<std::unique_ptr<CudaKernel>> make_sigmoid(const Node& node, Precision) {
  return make_act<Activation::kSigmoid>(node, "Sigmoid", 0.f, 0.f);
}
Result<std::unique_ptr<CudaKernel>> make_tanh(const Node& node, Precision) {
  return make_act<Activation::kTanh>(node, "Tanh", 0.f, 0.f);
}
Result<std::unique_ptr<CudaKernel>> make_hard_sigmoid(const Node& node, Precision) {
  const HardSigmoidAttrs a = hard_sigmoid_attrs(node);
  return make_act<Activation::kHardSigmoid>(node, "HardSigmoid", a.alpha, a.beta);
}
Result<std::unique_ptr<CudaKernel>> make_hard_swish(const Node& node, Precision) {
  return make_act<Activation::kHardSwish>(node, "HardSwish", 0.f, 0.f);
}

// The fp16 value nearest `b` that is ≥ b (a lower bound) or ≤ b (an upper bound), within
// ±65504; ±inf and NaN as they are.
float fp16_bound(float b, bool lower) {
  if (!std::isfinite(b)) return b;
  bool saturated = false;
  uint16_t h = float_to_half_bits_saturated(b, &saturated);  // nonzero stays nonzero
  const float r = half_bits_to_float(h);
  if (lower ? r >= b : r <= b) return r;
  // One fp16 step toward the bound's side: the magnitude grows for a lower bound above zero
  // or an upper bound below it, and shrinks otherwise.
  const bool neg = (h & 0x8000u) != 0;
  h = static_cast<uint16_t>(lower != neg ? h + 1 : h - 1);
  if ((h & 0x7fffu) >= 0x7c00u) h = static_cast<uint16_t>((h & 0x8000u) | 0x7bffu);
  return half_bits_to_float(h);
}

// Clip: alpha = min, beta = max; an omitted bound is ±inf.
class ClipKernel final : public UnaryKernel<ActOp<Activation::kClip>> {
 public:
  ClipKernel()
      : UnaryKernel("Clip", {-std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::infinity()}) {}

 protected:
  Status configure(const std::vector<TensorDesc>& in) override {
    for (size_t i = 1; i < in.size() && i < 3; ++i) {
      if (!in[i].present()) continue;
      const char* what = i == 1 ? "min" : "max";
      if (!in[i].value) return unsupported(std::string("Clip ") + what + " is not a constant");
      if (in[i].value->numel() != 1)
        return invalid_argument(std::string("Clip ") + what + " must be a scalar, got shape " +
                                shape_str(in[i].value->shape()));
      (i == 1 ? f_.alpha : f_.beta) = static_cast<float>(in[i].value->at_double(0));
    }
    // In fp16 a bound is rounded to a value fp16 holds on the side that keeps its meaning: a
    // min of 1e-12 (F.normalize's eps) would otherwise give 0 and then 0/0.
    if (in[0].dtype == DataType::kFloat16) {
      f_.alpha = fp16_bound(f_.alpha, true);
      f_.beta = fp16_bound(f_.beta, false);
    }
    return Status::ok();
  }
};

Result<std::unique_ptr<CudaKernel>> make_clip(const Node& node, Precision) {
  KILN_RETURN_IF_ERROR(cuda::check_float_input(node));
  if (node.inputs.size() > 3) return invalid_argument("Clip takes at most 3 inputs");
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (v && !v->is_constant())
      return unsupported(std::string("Clip ") + (i == 1 ? "min" : "max") +
                         " is computed at run time (a constant is needed)");
  }
  return std::unique_ptr<CudaKernel>(std::make_unique<ClipKernel>());
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Relu, make_relu);
KILN_REGISTER_CUDA_KERNEL(LeakyRelu, make_leaky_relu);
KILN_REGISTER_CUDA_KERNEL(Sigmoid, make_sigmoid);
KILN_REGISTER_CUDA_KERNEL(Tanh, make_tanh);
KILN_REGISTER_CUDA_KERNEL(HardSigmoid, make_hard_sigmoid);
KILN_REGISTER_CUDA_KERNEL(HardSwish, make_hard_swish);
KILN_REGISTER_CUDA_KERNEL(Clip, make_clip);

}  // namespace kiln
