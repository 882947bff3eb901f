// channel_absmax: the per-channel magnitudes of symmetric int8 weight scales.
#include <gtest/gtest.h>

#include "quant/weight_scales.h"

namespace kiln::quant {
namespace {

TEST(ChannelAbsmax, EachSliceOfTheAxis) {
  // [2, 3, 2]: axis 1 takes the max over dims 0 and 2 of each of its 3 slices.
  const Tensor w = Tensor::from_floats(
      {2, 3, 2}, {1.f, -2.f, 0.5f, 0.25f, 0.f, 0.f, -3.f, 0.5f, 0.125f, -0.75f, 0.f, -0.f});
  EXPECT_EQ(channel_absmax(w, 1), (std::vector<float>{3.f, 0.75f, 0.f}));
  EXPECT_EQ(channel_absmax(w, 0), (std::vector<float>{2.f, 3.f}));
  EXPECT_EQ(channel_absmax(w, 2), (std::vector<float>{3.f, 2.f}));
}

TEST(RoundE4m3, NearestEvenAndSaturating) {
  EXPECT_EQ(round_e4m3(1.f), 1.f);
  EXPECT_EQ(round_e4m3(0.1f), 0.1015625f);  // e4m3 steps of 1/64 in [1/16, 1/8)
  EXPECT_EQ(round_e4m3(1.0625f), 1.f);      // halfway between 1 and 1.125: to even
  EXPECT_EQ(round_e4m3(-1.1875f), -1.25f);  // halfway between 1.125 and 1.25: to even
  EXPECT_EQ(round_e4m3(1000.f), 448.f);
  EXPECT_EQ(round_e4m3(-1000.f), -448.f);
}

TEST(GridWeightScales, FindsTheFp8Grid) {
  // Every value an e4m3 value times its channel's max / 448 (0.75 is 112 · 3 / 448).
  const Tensor on = Tensor::from_floats({2, 2}, {224.f, -0.5f, 3.f, 0.75f});
  EXPECT_EQ(grid_weight_scales(on, 448.f, round_e4m3), (std::vector<float>{0.5f, 3.f / 448.f}));
  const Tensor off = Tensor::from_floats({1, 2}, {448.f, 1.0625f});
  EXPECT_TRUE(grid_weight_scales(off, 448.f, round_e4m3).empty());
}

}  // namespace
}  // namespace kiln::quant
