// oneDNN resampling for Resize against the reference on random data: the modes where
// oneDNN's definition is ONNX's run on oneDNN, the rest on the reference (dnnl_resize.cc).
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
  bool onednn;          // expected to run on oneDNN
};

const ResizeCase kCases[] = {
    {"linear_up2", {1, 3, 5, 6}, {1, 1, 2, 2}, {}, "linear", nullptr, nullptr, true},
    // Shapes oneDNN 2.6's JIT resampling crashed on (plain, and channels-last).
    // clang-format off
    {"linear_up8_segmentation", {4, 21, 28, 28}, {}, {4, 21, 224, 224}, "linear", nullptr, nullptr, true},
    {"linear_up8_16_channels", {4, 16, 28, 28}, {}, {4, 16, 224, 224}, "linear", nullptr, nullptr, true},
    // clang-format on
    {"linear_fractional", {2, 2, 4, 10}, {1, 1, 1.25f, 0.5f}, {}, "linear", nullptr, nullptr, true},
    {"linear_down", {1, 4, 10, 8}, {1, 1, 0.5f, 0.75f}, {}, "linear", nullptr, nullptr, true},
    {"linear_sizes", {1, 2, 6, 6}, {}, {1, 2, 9, 4}, "linear", nullptr, nullptr, true},
    {"linear_pytorch",
     {1, 3, 4, 5},
     {1, 1, 2, 3},
     {},
     "linear",
     "pytorch_half_pixel",
     nullptr,
     true},
    {"linear_1d", {2, 3, 8}, {1, 1, 2.5f}, {}, "linear", nullptr, nullptr, true},
    {"linear_3d", {1, 2, 3, 4, 5}, {1, 1, 2, 1.5f, 0.8f}, {}, "linear", nullptr, nullptr, true},
    {"nearest_up2", {2, 8, 5, 5}, {1, 1, 2, 2}, {}, "nearest", nullptr, nullptr, true},
    {"nearest_up3_ceil",
     {1, 3, 4, 5},
     {1, 1, 3, 2},
     {},
     "nearest",
     nullptr,
     "round_prefer_ceil",
     true},
    {"nearest_asym_floor", {1, 4, 6, 6}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor", true},
    {"nearest_sizes_whole", {1, 2, 3, 4}, {}, {1, 2, 6, 12}, "nearest", nullptr, nullptr, true},
    // Not oneDNN's definition: the reference kernel runs.
    {"linear_input_times_scale_fractional",
     {2, 2, 5, 7},
     {1, 1, 1.5f, 1.3f},
     {},
     "linear",
     nullptr,
     nullptr,
     false},
    {"nearest_down", {1, 2, 8, 8}, {1, 1, 0.5f, 0.5f}, {}, "nearest", nullptr, nullptr, false},
    {"nearest_fractional",
     {1, 2, 4, 4},
     {1, 1, 1.5f, 1.5f},
     {},
     "nearest",
     nullptr,
     nullptr,
     false},
    {"nearest_half_pixel_floor",
     {1, 2, 4, 4},
     {1, 1, 2, 2},
     {},
     "nearest",
     nullptr,
     "floor",
     false},
    {"linear_align_corners",
     {1, 2, 4, 5},
     {1, 1, 2, 2},
     {},
     "linear",
     "align_corners",
     nullptr,
     false},
    {"linear_asymmetric", {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "linear", "asymmetric", nullptr, false},
    {"resizes_channels", {1, 2, 4, 4}, {1, 2, 2, 2}, {}, "linear", nullptr, nullptr, false},
};

TEST(DnnlResize, MatchesReference) {
  uint32_t seed = 50;
  for (const ResizeCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Attributes a;
    a.set("mode", std::string(c.mode));
    if (c.coord) a.set("coordinate_transformation_mode", std::string(c.coord));
    if (c.nearest) a.set("nearest_mode", std::string(c.nearest));
    std::vector<OpInput> ins{{random_tensor(c.x, ++seed)}, {Tensor()}};
    if (!c.scales.empty()) {
      ins.push_back({Tensor::from_floats({static_cast<int64_t>(c.scales.size())}, c.scales), true});
    } else {
      ins.push_back({Tensor()});
      ins.push_back({Tensor::from_int64s({static_cast<int64_t>(c.sizes.size())}, c.sizes), true});
    }
    EXPECT_EQ(dnnl_matches_reference(OpKind::Resize, a, ins), c.onednn);
  }
}

TEST(DnnlResize, CubicIsNotClaimed) {
  Graph g;
  Attributes cubic;
  cubic.set("mode", std::string("cubic"));
  Node* n = g.add_node(OpKind::Resize, "r",
                       {f32_value(g, "x", {1, 1, 4, 4}), nullptr,
                        g.add_constant("s", Tensor::from_floats({4}, {1, 1, 2, 2}))},
                       {f32_value(g, "y", {1, 1, 8, 8})}, cubic);
  EXPECT_FALSE(onednn_backend(2).supports(*n));
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
