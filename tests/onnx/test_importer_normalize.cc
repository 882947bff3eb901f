// Opset normalization: older-opset forms become the canonical (opset-13+) form the kernels
// implement. Each case checks the structure the importer builds; cases with a numeric
// check also run the model and compare with values computed here.

#include <cmath>
#include <functional>

#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// ---- attributes that became inputs: table of (op, opset, attrs) → expected inputs -----

struct AttrToInputCase {
  const char* op;
  int64_t opset;
  std::function<void(ModelBuilder&, onnx::NodeProto&)> build;  // sets attrs (and extra inputs)
  std::vector<std::string> inputs;                             // model inputs besides x
  size_t input_index;                                          // where the constant lands
  std::vector<int64_t> expected;                               // its int64 contents
  std::vector<std::string> gone;                               // attributes removed
  int out_rank;
};

TEST(ImporterNormalize, IntsAttributesBecomeConstantInputs) {
  std::vector<AttrToInputCase> cases = {
      {"Split",
       11,
       [](auto&, auto& n) {
         add_attr(n, "split", std::vector<int64_t>{1, 3});
       },
       {},
       1,
       {1, 3},
       {"split"},
       3},
      {"Squeeze",
       11,
       [](auto&, auto& n) { add_attr(n, "axes", std::vector<int64_t>{0}); },
       {},
       1,
       {0},
       {"axes"},
       2},
      {"Unsqueeze",
       12,
       [](auto&, auto& n) {
         add_attr(n, "axes", std::vector<int64_t>{0, 3});
       },
       {},
       1,
       {0, 3},
       {"axes"},
       5},
      {"ReduceSum",
       11,
       [](auto&, auto& n) { add_attr(n, "axes", std::vector<int64_t>{1}); },
       {},
       1,
       {1},
       {"axes"},
       3},
      {"Slice",
       9,
       [](auto&, auto& n) {
         add_attr(n, "starts", std::vector<int64_t>{0, 1});
         add_attr(n, "ends", std::vector<int64_t>{1, 3});
         add_attr(n, "axes", std::vector<int64_t>{1, 2});
       },
       {},
       2,
       {1, 3},
       {"starts", "ends", "axes"},
       3},
      {"Reshape",
       4,
       [](auto&, auto& n) {
         add_attr(n, "shape", std::vector<int64_t>{4, 4});
       },
       {},
       1,
       {4, 4},
       {"shape"},
       2},
      {"Pad",
       10,
       [](auto&, auto& n) {
         add_attr(n, "pads", std::vector<int64_t>{0, 0, 1, 0, 0, 2});
       },
       {},
       1,
       {0, 0, 1, 0, 0, 2},
       {"pads"},
       3},
      {"Pad",
       1,
       [](auto&, auto& n) {
         add_attr(n, "paddings", std::vector<int64_t>{0, 1, 0, 0, 1, 0});
       },
       {},
       1,
       {0, 1, 0, 0, 1, 0},
       {"paddings"},
       3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset));
    ModelBuilder b(c.opset);
    b.input("x", kFloat, {1, 4, 4});
    std::vector<std::string> outs = {"y"};
    if (std::string(c.op) == "Split") outs = {"y", "y2"};
    auto& n = b.node(c.op, {"x"}, outs, "n");
    c.build(b, n);
    for (const auto& o : outs) b.output_any(o, kFloat, c.out_rank);
    auto g = import_ok(b);
    if (!g) continue;
    const Node* node = only_node(*g, *op_from_name(c.op));
    if (!node) continue;
    EXPECT_EQ(ints_of(node->input(c.input_index)), c.expected);
    EXPECT_EQ(node->input(c.input_index)->dtype, DataType::kInt64);
    for (const auto& a : c.gone) EXPECT_FALSE(node->attrs.has(a)) << a;
  }
}

TEST(ImporterNormalize, SliceBefore10Runs) {
  ModelBuilder b(9);
  b.input("x", kFloat, {2, 3, 4});
  auto& n = b.node("Slice", {"x"}, {"y"});
  add_attr(n, "starts", std::vector<int64_t>{1, 0});
  add_attr(n, "ends", std::vector<int64_t>{3, -1});
  add_attr(n, "axes", std::vector<int64_t>{1, 2});
  b.output_any("y", kFloat, 3);
  Tensor x = ramp({2, 3, 4});
  Tensor y = run_model(b, {{"x", x}}, "y");
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_FLOAT_EQ(y.data<float>()[(i * 2 + j) * 3 + k],
                        x.data<float>()[(i * 3 + j + 1) * 4 + k]);
}

TEST(ImporterNormalize, PadBefore11ValueBecomesTypedInput) {
  ModelBuilder b(2);
  b.input("x", kFloat, {2, 2});
  auto& n = b.node("Pad", {"x"}, {"y"}, "pad");
  add_attr(n, "pads", std::vector<int64_t>{1, 0, 0, 1});
  add_attr(n, "value", 7.5f);
  b.output_any("y", kFloat, 2);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* pad = only_node(*g, OpKind::Pad);
  ASSERT_TRUE(pad && pad->input(2) && pad->input(2)->is_constant());
  EXPECT_EQ(pad->input(2)->constant.dtype(), DataType::kFloat32);
  EXPECT_FLOAT_EQ(pad->input(2)->constant.data<float>()[0], 7.5f);
  EXPECT_FALSE(pad->attrs.has("value"));

  Tensor x = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  Tensor y = run_model(b, {{"x", x}}, "y");
  std::vector<float> want = {7.5, 7.5, 7.5, 1, 2, 7.5, 3, 4, 7.5};
  ASSERT_EQ(y.shape(), (Shape{3, 3}));
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
}

TEST(ImporterNormalize, ClipBefore11BoundsBecomeInputs) {
  for (bool with_min : {true, false}) {
    SCOPED_TRACE(with_min ? "min and max" : "max only");
    ModelBuilder b(6);
    b.input("x", kFloat, {8});
    auto& n = b.node("Clip", {"x"}, {"y"}, "clip");
    if (with_min) add_attr(n, "min", -0.5f);
    add_attr(n, "max", 0.25f);
    b.output("y", kFloat, {8});
    auto g = import_ok(b);
    ASSERT_TRUE(g);
    const Node* clip = only_node(*g, OpKind::Clip);
    ASSERT_TRUE(clip);
    EXPECT_TRUE(clip->attrs.all().empty());
    EXPECT_EQ(clip->input(1) != nullptr, with_min);
    ASSERT_TRUE(clip->input(2) && clip->input(2)->is_constant());
    EXPECT_EQ(clip->input(2)->constant.shape(), Shape{});

    Tensor x = ramp({8});
    Tensor y = run_model(b, {{"x", x}}, "y");
    ASSERT_EQ(y.numel(), 8);
    for (int i = 0; i < 8; ++i) {
      float v = std::min(x.data<float>()[i], 0.25f);
      if (with_min) v = std::max(v, -0.5f);
      EXPECT_FLOAT_EQ(y.data<float>()[i], v);
    }
  }
}

// ---- Softmax < 13: coerce to 2-D at axis ------------------------------------------------

TEST(ImporterNormalize, SoftmaxBefore13OnLastAxisStaysOneNode) {
  ModelBuilder b(11);
  b.input("x", kFloat, {2, 3, 4});
  add_attr(b.node("Softmax", {"x"}, {"y"}, "sm"), "axis", int64_t{2});
  b.output("y", kFloat, {2, 3, 4});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0]->attrs.get_int("axis", 0), -1);
}

TEST(ImporterNormalize, SoftmaxBefore13FlattensAtAxis) {
  for (int64_t opset : {1, 11}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    ModelBuilder b(opset);
    b.input("x", kFloat, {2, 3, 4});
    b.node("Softmax", {"x"}, {"y"}, "sm");  // default axis 1: rows of 3·4 elements
    b.output("y", kFloat, {2, 3, 4});
    auto g = import_ok(b);
    ASSERT_TRUE(g);
    const Node* flatten = only_node(*g, OpKind::Flatten);
    const Node* sm = only_node(*g, OpKind::Softmax);
    const Node* reshape = only_node(*g, OpKind::Reshape);
    ASSERT_TRUE(flatten && sm && reshape);
    EXPECT_EQ(flatten->attrs.get_int("axis", 0), 1);
    EXPECT_EQ(sm->attrs.get_int("axis", 0), -1);
    EXPECT_EQ(reshape->outputs[0]->name, "y");
    EXPECT_EQ(g->outputs()[0]->name, "y");

    Tensor x = ramp({2, 3, 4});
    Tensor y = run_model(b, {{"x", x}}, "y");
    ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
    for (int r = 0; r < 2; ++r) {
      double sum = 0;
      for (int i = 0; i < 12; ++i) sum += std::exp(x.data<float>()[r * 12 + i]);
      for (int i = 0; i < 12; ++i)
        EXPECT_NEAR(y.data<float>()[r * 12 + i], std::exp(x.data<float>()[r * 12 + i]) / sum, 1e-6);
    }
  }
}

// ---- Upsample / Resize-10 → Resize(X, -, scales) asymmetric --------------------------------

void expect_legacy_resize(const Graph& g, const std::string& mode) {
  const Node* r = only_node(g, OpKind::Resize);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->input(1), nullptr);
  ASSERT_NE(r->input(2), nullptr);
  EXPECT_EQ(r->input(3), nullptr);
  EXPECT_EQ(r->attrs.get_string("mode"), mode);
  EXPECT_EQ(r->attrs.get_string("coordinate_transformation_mode"), "asymmetric");
  if (mode == "nearest") {
    EXPECT_EQ(r->attrs.get_string("nearest_mode"), "floor");
  }
}

TEST(ImporterNormalize, UpsampleBecomesResize) {
  const std::vector<float> scales = {1, 1, 2, 3};
  for (int64_t opset : {7, 9}) {
    for (std::string mode : {"nearest", "linear"}) {
      SCOPED_TRACE("opset " + std::to_string(opset) + " " + mode);
      ModelBuilder b(opset);
      b.input("x", kFloat, {1, 1, 2, 2});
      std::vector<std::string> ins = {"x"};
      if (opset >= 9) {
        b.initializer("scales", {4}, scales);
        ins.push_back("scales");
      }
      auto& n = b.node("Upsample", ins, {"y"}, "up");
      add_attr(n, "mode", mode);
      if (opset < 9) add_attr(n, "scales", scales);
      b.output_any("y", kFloat, 4);
      auto g = import_ok(b);
      ASSERT_TRUE(g);
      expect_legacy_resize(*g, mode);
      EXPECT_EQ(only_node(*g, OpKind::Resize)->input(2)->constant.to_floats(), scales);

      Tensor x = Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
      Tensor y = run_model(b, {{"x", x}}, "y");
      ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
      // Asymmetric: source coordinate = out / scale; nearest floors, linear clamps at edges.
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 6; ++j) {
          float si = i / 2.f, sj = j / 3.f;
          float want;
          if (mode == "nearest") {
            want = x.data<float>()[static_cast<int>(si) * 2 + static_cast<int>(sj)];
          } else {
            int i0 = static_cast<int>(si), j0 = static_cast<int>(sj);
            int i1 = std::min(i0 + 1, 1), j1 = std::min(j0 + 1, 1);
            float fi = si - i0, fj = sj - j0;
            auto at = [&](int a, int c) { return x.data<float>()[a * 2 + c]; };
            want = (1 - fi) * ((1 - fj) * at(i0, j0) + fj * at(i0, j1)) +
                   fi * ((1 - fj) * at(i1, j0) + fj * at(i1, j1));
          }
          EXPECT_NEAR(y.data<float>()[i * 6 + j], want, 1e-6) << i << "," << j;
        }
    }
  }
}

TEST(ImporterNormalize, Resize10GetsAsymmetricFloor) {
  ModelBuilder b(10);
  b.input("x", kFloat, {1, 1, 2, 2});
  b.initializer("scales", {4}, {1, 1, 2, 2});
  add_attr(b.node("Resize", {"x", "scales"}, {"y"}), "mode", std::string("nearest"));
  b.output_any("y", kFloat, 4);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  expect_legacy_resize(*g, "nearest");
}

TEST(ImporterNormalize, Resize13DropsEmptyAndUnusedInputs) {
  ModelBuilder b(13);
  b.input("x", kFloat, {1, 1, 2, 2});
  b.initializer("roi", {0}, {});
  b.initializer("scales", {0}, {});
  b.initializer_ints("sizes", {4}, {1, 1, 3, 3});
  b.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
  b.output_any("y", kFloat, 4);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* r = only_node(*g, OpKind::Resize);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->input(1), nullptr);
  EXPECT_EQ(r->input(2), nullptr);
  EXPECT_EQ(ints_of(r->input(3)), (std::vector<int64_t>{1, 1, 3, 3}));
}

// ---- layers -------------------------------------------------------------------------------

TEST(ImporterNormalize, DropoutBefore12RatioBecomesInput) {
  ModelBuilder b(6);
  b.input("x", kFloat, {4});
  auto& n = b.node("Dropout", {"x"}, {"y"}, "drop");
  add_attr(n, "ratio", 0.3f);
  add_attr(n, "is_test", int64_t{1});
  b.output("y", kFloat, {4});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* d = only_node(*g, OpKind::Dropout);
  ASSERT_TRUE(d && d->input(1) && d->input(1)->is_constant());
  EXPECT_FLOAT_EQ(d->input(1)->constant.data<float>()[0], 0.3f);
  EXPECT_TRUE(d->attrs.all().empty());
}

TEST(ImporterNormalize, BatchNormBefore9DropsLegacyAttributes) {
  ModelBuilder b(5);  // BatchNormalization-1: is_test, spatial, consumed_inputs
  b.input("x", kFloat, {1, 2, 2, 2});
  for (const char* p : {"s", "bias", "mean", "var"}) b.initializer(p, {2}, {0.5f, 1.5f});
  auto& n = b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y"}, "bn");
  add_attr(n, "is_test", int64_t{1});
  add_attr(n, "spatial", int64_t{1});
  add_attr(n, "epsilon", 1e-3f);
  add_attr(n, "consumed_inputs", std::vector<int64_t>{0, 0, 0, 1, 1});
  b.output("y", kFloat, {1, 2, 2, 2});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Node* bn = only_node(*g, OpKind::BatchNormalization);
  ASSERT_TRUE(bn);
  EXPECT_EQ(bn->attrs.all().size(), 1u);
  EXPECT_FLOAT_EQ(bn->attrs.get_float("epsilon", 0), 1e-3f);

  add_attr(*b.graph().mutable_node(0), "spatial", int64_t{0});
  b.graph().mutable_node(0)->mutable_attribute()->DeleteSubrange(1, 1);  // the spatial=1
  auto bad = import_onnx_bytes(b.bytes(), ".");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bad.status().message().find("spatial=0"), std::string::npos) << bad.status().message();
}

TEST(ImporterNormalize, GemmBefore7DropsBroadcast) {
  ModelBuilder b(6);
  b.input("a", kFloat, {2, 3});
  b.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  b.initializer("c", {2}, {0.5f, -0.5f});
  add_attr(b.node("Gemm", {"a", "w", "c"}, {"y"}), "broadcast", int64_t{1});
  b.output("y", kFloat, {2, 2});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->nodes()[0]->attrs.has("broadcast"));
}

}  // namespace
}  // namespace kiln::test
