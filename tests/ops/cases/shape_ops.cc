// Transpose (NCHW ↔ NHWC, ranks 1 to 6, the default reversal, the identity, size-1 dims, int64
// data) and Slice (positive and negative starts, ends and steps, clamped ends, omitted axes and
// steps, an empty result, int64 data), on rank-4 activations and others.
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

// The transpose of int64 data: varied values, distinct per element.
OpCase transpose_int64(std::string name, const Shape& x, std::vector<int64_t> perm) {
  OpCase c = transpose(std::move(name), x, std::move(perm), 0);
  std::vector<int64_t> v(static_cast<size_t>(c.inputs[0].t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i) * 7919 - 100000;
  c.inputs[0].t = Tensor::from_int64s(x, v);
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

// A slice of int64 data: {4}[1:3].
OpCase slice_int64() {
  OpCase c = slice("int64_data", {4}, {1}, {3}, {}, {}, 0);
  c.inputs[0].t = int64s({7, -8, 90000, 12});
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
      transpose("to_nhwc_odd", {2, 17, 9, 11}, {0, 2, 3, 1}, 706),
      transpose("default_reversal_rank4", {1, 3, 7, 5}, {}, 707),
      transpose("identity", {1, 3, 7, 5}, {0, 1, 2, 3}, 708),
      transpose("reversed_size_one_dims", {3, 1, 4, 1}, {3, 2, 1, 0}, 709),
      transpose("rank1", {33}, {0}, 720),
      transpose("rank5", {2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}, 721),
      transpose("rank6_scrambled", {2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}, 722),
      transpose_int64("int64_to_nhwc", {2, 17, 9, 11}, {0, 2, 3, 1}),
      transpose_int64("int64_rank6", {2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}),
      slice("channels_and_height", {2, 17, 9, 11}, {0, 3}, {2, 12}, {0, 1}, {}, 710),
      slice("stepped", {2, 17, 9, 11}, {1, 2}, {8, 10}, {2, 3}, {2, 3}, 711),
      slice("reversed", {2, 17, 9, 11}, {-1}, {-kMax}, {1}, {-2}, 712, "a negative step"),
      slice("clamped_ends", {2, 17, 9, 11}, {0, 0, 0, 0}, {kMax, kMax, kMax, kMax}, {}, {}, 713),
      slice("shufflenet_halves", {2, 116, 7, 7}, {58}, {116}, {1}, {}, 714),
      slice("rows", {4, 255}, {170}, {255}, {-1}, {}, 715),
      slice("rows_first", {4, 255}, {0}, {85}, {1}, {}, 724),
      // Axis 4's stride times its step (4) passes axis 3's stride (6): oneDNN's descs take no
      // such interleaved strides.
      slice("rank5", {2, 3, 4, 5, 6}, {1, 0}, {3, 6}, {1, 4}, {1, 4}, 716,
            "a step that interleaves two axes' strides"),
      slice("empty", {2, 8, 6, 6}, {4}, {4}, {1}, {}, 717, "an empty window"),
      slice("negative_start_clamped_end", {1, 3, 7, 5}, {-3}, {100}, {-1}, {}, 718),
      slice("reversed_height", {1, 3, 7, 5}, {5, 1}, {1, 3}, {2, 1}, {-1, 1}, 719,
            "a negative step"),
      slice("rank1_stepped", {33}, {2}, {30}, {}, {7}, 723),
      slice_int64(),
  };
}

}  // namespace kiln::test
