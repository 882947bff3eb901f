// The ONNX importer: the IR it builds (ops, attributes, constants, shapes, names),
// external data, and every way a model file can be bad.

#include <functional>
#include <random>
#include <set>

#include "onnx/onnx_test_util.h"
#include "onnx/tensor_proto.h"

namespace kiln::test {
namespace {

// x[N,3,8,8] → Conv(W[4,3,3,3], B[4], pads 1) → Relu → y
ModelBuilder conv_relu_model() {
  ModelBuilder b(13);
  b.input("x", kFloat, {"N", 3, 8, 8});
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i) - 0.5f;
  b.initializer("W", {4, 3, 3, 3}, w);
  b.initializer("B", {4}, {0.1f, -0.2f, 0.3f, -0.4f});
  auto& conv = b.node("Conv", {"x", "W", "B"}, {"c"}, "conv1");
  add_attr(conv, "kernel_shape", std::vector<int64_t>{3, 3});
  add_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  add_attr(conv, "auto_pad", std::string("NOTSET"));
  b.node("Relu", {"c"}, {"y"}, "relu1");
  b.output("y", kFloat, {"N", 4, 8, 8});
  return b;
}

TEST(Importer, BuildsOpsAttributesConstantsAndShapes) {
  auto g = import_onnx_bytes(conv_relu_model().bytes(), ".");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Graph& graph = **g;
  EXPECT_EQ(graph.opset, 13);
  ASSERT_EQ(graph.nodes().size(), 2u);
  const Node& conv = *graph.nodes()[0];
  EXPECT_EQ(conv.op, OpKind::Conv);
  EXPECT_EQ(conv.name, "conv1");
  EXPECT_EQ(conv.attrs.get_ints("kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv.attrs.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(conv.attrs.get_string("auto_pad"), "NOTSET");
  ASSERT_EQ(conv.inputs.size(), 3u);
  const Value* w = conv.inputs[1];
  ASSERT_TRUE(w->is_constant());
  EXPECT_EQ(w->constant.shape(), (Shape{4, 3, 3, 3}));
  EXPECT_FLOAT_EQ(w->constant.data<float>()[7], 0.07f - 0.5f);
  EXPECT_FLOAT_EQ(conv.inputs[2]->constant.data<float>()[3], -0.4f);
  EXPECT_EQ(graph.nodes()[1]->op, OpKind::Relu);

  // Inputs: only x (initializers are constants); its batch dim keeps its name.
  ASSERT_EQ(graph.inputs().size(), 1u);
  const Value* x = graph.inputs()[0];
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->dtype, DataType::kFloat32);
  EXPECT_EQ(x->shape_string(), "[N,3,8,8]");
  // The intermediate got its shape from shape inference.
  const Value* c = conv.outputs[0];
  EXPECT_EQ(c->dtype, DataType::kFloat32);
  EXPECT_EQ(c->shape_string(), "[N,4,8,8]");
  ASSERT_EQ(graph.outputs().size(), 1u);
  EXPECT_EQ(graph.outputs()[0]->name, "y");
  EXPECT_TRUE(verify_graph(graph).is_ok());
}

TEST(Importer, UnknownDimsAndInferredOutputs) {
  ModelBuilder b(13);
  b.input("x", kFloat, {"N", 5});
  b.graph()
      .mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->clear_dim_value();  // a dim with neither value nor name
  b.node("Relu", {"x"}, {"y"});
  b.output_any("y", kFloat, 2);
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Value* x = (*g)->inputs()[0];
  ASSERT_EQ(x->dims.size(), 2u);
  EXPECT_EQ(x->dims[0].param, "N");
  EXPECT_EQ(x->dims[1].value, -1);
  EXPECT_TRUE(x->dims[1].param.empty());
  EXPECT_EQ((*g)->outputs()[0]->dtype, DataType::kFloat32);
}

TEST(Importer, UnnamedNodesGetUniqueNames) {
  ModelBuilder b(13);
  b.input("x", kFloat, {2});
  b.node("Relu", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"b"}, "Relu_2");  // collides with the name node 2 would get
  b.node("Relu", {"b"}, {"c"});
  b.output("c", kFloat, {2});
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  std::vector<std::string> names;
  for (const auto& n : (*g)->nodes()) names.push_back(n->name);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "Relu_0");
  EXPECT_EQ(names[1], "Relu_2");
  EXPECT_NE(names[2], "Relu_2");
  EXPECT_EQ(names[2].rfind("Relu_2", 0), 0u);
}

TEST(Importer, InitializersListedAsInputsAreConstants) {
  ModelBuilder b(8, /*ir_version=*/3);
  b.input("x", kFloat, {2, 3});
  b.input("bias", kFloat, {3});
  b.initializer("bias", {3}, {1, 2, 3});
  b.node("Add", {"x", "bias"}, {"y"});
  b.output("y", kFloat, {2, 3});
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->inputs()[0]->name, "x");
  const Node* add = only_node(**g, OpKind::Add);
  ASSERT_TRUE(add);
  EXPECT_TRUE(add->inputs[1]->is_constant());
  EXPECT_FLOAT_EQ(add->inputs[1]->constant.data<float>()[2], 3.f);
}

struct ConstantCase {
  const char* attr;
  std::function<void(onnx::NodeProto&)> set;
  DataType dtype;
  Shape shape;
  std::vector<double> values;
};

TEST(Importer, ConstantValueAttributesBecomeOneTensor) {
  onnx::TensorProto tp;
  tp.set_data_type(kFloat);
  tp.add_dims(2);
  tp.add_float_data(1.5f);
  tp.add_float_data(-2.5f);
  std::vector<ConstantCase> cases = {
      {"value", [&](auto& n) { add_attr(n, "value", tp); }, DataType::kFloat32, {2}, {1.5, -2.5}},
      {"value_float",
       [](auto& n) { add_attr(n, "value_float", 0.25f); },
       DataType::kFloat32,
       {},
       {0.25}},
      {"value_floats",
       [](auto& n) {
         add_attr(n, "value_floats", std::vector<float>{1, 2, 3});
       },
       DataType::kFloat32,
       {3},
       {1, 2, 3}},
      {"value_int",
       [](auto& n) { add_attr(n, "value_int", int64_t{-7}); },
       DataType::kInt64,
       {},
       {-7}},
      {"value_ints",
       [](auto& n) {
         add_attr(n, "value_ints", std::vector<int64_t>{4, 5});
       },
       DataType::kInt64,
       {2},
       {4, 5}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attr);
    ModelBuilder b(13);
    c.set(b.node("Constant", {}, {"y"}, "k"));
    b.output_any("y", c.dtype == DataType::kInt64 ? kInt64 : kFloat,
                 static_cast<int>(c.shape.size()));
    auto g = import_onnx_bytes(b.bytes(), ".");
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    const Node* k = only_node(**g, OpKind::Constant);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->attrs.all().size(), 1u);
    const Tensor* t = k->attrs.get_tensor("value");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->dtype(), c.dtype);
    EXPECT_EQ(t->shape(), c.shape);
    for (size_t i = 0; i < c.values.size(); ++i) EXPECT_DOUBLE_EQ(t->at_double(i), c.values[i]);
    EXPECT_EQ(k->outputs[0]->shape_string(), shape_str(c.shape));
  }
}

TEST(Importer, StringConstantIsUnsupported) {
  ModelBuilder b(13);
  add_attr(b.node("Constant", {}, {"y"}, "k"), "value_string", std::string("hi"));
  b.output_any("y", onnx::TensorProto::STRING, 0);
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(g.status().message().find("value_string"), std::string::npos) << g.status().message();
}

// Writes conv_relu_model with W stored in `weights.bin` at offset 16.
std::string write_external_model(const TempDir& dir, bool write_bin) {
  ModelBuilder b = conv_relu_model();
  onnx::TensorProto& w = *b.graph().mutable_initializer(0);
  std::string raw(16, 'z');
  for (float v : w.float_data()) raw.append(reinterpret_cast<const char*>(&v), sizeof v);
  w.clear_float_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const char* k, const std::string& v) {
    auto* e = w.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add_kv("location", "weights.bin");
  add_kv("offset", "16");
  add_kv("length", std::to_string(raw.size() - 16));
  if (write_bin) dir.write("weights.bin", raw);
  dir.write("model.onnx", b.bytes());
  return dir.file("model.onnx");
}

TEST(Importer, ExternalDataIsReadFromTheModelsFolder) {
  TempDir dir;
  auto g = import_onnx_file(write_external_model(dir, true));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Node* conv = only_node(**g, OpKind::Conv);
  ASSERT_TRUE(conv);
  const Tensor& w = conv->inputs[1]->constant;
  ASSERT_EQ(w.numel(), 108);
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_FLOAT_EQ(w.data<float>()[i], 0.01f * static_cast<float>(i) - 0.5f);
}

TEST(Importer, MissingExternalDataIsAnError) {
  TempDir dir;
  auto g = import_onnx_file(write_external_model(dir, false));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("weights.bin"), std::string::npos) << g.status().message();
}

// ---- errors -------------------------------------------------------------------------

void expect_error(const Result<std::unique_ptr<Graph>>& g, StatusCode code,
                  const std::vector<std::string>& words) {
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), code) << g.status().to_string();
  for (const auto& w : words)
    EXPECT_NE(g.status().message().find(w), std::string::npos)
        << "'" << w << "' not in: " << g.status().message();
}

TEST(ImporterErrors, MissingFile) {
  expect_error(import_onnx_file("/nonexistent/dir/model.onnx"), StatusCode::kNotFound,
               {"/nonexistent/dir/model.onnx"});
}

// The file path (a mapped file, initializers' bytes moved out of the parsed model) gives the
// same graph and constants as the bytes path (bytes copied).
TEST(Importer, FileAndBytesImportAlike) {
  TempDir dir;
  const std::string bytes = conv_relu_model().bytes();
  dir.write("m.onnx", bytes);
  auto from_file = import_onnx_file(dir.file("m.onnx"));
  auto from_bytes = import_onnx_bytes(bytes, dir.path().string());
  ASSERT_TRUE(from_file.is_ok()) << from_file.status().to_string();
  ASSERT_TRUE(from_bytes.is_ok()) << from_bytes.status().to_string();
  const Graph &a = **from_file, &b = **from_bytes;
  ASSERT_EQ(a.nodes().size(), b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &na = *a.nodes()[i], &nb = *b.nodes()[i];
    ASSERT_EQ(na.inputs.size(), nb.inputs.size());
    for (size_t j = 0; j < na.inputs.size(); ++j) {
      if (!na.inputs[j] || !na.inputs[j]->is_constant()) continue;
      const Tensor &ta = na.inputs[j]->constant, &tb = nb.inputs[j]->constant;
      EXPECT_EQ(ta.shape(), tb.shape());
      EXPECT_EQ(ta.to_floats(), tb.to_floats());
    }
  }
}

TEST(ImporterErrors, EmptyFileAndDirectory) {
  TempDir dir;
  dir.write("empty.onnx", "");
  auto empty = import_onnx_file(dir.file("empty.onnx"));
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("empty.onnx"), std::string::npos)
      << empty.status().to_string();
  expect_error(import_onnx_file(dir.path().string()), StatusCode::kNotFound, {"not found"});
}

TEST(ImporterErrors, TruncatedFile) {
  TempDir dir;
  std::string bytes = conv_relu_model().bytes();
  dir.write("cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_error(import_onnx_file(dir.file("cut.onnx")), StatusCode::kInvalidArgument,
               {dir.file("cut.onnx"), "not a valid ONNX model (truncated or corrupted?)"});
}

TEST(ImporterErrors, GarbageBytes) {
  expect_error(import_onnx_bytes(std::string("\xff\xff\xff\xff not a model"), "."),
               StatusCode::kInvalidArgument, {"not a valid ONNX model"});
}

// Every truncation point and many single-bit flips: each must give an error or a valid
// graph, never a crash, an exception or an error without a message.
void corrupt_and_import(const std::string& bytes) {
  int errors = 0, loaded = 0;
  auto check = [&](const std::string& b) {
    auto g = import_onnx_bytes(b, ".");
    if (g.is_ok()) {
      ++loaded;
      EXPECT_TRUE(verify_graph(**g).is_ok());
    } else {
      ++errors;
      EXPECT_FALSE(g.status().message().empty());
    }
  };
  for (size_t n = 0; n < bytes.size(); n += 3) check(bytes.substr(0, n));
  std::mt19937 gen(42);
  for (int i = 0; i < 1500; ++i) {
    std::string b = bytes;
    int flips = 1 + static_cast<int>(gen() % 3);
    for (int k = 0; k < flips; ++k) b[gen() % b.size()] ^= static_cast<char>(1 << (gen() % 8));
    check(b);
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(loaded, 0);  // flips inside weight values still give a valid model
}

TEST(ImporterErrors, CorruptedBytesNeverCrash) {
  for (const std::string& bytes : {conv_relu_model().bytes(), legacy_pipeline_model().bytes()})
    corrupt_and_import(bytes);
}

// Models that pass the ONNX checker but break what libonnx's shape inference assumes (it
// crashed on each of these before the importer checked them).
TEST(ImporterErrors, ShapeInferencePreconditions) {
  struct Case {
    const char* what;
    std::function<void(ModelBuilder&)> build;
    std::string message;
  };
  std::vector<Case> cases = {
      {"zero stride",
       [](ModelBuilder& b) {
         b.input("x", kFloat, {1, 1, 4, 4});
         auto& n = b.node("MaxPool", {"x"}, {"y"}, "pool");
         add_attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
         add_attr(n, "strides", std::vector<int64_t>{0, 1});
         b.output("y", kFloat, {1, 1, 2, 2});
       },
       "'strides' has value 0"},
      {"rank-2 ConvTranspose weight",
       [](ModelBuilder& b) {
         b.input("x", kFloat, {1, 1, 3, 3});
         b.input("w", kFloat, {1, 2});
         b.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
         b.output("y", kFloat, {1, 2, 5, 5});
       },
       "weight rank 2"},
      {"kernel_shape of the wrong length",
       [](ModelBuilder& b) {
         b.input("x", kFloat, {1, 1, 4, 4, 4});
         add_attr(b.node("AveragePool", {"x"}, {"y"}, "pool"), "kernel_shape",
                  std::vector<int64_t>{2, 2});
         b.output("y", kFloat, {1, 1, 2, 2, 2});
       },
       "'kernel_shape' has 2 values for 3 spatial dimensions"},
      {"rank-1 Gemm input",
       [](ModelBuilder& b) {
         b.input("a", kFloat, {2, 3});
         b.input("b", kFloat, {3});
         b.node("Gemm", {"a", "b"}, {"y"}, "gemm");
         b.output("y", kFloat, {2, 4});
       },
       "input 1 has rank 1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ModelBuilder b(13);
    c.build(b);
    expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kInvalidArgument, {c.message});
  }
}

// A weight that is not a dense tensor (here a sparse one) has no rank for inference:
// that node's inference is skipped (libonnx read its missing shape and crashed), and
// the importer then refuses the non-tensor value.
TEST(ImporterErrors, NonTensorWeightIsRefusedWithoutCrash) {
  ModelBuilder b(13);
  b.input("x", kFloat, {1, 1, 3, 3});
  auto* w = b.graph().add_input();
  w->set_name("w");
  auto* st = w->mutable_type()->mutable_sparse_tensor_type();
  st->set_elem_type(kFloat);
  for (int64_t d : {1, 2, 3, 3}) st->mutable_shape()->add_dim()->set_dim_value(d);
  b.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
  b.output("y", kFloat, {1, 2, 5, 5});
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'w'"), std::string::npos) << g.status().message();
}

// Two unknown output dims from different nodes must not share a symbolic name.
// Models converted from other frameworks declare intermediate values in value_info with an
// empty shape where they mean "rank unknown": the inferred shape is kept (ONNX Runtime runs
// such models), so a MatMul reading one is not refused as taking a scalar. A scalar the
// graph really computes is still refused.
TEST(Importer, EmptyDeclaredShapeDoesNotOverrideAnInferredOne) {
  ModelBuilder b(11);
  b.input("x", kFloat, {1, 4});
  b.initializer("w", {4, 3}, {0.5f, -1, 2, 0.25f, 1, -0.5f, 3, 0, -2, 1.5f, -0.75f, 1});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("MatMul", {"r", "w"}, {"y"}, "mm");
  auto* vi = b.graph().add_value_info();
  vi->set_name("r");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  vi->mutable_type()->mutable_tensor_type()->mutable_shape();  // present, no dims
  b.output("y", kFloat, {1, 3});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Value* r = only_node(*g, OpKind::MatMul)->input(0);
  ASSERT_TRUE(r->has_shape);
  EXPECT_EQ(r->dims.size(), 2u);
  Tensor x = Tensor::from_floats({1, 4}, {1, -2, 3, 0.5f});
  Tensor y = run_model(b, {{"x", x}}, "y");
  // relu(x) = [1, 0, 3, 0.5]; y_j = Σ_i relu(x)_i · w[i][j], w's rows [0.5, -1, 2],
  // [0.25, 1, -0.5], [3, 0, -2], [1.5, -0.75, 1].
  const std::vector<float> want = {0.5f + 3 * 3 + 0.5f * 1.5f, -1 + 0.5f * -0.75f,
                                   2 + 3 * -2 + 0.5f * 1};
  ASSERT_EQ(y.numel(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;

  ModelBuilder s(11);
  s.input("a", kFloat, {});
  s.initializer("w", {4, 3}, std::vector<float>(12, 1.f));
  s.node("MatMul", {"a", "w"}, {"y"}, "mm");
  s.output_any("y", kFloat, 1);
  auto bad = import_onnx_bytes(s.bytes(), ".");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("scalar"), std::string::npos) << bad.status().to_string();
}

// A Reshape to a shape computed from another tensor's Shape (ShuffleNet's channel shuffle)
// has an output of unknown rank: it must stay unknown, not become rank 0, so the Transpose
// after it keeps its dtype and the rest of the graph stays typed.
TEST(Importer, ReshapeToComputedShapeKeepsRankUnknownAndDtypes) {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 4, 2, 2});
  b.initializer_ints("idx", {}, {0});
  b.initializer_ints("two", {1}, {2});
  b.initializer_ints("rest", {3}, {2, 2, 2});
  b.initializer_ints("axes", {1}, {0});
  b.node("Shape", {"x"}, {"s"}, "shape");
  b.node("Gather", {"s", "idx"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsq");
  add_attr(b.node("Concat", {"n1", "two", "rest"}, {"s5"}, "concat"), "axis", int64_t{0});
  b.node("Reshape", {"x", "s5"}, {"r"}, "reshape");
  add_attr(b.node("Transpose", {"r"}, {"t"}, "transpose"), "perm",
           std::vector<int64_t>{0, 2, 1, 3, 4});
  b.node("Relu", {"t"}, {"y"}, "relu");
  b.output_any("y", kFloat, 5);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  const Value* r = only_node(*g, OpKind::Reshape)->output(0);
  EXPECT_FALSE(r->has_shape) << r->shape_string();
  EXPECT_EQ(r->dtype, DataType::kFloat32);
  EXPECT_EQ(only_node(*g, OpKind::Transpose)->output(0)->dtype, DataType::kFloat32);
  Tensor x = ramp({3, 4, 2, 2});
  Tensor y = run_model(b, {{"x", x}}, "y");
  ASSERT_EQ(y.shape(), (Shape{3, 2, 2, 2, 2}));
  // y[n][i][j][h][w] = relu(x[n][j*2+i][h][w]).
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          float want = std::max(0.f, x.data<float>()[((n * 4) + j * 2 + i) * 4 + k]);
          EXPECT_FLOAT_EQ(y.data<float>()[(((n * 2 + i) * 2 + j) * 4) + k], want);
        }
}

// A Conv reading a value of unknown rank (libonnx's Conv inference is not run then) still
// gets its input's dtype, and so does everything after it.
TEST(Importer, ConvOnUnknownRankKeepsTheDtype) {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 8, 2, 2});
  b.initializer_ints("idx", {}, {0});
  b.initializer_ints("axes", {1}, {0});
  b.initializer_ints("rest", {3}, {8, 2, 2});
  b.initializer("w", {4, 8, 1, 1}, std::vector<float>(32, 0.25f));
  b.node("Shape", {"x"}, {"s"}, "shape");
  b.node("Gather", {"s", "idx"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsq");
  add_attr(b.node("Concat", {"n1", "rest"}, {"s4"}, "concat"), "axis", int64_t{0});
  b.node("Reshape", {"x", "s4"}, {"r"}, "reshape");
  b.node("Conv", {"r", "w"}, {"c"}, "conv");
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.output_any("y", kFloat, 4);
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  EXPECT_FALSE(only_node(*g, OpKind::Conv)->input(0)->has_shape);
  EXPECT_EQ(only_node(*g, OpKind::Conv)->output(0)->dtype, DataType::kFloat32);
  EXPECT_EQ(only_node(*g, OpKind::Relu)->output(0)->dtype, DataType::kFloat32);
  Tensor x = ramp({2, 8, 2, 2});
  Tensor y = run_model(b, {{"x", x}}, "y");
  ASSERT_EQ(y.shape(), (Shape{2, 4, 2, 2}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 4; ++k) {
      float sum = 0;
      for (int64_t c = 0; c < 8; ++c) sum += 0.25f * x.data<float>()[(n * 8 + c) * 4 + k];
      EXPECT_NEAR(y.data<float>()[(n * 4) * 4 + k], std::max(0.f, sum), 1e-5f);
    }
}

TEST(Importer, InferredUnknownDimsGetDistinctNames) {
  ModelBuilder b(13);
  b.input("x", kFloat, {4, 6});
  b.input("s1", kInt64, {2});
  b.input("s2", kInt64, {2});
  b.node("Reshape", {"x", "s1"}, {"a"});
  b.node("Reshape", {"x", "s2"}, {"c"});
  b.output("a", kFloat, {"p", "q"});
  b.output("c", kFloat, {"r", "s"});
  b.graph().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->Clear();
  b.graph().mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->Clear();
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 2; ++k)
      b.graph()
          .mutable_output(i)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->add_dim();
  auto g = import_onnx_bytes(b.bytes(), ".");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  std::set<std::string> names;
  int unknown = 0;
  for (const Value* o : (*g)->outputs())
    for (const Dim& d : o->dims) {
      EXPECT_FALSE(d.known());
      if (!d.param.empty())
        names.insert(d.param);
      else
        ++unknown;
    }
  EXPECT_EQ(names.size() + unknown, 4u);
}

TEST(ImporterErrors, OpKilnLacks) {
  ModelBuilder b(13);
  b.input("x", kFloat, {3, 3});
  b.node("Det", {"x"}, {"y"}, "det1");
  b.output("y", kFloat, {});
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kUnsupported,
               {"node 'det1'", "op 'Det' is not supported by kiln"});
}

TEST(ImporterErrors, KilnsOwnOpsAreNotOnnxOps) {
  // ChannelShuffle is made by a pass; a model naming it is rejected like any unknown op.
  ModelBuilder b(17);
  b.input("x", kFloat, {1, 4, 2, 2});
  b.initializer_ints("s5", {5}, {1, 2, 2, 2, 2});
  b.initializer_ints("s4", {4}, {1, 4, 2, 2});
  b.node("ChannelShuffle", {"x", "s5", "s4"}, {"y"}, "shuffle1");
  b.output("y", kFloat, {1, 4, 2, 2});
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kUnsupported,
               {"node 'shuffle1'", "op 'ChannelShuffle' is not supported by kiln"});
}

TEST(ImporterErrors, OpsetNewerThanSupported) {
  ModelBuilder b(18);
  b.input("x", kFloat, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", kFloat, {2});
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kUnsupported,
               {"opset 18 is newer than kiln supports (≤ 17)"});
}

TEST(ImporterErrors, CustomDomain) {
  ModelBuilder b(13);
  auto* imp = b.model().add_opset_import();
  imp->set_domain("com.example");
  imp->set_version(1);
  b.input("x", kFloat, {2});
  b.node("FancyRelu", {"x"}, {"y"}, "fancy").set_domain("com.example");
  b.output("y", kFloat, {2});
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kUnsupported,
               {"node 'fancy'", "com.example"});
}

TEST(ImporterErrors, CheckerFailure) {
  ModelBuilder b(13);
  b.input("x", kFloat, {2});
  b.node("Relu", {"nowhere"}, {"y"});  // input never produced
  b.output("y", kFloat, {2});
  expect_error(import_onnx_bytes(b.bytes(), ".", "'m.onnx'"), StatusCode::kInvalidArgument,
               {"'m.onnx'", "nowhere"});
}

TEST(ImporterErrors, SequenceInputIsUnsupported) {
  ModelBuilder b(13);
  auto* in = b.graph().add_input();
  in->set_name("s");
  in->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(kFloat);
  b.node("Identity", {"s"}, {"y"});
  auto* out = b.graph().add_output();
  out->set_name("y");
  *out->mutable_type() = in->type();
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kUnsupported, {"'s'", "sequence"});
}

TEST(ImporterErrors, NoDefaultOpset) {
  ModelBuilder b(13);
  b.model().mutable_opset_import(0)->set_domain("com.example");
  b.input("x", kFloat, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", kFloat, {2});
  expect_error(import_onnx_bytes(b.bytes(), "."), StatusCode::kInvalidArgument, {"opset"});
}


// ONNX Runtime runs graphs whose nodes are stored out of order; kiln sorts them on import.
TEST(Importer, SortsNodesStoredOutOfOrder) {
  ModelBuilder b(13);
  b.input("x", kFloat, {2, 3});
  b.initializer("w", {3}, {0.5f, -1.f, 2.f});
  b.node("Relu", {"m"}, {"y"}, "last");
  b.node("Mul", {"a", "w"}, {"m"}, "middle");
  b.node("Sigmoid", {"x"}, {"a"}, "first");
  b.output("y", kFloat, {2, 3});
  auto g = import_ok(b);
  ASSERT_TRUE(g);
  std::vector<std::string> names;
  for (const auto& n : g->nodes()) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"first", "middle", "last"}));
  const Tensor x = ramp({2, 3});
  const Tensor y = run_model(b, {{"x", x}}, "y");
  const float w[] = {0.5f, -1.f, 2.f};
  for (int i = 0; i < 6; ++i) {
    const float s = 1.f / (1.f + std::exp(-x.data<float>()[i]));
    EXPECT_NEAR(y.data<float>()[i], std::max(0.f, s * w[i % 3]), 1e-6f) << i;
  }
}

TEST(ImporterErrors, CycleAndTwoProducersAreNamed) {
  ModelBuilder cycle(13);
  cycle.input("x", kFloat, {2});
  cycle.node("Add", {"x", "b"}, {"a"}, "one");
  cycle.node("Relu", {"a"}, {"b"}, "two");
  cycle.output("b", kFloat, {2});
  auto g = import_onnx_bytes(cycle.bytes(), ".");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("cycle: node 0 ('one', Add)"), std::string::npos)
      << g.status().message();
  ModelBuilder twice(13);
  twice.input("x", kFloat, {2});
  twice.node("Relu", {"x"}, {"a"}, "one");
  twice.node("Sigmoid", {"x"}, {"a"}, "two");
  twice.output("a", kFloat, {2});
  auto t = import_onnx_bytes(twice.bytes(), ".");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("'a' is produced by both node 0 ('one', Relu) and node 1"),
            std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace kiln::test
