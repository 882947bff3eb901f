// Whole small graphs on the GPU whose shapes are computed in the graph (Shape → Gather →
// Concat → Reshape, as PyTorch exports ShuffleNetV2's channel shuffle and as converters
// write flatten/reshape): the plan resolves them at build time, so nothing runs on the CPU,
// and fp16 plans accept them. Also the form models converted from other frameworks take:
// opset 11, weights as Constant nodes, every dimension symbolic, intermediate values
// declared with an empty shape. Activation memory is poisoned before every run.
#include <gtest/gtest.h>

#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// A Constant node holding float32 `values` of shape `dims`, named `out`.
void constant_node(ModelBuilder& b, const std::string& out, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(out);
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  add_attr(b.node("Constant", {}, {out}, out + "_node"), "value", t);
}

// x [N,8,H,W] → 1×1 Conv + Relu → channel shuffle (groups 2) with every shape computed from
// Shape(x) → depthwise 3×3 Conv → BatchNormalization → Relu → y [N,8,H,W].
ModelBuilder channel_shuffle_model() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, "H", "W"});
  b.initializer("conv1_w", {8, 8, 1, 1}, random_floats(64, 1, 0.4f));
  b.initializer("conv1_b", {8}, random_floats(8, 2, 0.1f));
  b.initializer("dw_w", {8, 1, 3, 3}, random_floats(72, 3, 0.3f));
  b.node("Conv", {"x", "conv1_w", "conv1_b"}, {"c1"}, "conv1");
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Shape", {"r1"}, {"s"}, "shape");
  const char* names[] = {"n", "c", "h", "w"};
  for (int i = 0; i < 4; ++i) {
    b.initializer_ints(std::string("i") + names[i], {}, {i});
    b.node("Gather", {"s", std::string("i") + names[i]}, {names[i]}, std::string("g") + names[i]);
  }
  b.initializer_ints("two", {}, {2});
  b.initializer_ints("two1", {1}, {2});
  b.initializer_ints("minus1", {1}, {-1});
  b.initializer_ints("axes0", {1}, {0});
  b.node("Div", {"c", "two"}, {"half"}, "div");
  for (const char* v : {"n", "half", "h", "w"})
    b.node("Unsqueeze", {v, "axes0"}, {std::string(v) + "1"}, std::string("unsq_") + v);
  add_attr(b.node("Concat", {"n1", "two1", "half1", "h1", "w1"}, {"s5"}, "concat5"), "axis",
           int64_t{0});
  b.node("Reshape", {"r1", "s5"}, {"r5"}, "reshape5");
  add_attr(b.node("Transpose", {"r5"}, {"t5"}, "transpose"), "perm",
           std::vector<int64_t>{0, 2, 1, 3, 4});
  add_attr(b.node("Concat", {"n1", "minus1", "h1", "w1"}, {"s4"}, "concat4"), "axis", int64_t{0});
  b.node("Reshape", {"t5", "s4"}, {"shuffled"}, "reshape4");
  auto& dw = b.node("Conv", {"shuffled", "dw_w"}, {"d"}, "depthwise");
  add_attr(dw, "group", int64_t{8});
  add_attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  // BatchNormalization + Relu after it, as ShuffleNetV2's branches have: the values after a
  // Reshape to a computed shape must stay typed for BatchNorm folding and fusion.
  b.initializer("bn_scale", {8}, random_floats(8, 8, 0.2f));
  b.initializer("bn_bias", {8}, random_floats(8, 9, 0.2f));
  b.initializer("bn_mean", {8}, random_floats(8, 10, 0.1f));
  std::vector<float> var = random_floats(8, 11, 0.1f);
  for (float& v : var) v = 0.5f + v * v;
  b.initializer("bn_var", {8}, var);
  b.node("BatchNormalization", {"d", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"bn"}, "bn");
  b.node("Relu", {"bn"}, {"y"}, "relu2");
  b.output("y", kFloat, {"N", 8, "H", "W"});
  return b;
}

// Opset 11 as converters write it: x [N,3,H,W] (all symbolic) → Conv (Constant-node weight
// and bias) → Relu → Add of a Constant [1,6,1,1] → Mul by a Constant scalar → Reshape to
// [N,6,-1] (shape from Shape(x)[0:1]) → Transpose → MatMul with a Constant [6,5] → y
// [N,H*W,5]. Intermediates are declared in value_info with an empty shape ("rank unknown").
ModelBuilder converted_model() {
  ModelBuilder b(11);
  b.input("x", kFloat, {"N", "C", "H", "W"});
  constant_node(b, "w", {6, 3, 3, 3}, random_floats(162, 4, 0.3f));
  constant_node(b, "bias", {6}, random_floats(6, 5, 0.1f));
  constant_node(b, "shift", {1, 6, 1, 1}, random_floats(6, 6, 0.5f));
  constant_node(b, "scale", {}, {0.75f});
  constant_node(b, "proj", {6, 5}, random_floats(30, 7, 0.4f));
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  add_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu");
  b.node("Add", {"r", "shift"}, {"a"}, "add");
  b.node("Mul", {"a", "scale"}, {"m"}, "mul");
  b.node("Shape", {"m"}, {"s"}, "shape");
  b.initializer_ints("starts", {1}, {0});
  b.initializer_ints("ends", {1}, {1});
  b.node("Slice", {"s", "starts", "ends"}, {"n"}, "slice");
  b.initializer_ints("rest", {2}, {6, -1});
  add_attr(b.node("Concat", {"n", "rest"}, {"s3"}, "concat"), "axis", int64_t{0});
  b.node("Reshape", {"m", "s3"}, {"flat"}, "reshape");
  add_attr(b.node("Transpose", {"flat"}, {"t"}, "transpose"), "perm",
           std::vector<int64_t>{0, 2, 1});
  b.node("MatMul", {"t", "proj"}, {"y"}, "matmul");
  for (const char* v : {"c", "r", "a", "m", "flat", "t"}) {
    auto* vi = b.graph().add_value_info();
    vi->set_name(v);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    vi->mutable_type()->mutable_tensor_type()->mutable_shape();  // present, no dims
  }
  b.output_any("y", kFloat, 3);
  return b;
}

struct Run {
  Tensor y;
  int steps = 0, cpu_steps = 0;
};

Run run_on(const ModelBuilder& b, const EngineOptions& o, const Tensor& x) {
  Run r;
  auto e = Engine::from_bytes(b.bytes(), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return r;
  auto ctx = (*e)->create_context();
  auto out = ctx->run({{"x", x}});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return r;
  r.y = out->at("y");
  if (o.device == Device::kCuda) {
    auto layers = ctx->profile_layers(1);
    EXPECT_TRUE(layers.is_ok()) << layers.status().to_string();
    if (layers.is_ok()) {
      r.steps = static_cast<int>(layers->size());
      for (const LayerProfile& l : *layers) r.cpu_steps += l.on_cpu;
    }
  }
  return r;
}

void expect_gpu_matches(const ModelBuilder& b, const Shape& x_shape) {
  Tensor x = Tensor::from_floats(x_shape, random_floats(shape_numel(x_shape), 11));
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  Run want = run_on(b, ref, x);
  ASSERT_TRUE(want.y.defined());
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    EngineOptions o;
    o.device = Device::kCuda;
    o.precision = *parse_precision(precision);
    o.time_tactics = false;
    o.poison_memory = true;
    Run got = run_on(b, o, x);
    ASSERT_TRUE(got.y.defined());
    ASSERT_EQ(got.y.shape(), want.y.shape());
    double err = relative_l2(got.y, want.y);
    EXPECT_LE(err, std::string(precision) == "fp16" ? 5e-3 : 1e-5);
    EXPECT_GT(got.steps, 0);
    EXPECT_EQ(got.cpu_steps, 0) << "every shape is known when the plan is built";
  }
}

// Runs `shapes` in order through one reference Context and one Context of an engine built
// from `b` with `o` (inputs of seed `seed` + batch), expecting each result within `tol` of the
// reference; returns the second Context's stats.
ContextStats expect_runs_match(const ModelBuilder& b, const EngineOptions& o,
                               const std::vector<Shape>& shapes, uint32_t seed, double tol) {
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  auto engine = Engine::from_bytes(b.bytes(), o);
  EXPECT_TRUE(want_engine.is_ok() && engine.is_ok()) << engine.status().to_string();
  if (!want_engine.is_ok() || !engine.is_ok()) return {};
  auto want_ctx = (*want_engine)->create_context();
  auto ctx = (*engine)->create_context();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    SCOPED_TRACE("run " + std::to_string(i) + ", input " + shape_str(s));
    Tensor x = Tensor::from_floats(s, random_floats(shape_numel(s), seed + s[0]));
    auto want = want_ctx->run({{"x", x}});
    auto got = ctx->run({{"x", x}});
    EXPECT_TRUE(want.is_ok()) << want.status().to_string();
    EXPECT_TRUE(got.is_ok()) << got.status().to_string();
    if (want.is_ok() && got.is_ok()) EXPECT_LE(relative_l2(got->at("y"), want->at("y")), tol);
  }
  return ctx->stats();
}

TEST(CudaPlanShapes, ChannelShuffleResolvesShapesAtBuild) {
  expect_gpu_matches(channel_shuffle_model(), {3, 8, 10, 6});
  expect_gpu_matches(channel_shuffle_model(), {1, 8, 7, 9});
}

TEST(CudaPlanShapes, ConvertedModelRunsInFp16) {
  expect_gpu_matches(converted_model(), {3, 3, 9, 7});
}

// A residual that is also the conv's input: r = Relu(x), y = DepthwiseConv(r) + r, the Add
// fused as the conv's residual. The output may not take over r's buffer, since the conv's
// other threads still read r.
TEST(CudaPlanShapes, ResidualThatIsAlsoTheConvInputIsNotOverwritten) {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, "H", "W"});
  b.initializer("dw_w", {8, 1, 3, 3}, random_floats(72, 40, 0.3f));
  b.node("Relu", {"x"}, {"r"}, "relu");
  auto& dw = b.node("Conv", {"r", "dw_w"}, {"d"}, "depthwise");
  add_attr(dw, "group", int64_t{8});
  add_attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Add", {"d", "r"}, {"y"}, "add");
  b.output("y", kFloat, {"N", 8, "H", "W"});
  expect_gpu_matches(b, {2, 8, 33, 31});
}

// ViT's class token as exported: a constant [1, 4] expanded to the batch read from Shape(x),
// so its value is computed when the plan is built. One engine serves batch 1 and then batch
// 3: each plan uploads its own expanded value (the second used to collide with the first's,
// "uploaded twice with different sizes").
TEST(CudaPlanShapes, BuildTimeValuesOfTwoBatchesInOneEngine) {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 4});
  b.initializer("cls", {1, 4}, random_floats(4, 21));
  b.node("Shape", {"x"}, {"s"}, "shape");
  b.initializer_ints("starts", {1}, {0});
  b.initializer_ints("ends", {1}, {1});
  b.node("Slice", {"s", "starts", "ends"}, {"n"}, "slice");
  b.initializer_ints("four", {1}, {4});
  add_attr(b.node("Concat", {"n", "four"}, {"s2"}, "concat"), "axis", int64_t{0});
  b.node("Expand", {"cls", "s2"}, {"tok"}, "expand");
  b.node("Add", {"x", "tok"}, {"y"}, "add");
  b.output("y", kFloat, {"N", 4});
  EngineOptions o;
  o.device = Device::kCuda;
  o.time_tactics = false;
  o.poison_memory = true;
  expect_runs_match(b, o, {{1, 4}, {3, 4}, {1, 4}}, 30, 1e-6);
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// One Context alternating batch sizes keeps a plan per size: three builds, then every run
// replays its cached plan (CUDA graph included) and still matches the reference. The plans
// share one arena: grown for batch 1, then 4; batch 2's plan fits in it.
TEST(CudaPlanShapes, AlternatingBatchesBuildOncePerShape) {
  const ModelBuilder b = channel_shuffle_model();
  EngineOptions o;
  o.device = Device::kCuda;
  o.precision = Precision::kFp16;
  o.time_tactics = false;
  o.cuda_graph = true;
  o.poison_memory = true;
  std::vector<Shape> shapes;
  for (int round = 0; round < 3; ++round)
    for (int64_t n : {1, 4, 2}) shapes.push_back({n, 8, 10, 6});
  const ContextStats st = expect_runs_match(b, o, shapes, 50, 5e-3);
  EXPECT_EQ(st.plan_builds, 3);
  EXPECT_EQ(st.plan_runs, 6);
  EXPECT_EQ(st.plans_cached, 3);
  EXPECT_EQ(st.arena_allocations, 2);
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// A GPU index CUDA does not show is a clear error naming it and the devices there are.
TEST(CudaDevices, MissingGpuIndexIsAClearError) {
  const ModelBuilder b = channel_shuffle_model();
  for (int index : {-1, 99}) {
    EngineOptions o;
    o.device = Device::kCuda;
    o.device_index = index;
    auto e = Engine::from_bytes(b.bytes(), o);
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("GPU " + std::to_string(index) + " does not exist"),
              std::string::npos)
        << e.status().to_string();
    EXPECT_NE(e.status().message().find("CUDA shows"), std::string::npos) << e.status().to_string();
  }
}

}  // namespace
}  // namespace kiln::test
