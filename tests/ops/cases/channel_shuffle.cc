// ChannelShuffle (kiln's own op, ops/channel_shuffle.h): per-pixel shuffles (2 and 4 groups,
// 0 and -1 in the shapes, the image axes split otherwise in shape5) that kernels may run in
// NHWC, and general forms (not a per-pixel shuffle, a rank-3 input) that stay plain.
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase shuffle(std::string name, const Shape& x, std::vector<int64_t> s5, std::vector<int64_t> s4,
               uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::ChannelShuffle;
  c.inputs.push_back({random_tensor(x, seed)});
  c.inputs.push_back({int64s(s5), true});
  c.inputs.push_back({int64s(s4), true});
  return c;
}

}  // namespace

KILN_OP_CASES(channel_shuffle) {
  uint32_t seed = 1500;
  return {
      shuffle("two_groups", {2, 16, 5, 7}, {2, 2, 8, 5, 7}, {2, 16, 5, 7}, seed++),
      shuffle("shufflenet_stage", {3, 116, 7, 7}, {3, 2, 58, 7, 7}, {3, 116, 7, 7}, seed++),
      shuffle("four_groups", {1, 24, 3, 3}, {1, 4, 6, 3, 3}, {1, 24, 3, 3}, seed++),
      shuffle("zero_and_minus_one", {3, 12, 4, 4}, {0, 3, -1, 4, 4}, {0, -1, 4, 4}, seed++),
      shuffle("pixels_split_otherwise", {2, 8, 6, 4}, {2, 2, 4, 3, 8}, {2, 8, 6, 4}, seed++),
      shuffle("not_per_pixel", {2, 6, 4, 2}, {4, 3, 2, 2, 2}, {2, 12, 2, 2}, seed++),
      shuffle("rank3", {6, 10, 3}, {6, 2, 5, 3, 1}, {6, 10, 3}, seed++),
  };
}

}  // namespace kiln::test
