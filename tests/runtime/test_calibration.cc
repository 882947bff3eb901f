// Calibration (kiln/calibration.h) and int8 engines on the CPU: the magnitudes calibrate()
// finds against the values an fp32 run computes, the cache round trip and its refusals, the
// sample sources (.npy, a directory of images) and their bad inputs, and plan files.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kiln/calibration.h"
#include "kiln/images.h"
#include "kiln/tensor_io.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// x [N,3,8,6] → Conv 3×3 (4 filters) → Relu "r" → Conv 1×1 (2 filters) → y [N,2,6,4]; the
// first conv's weights drawn with `seed`.
std::string two_conv_model(uint32_t seed = 1) {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", 3, 8, 6});
  m.initializer("w1", {4, 3, 3, 3}, uniform_floats(108, seed, -0.5f, 0.5f));
  m.initializer("b1", {4}, uniform_floats(4, 2, -0.1f, 0.1f));
  m.initializer("w2", {2, 4, 1, 1}, uniform_floats(8, 3, -1.f, 1.f));
  m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  m.node("Relu", {"c1"}, {"r"}, "relu1");
  m.node("Conv", {"r", "w2"}, {"y"}, "conv2");
  m.output("y", kFloat, {"N", 2, 6, 4});
  return m.bytes();
}

// 20 samples, with one large value so min-max and the other methods differ.
Tensor samples() {
  std::vector<float> v = uniform_floats(20 * 3 * 8 * 6, 4, -1.f, 1.f);
  v[77] = 6.f;
  return Tensor::from_floats({20, 3, 8, 6}, v);
}

EngineOptions int8_options(const std::string& data, const std::string& cache,
                           const std::string& method = "minmax") {
  EngineOptions o;
  o.precision = Precision::kInt8;
  o.calibration_data = data;
  o.calibration_cache = cache;
  o.calibration_method = method;
  o.calibration_batch = 6;  // 20 samples: batches of 6, 6, 6, 2
  return o;
}

// The largest |value| of `name` over the samples, run through an fp32 engine.
double fp32_max(const std::string& model, const Tensor& x, const std::string& name) {
  auto e = Engine::from_bytes(model, {});
  EXPECT_TRUE(e.is_ok());
  auto ctx = (*e)->create_context();
  auto stats = ctx->value_stats({{"x", x}});
  EXPECT_TRUE(stats.is_ok());
  for (const ValueStats& s : *stats)
    if (s.value == name) return s.max_abs;
  ADD_FAILURE() << "no value " << name;
  return -1;
}

TEST(Calibration, MinMaxFindsTheLargestMagnitudeOfEachLayerInput) {
  TempDir dir;
  const std::string model = two_conv_model();
  const Tensor x = samples();
  ASSERT_TRUE(write_npy(dir.file("x.npy"), x).is_ok());
  auto e = Engine::from_bytes(model, int8_options(dir.file("x.npy"), dir.file("c.calib")));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const QuantizationReport& q = (*e)->report().quantization;
  EXPECT_EQ(q.method, "minmax");
  EXPECT_EQ(q.samples, 20);
  EXPECT_NE(q.source.find("calibrated on 20 samples"), std::string::npos) << q.source;
  ASSERT_EQ(q.layers.size(), 2u);
  EXPECT_EQ(q.layers[0].input, "x");
  EXPECT_EQ(q.layers[0].amax, 6.0);
  EXPECT_EQ(q.layers[1].input, "r");
  EXPECT_NEAR(q.layers[1].amax, fp32_max(model, x, "r"), 1e-6);
  EXPECT_TRUE(q.float_layers.empty());
  EXPECT_EQ((*e)->options().precision, Precision::kInt8);
  // The plan records each 8-bit value's scale with its slot.
  auto planned = (*e)->create_context();
  ASSERT_TRUE(
      planned->run({{"x", Tensor::from_floats({1, 3, 8, 6}, uniform_floats(144, 8, -1, 1))}})
          .is_ok());
  auto info = planned->plan();
  ASSERT_TRUE(info.is_ok());
  EXPECT_NE(info->text().find(" q(scale 0.04724409"), std::string::npos)
      << info->text();  // 6 / 127

  // The int8 engine's answer: near fp32's, not equal to it.
  auto fp32 = Engine::from_bytes(model, {});
  ASSERT_TRUE(fp32.is_ok());
  const Tensor one = Tensor::from_floats({1, 3, 8, 6}, uniform_floats(144, 9, -1.f, 1.f));
  auto a = (*e)->create_context()->run({{"x", one}});
  auto b = (*fp32)->create_context()->run({{"x", one}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  double num = 0, den = 0;
  for (int64_t k = 0; k < b->at("y").numel(); ++k) {
    const double d = a->at("y").data<float>()[k] - b->at("y").data<float>()[k];
    num += d * d;
    den += std::pow(b->at("y").data<float>()[k], 2);
  }
  const double rel = std::sqrt(num / den);
  EXPECT_GT(rel, 1e-5);
  EXPECT_LT(rel, 0.1);
}

TEST(Calibration, TheCacheIsReusedWithoutSamplesAndRefusedForAnotherMethod) {
  TempDir dir;
  const std::string model = two_conv_model();
  ASSERT_TRUE(write_npy(dir.file("x.npy"), samples()).is_ok());
  auto first = Engine::from_bytes(model, int8_options(dir.file("x.npy"), dir.file("c.calib")));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  auto again = Engine::from_bytes(model, int8_options("", dir.file("c.calib")));
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  const QuantizationReport& q = (*again)->report().quantization;
  EXPECT_EQ(q.source, "cache " + dir.file("c.calib"));
  ASSERT_EQ(q.layers.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(q.layers[i].amax, (*first)->report().quantization.layers[i].amax,
                1e-6 * q.layers[i].amax);

  auto other = Engine::from_bytes(model, int8_options("", dir.file("c.calib"), "entropy"));
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("minmax"), std::string::npos)
      << other.status().to_string();

  // Another model (other weights): refused too.
  auto foreign = Engine::from_bytes(two_conv_model(11), int8_options("", dir.file("c.calib")));
  ASSERT_FALSE(foreign.is_ok());
  EXPECT_NE(foreign.status().message().find("model"), std::string::npos)
      << foreign.status().to_string();

  // A truncated cache.
  dir.write("cut.calib", "kiln-calibration 1\nmethod minmax\n");
  auto cut = Engine::from_bytes(model, int8_options("", dir.file("cut.calib")));
  EXPECT_FALSE(cut.is_ok());
}

TEST(Calibration, NoSamplesAndNoCacheIsAClearError) {
  auto e = Engine::from_bytes(two_conv_model(), int8_options("", ""));
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("--calib"), std::string::npos) << e.status().to_string();
  TempDir dir;
  auto missing = Engine::from_bytes(two_conv_model(), int8_options("", dir.file("none.calib")));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);
}

TEST(Calibration, BadNpySamplesAreNamed) {
  TempDir dir;
  const std::string model = two_conv_model();
  ASSERT_TRUE(write_npy(dir.file("shape.npy"),
                        Tensor::from_floats({2, 3, 8, 5}, uniform_floats(240, 1, 0, 1)))
                  .is_ok());
  auto shape = Engine::from_bytes(model, int8_options(dir.file("shape.npy"), ""));
  ASSERT_FALSE(shape.is_ok());
  EXPECT_NE(shape.status().message().find("dimension 3 is 5"), std::string::npos)
      << shape.status().to_string();
  ASSERT_TRUE(write_npy(dir.file("ints.npy"),
                        Tensor::from_int64s({1, 3, 8, 6}, std::vector<int64_t>(144, 1)))
                  .is_ok());
  auto ints = Engine::from_bytes(model, int8_options(dir.file("ints.npy"), ""));
  ASSERT_FALSE(ints.is_ok());
  EXPECT_NE(ints.status().message().find("takes float32"), std::string::npos)
      << ints.status().to_string();
  dir.write("bad.npy", "not an npy file");
  EXPECT_FALSE(Engine::from_bytes(model, int8_options(dir.file("bad.npy"), "")).is_ok());
  auto none = Engine::from_bytes(model, int8_options(dir.file("absent.npy"), ""));
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no such file"), std::string::npos);
}

TEST(Calibration, EntropyAndPercentileClipBelowTheOutlier) {
  TempDir dir;
  ASSERT_TRUE(write_npy(dir.file("x.npy"), samples()).is_ok());
  for (const std::string method : {"entropy", "percentile=99"}) {
    SCOPED_TRACE(method);
    auto e = Engine::from_bytes(two_conv_model(), int8_options(dir.file("x.npy"), "", method));
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    const QuantizationReport& q = (*e)->report().quantization;
    EXPECT_EQ(q.method, method);
    ASSERT_EQ(q.layers.size(), 2u);
    EXPECT_LT(q.layers[0].amax, 6.0);  // the single 6 among 2880 values is clipped
    EXPECT_GT(q.layers[0].amax, 0.5);
  }
}

// One calibration for several methods: each method's magnitudes are those calibrate() finds
// with that method alone, and save_calibration writes a cache the engine of that method reads.
TEST(Calibration, MethodsFromOnePassEqualEachAlone) {
  TempDir dir;
  const std::string model = two_conv_model();
  ASSERT_TRUE(write_npy(dir.file("x.npy"), samples()).is_ok());
  auto fp32 = Engine::from_bytes(model, {});
  ASSERT_TRUE(fp32.is_ok());
  const std::vector<std::string> methods = {"entropy", "minmax", "percentile=99"};
  auto source = open_calibration_data(dir.file("x.npy"), **fp32);
  ASSERT_TRUE(source.is_ok()) << source.status().to_string();
  auto all = calibrate_methods(**fp32, **source, int8_options(dir.file("x.npy"), ""), methods);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 3u);
  for (size_t i = 0; i < methods.size(); ++i) {
    SCOPED_TRACE(methods[i]);
    EXPECT_EQ((*all)[i].method, methods[i]);
    EXPECT_EQ((*all)[i].samples, 20);
    auto one_source = open_calibration_data(dir.file("x.npy"), **fp32);
    ASSERT_TRUE(one_source.is_ok());
    auto alone = calibrate(**fp32, **one_source, int8_options(dir.file("x.npy"), "", methods[i]));
    ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
    EXPECT_EQ((*all)[i].amax, alone->amax);
    EngineOptions o = int8_options("", dir.file(std::to_string(i) + ".calib"), methods[i]);
    ASSERT_TRUE(save_calibration(**fp32, o, (*all)[i]).is_ok());
    EXPECT_EQ((*all)[i].cache, o.calibration_cache);
    auto e = Engine::from_bytes(model, o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    ASSERT_EQ((*e)->report().quantization.layers.size(), 2u);
    EXPECT_NEAR((*e)->report().quantization.layers[0].amax, (*all)[i].amax.at("x"),
                1e-6 * (*all)[i].amax.at("x"));
  }
  EXPECT_LT((*all)[0].amax.at("x"), 6.0);  // entropy clips the outlier, min-max keeps it
  EXPECT_EQ((*all)[1].amax.at("x"), 6.0);
  auto none = calibrate_methods(**fp32, **source, int8_options(dir.file("x.npy"), ""), {});
  EXPECT_FALSE(none.is_ok());
}

// Entropy takes min-max for a feature vector (one element per channel and sample: the pooled
// input of a Gemm), whose few large elements carry the signal; a map keeps entropy.
TEST(Calibration, EntropyTakesMinMaxForFeatureVectors) {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", 16, 4, 4});
  m.initializer("w", {3, 16}, uniform_floats(48, 2, -1.f, 1.f));
  m.node("GlobalAveragePool", {"x"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  add_attr(m.node("Gemm", {"f", "w"}, {"y"}, "fc"), "transB", int64_t{1});
  m.output("y", kFloat, {"N", 3});
  // Channel 0 is 50 everywhere, the others small: entropy would clip the 50s.
  std::vector<float> v = uniform_floats(64 * 16 * 16, 5, -0.5f, 0.5f);
  for (int n = 0; n < 64; ++n)
    for (int i = 0; i < 16; ++i) v[n * 256 + i] = 50.f;
  TempDir dir;
  ASSERT_TRUE(write_npy(dir.file("x.npy"), Tensor::from_floats({64, 16, 4, 4}, v)).is_ok());
  auto fp32 = Engine::from_bytes(m.bytes(), {});
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  auto source = open_calibration_data(dir.file("x.npy"), **fp32);
  ASSERT_TRUE(source.is_ok());
  auto r = calibrate(**fp32, **source, int8_options(dir.file("x.npy"), "", "entropy"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->minmax_values.size(), 1u);
  EXPECT_EQ(r->amax.at(r->minmax_values[0]), 50.0);
}

// A directory of images calibrates a model of one image input: each resized and normalized
// as `kiln run` does it; a corrupt one is skipped and counted; files of other kinds ignored.
TEST(Calibration, ImageDirectory) {
  TempDir dir;
  for (int i = 0; i < 5; ++i) {
    auto jpeg = encode_jpeg(photo_like_image(40 + 7 * i, 30, 100 + i));
    ASSERT_TRUE(jpeg.is_ok());
    dir.write("img" + std::to_string(i) + ".jpg", *jpeg);
  }
  dir.write("broken.jpg", "\xff\xd8\xff garbage");
  dir.write("notes.txt", "not an image");
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", 3, 16, 12});
  m.initializer("w", {2, 3, 3, 3}, uniform_floats(54, 1, -0.5f, 0.5f));
  m.node("Conv", {"x", "w"}, {"y"}, "conv");
  m.output("y", kFloat, {"N", 2, 14, 10});
  EngineOptions o = int8_options(dir.path().string(), "");
  auto e = Engine::from_bytes(m.bytes(), o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const QuantizationReport& q = (*e)->report().quantization;
  EXPECT_EQ(q.samples, 5);
  EXPECT_NE(q.source.find("1 unreadable, skipped"), std::string::npos) << q.source;
  ASSERT_EQ(q.layers.size(), 1u);
  // ImageNet normalization: |x| of 8-bit pixels lies within (1 - 0.406) / 0.225 = 2.64.
  EXPECT_GT(q.layers[0].amax, 1.0);
  EXPECT_LE(q.layers[0].amax, 2.65);

  TempDir broken;
  broken.write("a.jpg", "\xff\xd8\xff garbage");
  broken.write("b.png", "not a png");
  auto unreadable = Engine::from_bytes(m.bytes(), int8_options(broken.path().string(), ""));
  ASSERT_FALSE(unreadable.is_ok());
  EXPECT_NE(unreadable.status().message().find("(2 could not be read)"), std::string::npos)
      << unreadable.status().to_string();

  TempDir empty;
  auto none = Engine::from_bytes(m.bytes(), int8_options(empty.path().string(), ""));
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no .jpg"), std::string::npos);
}

// A program's own samples through a CalibrationSource, and a plan file that keeps the scales.
class Samples final : public CalibrationSource {
 public:
  explicit Samples(Tensor x) : x_(std::move(x)) {}
  Result<std::map<std::string, Tensor>> next(int max) override {
    const int64_t n = std::min<int64_t>(max, x_.shape()[0] - at_);
    if (n <= 0) return std::map<std::string, Tensor>{};
    const size_t row = x_.nbytes() / x_.shape()[0];
    Shape s = x_.shape();
    s[0] = n;
    Tensor t = Tensor::view_of(x_, row * at_, DataType::kFloat32, s);
    at_ += n;
    return std::map<std::string, Tensor>{{"x", t}};
  }
  Status rewind() override {
    at_ = 0;
    ++rewinds;
    return Status::ok();
  }
  std::string describe() const override { return "test samples"; }
  int rewinds = 0;

 private:
  Tensor x_;
  int64_t at_ = 0;
};

TEST(Calibration, ProgramSamplesThenAPlanFile) {
  TempDir dir;
  const std::string model_path = dir.file("m.onnx");
  dir.write("m.onnx", two_conv_model());
  auto fp32 = Engine::load(model_path, {});
  ASSERT_TRUE(fp32.is_ok());
  Samples source(samples());
  EngineOptions o = int8_options("", dir.file("p.calib"), "entropy");
  std::vector<CalibrationProgress> seen;
  auto r = calibrate(**fp32, source, o, [&](const CalibrationProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->samples, 20);
  EXPECT_EQ(r->cache, dir.file("p.calib"));
  EXPECT_EQ(source.rewinds, 2);  // two passes
  ASSERT_EQ(seen.size(), 8u);    // 4 batches a pass
  EXPECT_EQ(seen.back().pass, 2);
  EXPECT_EQ(seen.back().samples_done, 20);
  EXPECT_EQ(r->amax.size(), 2u);

  auto int8 = Engine::load(model_path, o);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
  ASSERT_TRUE((*int8)->save_plan(dir.file("m.kiln")).is_ok());
  std::filesystem::remove(dir.file("p.calib"));
  auto loaded = Engine::load(dir.file("m.kiln"), {});
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->options().precision, Precision::kInt8);
  EXPECT_EQ((*loaded)->report().quantization.source, "the engine's saved calibration");
  const Tensor one = Tensor::from_floats({2, 3, 8, 6}, uniform_floats(288, 5, -1.f, 1.f));
  auto a = (*int8)->create_context()->run({{"x", one}});
  auto b = (*loaded)->create_context()->run({{"x", one}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  for (int64_t k = 0; k < a->at("y").numel(); ++k)
    ASSERT_EQ(a->at("y").data<float>()[k], b->at("y").data<float>()[k]) << k;

  // Only an fp32 engine calibrates.
  auto wrong = calibrate(**int8, source, o);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("fp32"), std::string::npos);
}

TEST(Calibration, Int8IsAnEnginePrecisionOnly) {
  EngineOptions o;
  o.precision_overrides["conv1"] = Precision::kInt8;
  auto e = Engine::from_bytes(two_conv_model(), o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("int8 is an engine's precision"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
