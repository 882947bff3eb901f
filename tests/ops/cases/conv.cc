// Conv: the shapes CNNs are made of (a 7×7 stride-2 stem on 3 channels, 3×3 with padding, 1×1
// pointwise, a depthwise 3×3, a grouped conv, a dilated one, asymmetric padding), with their
// fused epilogues (bias + Relu, Clip as ReLU6, SiLU, a residual + Relu), and no bias.
#include <algorithm>
#include <cmath>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct ConvShape {
  Shape x;
  int64_t out_channels, kernel, stride = 1, group = 1, dilation = 1;
  std::vector<int64_t> pads;  // empty: "same" for odd kernels ((k−1)·d/2 each side)
};

// The output's spatial size, for a residual of its shape.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

OpCase conv(std::string name, const ConvShape& s, uint32_t seed, bool bias = true,
            Activation act = Activation::kNone, bool residual = false) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Conv;
  const int64_t k = s.kernel;
  std::vector<int64_t> pads = s.pads;
  if (pads.empty()) pads.assign(4, (k - 1) * s.dilation / 2);
  c.attrs.set("kernel_shape", std::vector<int64_t>{k, k});
  c.attrs.set("strides", std::vector<int64_t>{s.stride, s.stride});
  c.attrs.set("pads", pads);
  if (s.dilation != 1) c.attrs.set("dilations", std::vector<int64_t>{s.dilation, s.dilation});
  if (s.group != 1) c.attrs.set("group", s.group);
  c.inputs.push_back({random_tensor(s.x, seed)});
  c.inputs.push_back(
      {random_tensor({s.out_channels, s.x[1] / s.group, k, k}, seed + 1, -0.3f, 0.3f), true});
  if (bias || residual) c.inputs.push_back({random_tensor({s.out_channels}, seed + 2), true});
  if (residual) {
    const int64_t h = out_size(s.x[2], k, s.stride, s.dilation, pads[0], pads[2]);
    const int64_t w = out_size(s.x[3], k, s.stride, s.dilation, pads[1], pads[3]);
    c.inputs.push_back({random_tensor({s.x[0], s.out_channels, h, w}, seed + 3)});
    c.epilogue.residual_input = 3;
  }
  c.epilogue.act = act;
  if (act == Activation::kClip) {
    c.epilogue.alpha = 0.f;
    c.epilogue.beta = 6.f;
  }
  return c;
}

// `c` as an int8 Conv: its weights on a grid per output channel (dim 0), its input read on the
// grid of `input_scale` (chosen so that the largest inputs saturate at ±127 codes).
OpCase int8(OpCase c, float input_scale) { return int8_layer(std::move(c), 0, input_scale); }

// `c` as an int8 Conv whose input codes are uint8 (or int8) with a zero point: ONNX Runtime's
// default activations (asymmetric uint8). Its padding stands for x = 0, code z.
OpCase asymmetric(OpCase c, float input_scale, int zero_point, bool uint8) {
  c = int8(std::move(c), input_scale);
  c.name = std::string(uint8 ? "u" : "s") + "8z" + std::to_string(zero_point) + "_" + c.name;
  c.epilogue.input_zero_point = zero_point;
  c.epilogue.input_uint8 = uint8;
  return c;
}

}  // namespace

KILN_OP_CASES(conv) {
  return {
      conv("stem_7x7_s2", {{1, 3, 32, 32}, 16, 7, 2}, 1000, true, Activation::kRelu),
      conv("3x3_relu", {{2, 16, 12, 12}, 32, 3}, 1004, true, Activation::kRelu),
      conv("1x1_residual_relu", {{2, 32, 8, 8}, 32, 1}, 1008, true, Activation::kRelu, true),
      conv("1x1_no_bias", {{1, 24, 9, 7}, 40, 1}, 1012, false),
      conv("depthwise_relu6", {{2, 32, 10, 10}, 32, 3, 1, 32}, 1016, true, Activation::kClip),
      conv("depthwise_s2_silu", {{1, 48, 15, 15}, 48, 3, 2, 48}, 1020, true, Activation::kSilu),
      conv("grouped", {{1, 16, 8, 8}, 32, 3, 1, 4}, 1024),
      conv("dilated", {{1, 8, 16, 16}, 8, 3, 1, 1, 2}, 1028),
      conv("asymmetric_pads", {{1, 8, 9, 10}, 12, 3, 2, 1, 1, {0, 1, 1, 0}}, 1032),
      // Inputs are uniform in [-1, 1): a scale of 0.9 / 127 saturates the largest tenth.
      int8(conv("stem_7x7_s2", {{1, 3, 32, 32}, 16, 7, 2}, 1100, true, Activation::kRelu),
           0.9f / 127),
      int8(conv("3x3_relu", {{2, 16, 12, 12}, 32, 3}, 1104, true, Activation::kRelu), 0.9f / 127),
      int8(conv("1x1_residual_relu", {{2, 32, 8, 8}, 32, 1}, 1108, true, Activation::kRelu, true),
           1.f / 127),
      int8(conv("1x1_no_bias", {{1, 24, 9, 7}, 40, 1}, 1112, false), 0.5f / 127),
      int8(conv("depthwise_relu6", {{2, 32, 10, 10}, 32, 3, 1, 32}, 1116, true, Activation::kClip),
           1.f / 127),
      int8(conv("grouped", {{1, 16, 8, 8}, 32, 3, 1, 4}, 1124), 1.f / 127),
      int8(conv("3x3_s2_odd", {{3, 8, 9, 11}, 12, 3, 2}, 1132), 0.8f / 127),
      // uint8 codes over [-0.78, 1.2] (zero point 100): the lowest inputs saturate at code 0.
      asymmetric(conv("stem_7x7_s2", {{1, 3, 32, 32}, 16, 7, 2}, 1200, true, Activation::kRelu),
                 2.f / 255, 100, true),
      asymmetric(conv("3x3_relu", {{2, 16, 12, 12}, 32, 3}, 1204, true, Activation::kRelu),
                 2.f / 255, 128, true),
      asymmetric(
          conv("1x1_residual_relu", {{2, 32, 8, 8}, 32, 1}, 1208, true, Activation::kRelu, true),
          2.f / 255, 100, true),
      asymmetric(
          conv("depthwise_relu6", {{2, 32, 10, 10}, 32, 3, 1, 32}, 1216, true, Activation::kClip),
          2.f / 255, 140, true),
      asymmetric(conv("3x3_s2_odd", {{3, 8, 9, 11}, 12, 3, 2}, 1232), 1.5f / 255, 60, true),
      asymmetric(conv("3x3_s2_odd", {{3, 8, 9, 11}, 12, 3, 2}, 1236), 1.f / 127, -7, false),
  };
}

}  // namespace kiln::test
