// The space-to-depth rewrite of stride-2 convs with few input channels (conv_s2d.cc): forced
// on, it must match the reference over geometries (odd sizes, asymmetric pads, kernels not a
// multiple of 2, 1 to 8 channels), epilogues (residual in place included) and precisions;
// forced off or where it does not apply, the direct conv runs; the timed choice matches the
// reference whichever way it goes.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/conv_test_cases.h"

namespace kiln::test {
namespace {

const ConvCase kS2dConvs[] = {
    {"stem_7x7", {1, 3, 64, 64}, {64, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, nullptr},
    {"stem_odd", {2, 3, 37, 29}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, nullptr},
    {"c1_5x5", {1, 1, 20, 17}, {8, 1, 5, 5}, 1, {2, 2}, {}, {2, 2, 2, 2}, nullptr},
    {"c4_3x3", {2, 4, 15, 16}, {24, 4, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
    {"c6_4x3_asym", {1, 6, 13, 11}, {8, 6, 4, 3}, 1, {2, 2}, {}, {0, 1, 2, 1}, nullptr},
    {"c8_same_upper", {1, 8, 9, 8}, {16, 8, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {"c2_valid", {3, 2, 10, 9}, {5, 2, 3, 3}, 1, {2, 2}, {}, {}, "VALID"},
};

// relu, relu_residual, residual_no_bias, silu_residual, hardsigmoid, plain
const int kS2dEpilogues[] = {2, 4, 6, 10, 15, 0};

bool uses_s2d(const std::string& tactic) {
  return tactic.find("space-to-depth") != std::string::npos;
}

TEST(CudnnConvS2d, ForcedMatchesReference) {
  uint32_t seed = 4000;
  for (const ConvCase& c : kS2dConvs)
    for (int ei : kS2dEpilogues)
      for (Precision p : kPrecisions)
        for (bool in_place : {false, true}) {
          const EpiCase& e = kEpilogues[ei];
          if (in_place && !e.residual) continue;
          SCOPED_TRACE(std::string(c.name) + " / " + e.name + " / " + precision_name(p) +
                       (in_place ? " in place" : ""));
          auto cn = make_conv(c, e, seed += 4);
          TacticCache cache;
          std::string tactic;
          LibRunOptions o{false, in_place};
          o.space_to_depth = SpaceToDepth::kOn;
          expect_lib_kernel_matches(*cn->node, cn->in, p, cache, o, &tactic);
          EXPECT_TRUE(uses_s2d(tactic)) << tactic;
        }
}

TEST(CudnnConvS2d, OffOrInapplicableRunsDirect) {
  {
    auto cn = make_conv(kS2dConvs[0], kEpilogues[2], 91);
    TacticCache cache;
    std::string tactic;
    LibRunOptions off{true, false};
    off.space_to_depth = SpaceToDepth::kOff;
    expect_lib_kernel_matches(*cn->node, cn->in, Precision::kFp16, cache, off, &tactic);
    EXPECT_FALSE(uses_s2d(tactic)) << tactic;
  }
  LibRunOptions on{false, false};
  on.space_to_depth = SpaceToDepth::kOn;
  const ConvCase inapplicable[] = {
      {"stride1", {1, 3, 12, 12}, {8, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, nullptr},
      {"c16", {1, 16, 12, 12}, {8, 16, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
      {"grouped", {1, 4, 12, 12}, {8, 2, 3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}, nullptr},
      {"dilated", {1, 3, 16, 16}, {8, 3, 3, 3}, 1, {2, 2}, {2, 2}, {2, 2, 2, 2}, nullptr},
      {"kernel1", {1, 3, 12, 12}, {8, 3, 1, 1}, 1, {2, 2}, {}, {}, nullptr},
      {"strides_2_1", {1, 3, 12, 12}, {8, 3, 3, 3}, 1, {2, 1}, {}, {1, 1, 1, 1}, nullptr},
  };
  for (const ConvCase& c : inapplicable) {
    SCOPED_TRACE(c.name);
    auto cn = make_conv(c, kEpilogues[2], 93);
    TacticCache cache;
    std::string tactic;
    expect_lib_kernel_matches(*cn->node, cn->in, Precision::kFp16, cache, on, &tactic);
    EXPECT_FALSE(uses_s2d(tactic)) << tactic;
  }
}

// Timed: the rewrite competes with the direct conv; both the first choice and the one
// rebuilt from the tactic cache must be right. With the raw input (the model's float32 NCHW,
// taken as offered) the rewrite's fused transform competes with conversion plus the direct
// conv.
TEST(CudnnConvS2d, TimedChoiceMatchesReference) {
  uint32_t seed = 4500;
  for (bool raw : {false, true})
    for (Precision p : kPrecisions) {
      SCOPED_TRACE(std::string(precision_name(p)) + (raw ? " raw input" : ""));
      auto cn = make_conv(kS2dConvs[0], kEpilogues[2], seed += 3);
      TacticCache cache;
      std::string first, second;
      LibRunOptions o;
      o.offer_raw = raw;
      expect_lib_kernel_matches(*cn->node, cn->in, p, cache, o, &first);
      expect_lib_kernel_matches(*cn->node, cn->in, p, cache, o, &second);
      EXPECT_EQ(uses_s2d(first), uses_s2d(second)) << first << " / " << second;
      EXPECT_NE(second.find("cached"), std::string::npos) << second;
    }
}

// The model's float32 NCHW input taken as it is (takes_offered): the rewrite converts it
// within its transform, into float16 NHWC (fp16), float32 NHWC (tf32) or float32 NCHW (fp32).
TEST(CudnnConvS2d, RawInputForcedMatchesReference) {
  uint32_t seed = 4700;
  for (const ConvCase& c : kS2dConvs)
    for (int ei : {2, 4, 0})
      for (Precision p : kPrecisions) {
        const EpiCase& e = kEpilogues[ei];
        SCOPED_TRACE(std::string(c.name) + " / " + e.name + " / " + precision_name(p));
        auto cn = make_conv(c, e, seed += 4);
        TacticCache cache;
        std::string tactic;
        LibRunOptions o;
        o.offer_raw = true;
        o.time_tactics = false;  // forced: the timed choice is TimedChoiceMatchesReference's
        o.space_to_depth = SpaceToDepth::kOn;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, o, &tactic);
        EXPECT_TRUE(uses_s2d(tactic)) << tactic;
        // fp32 convs read float32 NCHW already: nothing to convert.
        const bool converted = p != Precision::kFp32;
        EXPECT_EQ(tactic.find("from float32") != std::string::npos, converted) << tactic;
      }
}

// Without the rewrite (heuristics keep the direct conv) the kernel converts the raw input
// itself.
TEST(CudnnConvS2d, RawInputDirectConvertsItself) {
  uint32_t seed = 4900;
  for (Precision p : {Precision::kFp16, Precision::kTf32})
    for (int ei : {2, 4}) {
      SCOPED_TRACE(std::string(kEpilogues[ei].name) + " / " + precision_name(p));
      auto cn = make_conv(kS2dConvs[1], kEpilogues[ei], seed += 3);
      TacticCache cache;
      std::string tactic;
      LibRunOptions o;
      o.offer_raw = true;
      o.time_tactics = false;
      expect_lib_kernel_matches(*cn->node, cn->in, p, cache, o, &tactic);
      EXPECT_EQ(tactic.rfind("convert float32 plain", 0), 0u) << tactic;
    }
}

}  // namespace
}  // namespace kiln::test
