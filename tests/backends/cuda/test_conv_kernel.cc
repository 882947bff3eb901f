// cuDNN Conv kernel against the reference Conv, through whichever path wins: the tables of
// conv_test_cases.h (geometries × epilogues × precisions, NHWC in fp16/tf32 and NCHW in
// fp32); the tactic cache; in-place residuals; what the kernel declines. The forced legacy
// and graph paths and the channel padding are in test_conv_paths.cc.
#include <memory>
#include <string>

#include "backends/cuda/conv_test_cases.h"

namespace kiln::test {
namespace {

// The whole table with the heuristic choice (timing every candidate of 600+ cases would
// take many minutes), then the timed choice on the geometries and epilogues of real CNNs.
TEST(CudnnConv, MatchesReferenceOverGeometriesEpiloguesAndPrecisions) {
  uint32_t seed = 100;
  LibRunOptions heuristic;
  heuristic.time_tactics = false;
  for (const ConvCase& c : kConvs)
    for (const EpiCase& e : kEpilogues)
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(std::string(c.name) + " / " + e.name + " / " + precision_name(p));
        auto cn = make_conv(c, e, seed += 5);
        TacticCache cache;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, heuristic);
      }
}

// Four geometries, each with two of four epilogues (each epilogue meets two geometries): every
// timed case times two candidates; all sixteen pairs took 41 s on a cold H200.
TEST(CudnnConv, TimedChoiceMatchesReference) {
  uint32_t seed = 700;
  const char* const epilogues[] = {"relu_residual", "relu6", "silu", "bias"};
  int gi = 0;
  for (const ConvCase& c : kConvs) {
    std::string name = c.name;
    if (name != "resnet_3x3" && name != "downsample_1x1_s2" && name != "stem_7x7_s2" &&
        name != "odd_1x5x9x7")
      continue;
    for (const EpiCase& e : kEpilogues) {
      std::string epi = e.name;
      if (epi != epilogues[(gi * 2) % 4] && epi != epilogues[(gi * 2 + 1) % 4]) continue;
      for (Precision p : kPrecisions) {
        SCOPED_TRACE(name + " / " + epi + " / " + precision_name(p));
        auto cn = make_conv(c, e, seed += 5);
        expect_cuda_matches_reference(*cn->node, cn->in, p);
      }
    }
    ++gi;
  }
}

// Whatever layout the producer offers, the kernel asks for NHWC for X and the residual in
// fp16/tf32 and NCHW (kPlain) in strict fp32, and reads W and B on the host.
TEST(CudnnConv, AsksForItsLayoutWhateverIsOffered) {
  auto cn = make_conv(kConvs[7], kEpilogues[4], 7);
  for (Precision p : kPrecisions) {
    SCOPED_TRACE(precision_name(p));
    auto kernel = make_cuda_kernel(*cn->node, p);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
    const Layout want = p == Precision::kFp32 ? Layout::kPlain : Layout::kNHWC;
    for (Layout offered : {Layout::kPlain, Layout::kNHWC}) {
      EXPECT_EQ((*kernel)->input_layout(0, offered), want);
      EXPECT_EQ((*kernel)->input_layout(3, offered), want);
      expect_cuda_matches_reference(*cn->node, cn->in, p, offered);
    }
    EXPECT_TRUE((*kernel)->reads_on_host(1));
    EXPECT_TRUE((*kernel)->reads_on_host(2));
    EXPECT_EQ((*kernel)->inplace_input(), 3);
  }
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
    // The same algorithm and path: the text up to the workspace is equal. (The workspace a
    // timed candidate reports is cuDNN's perf result's; a cached one asks
    // cudnnGetConvolutionForwardWorkspaceSize, which can say less: 0 KiB against 1713 KiB for
    // one bf16 algorithm on an H100.)
    EXPECT_EQ(first.substr(0, first.find(" ws ")), second.substr(0, second.find(" ws ")));
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
          // Timing every candidate takes seconds per case: the timed choice is checked on
          // two geometries in fp16, where NHWC engines write over the residual.
          if (timed && (p != Precision::kFp16 || (ci != 0 && ci != 9))) continue;
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
  auto k = make_cuda_kernel(n, Precision::kFp16);
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
