// The operator forms of quantized models (onnx/expand_quantized.h), each on a tiny graph
// against the integer arithmetic its ONNX (or ONNX Runtime contrib) definition gives,
// computed here independently.
#include <algorithm>
#include <cmath>

#include "backends/cpu/dnnl_conv_plan.h"
#include "onnx_test_util.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

constexpr int kUInt8 = onnx::TensorProto::UINT8;
constexpr int kInt8 = onnx::TensorProto::INT8;
constexpr int kInt32 = onnx::TensorProto::INT32;

// An initializer of an integer type from int64 values (raw little-endian bytes).
void int_initializer(ModelBuilder& b, const std::string& name, int elem,
                     const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  auto* t = b.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  std::string raw;
  for (int64_t v : values) {
    if (elem == kInt32) {
      const int32_t x = static_cast<int32_t>(v);
      raw.append(reinterpret_cast<const char*>(&x), 4);
    } else {
      raw.push_back(static_cast<char>(v));
    }
  }
  t->set_raw_data(raw);
}

// ONNX Runtime's contrib ops need their domain imported.
void import_microsoft_domain(ModelBuilder& b) {
  auto* ms = b.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
}

// Integer codes in [lo, hi] from a fixed seed.
std::vector<int64_t> codes(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

Tensor int_tensor(DataType dt, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t(dt, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dt == DataType::kUInt8) t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    if (dt == DataType::kInt8) t.data<int8_t>()[i] = static_cast<int8_t>(values[i]);
  }
  return t;
}

int64_t saturate(double v, int64_t lo, int64_t hi) {
  return std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(v)), lo, hi);
}

// acc[n][m][oy][ox] = Σ (x − xz)(w[m] − wz[m]) over a 3×3 window, stride 2, pad 1 (NCHW).
struct ConvGeom {
  int64_t n = 2, c = 3, h = 7, w = 6, m = 4, k = 3, stride = 2, pad = 1;
  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
};
std::vector<int64_t> int_conv(const ConvGeom& g, const std::vector<int64_t>& x, int64_t xz,
                              const std::vector<int64_t>& w, const std::vector<int64_t>& wz) {
  std::vector<int64_t> acc(static_cast<size_t>(g.n * g.m * g.oh() * g.ow()));
  size_t o = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.m; ++m)
      for (int64_t oy = 0; oy < g.oh(); ++oy)
        for (int64_t ox = 0; ox < g.ow(); ++ox, ++o)
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t ky = 0; ky < g.k; ++ky)
              for (int64_t kx = 0; kx < g.k; ++kx) {
                const int64_t iy = oy * g.stride - g.pad + ky, ix = ox * g.stride - g.pad + kx;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int64_t xv = x[((n * g.c + c) * g.h + iy) * g.w + ix] - xz;
                const int64_t wv = w[((m * g.c + c) * g.k + ky) * g.k + kx] - wz[m];
                acc[o] += xv * wv;
              }
  return acc;
}

void conv_attrs(onnx::NodeProto& n, const ConvGeom& g) {
  add_attr(n, "kernel_shape", std::vector<int64_t>{g.k, g.k});
  add_attr(n, "strides", std::vector<int64_t>{g.stride, g.stride});
  add_attr(n, "pads", std::vector<int64_t>{g.pad, g.pad, g.pad, g.pad});
}

// The outputs agree within one step, and nearly all exactly (float sums round differently
// from int32 ones only near a rounding boundary).
void expect_codes_near(const Tensor& got, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  const std::vector<int64_t> g = got.to_int64s();
  size_t off = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - want[i]), 1) << "element " << i;
    off += g[i] != want[i];
  }
  EXPECT_LE(off, want.size() / 50) << off << " of " << want.size() << " off by one";
}

TEST(ExpandQuantized, QLinearConvUint8PerChannelWithBias) {
  ConvGeom g;
  const float xs = 0.05f, ys = 0.08f;
  const int64_t xz = 131, yz = 97;
  const std::vector<float> ws = {0.011f, 0.007f, 0.02f, 0.013f};
  const std::vector<int64_t> wz = {0, 0, 0, 0};
  const auto x = codes(static_cast<size_t>(g.n * g.c * g.h * g.w), 1, 0, 255);
  const auto w = codes(static_cast<size_t>(g.m * g.c * g.k * g.k), 2, -127, 127);
  const auto bias = codes(4, 3, -3000, 3000);
  ModelBuilder b(13);
  b.input("x", kUInt8, {g.n, g.c, g.h, g.w});
  b.initializer("xs", {}, {xs});
  int_initializer(b, "xz", kUInt8, {}, {xz});
  int_initializer(b, "w", kInt8, {g.m, g.c, g.k, g.k}, w);
  b.initializer("ws", {g.m}, ws);
  int_initializer(b, "wz", kInt8, {g.m}, wz);
  b.initializer("ys", {}, {ys});
  int_initializer(b, "yz", kUInt8, {}, {yz});
  int_initializer(b, "B", kInt32, {g.m}, bias);
  conv_attrs(b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"}), g);
  b.output("y", kUInt8, {g.n, g.m, g.oh(), g.ow()});

  std::vector<int64_t> acc = int_conv(g, x, xz, w, wz), want(acc.size());
  const int64_t plane = g.oh() * g.ow();
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / plane) % g.m);
    want[i] = saturate(static_cast<double>(acc[i] + bias[m]) * xs * ws[m] / ys + yz, 0, 255);
  }
  const Tensor y =
      run_model(b, {{"x", int_tensor(DataType::kUInt8, {g.n, g.c, g.h, g.w}, x)}}, "y");
  expect_codes_near(y, want);
}

// int8 activations with zero point 0 and symmetric per-channel weights (max |w| = 127):
// the pattern the CPU runs on oneDNN's 8-bit kernels.
TEST(ExpandQuantized, QLinearConvInt8SymmetricRunsOnEightBitKernels) {
  ConvGeom g;
  const float xs = 0.03f, ys = 0.06f;
  const std::vector<float> ws = {0.01f, 0.004f, 0.02f, 0.015f};
  auto w = codes(static_cast<size_t>(g.m * g.c * g.k * g.k), 4, -126, 126);
  const int64_t per = g.c * g.k * g.k;
  for (int64_t m = 0; m < g.m; ++m) w[static_cast<size_t>(m * per + m)] = m % 2 ? -127 : 127;
  ModelBuilder b(13);
  b.input("x", kFloat, {g.n, g.c, g.h, g.w});
  b.initializer("xs", {}, {xs});
  int_initializer(b, "z8", kInt8, {}, {0});
  int_initializer(b, "w", kInt8, {g.m, g.c, g.k, g.k}, w);
  b.initializer("ws", {g.m}, ws);
  int_initializer(b, "wz", kInt8, {g.m}, {0, 0, 0, 0});
  b.initializer("ys", {}, {ys});
  b.node("QuantizeLinear", {"x", "xs", "z8"}, {"xq"});
  conv_attrs(b.node("QLinearConv", {"xq", "xs", "z8", "w", "ws", "wz", "ys", "z8"}, {"yq"}), g);
  b.node("DequantizeLinear", {"yq", "ys", "z8"}, {"y"});
  b.output("y", kFloat, {g.n, g.m, g.oh(), g.ow()});

  Tensor xf = ramp({g.n, g.c, g.h, g.w}, 0.61f, 0.3f);
  std::vector<int64_t> xq(static_cast<size_t>(xf.numel()));
  for (size_t i = 0; i < xq.size(); ++i) xq[i] = saturate(xf.data<float>()[i] / xs, -128, 127);
  std::vector<int64_t> acc = int_conv(g, xq, 0, w, {0, 0, 0, 0}), want(acc.size());
  const int64_t plane = g.oh() * g.ow();
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / plane) % g.m);
    want[i] = saturate(static_cast<double>(acc[i]) * xs * ws[m] / ys, -128, 127);
  }
  auto e = Engine::from_bytes(b.bytes(), {});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_NE((*e)->graph_text().find("int8 in("), std::string::npos) << (*e)->graph_text();
  auto r = (*e)->create_context()->run({{"x", xf}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> y = r->at("y").to_floats();
  std::vector<int64_t> got(y.size());
  for (size_t i = 0; i < y.size(); ++i) got[i] = std::lround(y[i] / ys);
  if (dnnl_cpu::int8_has_vnni()) {
    expect_codes_near(Tensor::from_int64s({static_cast<int64_t>(got.size())}, got), want);
    return;
  }
  // Without VNNI oneDNN halves the weights' codes against 16-bit overflow (7-bit weights):
  // close, not within a step.
  std::vector<float> gf(got.begin(), got.end()), wf(want.begin(), want.end());
  const Shape shape = {static_cast<int64_t>(gf.size())};
  EXPECT_LE(relative_l2(Tensor::from_floats(shape, gf), Tensor::from_floats(shape, wf)), 3e-2);
}

TEST(ExpandQuantized, ConvIntegerAndMatMulIntegerGiveTheExactSums) {
  ConvGeom g;
  const int64_t xz = 120;
  const std::vector<int64_t> wz = {3, -2, 0, 5};
  const auto x = codes(static_cast<size_t>(g.n * g.c * g.h * g.w), 5, 0, 255);
  const auto w = codes(static_cast<size_t>(g.m * g.c * g.k * g.k), 6, -128, 127);
  const auto a = codes(3 * 5, 7, 0, 255), bm = codes(5 * 4, 8, -128, 127);
  const std::vector<int64_t> bz = {1, 0, -4, 2};
  ModelBuilder b(13);
  b.input("x", kUInt8, {g.n, g.c, g.h, g.w});
  b.input("a", kUInt8, {3, 5});
  int_initializer(b, "xz", kUInt8, {}, {xz});
  int_initializer(b, "w", kInt8, {g.m, g.c, g.k, g.k}, w);
  int_initializer(b, "wz", kInt8, {g.m}, wz);
  int_initializer(b, "bm", kInt8, {5, 4}, bm);
  int_initializer(b, "bz", kInt8, {4}, bz);
  conv_attrs(b.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}), g);
  b.node("MatMulInteger", {"a", "bm", "", "bz"}, {"p"});
  b.output("y", kInt32, {g.n, g.m, g.oh(), g.ow()});
  b.output("p", kInt32, {3, 4});

  auto e = Engine::from_bytes(b.bytes(), {});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto r =
      (*e)->create_context()->run({{"x", int_tensor(DataType::kUInt8, {g.n, g.c, g.h, g.w}, x)},
                                   {"a", int_tensor(DataType::kUInt8, {3, 5}, a)}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->at("y").dtype(), DataType::kInt32);
  EXPECT_EQ(r->at("y").to_int64s(), int_conv(g, x, xz, w, wz));
  std::vector<int64_t> p(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) p[i * 4 + j] += a[i * 5 + k] * (bm[k * 4 + j] - bz[j]);
  EXPECT_EQ(r->at("p").to_int64s(), p);
}

// DynamicQuantizeLinear's definition: scale = (max(0, max x) − min(0, min x)) / 255, zero
// point = saturate(round(−min(0, min x) / scale)), y = saturate(round(x / scale) + zero point).
TEST(ExpandQuantized, DynamicQuantizeLinearAsDefined) {
  for (const float offset : {-0.4f, 2.5f, -3.f}) {
    ModelBuilder b(13);
    b.input("x", kFloat, {3, 7});
    b.node("DynamicQuantizeLinear", {"x"}, {"y", "ys", "yz"});
    b.output("y", kUInt8, {3, 7});
    b.output("ys", kFloat, {});
    b.output("yz", kUInt8, {});
    const Tensor x = ramp({3, 7}, 0.9f, offset);
    const std::vector<float> v = x.to_floats();
    const float hi = std::max(0.f, *std::max_element(v.begin(), v.end()));
    const float lo = std::min(0.f, *std::min_element(v.begin(), v.end()));
    const float s = (hi - lo) / 255.f;
    const int64_t z = saturate(-lo / s, 0, 255);
    auto e = Engine::from_bytes(b.bytes(), {});
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    auto r = (*e)->create_context()->run({{"x", x}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_FLOAT_EQ(r->at("ys").to_floats()[0], s) << "offset " << offset;
    EXPECT_EQ(r->at("yz").to_int64s()[0], z) << "offset " << offset;
    const std::vector<int64_t> y = r->at("y").to_int64s();
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(y[i], saturate(v[i] / s + z, 0, 255)) << "element " << i;
  }
}

// ONNX Runtime's com.microsoft forms: each dequantizes, computes in float, quantizes.
TEST(ExpandQuantized, MicrosoftQLinearOpsAsFloatBetweenQuantization) {
  ModelBuilder b(13);
  import_microsoft_domain(b);
  b.input("a", kUInt8, {1, 2, 3, 4});
  b.input("c", kUInt8, {1, 2, 3, 4});
  b.initializer("s1", {}, {0.02f});
  b.initializer("s2", {}, {0.03f});
  b.initializer("s3", {}, {0.01f});
  int_initializer(b, "z1", kUInt8, {}, {128});
  int_initializer(b, "z2", kUInt8, {}, {100});
  int_initializer(b, "z3", kUInt8, {}, {0});
  b.node("QLinearAdd", {"a", "s1", "z1", "c", "s2", "z2", "s1", "z1"}, {"sum"})
      .set_domain("com.microsoft");
  b.node("QLinearSigmoid", {"sum", "s1", "z1", "s3", "z3"}, {"sig"}).set_domain("com.microsoft");
  auto& concat = b.node("QLinearConcat", {"s2", "z2", "sig", "s3", "z3", "a", "s1", "z1"}, {"cat"});
  concat.set_domain("com.microsoft");
  add_attr(concat, "axis", int64_t{1});
  b.node("QLinearGlobalAveragePool", {"cat", "s2", "z2", "s3", "z3"}, {"gap"})
      .set_domain("com.microsoft");
  b.output("cat", kUInt8, {1, 4, 3, 4});
  b.output("gap", kUInt8, {1, 4, 1, 1});

  const auto av = codes(24, 9, 0, 255), cv = codes(24, 10, 0, 255);
  auto dq = [](int64_t q, float s, int64_t z) { return static_cast<float>(q - z) * s; };
  auto q = [](float v, float s, int64_t z) { return saturate(v / s + z, 0, 255); };
  std::vector<int64_t> cat(48), gap(4);
  for (int i = 0; i < 24; ++i) {
    const int64_t sum = q(dq(av[i], 0.02f, 128) + dq(cv[i], 0.03f, 100), 0.02f, 128);
    const int64_t sig = q(1.f / (1.f + std::exp(-dq(sum, 0.02f, 128))), 0.01f, 0);
    cat[i] = q(dq(sig, 0.01f, 0), 0.03f, 100);
    cat[24 + i] = q(dq(av[i], 0.02f, 128), 0.03f, 100);
  }
  for (int c = 0; c < 4; ++c) {
    float mean = 0;
    for (int i = 0; i < 12; ++i) mean += dq(cat[c * 12 + i], 0.03f, 100) / 12.f;
    gap[c] = q(mean, 0.01f, 0);
  }
  auto e = Engine::from_bytes(b.bytes(), {});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto r = (*e)->create_context()->run({{"a", int_tensor(DataType::kUInt8, {1, 2, 3, 4}, av)},
                                        {"c", int_tensor(DataType::kUInt8, {1, 2, 3, 4}, cv)}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_codes_near(r->at("cat"), cat);
  expect_codes_near(r->at("gap"), gap);
}

// b's scales per column (its last axis), as ONNX Runtime's per-channel MatMul writes them.
TEST(ExpandQuantized, QLinearMatMulPerColumnWeights) {
  const auto a = codes(2 * 6, 11, 0, 255), w = codes(6 * 3, 12, -127, 127);
  const std::vector<float> bs = {0.02f, 0.05f, 0.01f};
  ModelBuilder b(13);
  b.input("a", kUInt8, {2, 6});
  b.initializer("as", {}, {0.04f});
  int_initializer(b, "az", kUInt8, {}, {110});
  int_initializer(b, "w", kInt8, {6, 3}, w);
  b.initializer("bs", {3}, bs);
  int_initializer(b, "bz", kInt8, {3}, {0, 0, 0});
  b.initializer("ys", {}, {0.5f});
  int_initializer(b, "yz", kUInt8, {}, {128});
  b.node("QLinearMatMul", {"a", "as", "az", "w", "bs", "bz", "ys", "yz"}, {"y"});
  b.output("y", kUInt8, {2, 3});
  std::vector<int64_t> want(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      int64_t acc = 0;
      for (int k = 0; k < 6; ++k) acc += (a[i * 6 + k] - 110) * w[k * 3 + j];
      want[i * 3 + j] = saturate(static_cast<double>(acc) * 0.04 * bs[j] / 0.5 + 128, 0, 255);
    }
  expect_codes_near(run_model(b, {{"a", int_tensor(DataType::kUInt8, {2, 6}, a)}}, "y"), want);
}

TEST(ExpandQuantized, FormsItCannotRunAreRefusedByName) {
  ModelBuilder b(13);
  import_microsoft_domain(b);
  b.input("x", kUInt8, {1, 3, 4, 4});
  b.initializer("s", {}, {0.1f});
  int_initializer(b, "z", kUInt8, {}, {0});
  auto& n = b.node("QLinearGlobalAveragePool", {"x", "s", "z", "s", "z"}, {"y"}, "pool7");
  n.set_domain("com.microsoft");
  add_attr(n, "channels_last", int64_t{1});
  b.output("y", kUInt8, {1, 1, 1, 3});
  auto e = Engine::from_bytes(b.bytes(), {});
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("pool7"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("channels_last"), std::string::npos);

  ModelBuilder other(13);
  import_microsoft_domain(other);
  other.input("x", kFloat, {1, 3});
  other.node("FusedGemm", {"x", "x"}, {"y"}, "fg").set_domain("com.microsoft");
  other.output("y", kFloat, {1, 3});
  auto e2 = Engine::from_bytes(other.bytes(), {});
  ASSERT_FALSE(e2.is_ok());
  EXPECT_NE(e2.status().message().find("FusedGemm"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
