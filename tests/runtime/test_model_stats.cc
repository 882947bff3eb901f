// Engine::stats() on hand-built graphs whose FLOPs are worked out here from the layer sizes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "ir/graph.h"
#include "runtime/engine_impl.h"

namespace kiln {
namespace {

Tensor random_weights(const Shape& shape, uint32_t seed) {
  Tensor t(DataType::kFloat32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// A float32 value of shape `dims`; -1 is the symbolic dimension "batch".
Value* typed(Graph& g, const std::string& name, const std::vector<int64_t>& dims) {
  Value* v = g.add_value(name);
  v->dtype = DataType::kFloat32;
  v->has_shape = true;
  for (int64_t d : dims) v->dims.push_back(d < 0 ? Dim{-1, "batch"} : Dim{d, ""});
  return v;
}

Engine engine_of(std::unique_ptr<Graph> g) {
  auto impl = std::make_unique<Engine::Impl>();
  impl->graph = std::move(g);
  return Engine(std::move(impl));
}

// x[B,3,8,8] → Conv 3→4 3x3 → [B,4,6,6] → Conv 4→8 3x3 group 2 → [B,8,4,4] → Flatten
// [B,128] → Gemm(·, W[10,128]ᵀ) → [B,10], and Flatten → MatMul(·, C[128,5]) → [B,5].
// `batch` < 0 makes the batch dimension symbolic.
std::unique_ptr<Graph> small_cnn(int64_t batch) {
  auto g = std::make_unique<Graph>();
  const int64_t b = batch;
  Value* x = typed(*g, "x", {b, 3, 8, 8});
  Value* w1 = g->add_constant("w1", random_weights({4, 3, 3, 3}, 1));
  Value* b1 = g->add_constant("b1", random_weights({4}, 2));
  Value* y1 = typed(*g, "y1", {b, 4, 6, 6});
  Value* w2 = g->add_constant("w2", random_weights({8, 2, 3, 3}, 3));
  Value* y2 = typed(*g, "y2", {b, 8, 4, 4});
  Value* f = typed(*g, "f", {b, 128});
  Value* wg = g->add_constant("wg", random_weights({10, 128}, 4));
  Value* y3 = typed(*g, "y3", {b, 10});
  Value* wm = g->add_constant("wm", random_weights({128, 5}, 5));
  Value* y4 = typed(*g, "y4", {b, 5});
  Attributes conv2;
  conv2.set("group", int64_t{2});
  Attributes gemm;
  gemm.set("transB", int64_t{1});
  g->add_node(OpKind::Conv, "conv1", {x, w1, b1}, {y1});
  g->add_node(OpKind::Conv, "conv2", {y1, w2}, {y2}, conv2);
  g->add_node(OpKind::Flatten, "flatten", {y2}, {f});
  g->add_node(OpKind::Gemm, "fc", {f, wg}, {y3}, gemm);
  g->add_node(OpKind::MatMul, "mm", {f, wm}, {y4});
  g->inputs().push_back(x);
  g->outputs() = {y3, y4};
  return g;
}

// Per image, from the layer sizes: 2·Cout·Hout·Wout·(Cin/group)·kh·kw for the convs,
// 2·N·K for the Gemm and the MatMul.
constexpr double kSmallCnnFlops = 2.0 * 4 * 6 * 6 * 3 * 3 * 3    // conv1
                                  + 2.0 * 8 * 4 * 4 * 2 * 3 * 3  // conv2, Cin/group = 2
                                  + 2.0 * 10 * 128               // fc
                                  + 2.0 * 5 * 128;               // mm

TEST(ModelStats, CountsOpsParametersAndFlops) {
  Engine e = engine_of(small_cnn(-1));
  ModelStats s = e.stats();
  EXPECT_EQ(s.num_nodes, 5);
  EXPECT_EQ(s.op_counts, (std::map<std::string, int64_t>{
                             {"Conv", 2}, {"Flatten", 1}, {"Gemm", 1}, {"MatMul", 1}}));
  const int64_t params = 4 * 3 * 3 * 3 + 4 + 8 * 2 * 3 * 3 + 10 * 128 + 128 * 5;
  EXPECT_EQ(s.num_parameters, params);
  EXPECT_EQ(s.parameter_bytes, params * 4);
  EXPECT_DOUBLE_EQ(s.flops_per_image, kSmallCnnFlops);
}

// Converted models often hold their weights as Constant nodes instead of initializers:
// those count the same (the unoptimized graph `kiln inspect` reads keeps the nodes).
TEST(ModelStats, ConstantNodeWeightsCountAsParameters) {
  auto g = std::make_unique<Graph>();
  Value* x = typed(*g, "x", {-1, 3, 8, 8});
  Value* w = typed(*g, "w", {4, 3, 3, 3});
  Value* b = typed(*g, "b", {4});
  Value* y = typed(*g, "y", {-1, 4, 6, 6});
  Attributes wa, ba;
  wa.set("value", random_weights({4, 3, 3, 3}, 6));
  ba.set("value", random_weights({4}, 7));
  g->add_node(OpKind::Constant, "w_const", {}, {w}, wa);
  g->add_node(OpKind::Constant, "b_const", {}, {b}, ba);
  g->add_node(OpKind::Conv, "conv", {x, w, b}, {y});
  g->inputs().push_back(x);
  g->outputs() = {y};
  ModelStats s = engine_of(std::move(g)).stats();
  EXPECT_EQ(s.num_parameters, 4 * 3 * 3 * 3 + 4);
  EXPECT_EQ(s.parameter_bytes, (4 * 3 * 3 * 3 + 4) * 4);
  EXPECT_DOUBLE_EQ(s.flops_per_image, 2.0 * 4 * 6 * 6 * 3 * 3 * 3);
}

TEST(ModelStats, FixedBatchIsDividedOut) {
  for (int64_t batch : {1, 2, 7}) {
    Engine e = engine_of(small_cnn(batch));
    EXPECT_DOUBLE_EQ(e.stats().flops_per_image, kSmallCnnFlops) << "batch " << batch;
  }
}

TEST(ModelStats, ConvTransposeAndTransposedGemm) {
  auto g = std::make_unique<Graph>();
  // ConvTranspose: x[1,2,5,5], W[Cin=2, Cout/group=3, 3, 3] → [1,3,7,7]; every input
  // element is multiplied into 3·3·3 outputs.
  Value* x = typed(*g, "x", {1, 2, 5, 5});
  Value* w = g->add_constant("w", random_weights({2, 3, 3, 3}, 6));
  Value* y = typed(*g, "y", {1, 3, 7, 7});
  g->add_node(OpKind::ConvTranspose, "deconv", {x, w}, {y});
  // Gemm with transA: A[K=6, M=1]ᵀ · B[6, 4] → [1,4].
  Value* a = typed(*g, "a", {6, 1});
  Value* bm = g->add_constant("bm", random_weights({6, 4}, 7));
  Value* z = typed(*g, "z", {1, 4});
  Attributes ta;
  ta.set("transA", int64_t{1});
  g->add_node(OpKind::Gemm, "gemm", {a, bm}, {z}, ta);
  // Batched MatMul: [2,3,6] · [6,4] → [2,3,4], K = 6.
  Value* m = typed(*g, "m", {2, 3, 6});
  Value* mo = typed(*g, "mo", {2, 3, 4});
  g->add_node(OpKind::MatMul, "bmm", {m, bm}, {mo});
  // A Relu adds no FLOPs (elementwise ops are not counted); unknown rank counts nothing.
  Value* r = g->add_value("r");
  g->add_node(OpKind::Relu, "relu", {y}, {r});
  g->inputs() = {x, a, m};
  g->outputs() = {r, z, mo};
  Engine e = engine_of(std::move(g));
  ModelStats s = e.stats();
  double want = 2.0 * (1 * 2 * 5 * 5) * (3 * 3 * 3) + 2.0 * 1 * 4 * 6 + 2.0 * (2 * 3 * 4) * 6;
  EXPECT_DOUBLE_EQ(s.flops_per_image, want);  // the first input's batch is 1: no division
  EXPECT_EQ(s.num_parameters, 2 * 3 * 3 * 3 + 6 * 4);
  EXPECT_EQ(s.op_counts.at("Relu"), 1);
}

// The demo model records the FLOPs its trainer counted with PyTorch forward hooks
// (scripts/models/train_fashion_mnist.py); the IR-based count must agree.
TEST(ModelStats, FashionMnistMatchesTheTrainersCount) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " has not been trained";
  onnx::ModelProto m;
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  std::string recorded;
  for (const auto& p : m.metadata_props())
    if (p.key() == "kiln.flops_per_image") recorded = p.value();
  if (recorded.empty()) GTEST_SKIP() << "no kiln.flops_per_image in " << path;
  auto e = Engine::load(path, {});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_DOUBLE_EQ((*e)->stats().flops_per_image, std::stod(recorded));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The report of a build keeps the model as imported (before the passes) and every pass's node
// count: Conv → BatchNormalization → Relu becomes one fused Conv.
TEST(EngineReport, ImportedStatsAndPasses) {
  auto g = std::make_unique<Graph>();
  g->name = "tiny";
  g->opset = 17;
  Value* x = typed(*g, "x", {1, 3, 6, 6});
  g->inputs().push_back(x);
  Value* c = typed(*g, "c", {1, 4, 4, 4});
  g->add_node(OpKind::Conv, "conv", {x, g->add_constant("w", random_weights({4, 3, 3, 3}, 1))},
              {c});
  Value* b = typed(*g, "b", {1, 4, 4, 4});
  std::vector<Value*> bn_in{c};
  for (const char* p : {"scale", "bias", "mean"})
    bn_in.push_back(g->add_constant(p, random_weights({4}, 2)));
  Tensor var = random_weights({4}, 3);
  for (int64_t i = 0; i < 4; ++i) var.data<float>()[i] = 1.f + std::abs(var.data<float>()[i]);
  bn_in.push_back(g->add_constant("var", var));
  g->add_node(OpKind::BatchNormalization, "bn", bn_in, {b});
  Value* y = typed(*g, "y", {1, 4, 4, 4});
  g->add_node(OpKind::Relu, "relu", {b}, {y});
  g->outputs().push_back(y);
  auto e = build_engine(std::move(g), EngineOptions());
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const EngineReport& r = (*e)->report();
  EXPECT_EQ(r.graph_name, "tiny");
  EXPECT_EQ(r.opset, 17);
  EXPECT_EQ(r.imported.num_nodes, 3);
  EXPECT_EQ(r.imported.op_counts.at("BatchNormalization"), 1);
  EXPECT_EQ((*e)->stats().num_nodes, 1);  // the engine's graph: one fused Conv
  ASSERT_FALSE(r.passes.empty());
  EXPECT_EQ(r.passes.back().nodes_after, 1);
  ASSERT_EQ(r.fused_groups.size(), 1u);
  EXPECT_NE(r.fused_groups[0].find("conv + bn + relu"), std::string::npos) << r.fused_groups[0];
  EXPECT_NE((*e)->graph_text().find("Conv("), std::string::npos) << (*e)->graph_text();
}

}  // namespace
}  // namespace kiln
