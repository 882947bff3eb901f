// Pad reference kernel vs. an independent construction: the test pads one axis at a time
// by concatenating mirrored / repeated / constant slices (the way numpy.pad builds its
// result), then crops the negative pads; the kernel maps each output index to its source.

#include <string>

#include "core/half.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

Attributes mode_attr(const std::string& mode) {
  Attributes a;
  a.set("mode", mode);
  return a;
}

// Pads `data` (shape `shape`) with begin/end pads per axis; doubles carry any dtype's values.
std::vector<double> expected_pad(const std::string& mode, Shape shape, std::vector<double> data,
                                 const std::vector<int64_t>& pads, double value) {
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < rank; ++k) inner *= shape[k];
    const int64_t n = shape[d];
    const int64_t b = pads[d], e = pads[rank + d];
    const int64_t n_out = n + b + e;
    std::vector<double> next;
    for (int64_t o = 0; o < outer; ++o) {
      std::vector<std::vector<double>> rows;  // the axis' slices, each `inner` long
      for (int64_t k = 0; k < n; ++k)
        rows.emplace_back(data.begin() + (o * n + k) * inner,
                          data.begin() + (o * n + k + 1) * inner);
      // Build [before | rows | after] with the positive pads.
      // Reflect: bounce the index off both ends until it lands inside (as numpy does).
      auto bounce = [n](int64_t j) {
        while (n > 1 && (j < 0 || j > n - 1)) j = j < 0 ? -j : 2 * (n - 1) - j;
        return n > 1 ? j : 0;
      };
      std::vector<std::vector<double>> before, after;
      for (int64_t k = std::max<int64_t>(b, 0); k >= 1; --k) {
        if (mode == "constant")
          before.emplace_back(inner, value);
        else if (mode == "edge")
          before.push_back(rows.front());
        else
          before.push_back(rows[bounce(-k)]);  // reflect: rows b, b-1, ..., 1
      }
      for (int64_t k = 1; k <= std::max<int64_t>(e, 0); ++k) {
        if (mode == "constant")
          after.emplace_back(inner, value);
        else if (mode == "edge")
          after.push_back(rows.back());
        else
          after.push_back(rows[bounce(n - 1 + k)]);  // reflect: rows n-2, n-3, ...
      }
      std::vector<std::vector<double>> all = before;
      all.insert(all.end(), rows.begin(), rows.end());
      all.insert(all.end(), after.begin(), after.end());
      // Crop the negative pads.
      const int64_t first = b < 0 ? -b : 0;
      for (int64_t k = first; k < first + n_out; ++k)
        next.insert(next.end(), all[k].begin(), all[k].end());
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

Shape padded_shape(const Shape& s, const std::vector<int64_t>& pads) {
  Shape out = s;
  for (size_t d = 0; d < s.size(); ++d) out[d] += pads[d] + pads[s.size() + d];
  return out;
}

void check_pad(const std::string& mode, const Tensor& x, const std::vector<int64_t>& pads,
               const Tensor* value = nullptr) {
  Tensor pads_t = Tensor::from_int64s({static_cast<int64_t>(pads.size())}, pads);
  auto out = run_op(OpKind::Pad, mode_attr(mode), {&x, &pads_t, value});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.dtype(), x.dtype());
  ASSERT_EQ(y.shape(), padded_shape(x.shape(), pads));
  const double v = value && value->numel() > 0 ? value->at_double(0) : 0.0;
  std::vector<double> want = expected_pad(mode, x.shape(), doubles_of(x), pads, v);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.at_double(i), want[i]) << "element " << i;
}

struct PadCase {
  Shape shape;
  std::vector<int64_t> pads;
};
// NCHW spatial pads, asymmetric, every axis, crops (negative) mixed with pads, 1-D, 5-D.
const std::vector<PadCase> kCases = {
    {{1, 3, 4, 5}, {0, 0, 1, 2, 0, 0, 3, 1}},
    {{2, 3, 4}, {1, 0, 2, 0, 2, 3}},
    {{2, 3, 5, 4}, {1, 1, 1, 1, 1, 2, 2, 3}},
    {{1, 2, 6, 6}, {0, 0, -1, 2, 0, 0, 3, -2}},
    {{1, 2, 5, 6}, {0, -1, -2, -3, 0, 0, -1, 0}},
    {{9}, {4, 3}},
    {{1, 2, 3, 4, 3}, {0, 1, 2, 1, 2, 0, 0, 1, 3, 1}},
    {{2, 3, 1}, {2, 3, 1, 1, 2, 1}},  // pads as wide as the axis; a length-1 axis
};

TEST(Pad, AllModesOnRandomData) {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    for (size_t c = 0; c < kCases.size(); ++c) {
      SCOPED_TRACE(std::string(mode) + " case " + std::to_string(c));
      check_pad(mode, random_tensor(kCases[c].shape, 3 + c), kCases[c].pads);
    }
  }
}

TEST(Pad, ConstantValueAndZeroDefault) {
  Tensor x = random_tensor({2, 3, 4}, 8);
  Tensor v = Tensor::from_floats({}, {2.5f});
  Tensor v1 = Tensor::from_floats({1}, {-4.f});
  Tensor empty = Tensor::from_floats({0}, {});
  check_pad("constant", x, {1, 0, 2, 0, 3, 1}, &v);
  check_pad("constant", x, {1, 0, 2, 0, 3, 1}, &v1);
  check_pad("constant", x, {1, 0, 2, 0, 3, 1}, &empty);  // empty = not given = 0
  check_pad("constant", x, {1, 0, 2, 0, 3, 1});
}

TEST(Pad, AnyElementType) {
  Tensor x = random_tensor({2, 4, 5}, 4, -100, 100);
  Tensor xi32(DataType::kInt32, x.shape()), xu8(DataType::kUInt8, x.shape());
  Tensor xf16(DataType::kFloat16, x.shape()), xb(DataType::kBool, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float f = x.data<float>()[i];
    xi32.data<int32_t>()[i] = static_cast<int32_t>(f);
    xu8.data<uint8_t>()[i] = static_cast<uint8_t>(f + 100);
    xf16.data<Half>()[i] = Half(f);
    xb.data<bool>()[i] = f > 0;
  }
  Tensor vi32(DataType::kInt32, {}), vu8(DataType::kUInt8, {}), vb(DataType::kBool, {});
  vi32.data<int32_t>()[0] = -7;
  vu8.data<uint8_t>()[0] = 200;
  vb.data<bool>()[0] = true;
  const std::vector<int64_t> pads{1, 2, -1, 0, 1, 3};
  for (const char* mode : {"constant", "reflect", "edge"}) {
    SCOPED_TRACE(mode);
    check_pad(mode, xi32, pads, &vi32);
    check_pad(mode, xu8, pads, &vu8);
    check_pad(mode, xf16, pads);
    check_pad(mode, xb, pads, &vb);
  }
}

// The ONNX operator documentation's examples.
TEST(Pad, HandComputedExamples) {
  Tensor x = Tensor::from_floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor pads = Tensor::from_int64s({4}, {0, 2, 0, 0});
  struct Case {
    const char* mode;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {
      {"constant", {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}},
      {"reflect", {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}},
      {"edge", {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    auto out = run_op(OpKind::Pad, mode_attr(c.mode), {&x, &pads});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_near((*out)[0], Tensor::from_floats({3, 4}, c.want), 0);
  }
  // Crop one side, reflect the other: [1 2 3 4 5] with pads (-2, 3) → [3 4 5 4 3 2].
  Tensor line = Tensor::from_floats({5}, {1, 2, 3, 4, 5});
  Tensor crop = Tensor::from_int64s({2}, {-2, 3});
  auto out = run_op(OpKind::Pad, mode_attr("reflect"), {&line, &crop});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_near((*out)[0], Tensor::from_floats({6}, {3, 4, 5, 4, 3, 2}), 0);
}

TEST(Pad, AxesInputPadsOnlyThoseAxes) {
  Tensor x = random_tensor({2, 3, 4}, 12);
  Tensor pads = Tensor::from_int64s({4}, {2, 1, 0, 3});  // axis -1: (2, 0), axis 1: (1, 3)
  Tensor axes = Tensor::from_int64s({2}, {-1, 1});
  auto out = run_op(OpKind::Pad, mode_attr("edge"), {&x, &pads, nullptr, &axes});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const std::vector<int64_t> full{0, 1, 2, 0, 3, 0};
  std::vector<double> want = expected_pad("edge", x.shape(), doubles_of(x), full, 0);
  ASSERT_EQ((*out)[0].shape(), (Shape{2, 7, 6}));
  for (int64_t i = 0; i < (*out)[0].numel(); ++i) EXPECT_EQ((*out)[0].at_double(i), want[i]);
}

TEST(Pad, ErrorsNameTheProblem) {
  Tensor x = random_tensor({1, 2, 3, 3}, 1);
  Tensor big4 = Tensor::from_int64s({8}, {0, 0, 4, 0, 0, 0, 0, 0});
  Tensor ok = Tensor::from_int64s({8}, {0, 0, 2, 2, 0, 0, 2, 2});
  Tensor short_pads = Tensor::from_int64s({4}, {1, 1, 1, 1});
  Tensor overcrop = Tensor::from_int64s({8}, {0, 0, -2, 0, 0, 0, -2, 0});
  Tensor vi = Tensor::from_int64s({}, {1});
  Tensor empty = random_tensor({1, 0, 3});
  Tensor pads_empty_axis = Tensor::from_int64s({6}, {0, 1, 0, 0, 0, 0});
  struct Case {
    const char* mode;
    std::vector<const Tensor*> in;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"reflect", {&x, &big4}, "reflect pad 4 on axis 2 of length 3 is larger than the axis"},
      {"constant", {&x, &short_pads}, "pads has 4 elements, expected 8"},
      {"edge", {&x, &overcrop}, "remove more than the 3 elements of axis 2"},
      {"constant", {&x, &ok, &vi}, "expected float32, got int64"},
      {"edge", {&empty, &pads_empty_axis}, "edge padding of empty axis 1"},
      {"wrap", {&x, &ok}, "wrap"},
      {"mirror", {&x, &ok}, "unknown mode 'mirror'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    auto out = run_op(OpKind::Pad, mode_attr(c.mode), c.in);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find(c.message), std::string::npos) << out.status().message();
  }
  // Constant padding of an empty axis is fine: [1,0,3] → [1,1,3].
  auto fine = run_op(OpKind::Pad, mode_attr("constant"), {&empty, &pads_empty_axis});
  ASSERT_TRUE(fine.is_ok()) << fine.status().to_string();
  EXPECT_EQ((*fine)[0].shape(), (Shape{1, 1, 3}));
}

}  // namespace
}  // namespace kiln::test
