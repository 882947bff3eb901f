// Resize CUDA kernel against the reference: nearest (every nearest_mode), linear and cubic,
// every coordinate transformation, scales or sizes, up- and downsampling by odd factors,
// both layouts offered, fp32 and fp16; the cases left to the CPU.

#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

struct ResizeSpec {
  std::string mode, coord, nearest = "round_prefer_floor";
  bool exclude_outside = false;
};

Attributes resize_attrs(const ResizeSpec& s) {
  Attributes a;
  a.set("mode", s.mode);
  a.set("coordinate_transformation_mode", s.coord);
  a.set("nearest_mode", s.nearest);
  a.set("exclude_outside", int64_t{s.exclude_outside ? 1 : 0});
  a.set("extrapolation_value", 0.25f);
  return a;
}

Tensor floats(const std::vector<float>& v) { return Tensor::from_floats({int64_t(v.size())}, v); }

Tensor int64s(const std::vector<int64_t>& v) {
  Tensor t(DataType::kInt64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Resize node with X (activation) and either scales or sizes (constants); roi given for
// tf_crop_and_resize.
struct ResizeGraph {
  Graph g;
  Node* node = nullptr;
  Tensor roi, scales, sizes;
};

std::unique_ptr<ResizeGraph> resize_node(const Shape& x, const ResizeSpec& s,
                                         const std::vector<float>& scales,
                                         const std::vector<int64_t>& sizes) {
  auto r = std::make_unique<ResizeGraph>();
  Value* xv = f32_value(r->g, "x", x);
  Value* roi = nullptr;
  if (s.coord == "tf_crop_and_resize") {
    r->roi = floats({0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 0.7f});
    roi = r->g.add_constant("roi", r->roi);
  }
  Value *sc = nullptr, *sz = nullptr;
  if (!scales.empty()) {
    r->scales = floats(scales);
    sc = r->g.add_constant("scales", r->scales);
  } else {
    r->sizes = int64s(sizes);
    sz = r->g.add_constant("sizes", r->sizes);
  }
  r->node = r->g.add_node(OpKind::Resize, "test_node", {xv, roi, sc, sz}, {r->g.add_value("y")},
                          resize_attrs(s));
  return r;
}

void expect_resize(const Shape& x_shape, const ResizeSpec& s, const std::vector<float>& scales,
                   const std::vector<int64_t>& sizes, uint32_t seed) {
  auto r = resize_node(x_shape, s, scales, sizes);
  Tensor x = random_tensor(x_shape, seed, -2.f, 2.f);
  SCOPED_TRACE(s.mode + " " + s.coord + " " + s.nearest + " " + shape_str(x_shape));
  expect_all_match(*r->node, {&x, r->roi.defined() ? &r->roi : nullptr,
                              r->scales.defined() ? &r->scales : nullptr,
                              r->sizes.defined() ? &r->sizes : nullptr});
}

const char* const kCoords[] = {"half_pixel", "pytorch_half_pixel",        "align_corners",
                               "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"};

TEST(CudaResizeKernel, NearestMatchesReference) {
  uint32_t seed = 1;
  for (const char* coord : kCoords)
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      ResizeSpec s{"nearest", coord, nearest};
      // tf_half_pixel_for_nearest maps N and C to o + 0.5: rounding up moves them (below).
      if (s.coord == "tf_half_pixel_for_nearest" &&
          (s.nearest == "ceil" || s.nearest == "round_prefer_ceil"))
        continue;
      expect_resize({1, 3, 7, 5}, s, {1, 1, 2, 3}, {}, seed++);
      expect_resize({2, 17, 9, 11}, s, {}, {2, 17, 5, 4}, seed++);
    }
  expect_resize({2, 16, 10, 10}, {"nearest", "asymmetric", "floor"}, {1, 1, 2, 2}, {}, seed++);
}

TEST(CudaResizeKernel, LinearAndCubicMatchReference) {
  uint32_t seed = 100;
  for (const char* mode : {"linear", "cubic"})
    for (const char* coord : kCoords)
      for (bool exclude : {false, true}) {
        ResizeSpec s{mode, coord, "round_prefer_floor", exclude};
        if (s.coord == "tf_half_pixel_for_nearest") continue;  // blends N and C (below)
        expect_resize({1, 3, 7, 5}, s, {1, 1, 2.5f, 1.5f}, {}, seed++);
        expect_resize({2, 17, 9, 11}, s, {}, {2, 17, 4, 13}, seed++);
        expect_resize({1, 8, 6, 6}, s, {1, 1, 0.5f, 0.75f}, {}, seed++);
      }
  expect_resize({2, 64, 28, 28}, {"linear", "half_pixel"}, {1, 1, 2, 2}, {}, seed++);
}

TEST(CudaResizeKernel, UnsupportedCases) {
  {  // integer data
    auto r = resize_node({1, 3, 4, 4}, {"nearest", "asymmetric"}, {1, 1, 2, 2}, {});
    r->node->inputs[0]->dtype = DataType::kInt64;
    expect_factory_unsupported(*r->node);
  }
  {  // rank 3
    auto r = resize_node({1, 3, 4}, {"linear", "half_pixel"}, {1, 1, 2}, {});
    expect_factory_unsupported(*r->node);
  }
  {  // scales computed at run time
    Graph g;
    Value* x = f32_value(g, "x", {1, 3, 4, 4});
    Value* sc = f32_value(g, "scales", {4});
    Node* n = g.add_node(OpKind::Resize, "r", {x, nullptr, sc}, {g.add_value("y")},
                         resize_attrs({"nearest", "asymmetric"}));
    expect_factory_unsupported(*n);
  }
  for (ResizeSpec s : {ResizeSpec{"nearest", "tf_half_pixel_for_nearest", "ceil"},
                       ResizeSpec{"linear", "tf_half_pixel_for_nearest"}}) {
    // N and C read from o + 0.5: data moves across channels; left to the CPU
    auto r = resize_node({1, 3, 4, 4}, s, {1, 1, 2, 2}, {});
    Tensor x = random_tensor({1, 3, 4, 4}, 9);
    auto got = run_cuda_node(*r->node, {&x, nullptr, &r->scales, nullptr}, Precision::kFp32);
    ASSERT_FALSE(got.is_ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnsupported);
  }
  {  // resizing channels: left to the CPU
    auto r = resize_node({1, 3, 4, 4}, {"nearest", "asymmetric"}, {1, 2, 2, 2}, {});
    Tensor x = random_tensor({1, 3, 4, 4}, 9);
    auto got = run_cuda_node(*r->node, {&x, nullptr, &r->scales, nullptr}, Precision::kFp32);
    ASSERT_FALSE(got.is_ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnsupported);
  }
}

}  // namespace
}  // namespace kiln::test
