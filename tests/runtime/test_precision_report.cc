// compare_precision (kiln/precision_report.h) on the CPU: an int8 engine's layers against
// fp32 (small, nonzero errors; a budget below them marks them), and a graph output the int8
// engine loses to zeros, reported.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "kiln/precision_report.h"
#include "kiln/tensor_io.h"
#include "onnx/onnx_test_util.h"
#include "runtime/precision_fallback.h"

namespace kiln::test {
namespace {

// x [N,3,8,6] → Conv 3×3 → Relu "r" → Conv 1×1 → y.
std::string model() {
  ModelBuilder m(13);
  m.input("x", kFloat, {"N", 3, 8, 6});
  m.initializer("w1", {4, 3, 3, 3}, uniform_floats(108, 1, -0.5f, 0.5f));
  m.initializer("w2", {2, 4, 1, 1}, uniform_floats(8, 3, -1.f, 1.f));
  m.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  m.node("Relu", {"c1"}, {"r"}, "relu1");
  m.node("Conv", {"r", "w2"}, {"y"}, "conv2");
  m.output("y", kFloat, {"N", 2, 6, 4});
  return m.bytes();
}

std::shared_ptr<Engine> int8_engine(const TempDir& dir, const Tensor& calibration) {
  EXPECT_TRUE(write_npy(dir.file("c.npy"), calibration).is_ok());
  EngineOptions o;
  o.precision = Precision::kInt8;
  o.calibration_data = dir.file("c.npy");
  o.calibration_method = "minmax";
  auto e = Engine::from_bytes(model(), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? *e : nullptr;
}

std::vector<std::map<std::string, Tensor>> samples(float scale) {
  return {{{"x", Tensor::from_floats({2, 3, 8, 6}, uniform_floats(288, 7, -scale, scale))}},
          {{"x", Tensor::from_floats({1, 3, 8, 6}, uniform_floats(144, 8, -scale, scale))}}};
}

TEST(PrecisionReport, Int8LayersAgainstFp32) {
  TempDir dir;
  auto int8 = int8_engine(dir, Tensor::from_floats({8, 3, 8, 6}, uniform_floats(1152, 4, -1, 1)));
  auto fp32 = Engine::from_bytes(model(), {});
  ASSERT_TRUE(int8 && fp32.is_ok());
  auto r = compare_precision(*int8, **fp32, samples(1.f));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->precision, "int8");
  EXPECT_EQ(r->samples, 2);
  std::map<std::string, LayerError> by_value;
  for (const LayerError& l : r->layers) by_value[l.value] = l;
  ASSERT_TRUE(by_value.count("r") && by_value.count("y"));
  for (const char* v : {"r", "y"}) {
    EXPECT_GT(by_value[v].relative_l2, 1e-4) << v;
    EXPECT_LT(by_value[v].relative_l2, 0.1) << v;
    EXPECT_GT(by_value[v].cosine, 0.99) << v;
  }
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_TRUE(r->lost.empty());
  // A budget below the errors marks the layers.
  auto strict = compare_precision(*int8, **fp32, samples(1.f), 1e-6);
  ASSERT_TRUE(strict.is_ok());
  for (const LayerError& l : strict->layers)
    if (l.value == "r" || l.value == "y") EXPECT_TRUE(l.over_budget) << l.value;
  EXPECT_FALSE(compare_precision(**fp32, *int8, samples(1.f)).is_ok());  // int8 as reference
  EXPECT_FALSE(compare_precision(*int8, **fp32, {}).is_ok());
}

// Calibrated on inputs a million times larger than the ones it then sees: every input
// quantizes to 0, the output is all zeros where fp32's is not. Said, never silent.
TEST(PrecisionReport, AnOutputLostToZerosIsReported) {
  TempDir dir;
  std::vector<float> huge = uniform_floats(1152, 4, -1e6f, 1e6f);
  auto int8 = int8_engine(dir, Tensor::from_floats({8, 3, 8, 6}, huge));
  auto fp32 = Engine::from_bytes(model(), {});
  ASSERT_TRUE(int8 && fp32.is_ok());
  auto r = compare_precision(*int8, **fp32, samples(1.f));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->lost.size(), 1u);
  EXPECT_NE(r->lost[0].find("output 'y' is all zeros in int8"), std::string::npos) << r->lost[0];
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_TRUE(r->outputs[0].over_budget);
}

// Fallback by measured error: under a budget below int8's error the first round keeps conv1
// (where the error comes in: its input is exact), not conv2, whose input is already off; the
// second round, conv1 now in fp32, keeps conv2; the third measures everything within budget.
// A budget above the errors keeps nothing.
TEST(PrecisionReport, KeepsLayersOverBudgetWhereTheErrorComesIn) {
  TempDir dir;
  ASSERT_TRUE(write_npy(dir.file("c.npy"),
                        Tensor::from_floats({8, 3, 8, 6}, uniform_floats(1152, 4, -1, 1)))
                  .is_ok());
  {
    std::ofstream f(dir.file("m.onnx"), std::ios::binary);
    f << model();
  }
  EngineOptions o;
  o.precision = Precision::kInt8;
  o.calibration_data = dir.file("c.npy");
  o.calibration_method = "minmax";
  o.calibration_cache = dir.file("m.calib");  // one calibration for every round
  auto fp32 = Engine::load(dir.file("m.onnx"), {});
  ASSERT_TRUE(fp32.is_ok());
  auto f = keep_layers_within_error(dir.file("m.onnx"), o, **fp32, samples(1.f), 1e-6);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->kept.size(), 2u);
  EXPECT_EQ(f->kept[0].rfind("conv1 (Conv): ", 0), 0u) << f->kept[0];
  EXPECT_NE(f->kept[0].find("round 1"), std::string::npos) << f->kept[0];
  EXPECT_EQ(f->kept[1].rfind("conv2 (Conv): ", 0), 0u) << f->kept[1];
  EXPECT_NE(f->kept[1].find("round 2"), std::string::npos) << f->kept[1];
  EXPECT_EQ(f->rounds, 3);
  EXPECT_EQ(f->overrides.size(), 2u);
  EXPECT_EQ(f->overrides.at("conv1"), Precision::kFp32);
  for (const LayerError& l : f->report.layers) EXPECT_FALSE(l.over_budget) << l.value;

  auto loose = keep_layers_within_error(dir.file("m.onnx"), o, **fp32, samples(1.f), 0.5);
  ASSERT_TRUE(loose.is_ok()) << loose.status().to_string();
  EXPECT_TRUE(loose->kept.empty());
  EXPECT_EQ(loose->rounds, 1);
  EXPECT_FALSE(keep_layers_within_error(dir.file("m.onnx"), {}, **fp32, samples(1.f), 0.1).is_ok());
}

// error_origins: the layers over budget whose inputs are within it (or not compared).
TEST(PrecisionReport, ErrorOriginsAreWhereTheErrorComesIn) {
  PrecisionReport r;
  r.max_layer_error = 0.05;
  auto layer = [&](const std::string& value, double error, std::vector<std::string> inputs) {
    LayerError l;
    l.value = value;
    l.node = value + "_node";
    l.relative_l2 = error;
    l.over_budget = error > r.max_layer_error;
    l.inputs = std::move(inputs);
    r.layers.push_back(l);
  };
  layer("a", 0.01, {"x"});       // within
  layer("b", 0.2, {"a"});        // over, its input within: an origin
  layer("c", 0.3, {"b"});        // over because b is
  layer("d", 0.1, {"a", "c"});   // one input over
  layer("e", 0.07, {"unseen"});  // an input not compared counts as within
  std::vector<LayerError> o = error_origins(r);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].value, "b");
  EXPECT_EQ(o[1].value, "e");
  r.layers.clear();
  EXPECT_TRUE(error_origins(r).empty());
}

// The nodes a fallback round keeps, on reports of its own: the origins; past an origin already
// kept, or one that does no rounding of its own, the nearest layers upstream that are not; for
// an 8-bit engine, the quantized layers only.
TEST(PrecisionFallback, NodesToKeepWalkUpstreamPastKeptAndExactLayers) {
  PrecisionReport r;
  r.max_layer_error = 0.01;
  auto layer = [&](const std::string& node, const std::string& op, double error,
                   std::vector<std::string> inputs) {
    LayerError l;
    l.value = node + "_out";
    l.node = node;
    l.op = op;
    l.relative_l2 = error;
    l.over_budget = error > r.max_layer_error;
    for (std::string& in : inputs) in += "_out";
    l.inputs = std::move(inputs);
    r.layers.push_back(l);
  };
  // conv1 → relu → pad → conv2 (over budget, its input within: the origin) → conv3.
  layer("conv1", "Conv", 0.008, {"x"});
  layer("relu", "Relu", 0.008, {"conv1"});
  layer("pad", "Pad", 0.008, {"relu"});
  layer("conv2", "Conv", 0.012, {"pad"});
  layer("conv3", "Conv", 0.02, {"conv2"});
  using Kept = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(nodes_to_keep(r, false, {}, {}), (Kept{{"conv2", "conv2"}}));
  // conv2 kept already and still over: its error is what its input carries. Pad and Relu
  // round nothing, so conv1 is kept, for conv2.
  const PrecisionMap kept = {{"conv2", Precision::kFp32}};
  EXPECT_EQ(nodes_to_keep(r, false, {}, kept), (Kept{{"conv1", "conv2"}}));
  // Everything upstream kept: nothing more to keep, and the rounds end.
  const PrecisionMap all = {{"conv1", Precision::kFp32}, {"conv2", Precision::kFp32}};
  EXPECT_TRUE(nodes_to_keep(r, false, {}, all).empty());
  // An 8-bit engine moves its quantized layers only: conv1 and conv3 here.
  EXPECT_EQ(nodes_to_keep(r, true, {"conv1", "conv3"}, {}), (Kept{{"conv1", "conv2"}}));
}

}  // namespace
}  // namespace kiln::test
