// Shared by the cuDNN Conv tests (test_conv_kernel.cc, test_conv_paths.cc): a table of
// geometries (ResNet/MobileNet shapes, depthwise, grouped, dilated, asymmetric pads, odd
// sizes, batch 3), a table of epilogues, and a one-node Conv graph built from one of each.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend_test_util.h"
#include "backends/cuda/lib_kernel_test_util.h"
#include "ops/conv.h"

namespace kiln::test {

struct ConvCase {
  const char* name;
  Shape x, w;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  const char* auto_pad;  // nullptr: absent
};

inline const ConvCase kConvs[] = {
    {"resnet_3x3", {1, 64, 56, 56}, {64, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"downsample_1x1_s2", {1, 256, 28, 28}, {512, 256, 1, 1}, 1, {2, 2}, {}, {}, nullptr},
    {"stem_7x7_s2", {1, 3, 112, 112}, {64, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, nullptr},
    {"depthwise_c32", {1, 32, 28, 28}, {32, 1, 3, 3}, 32, {}, {}, {1, 1, 1, 1}, nullptr},
    {"depthwise_c144_s2", {1, 144, 28, 28}, {144, 1, 3, 3}, 144, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"grouped", {2, 8, 7, 7}, {12, 2, 3, 3}, 4, {1, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"dilated", {1, 16, 12, 12}, {8, 16, 3, 3}, 1, {}, {2, 3}, {2, 3, 2, 3}, nullptr},
    {"odd_1x5x9x7", {1, 5, 9, 7}, {3, 5, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, nullptr},
    {"batch3", {3, 24, 10, 10}, {40, 24, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
    // Pads cuDNN cannot express symmetrically: the cropped path.
    {"asym_pads_s2", {1, 5, 11, 10}, {6, 5, 3, 3}, 1, {2, 2}, {}, {0, 1, 2, 1}, nullptr},
    {"asym_pads_begin", {1, 4, 8, 9}, {8, 4, 3, 3}, 1, {}, {}, {2, 0, 0, 1}, nullptr},
    {"same_upper_s2", {1, 8, 9, 8}, {16, 8, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {"same_lower_even_k", {1, 3, 8, 7}, {5, 3, 4, 3}, 1, {2, 1}, {}, {}, "SAME_LOWER"},
    {"valid", {1, 2, 9, 6}, {3, 2, 2, 3}, 1, {3, 1}, {}, {}, "VALID"},
};

struct EpiCase {
  const char* name;
  bool bias;
  Activation act;
  float alpha, beta;
  bool residual;
};

inline const EpiCase kEpilogues[] = {
    {"plain", false, Activation::kNone, 0, 0, false},
    {"bias", true, Activation::kNone, 0, 0, false},
    {"relu", true, Activation::kRelu, 0, 0, false},
    {"relu_no_bias", false, Activation::kRelu, 0, 0, false},
    {"relu_residual", true, Activation::kRelu, 0, 0, true},
    {"residual", true, Activation::kNone, 0, 0, true},
    {"residual_no_bias", false, Activation::kNone, 0, 0, true},
    {"relu6", true, Activation::kClip, 0.f, 6.f, false},
    {"silu", true, Activation::kSilu, 0, 0, false},
    {"hardswish", true, Activation::kHardSwish, 0, 0, false},
    {"silu_residual", true, Activation::kSilu, 0, 0, true},
    // Graph-API pointwise modes beyond ReLU; hard-sigmoid has none (epilogue kernel).
    {"leaky_relu", true, Activation::kLeakyRelu, 0.1f, 0, false},
    {"clip_residual", true, Activation::kClip, -0.5f, 0.75f, true},
    {"tanh_no_bias", false, Activation::kTanh, 0, 0, false},
    {"sigmoid_residual", true, Activation::kSigmoid, 0, 0, true},
    {"hardsigmoid", true, Activation::kHardSigmoid, 0.2f, 0.5f, false},
};

inline const Precision kPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kFp16,
                                        Precision::kBf16};

// A one-node graph: Conv with constant W (and B), the epilogue set, and its input tensors.
struct ConvNode {
  Graph g;
  Node* node = nullptr;
  Tensor x, w, b, r;
  std::vector<const Tensor*> in;
};

inline std::unique_ptr<ConvNode> make_conv(const ConvCase& c, const EpiCase& e, uint32_t seed) {
  auto cn = std::make_unique<ConvNode>();
  Graph& g = cn->g;
  cn->x = random_tensor(c.x, seed);
  cn->w = random_tensor(c.w, seed + 1, -0.5f, 0.5f);
  cn->b = random_tensor({c.w[0]}, seed + 2);
  const Attributes a = conv_attrs(c);
  std::vector<Value*> ins{f32_value(g, "x", c.x), g.add_constant("w", cn->w)};
  cn->in = {&cn->x, &cn->w};
  if (e.bias) {
    ins.push_back(g.add_constant("b", cn->b));
    cn->in.push_back(&cn->b);
  }
  Value* y = f32_value(g, "y", {});
  y->has_shape = false;
  // Weights are uploaded once per node name (WeightStore): one name per weight tensor.
  cn->node = g.add_node(OpKind::Conv, "conv_" + std::string(c.name) + "_" + std::to_string(seed),
                        ins, {y}, a);
  if (e.residual) {
    auto geo = conv_geometry(*parse_conv_attrs(a), c.x, c.w);
    EXPECT_TRUE(geo.is_ok()) << geo.status().to_string();
    if (!geo.is_ok()) return cn;
    cn->r = random_tensor(geo->output_shape(), seed + 3);
    g.set_input(cn->node, cn->node->inputs.size(), f32_value(g, "r", cn->r.shape()));
    cn->in.push_back(&cn->r);
    cn->node->epilogue.residual_input = static_cast<int>(cn->node->inputs.size()) - 1;
  }
  cn->node->epilogue.act = e.act;
  cn->node->epilogue.alpha = e.alpha;
  cn->node->epilogue.beta = e.beta;
  return cn;
}

// `opt` with the cuDNN conv path forced to `path`.
inline LibRunOptions on_path(LibRunOptions opt, CudnnConvPath path) {
  opt.conv_path = path;
  return opt;
}

}  // namespace kiln::test
