// The CPU backend's Resize against the reference on random data (dnnl_resize.cc): every mode,
// coordinate transform and rounding rule, scales and sizes, up and down, ranks 3 to 5, the
// shapes oneDNN's JIT resampling crashed on, and computed sizes. Only a resized batch or
// channel axis (or a resized axis before the last two) runs on the reference kernel.
#include "backends/dnnl_op_test.h"

namespace kiln::test {
namespace {

struct ResizeCase {
  const char* name;
  Shape x;
  std::vector<float> scales;   // empty: sizes given
  std::vector<int64_t> sizes;  // used when scales is empty
  const char* mode;
  const char* coord;    // nullptr: default (half_pixel)
  const char* nearest;  // nullptr: default (round_prefer_floor)
  bool fast;            // expected to run on the backend's kernel, not the reference
  std::vector<float> roi = {};
  bool exclude_outside = false;
};

// clang-format off
const ResizeCase kCases[] = {
    {"linear_up2", {1, 3, 5, 6}, {1, 1, 2, 2}, {}, "linear", nullptr, nullptr, true},
    {"linear_up8_segmentation", {4, 21, 28, 28}, {}, {4, 21, 224, 224}, "linear", nullptr, nullptr, true},
    {"linear_up8_16_channels", {4, 16, 28, 28}, {}, {4, 16, 224, 224}, "linear", nullptr, nullptr, true},
    {"linear_fractional", {2, 2, 5, 7}, {1, 1, 1.5f, 1.3f}, {}, "linear", nullptr, nullptr, true},
    {"linear_down", {1, 4, 9, 8}, {1, 1, 0.5f, 0.75f}, {}, "linear", nullptr, nullptr, true},
    {"linear_sizes", {1, 2, 6, 6}, {}, {1, 2, 9, 4}, "linear", nullptr, nullptr, true},
    {"linear_pytorch", {1, 3, 4, 5}, {1, 1, 2, 3}, {}, "linear", "pytorch_half_pixel", nullptr, true},
    {"linear_pytorch_to_1", {1, 3, 4, 5}, {}, {1, 3, 1, 7}, "linear", "pytorch_half_pixel", nullptr, true},
    {"linear_align_corners", {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "linear", "align_corners", nullptr, true},
    {"linear_asymmetric", {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "linear", "asymmetric", nullptr, true},
    {"linear_rank3", {2, 3, 8}, {1, 1, 2.5f}, {}, "linear", nullptr, nullptr, true},
    {"linear_rank5_last_two", {1, 2, 3, 4, 5}, {1, 1, 1, 1.5f, 0.8f}, {}, "linear", nullptr, nullptr, true},
    {"cubic", {1, 2, 6, 7}, {1, 1, 2, 1.5f}, {}, "cubic", nullptr, nullptr, true},
    {"cubic_exclude_outside", {1, 2, 6, 7}, {1, 1, 0.6f, 1.7f}, {}, "cubic", nullptr, nullptr, true, {}, true},
    {"crop_and_resize", {1, 2, 8, 8}, {}, {1, 2, 5, 6}, "linear", "tf_crop_and_resize", nullptr, true,
     {0, 0, 0.2f, -0.1f, 1, 1, 0.9f, 1.2f}},
    {"nearest_up2", {2, 8, 5, 5}, {1, 1, 2, 2}, {}, "nearest", nullptr, nullptr, true},
    {"nearest_up3_ceil", {1, 3, 4, 5}, {1, 1, 3, 2}, {}, "nearest", nullptr, "round_prefer_ceil", true},
    {"nearest_asym_floor", {1, 4, 6, 6}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor", true},
    {"nearest_down", {1, 2, 8, 8}, {1, 1, 0.5f, 0.5f}, {}, "nearest", nullptr, nullptr, true},
    {"nearest_fractional_ceil", {1, 2, 4, 4}, {1, 1, 1.5f, 1.5f}, {}, "nearest", nullptr, "ceil", true},
    {"nearest_tf_half_pixel", {1, 2, 4, 5}, {1, 1, 1.7f, 2}, {}, "nearest", "tf_half_pixel_for_nearest", nullptr, true},
    // Resized axes before the last two: the reference kernel runs.
    {"resizes_channels", {1, 2, 4, 4}, {1, 2, 2, 2}, {}, "linear", nullptr, nullptr, false},
    {"rank5_resizes_depth", {1, 2, 3, 4, 5}, {1, 1, 2, 1, 1}, {}, "linear", nullptr, nullptr, false},
};
// clang-format on

TEST(DnnlResize, MatchesReference) {
  uint32_t seed = 50;
  for (const ResizeCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Attributes a;
    a.set("mode", std::string(c.mode));
    if (c.coord) a.set("coordinate_transformation_mode", std::string(c.coord));
    if (c.nearest) a.set("nearest_mode", std::string(c.nearest));
    if (c.exclude_outside) a.set("exclude_outside", int64_t{1});
    if (c.roi.empty()) {
      std::vector<OpInput> ins{{random_tensor(c.x, ++seed)}, {Tensor()}};
      if (!c.scales.empty()) {
        ins.push_back(
            {Tensor::from_floats({static_cast<int64_t>(c.scales.size())}, c.scales), true});
      } else {
        ins.push_back({Tensor()});
        ins.push_back({Tensor::from_int64s({static_cast<int64_t>(c.sizes.size())}, c.sizes), true});
      }
      EXPECT_EQ(dnnl_matches_reference(OpKind::Resize, a, ins), c.fast);
    } else {
      a.set("extrapolation_value", 0.5f);
      std::vector<OpInput> ins{
          {random_tensor(c.x, ++seed)},
          {Tensor::from_floats({static_cast<int64_t>(c.roi.size())}, c.roi), true},
          {Tensor()},
          {Tensor::from_int64s({static_cast<int64_t>(c.sizes.size())}, c.sizes), true}};
      EXPECT_EQ(dnnl_matches_reference(OpKind::Resize, a, ins), c.fast);
    }
  }
}

// Sizes computed in the graph (segmentation exports take them from a Shape): read when the
// kernel is prepared, and a new value with the same input shape prepares it again.
TEST(DnnlResize, ComputedSizesFollowTheirValues) {
  Graph g;
  Attributes a;
  a.set("mode", std::string("linear"));
  Value* sizes = g.add_value("sizes");
  sizes->dtype = DataType::kInt64;
  Value* y = g.add_value("y");
  y->dtype = DataType::kFloat32;
  Node* n = g.add_node(OpKind::Resize, "r",
                       {f32_value(g, "x", {1, 3, 5, 6}), nullptr, nullptr, sizes}, {y}, a);
  ASSERT_TRUE(onednn_backend(2).supports(*n));
  auto kernel = onednn_backend(2).create_kernel(*n);
  ASSERT_TRUE(kernel.is_ok());
  const Tensor x = random_tensor({1, 3, 5, 6}, 17);
  for (std::vector<int64_t> s :
       {std::vector<int64_t>{1, 3, 10, 12}, {1, 3, 7, 4}, {1, 3, 10, 12}}) {
    SCOPED_TRACE(shape_str(s));
    const Tensor st = Tensor::from_int64s({4}, s);
    auto got = prepare_and_run(**kernel, {&x, nullptr, nullptr, &st});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->shape(), Shape(s.begin(), s.end()));
    EXPECT_FALSE(static_cast<dnnl_cpu::DnnlKernel&>(**kernel).uses_reference());
    auto want = run_backend(reference_backend(), *n, {&x, nullptr, nullptr, &st});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    expect_near(*got, (*want)[0], 1e-6, 1e-5);
  }
}

}  // namespace
}  // namespace kiln::test
