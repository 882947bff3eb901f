// Plan-file (de)serialization: round trip, and every kind of damage refused with an error
// naming what is wrong (no GPU needed: the device check is tested in the GPU tests).
#include <gtest/gtest.h>

#include "runtime/plan_file.h"

namespace kiln {
namespace {

PlanFile sample() {
  PlanFile p;
  p.kiln_version = kiln_version();
  p.device_tag = "NVIDIA H200 sm_90 cudnn 91400 cudart 13000";
  p.options.precision = Precision::kFp16;
  p.options.cudnn_conv_path = CudnnConvPath::kGraph;
  p.options.space_to_depth = SpaceToDepth::kOn;
  p.options.cuda_graph = true;
  p.options.workspace_limit = 123456;
  p.options.precision_overrides = {{"/stem/Conv", Precision::kFp32},
                                   {"odd:name=with=signs", Precision::kTf32}};
  p.options.shape_profiles = {{{"input", {1, 3, 224, 224}}, {"odd:name", {}}},
                              {{"input", {8, 3, 224, 224}}, {"odd:name", {0}}}};
  p.options.shape_ranges = {
      {"input", ShapeRange{{1, 3, 224, 224}, {8, 3, 224, 224}, {32, 3, 224, 224}}},
      {"odd:range", ShapeRange{{1}, {2}, {3}}}};
  p.options.only_profile_shapes = true;
  p.options.time_tactics = false;
  p.options.max_tactics = 3;
  p.options.max_tensor_bytes = 12345678;
  p.options.input_format = InputFormat::kUint8Nhwc;
  p.options.reuse_memory = false;
  p.options.input_mean = {0.5f, 0.25f, 0.125f};
  p.options.input_std = {0.2f};
  p.tactics = {{"conv|a", "7"}, {"gemm|b", "3 0.01"}};
  p.plans = {"0 cuda kernel Conv stem: %0 -> %1\n", std::string("binary\0plan", 11), ""};
  p.onnx_bytes = std::string("\x08\x07\x12\x00onnx\tbytes\n", 16);
  return p;
}

TEST(PlanFile, RoundTrip) {
  PlanFile p = sample();
  auto back = parse_plan(serialize_plan(p), "x.kiln");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->kiln_version, p.kiln_version);
  EXPECT_EQ(back->device_tag, p.device_tag);
  EXPECT_EQ(back->options.precision, Precision::kFp16);
  EXPECT_EQ(back->options.cudnn_conv_path, CudnnConvPath::kGraph);
  EXPECT_EQ(back->options.space_to_depth, SpaceToDepth::kOn);
  EXPECT_TRUE(back->options.cuda_graph);
  EXPECT_EQ(back->options.workspace_limit, 123456);
  EXPECT_EQ(back->options.precision_overrides, p.options.precision_overrides);
  EXPECT_EQ(back->options.shape_profiles, p.options.shape_profiles);
  ASSERT_EQ(back->options.shape_ranges.size(), 2u);
  for (const auto& [name, r] : p.options.shape_ranges) {
    ASSERT_TRUE(back->options.shape_ranges.count(name)) << name;
    const ShapeRange& b = back->options.shape_ranges.at(name);
    EXPECT_EQ(b.min, r.min);
    EXPECT_EQ(b.opt, r.opt);
    EXPECT_EQ(b.max, r.max);
  }
  EXPECT_TRUE(back->options.only_profile_shapes);
  EXPECT_FALSE(back->options.time_tactics);
  EXPECT_EQ(back->options.max_tactics, 3);
  EXPECT_EQ(back->options.max_tensor_bytes, 12345678);
  EXPECT_EQ(back->options.input_format, InputFormat::kUint8Nhwc);
  EXPECT_FALSE(back->options.reuse_memory);
  EXPECT_EQ(back->options.input_mean, p.options.input_mean);
  EXPECT_EQ(back->options.input_std, p.options.input_std);
  EXPECT_EQ(back->tactics, p.tactics);
  EXPECT_EQ(back->plans, p.plans);
  EXPECT_EQ(back->onnx_bytes, p.onnx_bytes);
}

TEST(PlanFile, EveryFlippedByteIsRefused) {
  std::string bytes = serialize_plan(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] ^= 0x01;
    auto r = parse_plan(b, "x.kiln");
    EXPECT_FALSE(r.is_ok()) << "byte " << i;
  }
}

TEST(PlanFile, TruncationsAreRefused) {
  std::string bytes = serialize_plan(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = parse_plan(bytes.substr(0, n), "x.kiln");
    ASSERT_FALSE(r.is_ok()) << "length " << n;
    EXPECT_NE(r.status().message().find("x.kiln"), std::string::npos);
  }
}

TEST(PlanFile, OtherKilnVersionIsRefused) {
  PlanFile p = sample();
  p.kiln_version = "0.0.0-other";
  auto r = parse_plan(serialize_plan(p), "old.kiln");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("built by kiln 0.0.0-other"), std::string::npos)
      << r.status().message();
}

TEST(PlanFile, NotAPlan) {
  auto r = parse_plan("hello, this is not a plan at all", "x.kiln");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("not a kiln plan"), std::string::npos);
}

}  // namespace
}  // namespace kiln
