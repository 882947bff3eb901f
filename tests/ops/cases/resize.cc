// Resize: every mode, coordinate transformation and rounding rule, scales and sizes, up and
// down, ranks 3 to 5, the shapes oneDNN's JIT resampling once crashed on, FPN's nearest ×2 and
// ×8; a resized batch or channel axis (or one before the last two), which oneDNN leaves to the
// reference kernel.
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Spec {
  const char* name;
  Shape x;
  std::vector<float> scales;   // empty: sizes given
  std::vector<int64_t> sizes;  // used when scales is empty
  const char* mode;
  const char* coord;    // nullptr: default (half_pixel)
  const char* nearest;  // nullptr: default (round_prefer_floor)
  const char* onednn_reference;
  std::vector<float> roi = {};
  bool exclude_outside = false;
};

constexpr const char* kOuterAxes = "a resized axis before the last two";

// clang-format off
const Spec kSpecs[] = {
    {"linear_up2", {1, 3, 5, 6}, {1, 1, 2, 2}, {}, "linear", nullptr, nullptr, nullptr},
    {"linear_up8_segmentation", {4, 21, 28, 28}, {}, {4, 21, 224, 224}, "linear", nullptr, nullptr, nullptr},
    {"linear_up8_16_channels", {4, 16, 28, 28}, {}, {4, 16, 224, 224}, "linear", nullptr, nullptr, nullptr},
    {"linear_fractional", {2, 2, 5, 7}, {1, 1, 1.5f, 1.3f}, {}, "linear", nullptr, nullptr, nullptr},
    {"linear_down", {1, 4, 9, 8}, {1, 1, 0.5f, 0.75f}, {}, "linear", nullptr, nullptr, nullptr},
    {"linear_sizes", {1, 2, 6, 6}, {}, {1, 2, 9, 4}, "linear", nullptr, nullptr, nullptr},
    {"linear_pytorch", {1, 3, 4, 5}, {1, 1, 2, 3}, {}, "linear", "pytorch_half_pixel", nullptr, nullptr},
    {"linear_pytorch_to_1", {1, 3, 4, 5}, {}, {1, 3, 1, 7}, "linear", "pytorch_half_pixel", nullptr, nullptr},
    {"linear_align_corners", {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "linear", "align_corners", nullptr, nullptr},
    {"linear_asymmetric", {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "linear", "asymmetric", nullptr, nullptr},
    {"linear_rank3", {2, 3, 8}, {1, 1, 2.5f}, {}, "linear", nullptr, nullptr, nullptr},
    {"linear_rank5_last_two", {1, 2, 3, 4, 5}, {1, 1, 1, 1.5f, 0.8f}, {}, "linear", nullptr, nullptr, nullptr},
    {"cubic", {1, 2, 6, 7}, {1, 1, 2, 1.5f}, {}, "cubic", nullptr, nullptr, nullptr},
    {"cubic_exclude_outside", {1, 2, 6, 7}, {1, 1, 0.6f, 1.7f}, {}, "cubic", nullptr, nullptr, nullptr, {}, true},
    {"crop_and_resize", {1, 2, 8, 8}, {}, {1, 2, 5, 6}, "linear", "tf_crop_and_resize", nullptr, nullptr,
     {0, 0, 0.2f, -0.1f, 1, 1, 0.9f, 1.2f}},
    {"nearest_up2", {2, 8, 5, 5}, {1, 1, 2, 2}, {}, "nearest", nullptr, nullptr, nullptr},
    {"nearest_up3_ceil", {1, 3, 4, 5}, {1, 1, 3, 2}, {}, "nearest", nullptr, "round_prefer_ceil", nullptr},
    {"nearest_asym_floor", {1, 4, 6, 6}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor", nullptr},
    {"nearest_down", {1, 2, 8, 8}, {1, 1, 0.5f, 0.5f}, {}, "nearest", nullptr, nullptr, nullptr},
    {"nearest_fractional_ceil", {1, 2, 4, 4}, {1, 1, 1.5f, 1.5f}, {}, "nearest", nullptr, "ceil", nullptr},
    {"nearest_sizes_floor", {1, 3, 7, 5}, {}, {1, 3, 11, 4}, "nearest", nullptr, "floor", nullptr},
    {"nearest_tf_half_pixel", {1, 2, 4, 5}, {1, 1, 1.7f, 2}, {}, "nearest", "tf_half_pixel_for_nearest", nullptr, nullptr},
    {"fpn_nearest_x2", {2, 24, 7, 9}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor", nullptr},
    {"fpn_nearest_x8", {1, 16, 4, 5}, {1, 1, 8, 8}, {}, "nearest", "asymmetric", "floor", nullptr},
    {"resizes_channels", {1, 2, 4, 4}, {1, 2, 2, 2}, {}, "linear", nullptr, nullptr, kOuterAxes},
    {"rank5_resizes_depth", {1, 2, 3, 4, 5}, {1, 1, 2, 1, 1}, {}, "linear", nullptr, nullptr, kOuterAxes},
};
// clang-format on

}  // namespace

KILN_OP_CASES(resize) {
  std::vector<OpCase> r;
  uint32_t seed = 1000;
  for (const Spec& s : kSpecs) {
    OpCase c;
    c.name = s.name;
    c.op = OpKind::Resize;
    c.onednn_reference = s.onednn_reference;
    c.attrs.set("mode", std::string(s.mode));
    if (s.coord) c.attrs.set("coordinate_transformation_mode", std::string(s.coord));
    if (s.nearest) c.attrs.set("nearest_mode", std::string(s.nearest));
    if (s.exclude_outside) c.attrs.set("exclude_outside", int64_t{1});
    c.inputs.push_back({random_tensor(s.x, seed++, -2.f, 2.f)});
    if (s.roi.empty()) {
      c.inputs.push_back({});
    } else {
      c.attrs.set("extrapolation_value", 0.5f);
      c.inputs.push_back({Tensor::from_floats({static_cast<int64_t>(s.roi.size())}, s.roi), true});
    }
    if (!s.scales.empty()) {
      c.inputs.push_back(
          {Tensor::from_floats({static_cast<int64_t>(s.scales.size())}, s.scales), true});
    } else {
      c.inputs.push_back({});
      c.inputs.push_back({int64s(s.sizes), true});
    }
    r.push_back(std::move(c));
  }
  return r;
}

}  // namespace kiln::test
