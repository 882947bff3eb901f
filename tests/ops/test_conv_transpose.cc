// ConvTranspose reference kernel against a test-side scatter: every input element adds
// x · w to each output position it reaches. Output shapes and pads are computed by hand.
#include <string>

#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct ConvTransposeCase {
  const char* name;
  Shape x, w;
  bool bias;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads, output_padding, output_shape;
  const char* auto_pad;                 // nullptr: attribute absent
  Shape want_shape;                     // by hand
  std::vector<int64_t> want_pad_begin;  // by hand
};

// gtest prints a failing case by name, not as bytes.
void PrintTo(const ConvTransposeCase& c, std::ostream* os) { *os << c.name; }

Attributes make_attrs(const ConvTransposeCase& c) {
  Attributes a;
  if (c.group != 1) a.set("group", c.group);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!c.output_padding.empty()) a.set("output_padding", c.output_padding);
  if (!c.output_shape.empty()) a.set("output_shape", c.output_shape);
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  return a;
}

// For every x[n, g·Cg + c, i...] and w[g·Cg + c, m, k...]:
//   y[n, g·Mg + m, i·s − p + k·d] += x · w   (positions outside Y dropped)
Tensor naive_conv_transpose(const ConvTransposeCase& c, const Tensor& x, const Tensor& w,
                            const Tensor* b) {
  const int64_t rank = static_cast<int64_t>(c.x.size()) - 2;
  auto at = [&](const std::vector<int64_t>& v, int64_t i) { return v.empty() ? 1 : v[i]; };
  const Shape& ys = c.want_shape;
  std::vector<double> acc(shape_numel(ys), 0.0);
  const int64_t cin = c.x[1], cg = cin / c.group, mg = c.w[1];
  int64_t in_plane = 1, k_size = 1;
  for (int64_t i = 0; i < rank; ++i) {
    in_plane *= c.x[2 + i];
    k_size *= c.w[2 + i];
  }
  std::vector<int64_t> pos(rank), k(rank);
  for (int64_t xf = 0; xf < x.numel(); ++xf) {
    const int64_t ic = (xf / in_plane) % cin, n = xf / in_plane / cin;
    for (int64_t m = 0; m < mg; ++m) {
      const int64_t oc = (ic / cg) * mg + m;
      for (int64_t kf = 0; kf < k_size; ++kf) {
        int64_t xr = xf % in_plane, kr = kf, yoff = 0;
        bool inside = true;
        for (int64_t i = rank - 1; i >= 0; --i) {
          const int64_t xi = xr % c.x[2 + i];
          xr /= c.x[2 + i];
          k[i] = kr % c.w[2 + i];
          kr /= c.w[2 + i];
          pos[i] = xi * at(c.strides, i) - c.want_pad_begin[i] + k[i] * at(c.dilations, i);
          inside = inside && pos[i] >= 0 && pos[i] < ys[2 + i];
        }
        if (!inside) continue;
        yoff = n * ys[1] + oc;
        for (int64_t i = 0; i < rank; ++i) yoff = yoff * ys[2 + i] + pos[i];
        acc[yoff] +=
            static_cast<double>(x.data<float>()[xf]) * w.data<float>()[(ic * mg + m) * k_size + kf];
      }
    }
  }
  Tensor y(DataType::kFloat32, ys);
  int64_t out_plane = 1;
  for (int64_t i = 0; i < rank; ++i) out_plane *= ys[2 + i];
  for (int64_t i = 0; i < y.numel(); ++i)
    y.data<float>()[i] =
        static_cast<float>(acc[i] + (b ? b->data<float>()[(i / out_plane) % ys[1]] : 0.0));
  return y;
}

// clang-format off
// name, X, W, bias, group,
//   strides, dilations, pads, output_padding, output_shape, auto_pad, want shape, want pad_begin
const std::vector<ConvTransposeCase> kCases = {
    {"basic", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {}, {}, {}, {}, {}, nullptr, {1, 2, 5, 5}, {0, 0}},
    {"strides_output_padding", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {3, 2}, {}, {}, {1, 1}, {}, nullptr, {1, 2, 10, 8}, {0, 0}},
    {"pads_strides", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {3, 2}, {}, {1, 2, 1, 2}, {}, {}, nullptr, {1, 2, 7, 3}, {1, 2}},
    // full result 9×7 is smaller than output_shape: the extra row/column at the end is 0.
    {"output_shape_larger", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {3, 2}, {}, {}, {}, {10, 8}, nullptr, {1, 2, 10, 8}, {0, 0}},
    {"output_shape_crops", {1, 1, 3, 3}, {1, 2, 3, 3}, true, 1,
     {3, 2}, {}, {5, 5, 5, 5}, {}, {9, 6}, nullptr, {1, 2, 9, 6}, {0, 1}},
    {"output_shape_with_nc", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {3, 2}, {}, {}, {}, {1, 2, 9, 6}, nullptr, {1, 2, 9, 6}, {0, 1}},
    {"output_shape_same_upper", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {3, 2}, {}, {}, {}, {8, 5}, "SAME_UPPER", {1, 2, 8, 5}, {0, 1}},
    {"same_upper", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, {}, "SAME_UPPER", {1, 2, 6, 6}, {0, 0}},
    {"same_lower", {1, 1, 3, 3}, {1, 2, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, {}, "SAME_LOWER", {1, 2, 6, 6}, {1, 1}},
    {"valid", {1, 1, 3, 3}, {1, 1, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, {}, "VALID", {1, 1, 7, 7}, {0, 0}},
    {"dilations", {1, 1, 3, 3}, {1, 1, 2, 2}, false, 1,
     {}, {2, 2}, {}, {}, {}, nullptr, {1, 1, 5, 5}, {0, 0}},
    {"group2_bias", {2, 4, 4, 5}, {4, 3, 3, 3}, true, 2,
     {2, 2}, {}, {1, 1, 1, 1}, {}, {}, nullptr, {2, 6, 7, 9}, {1, 1}},
    {"depthwise_upsample", {1, 3, 4, 4}, {3, 1, 4, 4}, true, 3,
     {2, 2}, {}, {1, 1, 1, 1}, {}, {}, nullptr, {1, 3, 8, 8}, {1, 1}},
    {"multi_channel", {2, 5, 3, 4}, {5, 4, 2, 2}, true, 1,
     {2, 2}, {}, {}, {}, {}, nullptr, {2, 4, 6, 8}, {0, 0}},
    {"conv1d", {2, 3, 5}, {3, 2, 3}, false, 1, {2}, {}, {1, 0}, {1}, {}, nullptr, {2, 2, 11}, {1}},
    {"conv3d", {1, 2, 3, 4, 5}, {2, 2, 3, 3, 3}, true, 1,
     {}, {}, {}, {}, {}, nullptr, {1, 2, 5, 6, 7}, {0, 0, 0}},
    {"conv3d_strides_dilations", {1, 1, 2, 3, 2}, {1, 2, 2, 3, 2}, false, 1,
     {2, 1, 3}, {1, 2, 1}, {0, 1, 0, 0, 1, 1}, {}, {}, nullptr, {1, 2, 4, 5, 4}, {0, 1, 0}},
};
// clang-format on

class ConvTransposeTable : public ::testing::TestWithParam<ConvTransposeCase> {};

TEST_P(ConvTransposeTable, MatchesScatterFormula) {
  const ConvTransposeCase& c = GetParam();
  const Tensor x = random_tensor(c.x, 11), w = random_tensor(c.w, 12);
  const Tensor b = random_tensor({c.want_shape[1]}, 13);
  const Tensor want = naive_conv_transpose(c, x, w, c.bias ? &b : nullptr);
  auto out = run_op(OpKind::ConvTranspose, make_attrs(c), {&x, &w, c.bias ? &b : nullptr});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_near((*out)[0], want, 1e-5, 1e-5);
}

TEST_P(ConvTransposeTable, Float64MatchesScatterFormula) {
  const ConvTransposeCase& c = GetParam();
  const Tensor x = random_tensor(c.x, 14), w = random_tensor(c.w, 15);
  const Tensor b = random_tensor({c.want_shape[1]}, 16);
  const Tensor want = naive_conv_transpose(c, x, w, c.bias ? &b : nullptr);
  auto to_f64 = [](const Tensor& t) {
    Tensor r(DataType::kFloat64, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) r.data<double>()[i] = t.data<float>()[i];
    return r;
  };
  const Tensor xd = to_f64(x), wd = to_f64(w), bd = to_f64(b);
  auto out = run_op(OpKind::ConvTranspose, make_attrs(c), {&xd, &wd, c.bias ? &bd : nullptr});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dtype(), DataType::kFloat64);
  expect_near(Tensor::from_floats(want.shape(), (*out)[0].to_floats()), want, 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTransposeTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConvTranspose, ErrorsNameTheProblem) {
  struct ErrorCase {
    const char* name;
    Shape x, w, b;
    Attributes attrs;
    const char* want;
  };
  auto with = [](const char* k, AttrValue v) {
    Attributes a;
    a.set(k, std::move(v));
    return a;
  };
  const std::vector<ErrorCase> cases = {
      {"channel_mismatch",
       {1, 3, 4, 4},
       {2, 2, 3, 3},
       {},
       {},
       "X [1,3,4,4] has 3 channels but W [2,2,3,3] expects 2"},
      {"group_not_dividing",
       {1, 3, 4, 4},
       {3, 2, 3, 3},
       {},
       with("group", int64_t{2}),
       "input channels 3 not divisible by group 2"},
      {"pads_crop_everything",
       {1, 1, 2, 2},
       {1, 1, 2, 2},
       {},
       with("pads", std::vector<int64_t>{2, 0, 2, 0}),
       "crop the whole output"},
      {"x_rank", {1, 3}, {3, 2}, {}, {}, "input X [1,3] must have rank ≥ 3"},
      {"w_rank", {1, 1, 4, 4}, {1, 2, 3}, {}, {}, "weight W [1,2,3] must have the rank"},
      {"output_shape_length",
       {1, 1, 4, 4},
       {1, 2, 3, 3},
       {},
       with("output_shape", std::vector<int64_t>{6}),
       "output_shape [6] has 1 entries for 2"},
      {"output_padding_negative",
       {1, 1, 4, 4},
       {1, 2, 3, 3},
       {},
       with("output_padding", std::vector<int64_t>{-1, 0}),
       "output_padding [-1,0]"},
      {"bias_shape", {1, 1, 4, 4}, {1, 2, 3, 3}, {1}, {}, "bias B [1] must have shape [2]"},
      {"kernel_shape_mismatch",
       {1, 1, 4, 4},
       {1, 2, 3, 3},
       {},
       with("kernel_shape", std::vector<int64_t>{3, 2}),
       "kernel_shape [3,2] differs"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(c.x), w = random_tensor(c.w);
    const Tensor b = random_tensor(c.b.empty() ? Shape{1} : c.b);
    auto out = run_op(OpKind::ConvTranspose, c.attrs, {&x, &w, c.b.empty() ? nullptr : &b});
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find(c.want), std::string::npos) << out.status().message();
  }
}

}  // namespace
}  // namespace kiln::test
