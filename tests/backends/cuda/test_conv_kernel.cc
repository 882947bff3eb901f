// cuDNN Conv kernel against the reference Conv: a table of geometries (ResNet/MobileNet
// shapes, depthwise, grouped, dilated, asymmetric pads, odd sizes, batch 3) × epilogues
// (fused ReLU/identity and unfused activations, residuals) × precisions; the tactic cache;
// in-place residuals; what the kernel declines.
#include <memory>
#include <string>

#include "backends/backend_test_util.h"
#include "backends/cuda/lib_kernel_test_util.h"
#include "ops/conv.h"

namespace kiln::test {
namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  const char* auto_pad;  // nullptr: absent
};

const ConvCase kConvs[] = {
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

const EpiCase kEpilogues[] = {
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
};

const Precision kPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kFp16};

// A one-node graph: Conv with constant W (and B), the epilogue set, and its input tensors.
struct ConvNode {
  Graph g;
  Node* node = nullptr;
  Tensor x, w, b, r;
  std::vector<const Tensor*> in;
};

Attributes conv_attrs(const ConvCase& c) {
  Attributes a;
  if (c.group != 1) a.set("group", c.group);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  return a;
}

std::unique_ptr<ConvNode> make_conv(const ConvCase& c, const EpiCase& e, uint32_t seed) {
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

TEST(CudnnConv, MatchesReferenceOverGeometriesEpiloguesAndPrecisions) {
  uint32_t seed = 100;
  for (const ConvCase& c : kConvs)
    for (const EpiCase& e : kEpilogues)
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(std::string(c.name) + " / " + e.name + " / " + precision_name(p));
        auto cn = make_conv(c, e, seed += 5);
        expect_cuda_matches_reference(*cn->node, cn->in, p);
      }
}

// Whatever layout the producer offers, the kernel asks for NHWC for X and the residual and
// reads W and B on the host.
TEST(CudnnConv, AsksForNhwcWhateverIsOffered) {
  auto cn = make_conv(kConvs[7], kEpilogues[4], 7);
  auto kernel = CudaKernelRegistry::find(OpKind::Conv)(*cn->node, Precision::kFp16);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  for (Layout offered : {Layout::kPlain, Layout::kNHWC}) {
    EXPECT_EQ((*kernel)->input_layout(0, offered), Layout::kNHWC);
    EXPECT_EQ((*kernel)->input_layout(3, offered), Layout::kNHWC);
    for (Precision p : {Precision::kFp32, Precision::kFp16})
      expect_cuda_matches_reference(*cn->node, cn->in, p, offered);
  }
  EXPECT_TRUE((*kernel)->reads_on_host(1));
  EXPECT_TRUE((*kernel)->reads_on_host(2));
  EXPECT_EQ((*kernel)->inplace_input(), 3);
}

// Without timing, cuDNN's heuristic order gives a working tactic, and nothing is cached.
TEST(CudnnConv, HeuristicChoiceMatchesReference) {
  uint32_t seed = 900;
  for (int ci : {0, 3, 5, 9, 11})
    for (int ei : {0, 2, 4, 6, 8})
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(std::string(kConvs[ci].name) + " / " + kEpilogues[ei].name + " / " +
                     precision_name(p));
        auto cn = make_conv(kConvs[ci], kEpilogues[ei], seed += 3);
        TacticCache cache;
        std::string tactic;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, {false, false}, &tactic);
        EXPECT_NE(tactic.find("heuristic"), std::string::npos) << tactic;
        EXPECT_EQ(cache.size(), 0u);
      }
}

// A second prepare of the same conv finds the timed choice in the cache and does not time
// again; another epilogue is another key.
TEST(CudnnConv, TacticCacheSkipsRetiming) {
  for (Precision p : kPrecisions) {
    SCOPED_TRACE(precision_name(p));
    TacticCache cache;
    auto cn = make_conv(kConvs[0], kEpilogues[4], 31);
    std::string first, second;
    expect_lib_kernel_matches(*cn->node, cn->in, p, cache, {}, &first);
    ASSERT_EQ(cache.size(), 1u);
    EXPECT_NE(first.find(" ms"), std::string::npos) << first;
    EXPECT_EQ(first.find("cached"), std::string::npos) << first;
    expect_lib_kernel_matches(*cn->node, cn->in, p, cache, {}, &second);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_NE(second.find("cached"), std::string::npos) << second;
    // The same algorithm and path: the text up to the timing is equal.
    EXPECT_EQ(first.substr(0, first.find('(')), second.substr(0, second.find('(')));
    auto other = make_conv(kConvs[0], kEpilogues[8], 32);
    expect_lib_kernel_matches(*other->node, other->in, p, cache);
    EXPECT_EQ(cache.size(), 2u);
  }
}

// The output written over the residual: fused (ReLU), unfused (SiLU) and cropped paths, timed
// and heuristic.
TEST(CudnnConv, ResidualInPlace) {
  uint32_t seed = 700;
  for (int ci : {0, 7, 9, 11})
    for (int ei : {4, 5, 6, 10})
      for (Precision p : kPrecisions)
        for (bool timed : {true, false}) {
          SCOPED_TRACE(std::string(kConvs[ci].name) + " / " + kEpilogues[ei].name + " / " +
                       precision_name(p) + (timed ? " timed" : " heuristic"));
          auto cn = make_conv(kConvs[ci], kEpilogues[ei], seed += 3);
          TacticCache cache;
          expect_lib_kernel_matches(*cn->node, cn->in, p, cache, {timed, true});
        }
}

// Re-prepared kernels of one node for new input shapes (batch and spatial change).
TEST(CudnnConv, NewShapesOfOneNode) {
  for (Shape xs : {Shape{1, 5, 9, 7}, Shape{4, 5, 6, 11}, Shape{2, 5, 3, 3}}) {
    ConvCase c = kConvs[7];
    c.x = xs;
    auto cn = make_conv(c, kEpilogues[2], 40);
    expect_cuda_matches_reference(*cn->node, cn->in, Precision::kFp16);
  }
}

StatusCode factory_code(const Node& n) {
  auto k = CudaKernelRegistry::find(OpKind::Conv)(n, Precision::kFp16);
  return k.is_ok() ? StatusCode::kOk : k.status().code();
}

TEST(CudnnConv, DeclinesWhatItCannotRun) {
  {  // 3-D conv
    Graph g;
    Node* n = g.add_node(
        OpKind::Conv, "conv3d",
        {f32_value(g, "x", {1, 2, 4, 4, 4}), g.add_constant("w", random_tensor({3, 2, 3, 3, 3}))},
        {f32_value(g, "y", {})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // 1-D conv
    Graph g;
    Node* n =
        g.add_node(OpKind::Conv, "conv1d",
                   {f32_value(g, "x", {1, 2, 9}), g.add_constant("w", random_tensor({3, 2, 3}))},
                   {f32_value(g, "y", {})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // weight computed by the graph
    Graph g;
    Node* n = g.add_node(OpKind::Conv, "conv_w",
                         {f32_value(g, "x", {1, 3, 6, 6}), f32_value(g, "w", {4, 3, 3, 3})},
                         {f32_value(g, "y", {})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // bias computed by the graph
    Graph g;
    Node* n = g.add_node(OpKind::Conv, "conv_b",
                         {f32_value(g, "x", {1, 3, 6, 6}),
                          g.add_constant("w", random_tensor({4, 3, 3, 3})), f32_value(g, "b", {4})},
                         {f32_value(g, "y", {})});
    EXPECT_EQ(factory_code(*n), StatusCode::kUnsupported);
  }
  {  // a 4-D conv whose prepare sees mismatched channels: an error naming the shapes
    auto cn = make_conv(kConvs[7], kEpilogues[0], 3);
    Tensor bad = random_tensor({1, 6, 9, 7});
    std::vector<const Tensor*> in{&bad, &cn->w};
    auto got = run_cuda_node(*cn->node, in, Precision::kFp32);
    ASSERT_FALSE(got.is_ok());
    EXPECT_NE(got.status().message().find("channels"), std::string::npos)
        << got.status().to_string();
  }
}

}  // namespace
}  // namespace kiln::test
