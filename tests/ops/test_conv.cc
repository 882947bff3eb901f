// Conv reference kernel against a naive direct formula, over a table of cases whose
// output shapes and effective pads are computed by hand.
#include <string>

#include "core/half.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  bool bias;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads, kernel_shape;
  const char* auto_pad;                 // nullptr: attribute absent
  Shape want_shape;                     // by hand
  std::vector<int64_t> want_pad_begin;  // by hand: effective pads before each spatial axis
};

// gtest prints a failing case by name, not as bytes.
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

Attributes make_attrs(const ConvCase& c) {
  Attributes a;
  if (c.group != 1) a.set("group", c.group);
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!c.kernel_shape.empty()) a.set("kernel_shape", c.kernel_shape);
  if (c.auto_pad) a.set("auto_pad", std::string(c.auto_pad));
  return a;
}

// y[n, m, o...] = b[m] + Σ_{c, k...} x[n, g·C/G + c, o·s − p + k·d] · w[m, c, k...]
// one output element at a time, positions outside X read as zero.
Tensor naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const int64_t rank = static_cast<int64_t>(c.x.size()) - 2;
  auto at = [&](const std::vector<int64_t>& v, int64_t i, int64_t def) {
    return v.empty() ? def : v[i];
  };
  Tensor y(DataType::kFloat32, c.want_shape);
  const int64_t m_total = c.want_shape[1], cg = c.w[1], mg = m_total / c.group;
  int64_t k_size = 1;
  for (int64_t i = 0; i < rank; ++i) k_size *= c.w[2 + i];
  std::vector<int64_t> o(rank), k(rank);
  for (int64_t flat = 0; flat < y.numel(); ++flat) {
    int64_t rem = flat;
    for (int64_t i = rank - 1; i >= 0; --i) {
      o[i] = rem % c.want_shape[2 + i];
      rem /= c.want_shape[2 + i];
    }
    const int64_t m = rem % m_total, n = rem / m_total;
    double acc = b ? b->data<float>()[m] : 0.0;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const int64_t ic = (m / mg) * cg + ci;
      for (int64_t kf = 0; kf < k_size; ++kf) {
        int64_t kr = kf;
        for (int64_t i = rank - 1; i >= 0; --i) {
          k[i] = kr % c.w[2 + i];
          kr /= c.w[2 + i];
        }
        int64_t xoff = n * c.x[1] + ic;
        bool inside = true;
        for (int64_t i = 0; i < rank; ++i) {
          const int64_t pos =
              o[i] * at(c.strides, i, 1) - c.want_pad_begin[i] + k[i] * at(c.dilations, i, 1);
          inside = inside && pos >= 0 && pos < c.x[2 + i];
          xoff = xoff * c.x[2 + i] + pos;
        }
        if (!inside) continue;
        acc += static_cast<double>(x.data<float>()[xoff]) *
               w.data<float>()[(m * cg + ci) * k_size + kf];
      }
    }
    y.data<float>()[flat] = static_cast<float>(acc);
  }
  return y;
}

// `t` (float32) converted to `dt`.
Tensor cast_to(const Tensor& t, DataType dt) {
  Tensor r(dt, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (dt == DataType::kFloat64) r.data<double>()[i] = v;
    if (dt == DataType::kFloat16) r.data<Half>()[i] = Half(v);
    if (dt == DataType::kBFloat16) r.data<BFloat16>()[i] = BFloat16(v);
  }
  return r;
}

// clang-format off
// name, X, W, bias, group,
//   strides, dilations, pads, kernel_shape, auto_pad, want shape, want pad_begin
const std::vector<ConvCase> kCases = {
    {"basic_3x3", {1, 1, 5, 5}, {1, 1, 3, 3}, false, 1,
     {}, {}, {}, {}, nullptr, {1, 1, 3, 3}, {0, 0}},
    {"pads_bias_batch", {2, 3, 7, 6}, {4, 3, 3, 3}, true, 1,
     {}, {}, {1, 1, 1, 1}, {}, nullptr, {2, 4, 7, 6}, {1, 1}},
    {"strides_asym_pads", {1, 2, 7, 5}, {3, 2, 3, 3}, false, 1,
     {2, 2}, {}, {1, 0, 1, 0}, {}, nullptr, {1, 3, 4, 2}, {1, 0}},
    {"dilations", {1, 2, 9, 8}, {2, 2, 3, 3}, true, 1,
     {}, {2, 2}, {2, 1, 2, 1}, {}, nullptr, {1, 2, 9, 6}, {2, 1}},
    {"rect_kernel_mixed", {1, 3, 10, 11}, {5, 3, 2, 4}, true, 1,
     {3, 2}, {2, 1}, {1, 2, 0, 1}, {}, nullptr, {1, 5, 3, 6}, {1, 2}},
    {"group2", {2, 4, 6, 6}, {6, 2, 3, 3}, true, 2,
     {}, {}, {1, 1, 1, 1}, {}, nullptr, {2, 6, 6, 6}, {1, 1}},
    {"depthwise_stride2", {1, 8, 7, 7}, {8, 1, 3, 3}, true, 8,
     {2, 2}, {}, {1, 1, 1, 1}, {}, nullptr, {1, 8, 4, 4}, {1, 1}},
    {"depthwise_multiplier2", {1, 3, 5, 5}, {6, 1, 3, 3}, false, 3,
     {}, {}, {}, {}, nullptr, {1, 6, 3, 3}, {0, 0}},
    {"pointwise", {2, 16, 5, 7}, {8, 16, 1, 1}, true, 1,
     {}, {}, {}, {}, nullptr, {2, 8, 5, 7}, {0, 0}},
    {"pointwise_stride2", {1, 4, 7, 7}, {4, 4, 1, 1}, false, 1,
     {2, 2}, {}, {}, {}, nullptr, {1, 4, 4, 4}, {0, 0}},
    {"conv1d", {2, 3, 10}, {4, 3, 3}, true, 1, {2}, {2}, {1, 2}, {}, nullptr, {2, 4, 5}, {1}},
    {"conv3d", {1, 2, 5, 6, 4}, {3, 2, 3, 2, 3}, true, 1,
     {1, 2, 1}, {}, {1, 0, 1, 1, 1, 1}, {}, nullptr, {1, 3, 5, 3, 4}, {1, 0, 1}},
    {"conv3d_group_dilation", {1, 4, 6, 6, 6}, {4, 2, 2, 2, 2}, false, 2,
     {2, 2, 2}, {2, 2, 2}, {}, {}, nullptr, {1, 4, 2, 2, 2}, {0, 0, 0}},
    {"same_upper_stride2", {1, 1, 5, 6}, {2, 1, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, "SAME_UPPER", {1, 2, 3, 3}, {1, 0}},
    {"same_lower_stride2", {1, 1, 5, 6}, {2, 1, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, "SAME_LOWER", {1, 2, 3, 3}, {1, 1}},
    {"same_upper_even_kernel", {1, 2, 5, 5}, {2, 2, 2, 4}, true, 1,
     {}, {}, {}, {}, "SAME_UPPER", {1, 2, 5, 5}, {0, 1}},
    {"same_lower_dilation", {1, 1, 6, 6}, {1, 1, 3, 3}, false, 1,
     {}, {2, 2}, {}, {}, "SAME_LOWER", {1, 1, 6, 6}, {2, 2}},
    {"same_upper_1d_odd", {1, 2, 7}, {3, 2, 4}, false, 1,
     {3}, {}, {}, {}, "SAME_UPPER", {1, 3, 3}, {1}},
    {"valid_stride2", {1, 2, 7, 7}, {3, 2, 3, 3}, true, 1,
     {2, 2}, {}, {}, {}, "VALID", {1, 3, 3, 3}, {0, 0}},
    {"notset_explicit", {1, 1, 5, 5}, {1, 1, 3, 3}, false, 1,
     {}, {}, {1, 1, 1, 1}, {}, "NOTSET", {1, 1, 5, 5}, {1, 1}},
    {"kernel_shape_attr", {1, 1, 5, 5}, {1, 1, 3, 3}, false, 1,
     {}, {}, {1, 1, 1, 1}, {3, 3}, nullptr, {1, 1, 5, 5}, {1, 1}},
    {"kernel_fills_padded_input", {1, 1, 3, 3}, {2, 1, 5, 5}, true, 1,
     {}, {}, {1, 1, 1, 1}, {}, nullptr, {1, 2, 1, 1}, {1, 1}},
    {"kernel_wider_than_row", {1, 2, 4, 2}, {2, 2, 3, 5}, false, 1,
     {}, {}, {1, 2, 0, 1}, {}, nullptr, {1, 2, 3, 1}, {1, 2}},
    // Cases with ≥ 4 output channels per group take the im2col + GEMM path; the others
    // the direct path. Both see strides, dilations, asymmetric pads, groups, 1-D/3-D, SAME.
    {"gemm_strides_dilations_asym", {1, 3, 9, 10}, {6, 3, 3, 2}, true, 1,
     {2, 3}, {2, 1}, {1, 0, 2, 1}, {}, nullptr, {1, 6, 4, 4}, {1, 0}},
    {"gemm_group2_row_remainder", {2, 6, 5, 5}, {10, 3, 3, 3}, true, 2,
     {}, {}, {1, 1, 1, 1}, {}, nullptr, {2, 10, 5, 5}, {1, 1}},
    {"gemm_conv3d", {1, 3, 4, 5, 6}, {5, 3, 3, 3, 2}, true, 1,
     {1, 2, 2}, {}, {1, 1, 0, 1, 1, 1}, {}, nullptr, {1, 5, 4, 3, 3}, {1, 1, 0}},
    {"gemm_same_upper", {1, 2, 7, 6}, {4, 2, 3, 3}, false, 1,
     {2, 2}, {}, {}, {}, "SAME_UPPER", {1, 4, 4, 3}, {1, 0}},
    {"gemm_same_lower_1d", {2, 3, 9}, {6, 3, 4}, true, 1,
     {2}, {}, {}, {}, "SAME_LOWER", {2, 6, 5}, {2}},
    {"gemm_several_chunks", {1, 64, 12, 12}, {5, 64, 5, 5}, true, 1,
     {}, {}, {2, 2, 2, 2}, {}, nullptr, {1, 5, 12, 12}, {2, 2}},
    {"resnet_like", {3, 5, 9, 9}, {7, 5, 3, 3}, true, 1,
     {}, {}, {1, 1, 1, 1}, {}, nullptr, {3, 7, 9, 9}, {1, 1}},
    {"stem_7x7_stride2", {1, 3, 20, 20}, {4, 3, 7, 7}, true, 1,
     {2, 2}, {}, {3, 3, 3, 3}, {}, nullptr, {1, 4, 10, 10}, {3, 3}},
};
// clang-format on

class ConvTable : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTable, MatchesNaiveFormula) {
  const ConvCase& c = GetParam();
  const Tensor x = random_tensor(c.x, 1), w = random_tensor(c.w, 2);
  const Tensor b = random_tensor({c.w[0]}, 3);
  const Tensor want = naive_conv(c, x, w, c.bias ? &b : nullptr);
  auto out = run_op(OpKind::Conv, make_attrs(c), {&x, &w, c.bias ? &b : nullptr});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // float32 sums of K products: rounding grows with K (the kernel sums in another order).
  const double k_terms = static_cast<double>(shape_numel(c.w) / c.w[0]);
  expect_near((*out)[0], want, 1e-5 + 2e-7 * k_terms, 1e-5);
}

TEST_P(ConvTable, OtherFloatTypesMatchNaiveFormula) {
  const ConvCase& c = GetParam();
  const Tensor x = random_tensor(c.x, 4), w = random_tensor(c.w, 5);
  const Tensor b = random_tensor({c.w[0]}, 6);
  for (DataType dt : {DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor xd = cast_to(x, dt), wd = cast_to(w, dt), bd = cast_to(b, dt);
    // The expectation uses the inputs as rounded to dt, so only the kernel's own
    // arithmetic and the final rounding are measured.
    const Tensor xr = Tensor::from_floats(c.x, xd.to_floats());
    const Tensor wr = Tensor::from_floats(c.w, wd.to_floats());
    const Tensor br = Tensor::from_floats(b.shape(), bd.to_floats());
    const Tensor want = naive_conv(c, xr, wr, c.bias ? &br : nullptr);
    auto out = run_op(OpKind::Conv, make_attrs(c), {&xd, &wd, c.bias ? &bd : nullptr});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dtype(), dt);
    const double tol = dt == DataType::kFloat64 ? 1e-5 : dt == DataType::kFloat16 ? 4e-3 : 3e-2;
    expect_near(Tensor::from_floats(want.shape(), (*out)[0].to_floats()), want, tol, tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

struct ConvErrorCase {
  const char* name;
  Shape x, w;
  Shape b;  // empty: no bias
  Attributes attrs;
  const char* want;  // substring of the error message
  DataType x_dtype = DataType::kFloat32;
  DataType w_dtype = DataType::kFloat32;
};

Attributes attrs_of(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

TEST(Conv, ErrorsNameTheProblem) {
  const std::vector<ConvErrorCase> cases = {
      {"channel_mismatch",
       {1, 3, 5, 5},
       {4, 2, 3, 3},
       {},
       {},
       "X [1,3,5,5] has 3 channels but W [4,2,3,3] × group 1 expects 2"},
      {"channel_mismatch_group",
       {1, 4, 5, 5},
       {4, 1, 3, 3},
       {},
       attrs_of({{"group", int64_t{2}}}),
       "expects 2"},
      {"group_not_dividing_m",
       {1, 4, 5, 5},
       {3, 2, 3, 3},
       {},
       attrs_of({{"group", int64_t{2}}}),
       "output channels 3 not divisible by group 2"},
      {"group_zero", {1, 4, 5, 5}, {4, 4, 3, 3}, {}, attrs_of({{"group", int64_t{0}}}), "group 0"},
      {"kernel_too_large", {1, 1, 3, 3}, {1, 1, 5, 5}, {}, {}, "exceeds padded input 3"},
      {"dilated_kernel_too_large",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"dilations", std::vector<int64_t>{3, 3}}}),
       "kernel extent 7"},
      {"x_rank_2", {1, 3}, {4, 3}, {}, {}, "input X [1,3] must have rank ≥ 3"},
      {"w_rank_mismatch", {1, 1, 5, 5}, {1, 1, 3}, {}, {}, "weight W [1,1,3] must have the rank"},
      {"strides_length",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"strides", std::vector<int64_t>{1}}}),
       "strides [1] has 1 entries for 2"},
      {"pads_length",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"pads", std::vector<int64_t>{1, 1}}}),
       "pads [1,1] has 2 entries for 4"},
      {"pads_negative",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}),
       "must be ≥ 0"},
      {"stride_zero",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"strides", std::vector<int64_t>{0, 1}}}),
       "strides [0,1] must be ≥ 1"},
      {"dilation_zero",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"dilations", std::vector<int64_t>{1, 0}}}),
       "dilations [1,0]"},
      {"bad_auto_pad",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"auto_pad", std::string("SAME")}}),
       "auto_pad 'SAME'"},
      {"kernel_shape_mismatch",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       attrs_of({{"kernel_shape", std::vector<int64_t>{2, 2}}}),
       "kernel_shape [2,2] differs from the spatial dims of W [1,1,3,3]"},
      {"bias_shape", {1, 2, 5, 5}, {4, 2, 3, 3}, {3}, {}, "bias B [3] must have shape [4]"},
      {"int_input",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {},
       "Conv on int64",
       DataType::kInt64,
       DataType::kInt64},
      {"weight_dtype",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {},
       "input 1: expected float32, got float64",
       DataType::kFloat32,
       DataType::kFloat64},
  };
  for (const ConvErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = Tensor::zeros(c.x_dtype, c.x), w = Tensor::zeros(c.w_dtype, c.w);
    const Tensor b = random_tensor(c.b.empty() ? Shape{1} : c.b);
    auto out = run_op(OpKind::Conv, c.attrs, {&x, &w, c.b.empty() ? nullptr : &b});
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find(c.want), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("test_node"), std::string::npos);
  }
}

TEST(Conv, MissingWeightIsAnError) {
  const Tensor x = random_tensor({1, 1, 5, 5});
  auto out = run_op(OpKind::Conv, {}, {&x});
  ASSERT_FALSE(out.is_ok());
}

}  // namespace
}  // namespace kiln::test
