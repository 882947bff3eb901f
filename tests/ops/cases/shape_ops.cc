// Transpose (NCHW ↔ NHWC, ranks 2 to 6, the default reversal) and Slice (positive and
// negative starts, ends and steps, clamped ends, omitted axes and steps, an empty result), on
// rank-4 activations and others.
#include <cstdint>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase transpose(std::string name, const Shape& x, std::vector<int64_t> perm, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Transpose;
  if (!perm.empty()) c.attrs.set("perm", perm);
  c.inputs.push_back({random_tensor(x, seed)});
  return c;
}

// axes and steps empty: omitted.
OpCase slice(std::string name, const Shape& x, std::vector<int64_t> starts,
             std::vector<int64_t> ends, std::vector<int64_t> axes, std::vector<int64_t> steps,
             uint32_t seed, const char* onednn_reference = nullptr) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Slice;
  c.onednn_reference = onednn_reference;
  c.inputs.push_back({random_tensor(x, seed)});
  c.inputs.push_back({int64s(starts), true});
  c.inputs.push_back({int64s(ends), true});
  if (!axes.empty() || !steps.empty())
    c.inputs.push_back({axes.empty() ? Tensor() : int64s(axes), true});
  if (!steps.empty()) c.inputs.push_back({int64s(steps), true});
  return c;
}

}  // namespace

KILN_OP_CASES(shape_ops) {
  constexpr int64_t kMax = INT64_MAX;
  return {
      transpose("to_nhwc", {4, 32, 28, 28}, {0, 2, 3, 1}, 700),
      transpose("to_nchw", {2, 9, 11, 17}, {0, 3, 1, 2}, 701),
      transpose("rank2", {37, 53}, {1, 0}, 702),
      transpose("default_reversal", {2, 3, 4}, {}, 703),
      transpose("channel_shuffle", {1, 6, 4, 2, 3}, {0, 2, 1, 3, 4}, 704),
      transpose("rank6", {2, 3, 2, 3, 2, 3}, {0, 1, 3, 2, 4, 5}, 705),
      slice("channels_and_height", {2, 17, 9, 11}, {0, 3}, {2, 12}, {0, 1}, {}, 710),
      slice("stepped", {2, 17, 9, 11}, {1, 2}, {8, 10}, {2, 3}, {2, 3}, 711),
      slice("reversed", {2, 17, 9, 11}, {-1}, {-kMax}, {1}, {-2}, 712, "a negative step"),
      slice("clamped_ends", {2, 17, 9, 11}, {0, 0, 0, 0}, {kMax, kMax, kMax, kMax}, {}, {}, 713),
      slice("shufflenet_halves", {2, 116, 7, 7}, {58}, {116}, {1}, {}, 714),
      slice("rows", {4, 255}, {170}, {255}, {-1}, {}, 715),
      // Axis 4's stride times its step (4) passes axis 3's stride (6): oneDNN's descs take no
      // such interleaved strides.
      slice("rank5", {2, 3, 4, 5, 6}, {1, 0}, {3, 6}, {1, 4}, {1, 4}, 716,
            "a step that interleaves two axes' strides"),
      slice("empty", {2, 8, 6, 6}, {4}, {4}, {1}, {}, 717, "an empty window"),
  };
}

}  // namespace kiln::test
