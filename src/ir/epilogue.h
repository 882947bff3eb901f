// A fused epilogue: what a Conv/ConvTranspose/Gemm/MatMul node does to its result before
// writing it. Fusion is an epilogue on the producing node, not a new op kind, so it maps
// one-to-one onto oneDNN post-ops and cuDNN/cuBLASLt epilogues:
//
//   y = act(op(inputs...)·scale[c] + shift[c] + bias[n] + residual)
//
// The bias is the op's own bias input (Conv B, Gemm C); MatMul, which has none in ONNX, carries
// a fused Add of a constant along its output's last axis as the float32 [N] node input at
// `bias_input` (a Linear layer's bias: ConvNeXt's MLPs, every transformer). The residual, when
// present, is the node input at `residual_input` (after the op's own inputs), with the output's
// shape; it is added before the activation, as in ResNet's relu(bn(conv(x)) + shortcut). The
// channel affine, when present, is the pair of float32 [C] node inputs at `affine_input` (scale)
// and `affine_input + 1` (shift), C being the output's axis 1: a BatchNormalization that could not
// fold into its producer's weights (DenseNet's norm after each Concat) applied as the producer
// writes. Epilogue inputs come after the op's own inputs, and the op's shape rule and reference
// kernel never see them.
#pragma once

#include <string>
#include <vector>

namespace kiln {

enum class Activation {
  kNone,
  kRelu,
  kClip,       // min(max(x, alpha), beta); ReLU6 is Clip(0, 6)
  kLeakyRelu,  // x < 0 ? alpha·x : x
  kSigmoid,
  kTanh,
  kSilu,         // x·sigmoid(x) (exporters write it as Mul(x, Sigmoid(x)))
  kHardSigmoid,  // max(0, min(1, alpha·x + beta))
  kHardSwish,    // x·max(0, min(1, x/6 + 1/2))
  kGelu,         // x·(1 + erf(x/√2))/2, the exact GELU (exporters write it as five nodes)
};

const char* activation_name(Activation a);
// The activation activation_name() names; false for any other name.
bool activation_from_name(const std::string& name, Activation* a);

// The scalar definition every backend must match.
float apply_activation(Activation a, float alpha, float beta, float x);

struct Epilogue {
  Activation act = Activation::kNone;
  float alpha = 0.f;
  float beta = 0.f;
  int residual_input = -1;  // index into Node::inputs, or -1
  int affine_input = -1;    // scale at this index of Node::inputs, shift at the next, or -1
  int bias_input = -1;      // MatMul only: float32 [N] added along the last axis, or -1
  // An int8 layer's operands (passes/fuse_int8_conv.cc), Conv only. With input_scale > 0,
  // input 0 is read rounded to the 8-bit grid, (clamp(round_half_even(x / input_scale) + z,
  // lo, hi) − z) · input_scale with z = input_zero_point and [lo, hi] = [-128, 127], or [0,
  // 255] where input_uint8, as QuantizeLinear → DequantizeLinear give it; and the weights, a
  // float32 constant, are whole multiples of weight_scales[m] for output channel m (|code| ≤
  // 127). An 8-bit kernel reads both as their codes and scales its int32 sums by
  // input_scale · weight_scales[m]; a float kernel that takes the node computes the same
  // products in float on the rounded input. 0: a float layer.
  float input_scale = 0.f;
  int input_zero_point = 0;
  bool input_uint8 = false;
  std::vector<float> weight_scales;

  bool int8() const { return input_scale > 0.f; }
  bool empty() const {
    return act == Activation::kNone && residual_input < 0 && affine_input < 0 && bias_input < 0 &&
           !int8();
  }
  // Node::inputs indices that belong to the epilogue, not to the op, in increasing order.
  std::vector<int> inputs() const;
  // "+ bias[n] + residual → Relu", "Clip(0, 6)", "" when empty.
  std::string describe() const;
};

}  // namespace kiln
