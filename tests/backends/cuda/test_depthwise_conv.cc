// kiln's NHWC depthwise Conv kernel (cudnn/depthwise_conv.cu) against the reference: the
// depthwise geometries of MobileNet, EfficientNet and ConvNeXt (3×3, 5×5 and 7×7, strides 1 and
// 2), channel counts without 16-byte packs, dilation, asymmetric pads, batch 3; every epilogue
// kind, residuals in place; tf32 and fp16. Strict fp32 and a forced cuDNN path keep cuDNN.
#include <memory>
#include <string>

#include "backends/cuda/conv_test_cases.h"

namespace kiln::test {
namespace {

const ConvCase kDepthwise[] = {
    {"dw_c64_3x3", {2, 64, 20, 18}, {64, 1, 3, 3}, 64, {}, {}, {1, 1, 1, 1}, nullptr},
    {"dw_c72_3x3_s2", {1, 72, 23, 24}, {72, 1, 3, 3}, 72, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"dw_c120_5x5", {1, 120, 14, 14}, {120, 1, 5, 5}, 120, {}, {}, {2, 2, 2, 2}, nullptr},
    {"dw_c40_5x5_s2_same", {3, 40, 15, 16}, {40, 1, 5, 5}, 40, {2, 2}, {}, {}, "SAME_UPPER"},
    {"dw_c96_7x7", {1, 96, 14, 14}, {96, 1, 7, 7}, 96, {}, {}, {3, 3, 3, 3}, nullptr},
    {"dw_c12_3x3", {1, 12, 9, 11}, {12, 1, 3, 3}, 12, {}, {}, {1, 1, 1, 1}, nullptr},
    {"dw_c10_dilated", {2, 10, 13, 12}, {10, 1, 3, 3}, 10, {}, {2, 2}, {2, 2, 2, 2}, nullptr},
    {"dw_c16_asym", {1, 16, 10, 9}, {16, 1, 3, 3}, 16, {2, 1}, {}, {0, 1, 2, 0}, nullptr},
    {"dw_c8_valid_3x2", {1, 8, 7, 9}, {8, 1, 3, 2}, 8, {1, 2}, {}, {}, "VALID"},
};

const char* const kEpis[] = {"plain",         "bias",        "relu",
                             "relu6",         "hardswish",   "relu_residual",
                             "silu_residual", "hardsigmoid", "residual_no_bias",
                             "leaky_relu"};

const EpiCase& epi(const char* name) {
  for (const EpiCase& e : kEpilogues)
    if (std::string(e.name) == name) return e;
  ADD_FAILURE() << "no epilogue " << name;
  return kEpilogues[0];
}

TEST(DepthwiseConv, MatchesReferenceOverGeometriesAndEpilogues) {
  uint32_t seed = 9000;
  LibRunOptions heuristic;
  heuristic.time_tactics = false;
  for (const ConvCase& c : kDepthwise)
    for (const char* en : kEpis)
      for (Precision p : {Precision::kTf32, Precision::kFp16}) {
        SCOPED_TRACE(std::string(c.name) + " / " + en + " / " + precision_name(p));
        auto cn = make_conv(c, epi(en), seed += 5);
        TacticCache cache;
        std::string tactic;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, heuristic, &tactic);
        EXPECT_NE(tactic.find("kiln depthwise"), std::string::npos) << tactic;
      }
}

TEST(DepthwiseConv, ResidualInPlace) {
  uint32_t seed = 9500;
  for (const ConvCase& c : {kDepthwise[0], kDepthwise[5]})
    for (Precision p : {Precision::kTf32, Precision::kFp16}) {
      SCOPED_TRACE(std::string(c.name) + " / " + precision_name(p));
      auto cn = make_conv(c, epi("relu_residual"), seed += 5);
      TacticCache cache;
      LibRunOptions opt;
      opt.time_tactics = false;
      opt.in_place = true;
      expect_lib_kernel_matches(*cn->node, cn->in, p, cache, opt);
    }
}

// Timed: kiln's kernel and cuDNN's legacy path, the candidates the planner times against each
// other (test_conv_candidates.cc), each report their time and match.
TEST(DepthwiseConv, TimedCandidatesMatchReference) {
  uint32_t seed = 9700;
  for (const ConvCase& c : {kDepthwise[0], kDepthwise[2]})
    for (Precision p : {Precision::kTf32, Precision::kFp16})
      for (const char* backend : {"kiln-depthwise", "cudnn"}) {
        SCOPED_TRACE(std::string(c.name) + " / " + precision_name(p) + " / " + backend);
        auto cn = make_conv(c, epi("relu"), seed += 5);
        TacticCache cache;
        std::string tactic;
        LibRunOptions timed;
        timed.backend = backend;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, timed, &tactic);
        EXPECT_EQ(tactic.find("kiln depthwise") != std::string::npos,
                  std::string(backend) == "kiln-depthwise")
            << tactic;
        EXPECT_NE(tactic.find(" ms"), std::string::npos) << tactic;
      }
}

TEST(DepthwiseConv, StrictFp32AndForcedPathsKeepCudnn) {
  LibRunOptions heuristic;
  heuristic.time_tactics = false;
  {
    auto cn = make_conv(kDepthwise[0], epi("relu"), 9900);
    TacticCache cache;
    std::string tactic;
    expect_lib_kernel_matches(*cn->node, cn->in, Precision::kFp32, cache, heuristic, &tactic);
    EXPECT_EQ(tactic.find("kiln depthwise"), std::string::npos) << tactic;
  }
  auto cn = make_conv(kDepthwise[0], epi("relu"), 9910);
  TacticCache cache;
  std::string tactic;
  expect_lib_kernel_matches(*cn->node, cn->in, Precision::kFp16, cache,
                            on_path(heuristic, CudnnConvPath::kLegacy), &tactic);
  EXPECT_NE(tactic.find("cudnn"), std::string::npos) << tactic;
}

}  // namespace
}  // namespace kiln::test
