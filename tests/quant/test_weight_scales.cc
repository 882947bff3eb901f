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

}  // namespace
}  // namespace kiln::quant
