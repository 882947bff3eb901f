// Calibration caches: round trips in kiln's and TensorRT's formats, and refusals that name
// what is wrong (truncated, foreign, another model, input or method, unknown tensor names).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "quant/calibration_cache.h"

namespace kiln::quant {
namespace {

CalibrationTable sample_table() {
  CalibrationTable t;
  t.method = "entropy";
  t.model = "3f0c5e1a9b7d2c44";
  t.inputs = "data:float32[8,3,224,224]";
  t.samples = 512;
  t.amax = {{"conv1_out", 2.640136719}, {"onnx::Relu_12", 11.5}, {"with space", 0.0}};
  return t;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

void expect_refused(const std::string& text, const std::string& words) {
  auto r = parse_calibration_cache(text, "c.cache");
  ASSERT_FALSE(r.is_ok()) << text;
  EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
}

TEST(CalibrationCache, KilnRoundTrip) {
  const CalibrationTable t = sample_table();
  const std::string path = temp_path("kiln_calib_roundtrip.cache");
  ASSERT_TRUE(write_calibration_cache(path, t, CacheFormat::kKiln).is_ok());
  auto r = read_calibration_cache(path);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->format, CacheFormat::kKiln);
  EXPECT_EQ(r->method, t.method);
  EXPECT_EQ(r->model, t.model);
  EXPECT_EQ(r->inputs, t.inputs);
  EXPECT_EQ(r->samples, 512);
  ASSERT_EQ(r->amax.size(), 3u);
  for (const auto& [name, amax] : t.amax) EXPECT_NEAR(r->amax.at(name), amax, 1e-8 * amax);
  std::filesystem::remove(path);
}

TEST(CalibrationCache, TensorRTRoundTripAndItsBits) {
  // 3c010204 is the float32 1/127: the scale of amax 1.
  auto r = parse_calibration_cache(
      "TRT-8601-EntropyCalibration2\nimages: 3c010204\n"
      "onnx::Conv_168: 3dc6cf6e\n",
      "c.cache");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->format, CacheFormat::kTensorRT);
  EXPECT_EQ(r->method, "entropy");
  EXPECT_NEAR(r->amax.at("images"), 1.0, 1e-6);
  EXPECT_NEAR(r->amax.at("onnx::Conv_168"), 12.3285667, 1e-6);
  const std::string text = to_tensorrt_text(*r);
  EXPECT_EQ(text, "TRT-8601-EntropyCalibration2\nimages: 3c010204\nonnx::Conv_168: 3dc6cf6e\n");
  CalibrationTable minmax = *r;
  minmax.method = "minmax";
  EXPECT_EQ(to_tensorrt_text(minmax).substr(0, 26), "TRT-8601-MinMaxCalibration");
  auto back = parse_calibration_cache(to_tensorrt_text(minmax), "c.cache");
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->method, "minmax");
}

TEST(CalibrationCache, RefusesTruncatedAndForeignFiles) {
  const std::string full = to_kiln_text(sample_table());
  expect_refused(full.substr(0, full.size() - 4), "truncated");
  expect_refused(full.substr(0, full.find("value 11.5")) + "end\n",
                 "declares 3 values but holds 1");
  expect_refused("", "empty");
  expect_refused("PK\x03\x04 zip archive", "neither a kiln cache");
  expect_refused("kiln-calibration 2\n", "unsupported version");
  expect_refused("TRT-8601-MagicCalibration\nx: 3c010a14\n", "unknown TensorRT calibrator");
  expect_refused("TRT-8601-EntropyCalibration2\nx: 3c01\n", "8 hex digits");
  expect_refused("TRT-8601-EntropyCalibration2\nx: 7fc00000\n", "not a finite");
  expect_refused("TRT-8601-EntropyCalibration2\nx: 3c010a14\nx: 3c010a14\n", "given twice");
  std::string bad_value = full;
  bad_value.replace(bad_value.find("value 11.5"), 10, "value nan");
  expect_refused(bad_value, "expected 'value <amax> <name>'");
  expect_refused(full + "extra\n", "text after 'end'");
  std::string unknown = full;
  unknown.insert(unknown.find("samples"), "colour blue\n");
  expect_refused(unknown, "unknown entry 'colour'");
  auto missing = read_calibration_cache(temp_path("kiln_no_such.cache"));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::string binary = temp_path("kiln_calib_binary.cache");
  std::ofstream(binary, std::ios::binary) << std::string("kiln-calibration 1\n\0\0", 21);
  auto nul = read_calibration_cache(binary);
  ASSERT_FALSE(nul.is_ok());
  EXPECT_NE(nul.status().message().find("NUL"), std::string::npos);
  std::filesystem::remove(binary);
}

TEST(CalibrationCache, NamesEveryDifference) {
  const CalibrationTable cache = sample_table();
  const std::vector<std::string> values = {"conv1_out", "onnx::Relu_12", "with space"};
  EXPECT_TRUE(check_cache_matches(cache, cache, values).is_ok());
  CalibrationTable other = cache;
  other.method = "minmax";
  other.model = "0000000000000000";
  other.inputs = "data:float32[1,3,224,224]";
  Status s = check_cache_matches(cache, other, values);
  ASSERT_FALSE(s.is_ok());
  for (const char* words : {"method 'entropy', this build asks for 'minmax'", "another model",
                            "inputs 'data:float32[8,3,224,224]'"})
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  Status lacks = check_cache_matches(cache, cache, {"conv1_out", "fc_out"});
  ASSERT_FALSE(lacks.is_ok());
  EXPECT_NE(lacks.message().find("no scale for 1 value(s) of this graph: 'fc_out'"),
            std::string::npos)
      << lacks.message();
}

TEST(CalibrationCache, TensorRTNamesMustMatchTheGraph) {
  auto trt = parse_calibration_cache(
      "TRT-8601-EntropyCalibration2\nimages: 3c010a14\n"
      "old_name: 3c010a14\n",
      "c.cache");
  ASSERT_TRUE(trt.is_ok());
  CalibrationTable expected;
  expected.method = "entropy";
  expected.model = "anything";  // a TensorRT cache records no model: not compared
  Status s = check_cache_matches(*trt, expected, {"images", "conv_out"});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("no scale for 1 value(s) of this graph: 'conv_out'"),
            std::string::npos);
  EXPECT_NE(s.message().find("names 1 tensor(s) this graph lacks: 'old_name'"), std::string::npos);
  EXPECT_TRUE(check_cache_matches(*trt, expected, {"images", "old_name"}).is_ok());
  expected.method = "minmax";
  EXPECT_FALSE(check_cache_matches(*trt, expected, {"images", "old_name"}).is_ok());
}

}  // namespace
}  // namespace kiln::quant
