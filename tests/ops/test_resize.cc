// Resize reference kernel vs. an independent computation: the test resamples one axis at a
// time (separable), straight from the formulas of the ONNX spec, in double. The kernel sums
// over the product of all axes' taps at once, so the two share no code.

#include <string>

#include "core/half.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Spec {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double a = -0.75;
  bool exclude = false;
  double extrap = 0;
};

Attributes attrs_of(const Spec& s) {
  Attributes at;
  at.set("mode", s.mode);
  at.set("coordinate_transformation_mode", s.coord);
  at.set("nearest_mode", s.nearest);
  at.set("cubic_coeff_a", static_cast<float>(s.a));
  at.set("exclude_outside", int64_t{s.exclude ? 1 : 0});
  at.set("extrapolation_value", static_cast<float>(s.extrap));
  return at;
}

// x_original per the spec's coordinate_transformation_mode text. len_out is the resized
// length (input × scale, not floored, when scales are given).
double spec_coord(const Spec& s, int64_t x_out, int64_t len_in, double len_out, double scale,
                  double start, double end) {
  double x = x_out, n = len_in;
  if (s.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (s.coord == "pytorch_half_pixel") return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (s.coord == "align_corners") return len_out == 1 ? 0 : x * (n - 1) / (len_out - 1);
  if (s.coord == "asymmetric") return x / scale;
  if (s.coord == "tf_half_pixel_for_nearest") return (x + 0.5) / scale;
  // tf_crop_and_resize
  if (len_out > 1) return start * (n - 1) + x * (end - start) * (n - 1) / (len_out - 1);
  return 0.5 * (start + end) * (n - 1);
}

double keys(double s, double a) {
  s = std::fabs(s);
  if (s <= 1) return (a + 2) * s * s * s - (a + 3) * s * s + 1;
  if (s < 2) return a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
  return 0;
}

// One output element of a 1-D resample of `line`.
double sample_line(const Spec& s, const std::vector<double>& line, double x) {
  const int64_t n = static_cast<int64_t>(line.size());
  auto at = [&](int64_t i) { return line[std::clamp<int64_t>(i, 0, n - 1)]; };
  if (s.coord == "tf_crop_and_resize" && (x < 0 || x > n - 1)) return s.extrap;
  if (s.mode == "nearest") {
    double r = s.nearest == "round_prefer_floor"  ? std::ceil(x - 0.5)
               : s.nearest == "round_prefer_ceil" ? std::floor(x + 0.5)
               : s.nearest == "floor"             ? std::floor(x)
                                                  : std::ceil(x);
    return at(static_cast<int64_t>(r));
  }
  const int64_t i0 = static_cast<int64_t>(std::floor(x));
  const double t = x - std::floor(x);
  if (s.mode == "linear") return (1 - t) * at(i0) + t * at(i0 + 1);
  double sum = 0, wsum = 0;
  for (int64_t i = i0 - 1; i <= i0 + 2; ++i) {
    double w = keys(x - i, s.a);
    if (s.exclude && (i < 0 || i >= n)) w = 0;
    sum += w * at(i);
    wsum += w;
  }
  return s.exclude ? sum / wsum : sum;
}

// Resizes `data` (shape `shape`) to `out_shape`, one axis after the other.
std::vector<double> expected_resize(const Spec& s, Shape shape, std::vector<double> data,
                                    const Shape& out_shape, const std::vector<double>& scale,
                                    const std::vector<double>& len_out,
                                    const std::vector<double>& roi) {
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < rank; ++k) inner *= shape[k];
    const int64_t n_in = shape[d], n_out = out_shape[d];
    std::vector<double> next(static_cast<size_t>(outer * n_out * inner));
    const double start = roi.empty() ? 0 : roi[d], end = roi.empty() ? 1 : roi[rank + d];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<double> line(n_in);
        for (int64_t k = 0; k < n_in; ++k) line[k] = data[(o * n_in + k) * inner + i];
        for (int64_t k = 0; k < n_out; ++k) {
          double x = spec_coord(s, k, n_in, len_out[d], scale[d], start, end);
          next[(o * n_out + k) * inner + i] = sample_line(s, line, x);
        }
      }
    }
    data = std::move(next);
    shape[d] = n_out;
  }
  return data;
}

std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.at_double(i);
  return v;
}

Tensor floats_tensor(const Shape& shape, const std::vector<double>& v) {
  return Tensor::from_floats(shape, std::vector<float>(v.begin(), v.end()));
}

// Runs Resize on float32 x with scales (when `sizes` is empty) or sizes, and checks against
// expected_resize.
void check_resize(const Spec& s, const Tensor& x, const std::vector<float>& scales,
                  const std::vector<int64_t>& sizes, const std::vector<float>& roi = {}) {
  const size_t rank = x.shape().size();
  Shape out_shape(rank);
  std::vector<double> scale(rank), len_out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (sizes.empty()) {
      scale[d] = scales[d];
      len_out[d] = x.shape()[d] * scale[d];
      out_shape[d] = static_cast<int64_t>(std::floor(len_out[d]));
    } else {
      out_shape[d] = sizes[d];
      len_out[d] = static_cast<double>(sizes[d]);
      scale[d] = len_out[d] / x.shape()[d];
    }
  }
  Tensor roi_t = Tensor::from_floats({static_cast<int64_t>(roi.size())}, roi);
  Tensor scales_t = Tensor::from_floats({static_cast<int64_t>(scales.size())}, scales);
  Tensor sizes_t = Tensor::from_int64s({static_cast<int64_t>(sizes.size())}, sizes);
  auto out = run_op(OpKind::Resize, attrs_of(s),
                    {&x, roi.empty() ? nullptr : &roi_t, sizes.empty() ? &scales_t : nullptr,
                     sizes.empty() ? nullptr : &sizes_t});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<double> roi_d(roi.begin(), roi.end());
  Tensor want = floats_tensor(
      out_shape, expected_resize(s, x.shape(), doubles_of(x), out_shape, scale, len_out, roi_d));
  expect_near((*out)[0], want, 1e-5, 1e-5);
}

// Shapes × scales/sizes used for every mode: 2-D upsampling and downsampling of NCHW
// (fractional and integral), sizes up and down, and N-d (3 resized axes, resized batch).
struct Geometry {
  Shape shape;
  std::vector<float> scales;
  std::vector<int64_t> sizes;
};
const std::vector<Geometry> kGeometries = {
    {{1, 2, 4, 5}, {1, 1, 2, 2}, {}},
    {{2, 1, 3, 4}, {1, 1, 1.5f, 3}, {}},
    {{1, 2, 6, 8}, {1, 1, 0.5f, 0.5f}, {}},
    {{1, 1, 5, 7}, {1, 1, 0.6f, 0.8f}, {}},
    {{1, 3, 4, 4}, {}, {1, 3, 7, 9}},
    {{1, 1, 8, 6}, {}, {1, 1, 3, 1}},
    {{1, 1, 3, 4, 5}, {1, 1, 2, 0.5f, 1.4f}, {}},
    {{3, 4, 5}, {}, {5, 2, 8}},
    {{7}, {2.5f}, {}},
};

TEST(Resize, NearestAllCoordinateAndRoundingModes) {
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_half_pixel_for_nearest"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      for (size_t g = 0; g < kGeometries.size(); ++g) {
        SCOPED_TRACE(std::string(coord) + " " + nearest + " geometry " + std::to_string(g));
        Spec s{"nearest", coord, nearest};
        check_resize(s, random_tensor(kGeometries[g].shape, 11 + g), kGeometries[g].scales,
                     kGeometries[g].sizes);
      }
    }
  }
}

TEST(Resize, LinearAllCoordinateModes) {
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    for (size_t g = 0; g < kGeometries.size(); ++g) {
      SCOPED_TRACE(std::string(coord) + " geometry " + std::to_string(g));
      check_resize(Spec{"linear", coord}, random_tensor(kGeometries[g].shape, 23 + g),
                   kGeometries[g].scales, kGeometries[g].sizes);
    }
  }
}

TEST(Resize, CubicCoordinateModesCoefficientAndExcludeOutside) {
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    for (double a : {-0.75, -0.5}) {
      for (bool exclude : {false, true}) {
        for (size_t g = 0; g < kGeometries.size(); ++g) {
          SCOPED_TRACE(std::string(coord) + " A=" + std::to_string(a) +
                       " exclude=" + std::to_string(exclude) + " geometry " + std::to_string(g));
          Spec s{"cubic", coord, "round_prefer_floor", a, exclude};
          check_resize(s, random_tensor(kGeometries[g].shape, 37 + g), kGeometries[g].scales,
                       kGeometries[g].sizes);
        }
      }
    }
  }
}

TEST(Resize, TfCropAndResizeWithExtrapolation) {
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    Spec s{mode, "tf_crop_and_resize"};
    s.extrap = 7.5;
    Tensor x = random_tensor({1, 2, 6, 5}, 5);
    // Inside the input, partly outside, and a single-row output (the centre formula).
    check_resize(s, x, {}, {1, 2, 4, 3}, {0, 0, 0.2f, 0.1f, 1, 1, 0.7f, 0.9f});
    check_resize(s, x, {}, {1, 2, 5, 5}, {0, 0, -0.3f, 0.4f, 1, 1, 0.8f, 1.6f});
    check_resize(s, x, {}, {1, 2, 1, 4}, {0, 0, 0.1f, 0, 1, 1, 0.5f, 1});
    check_resize(s, x, {1, 1, 1.5f, 0.8f}, {}, {0, 0, 0.25f, 0.25f, 1, 1, 0.75f, 0.75f});
  }
}

// Hand-computed examples (values from the ONNX operator documentation).
TEST(Resize, HandComputedExamples) {
  Tensor x22 = Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor s23 = Tensor::from_floats({4}, {1, 1, 2, 3});
  auto near = run_op(OpKind::Resize, {}, {&x22, nullptr, &s23});
  ASSERT_TRUE(near.is_ok()) << near.status().to_string();
  expect_near((*near)[0], Tensor::from_floats({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}),
              0);

  Tensor s22 = Tensor::from_floats({4}, {1, 1, 2, 2});
  auto lin = run_op(OpKind::Resize, attrs_of({"linear"}), {&x22, nullptr, &s22});
  ASSERT_TRUE(lin.is_ok()) << lin.status().to_string();
  expect_near((*lin)[0],
              Tensor::from_floats({1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5,  //
                                                 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}),
              1e-6);

  auto ac = run_op(OpKind::Resize, attrs_of({"linear", "align_corners"}), {&x22, nullptr, &s22});
  ASSERT_TRUE(ac.is_ok()) << ac.status().to_string();
  const float t = 1.f / 3, u = 2.f / 3;
  expect_near((*ac)[0],
              Tensor::from_floats({1, 1, 4, 4}, {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u,  //
                                                 2 + t, 2 + u, 3, 3 + t, 3, 3 + t, 3 + u, 4}),
              1e-6);

  // Downsampling 2x4 by 0.6 (half_pixel): the 1x2 output samples (y, x) = (1/3, 1/3), (1/3, 2).
  Tensor x24 = Tensor::from_floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor s06 = Tensor::from_floats({4}, {1, 1, 0.6f, 0.6f});
  auto down = run_op(OpKind::Resize, attrs_of({"linear"}), {&x24, nullptr, &s06});
  ASSERT_TRUE(down.is_ok()) << down.status().to_string();
  expect_near((*down)[0], Tensor::from_floats({1, 1, 1, 2}, {2.6666665f, 4.3333331f}), 1e-5);
}

TEST(Resize, NearestOnIntegerTypesAndLinearOnFloat64) {
  Tensor x = random_tensor({2, 3, 5}, 3, 0, 250);
  Tensor xu8(DataType::kUInt8, x.shape()), xi32(DataType::kInt32, x.shape());
  Tensor xf64(DataType::kFloat64, x.shape()), xf16(DataType::kFloat16, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    xu8.data<uint8_t>()[i] = static_cast<uint8_t>(x.data<float>()[i]);
    xi32.data<int32_t>()[i] = static_cast<int32_t>(x.data<float>()[i]) - 125;
    xf64.data<double>()[i] = x.data<float>()[i] / 250.0;
    xf16.data<Half>()[i] = Half(x.data<float>()[i] / 250.f);
  }
  Tensor sizes = Tensor::from_int64s({3}, {3, 7, 4});
  const Shape out_shape{3, 7, 4};
  const std::vector<double> scale{1.5, 7.0 / 3, 0.8}, len{3, 7, 4};
  for (const Tensor* t : {&xu8, &xi32, &xf64, &xf16}) {
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      if (!dtype_is_float(t->dtype()) && std::string(mode) != "nearest") continue;
      SCOPED_TRACE(std::string(dtype_name(t->dtype())) + " " + mode);
      Spec s{mode};
      auto out = run_op(OpKind::Resize, attrs_of(s), {t, nullptr, nullptr, &sizes});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      auto want = expected_resize(s, t->shape(), doubles_of(*t), out_shape, scale, len, {});
      ASSERT_EQ((*out)[0].dtype(), t->dtype());
      const double tol = t->dtype() == DataType::kFloat16 ? 2e-3 : 1e-12;
      for (int64_t i = 0; i < (*out)[0].numel(); ++i)
        EXPECT_NEAR((*out)[0].at_double(i), want[i], tol) << "element " << i;
    }
  }
}

TEST(Resize, EmptyOptionalInputsMeanNotGiven) {
  Tensor x = random_tensor({1, 1, 3, 3}, 9);
  Tensor empty_f = Tensor::from_floats({0}, {});
  Tensor sizes = Tensor::from_int64s({4}, {1, 1, 5, 2});
  Tensor scales = Tensor::from_floats({4}, {1, 1, 1.7f, 0.7f});
  auto a = run_op(OpKind::Resize, attrs_of({"linear"}), {&x, &empty_f, &empty_f, &sizes});
  auto b = run_op(OpKind::Resize, attrs_of({"linear"}), {&x, nullptr, nullptr, &sizes});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ((*a)[0].shape(), (Shape{1, 1, 5, 2}));
  expect_near((*a)[0], (*b)[0], 0);
  Tensor empty_i = Tensor::from_int64s({0}, {});
  auto c = run_op(OpKind::Resize, {}, {&x, nullptr, &scales, &empty_i});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ((*c)[0].shape(), (Shape{1, 1, 5, 2}));  // floor(3 × 1.7), floor(3 × 0.7)
}

TEST(Resize, ErrorsNameTheProblem) {
  Tensor x = random_tensor({1, 1, 4, 4}, 2);
  Tensor scales = Tensor::from_floats({4}, {1, 1, 2, 2});
  Tensor scales3 = Tensor::from_floats({3}, {1, 2, 2});
  Tensor bad_scale = Tensor::from_floats({4}, {1, 1, 0, 2});
  Tensor sizes = Tensor::from_int64s({4}, {1, 1, 8, 8});
  Tensor sizes2 = Tensor::from_int64s({2}, {8, 8});
  Tensor roi3 = Tensor::from_floats({3}, {0, 0, 1});
  Tensor xi = Tensor::from_int64s({1, 4}, {1, 2, 3, 4});
  Tensor si = Tensor::from_floats({2}, {1, 2});
  Attributes antialias = attrs_of({"linear"});
  antialias.set("antialias", int64_t{1});
  Attributes bad_mode;
  bad_mode.set("mode", std::string("bilinear"));
  Attributes bad_coord;
  bad_coord.set("coordinate_transformation_mode", std::string("corners"));
  struct Case {
    const char* what;
    Attributes attrs;
    std::vector<const Tensor*> in;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"both", {}, {&x, nullptr, &scales, &sizes}, "both scales and sizes"},
      {"neither", {}, {&x, nullptr, nullptr, nullptr}, "neither scales nor sizes"},
      {"scales length", {}, {&x, nullptr, &scales3}, "scales has 3 elements, expected 4"},
      {"sizes length", {}, {&x, nullptr, nullptr, &sizes2}, "sizes has 2 elements, expected 4"},
      {"zero scale", {}, {&x, nullptr, &bad_scale}, "scales[2]"},
      {"roi length",
       attrs_of({"linear", "tf_crop_and_resize"}),
       {&x, &roi3, nullptr, &sizes},
       "roi has 3 elements, expected 8"},
      {"linear int64", attrs_of({"linear"}), {&xi, nullptr, &si}, "linear Resize of int64"},
      {"antialias", antialias, {&x, nullptr, &scales}, "antialias"},
      {"mode", bad_mode, {&x, nullptr, &scales}, "unknown mode 'bilinear'"},
      {"coord", bad_coord, {&x, nullptr, &scales}, "coordinate_transformation_mode 'corners'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto out = run_op(OpKind::Resize, c.attrs, c.in);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find(c.message), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("test_node"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::test
