// Hand-made broken models (each a small mutation of a tiny valid Conv net built here as a
// ModelProto) and requests that do not fit a model (wrong input name, shape, dtype):
// each must end in an error Status whose message names the problem.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace kiln {
namespace {

using onnx::AttributeProto;
using onnx::TensorProto;

void add_floats(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                uint32_t seed) {
  TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

void add_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_io(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TensorProto::FLOAT);
  for (int64_t d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (d < 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
}

// x[N,3,8,8] → Conv 3→4 (3x3, pad 1) → Relu → GlobalAveragePool → Flatten → Gemm 4→2 → y[N,2]
onnx::ModelProto tiny_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("tiny");
  set_io(g->add_input(), "x", {-1, 3, 8, 8});
  add_floats(g, "conv.w", {4, 3, 3, 3}, 1);
  add_floats(g, "conv.b", {4}, 2);
  add_floats(g, "fc.w", {2, 4}, 3);
  add_floats(g, "fc.b", {2}, 4);
  auto* conv = add_node(g, "Conv", "conv", {"x", "conv.w", "conv.b"}, {"c"});
  add_ints(conv, "kernel_shape", {3, 3});
  add_ints(conv, "pads", {1, 1, 1, 1});
  add_ints(conv, "strides", {1, 1});
  add_node(g, "Relu", "relu", {"c"}, {"r"});
  add_node(g, "GlobalAveragePool", "gap", {"r"}, {"p"});
  add_node(g, "Flatten", "flat", {"p"}, {"f"});
  auto* fc = add_node(g, "Gemm", "fc", {"f", "fc.w", "fc.b"}, {"y"});
  AttributeProto* tb = fc->add_attribute();
  tb->set_name("transB");
  tb->set_type(AttributeProto::INT);
  tb->set_i(1);
  set_io(g->add_output(), "y", {-1, 2});
  return m;
}

Tensor random_input(Shape shape) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 gen(5);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Loads and runs on x[2,3,8,8]; returns the first error.
Status load_and_run(const onnx::ModelProto& m) {
  auto engine = Engine::from_bytes(m.SerializeAsString(), {});
  if (!engine.is_ok()) return engine.status();
  auto ctx = (*engine)->create_context();
  auto out = ctx->run({{"x", random_input({2, 3, 8, 8})}});
  return out.is_ok() ? Status::ok() : out.status();
}

TEST(BadModelsHandmade, TinyModelIsValid) {
  auto engine = Engine::from_bytes(tiny_model().SerializeAsString(), {});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto out = (*engine)->create_context()->run({{"x", random_input({2, 3, 8, 8})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_TRUE(std::isfinite(y.data<float>()[i]));
}

onnx::NodeProto* node(onnx::ModelProto& m, const std::string& name) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.name() == name) return &n;
  return nullptr;
}
TensorProto* init(onnx::ModelProto& m, const std::string& name) {
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == name) return &t;
  return nullptr;
}
AttributeProto* attr(onnx::ModelProto& m, const std::string& n, const std::string& a) {
  for (auto& at : *node(m, n)->mutable_attribute())
    if (at.name() == a) return &at;
  return nullptr;
}

struct BrokenCase {
  const char* name;
  std::function<void(onnx::ModelProto&)> mutate;
  // Words that must all appear in the error message (what is wrong and where).
  std::vector<std::string> words;
  StatusCode code = StatusCode::kInvalidArgument;
  bool check_code = false;
};

const std::vector<BrokenCase>& broken_cases() {
  static const std::vector<BrokenCase> cases = {
      {"undefined_input", [](auto& m) { node(m, "relu")->set_input(0, "ghost"); }, {"ghost"}},
      {"cycle", [](auto& m) { node(m, "conv")->set_input(0, "r"); }, {}},
      {"produced_twice", [](auto& m) { node(m, "relu")->set_output(0, "c"); }, {"c"}},
      {"unsupported_op",
       [](auto& m) { node(m, "relu")->set_op_type("Sin"); },
       {"Sin"},
       StatusCode::kUnsupported,
       true},
      {"custom_domain_op",
       [](auto& m) {
         node(m, "relu")->set_op_type("Frobnicate");
         node(m, "relu")->set_domain("com.example");
         auto* o = m.add_opset_import();
         o->set_domain("com.example");
         o->set_version(1);
       },
       {"Frobnicate"},
       StatusCode::kUnsupported,
       true},
      {"no_opset", [](auto& m) { m.clear_opset_import(); }, {"opset"}},
      {"opset_too_new", [](auto& m) { m.mutable_opset_import(0)->set_version(99); }, {"opset"}},
      {"weight_bytes_short",
       [](auto& m) {
         auto* w = init(m, "conv.w");
         w->set_raw_data(w->raw_data().substr(0, w->raw_data().size() - 4));
       },
       {"conv.w"}},
      {"weight_negative_dim", [](auto& m) { init(m, "conv.w")->set_dims(0, -4); }, {"conv.w"}},
      {"weight_huge_dims",
       [](auto& m) {
         init(m, "conv.w")->set_dims(0, int64_t{1} << 40);
         init(m, "conv.w")->set_dims(1, int64_t{1} << 40);
       },
       {"conv.w"}},
      {"weight_string_dtype",
       [](auto& m) { init(m, "conv.w")->set_data_type(TensorProto::STRING); },
       {"conv.w"}},
      {"weight_missing_external_file",
       [](auto& m) {
         auto* w = init(m, "conv.w");
         w->clear_raw_data();
         w->set_data_location(TensorProto::EXTERNAL);
         auto* e = w->add_external_data();
         e->set_key("location");
         e->set_value("missing_weights.bin");
       },
       {"missing_weights.bin"}},
      {"conv_weight_rank",
       [](auto& m) {
         auto* w = init(m, "conv.w");
         w->clear_dims();
         w->add_dims(4);
         w->add_dims(27);
       },
       {"conv"}},
      {"conv_group_mismatch",
       [](auto& m) {
         auto* a = node(m, "conv")->add_attribute();
         a->set_name("group");
         a->set_type(AttributeProto::INT);
         a->set_i(2);
       },
       {"conv"}},
      // libonnx 1.12's shape inference divides by the stride (SIGFPE): the importer must
      // refuse strides < 1 before it runs.
      {"conv_zero_stride",
       [](auto& m) { attr(m, "conv", "strides")->set_ints(0, 0); },
       {"conv", "strides"}},
      {"maxpool_zero_stride",
       [](auto& m) {
         auto* n = node(m, "gap");
         n->set_op_type("MaxPool");
         add_ints(n, "kernel_shape", {2, 2});
         add_ints(n, "strides", {0, 0});
       },
       {"gap", "strides"}},
      {"conv_negative_stride",
       [](auto& m) { attr(m, "conv", "strides")->set_ints(1, -2); },
       {"conv"}},
      {"conv_huge_pads",
       [](auto& m) { attr(m, "conv", "pads")->set_ints(0, int64_t{1} << 40); },
       {"conv"}},
      // Output dims whose product overflows int64 (2·4·2^40·2^40 wraps to 0).
      {"conv_overflowing_pads",
       [](auto& m) {
         attr(m, "conv", "pads")->set_ints(0, int64_t{1} << 40);
         attr(m, "conv", "pads")->set_ints(1, int64_t{1} << 40);
       },
       {"conv"}},
      {"conv_kernel_shape_mismatch",
       [](auto& m) { attr(m, "conv", "kernel_shape")->set_ints(0, 5); },
       {"conv"}},
      {"conv_pads_wrong_type",
       [](auto& m) {
         auto* a = attr(m, "conv", "pads");
         a->clear_ints();
         a->set_type(AttributeProto::FLOAT);
         a->set_f(1.f);
       },
       {"pads"}},
      {"gemm_inner_mismatch",
       [](auto& m) {
         auto* w = init(m, "fc.w");
         w->set_dims(1, 5);
         w->set_raw_data(w->raw_data() + std::string(8, '\0'));
       },
       {"fc"}},
      {"sequence_input",
       [](auto& m) {
         auto* t = m.mutable_graph()->mutable_input(0)->mutable_type();
         t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
             TensorProto::FLOAT);
       },
       {"x"}},
      {"output_never_produced",
       [](auto& m) { m.mutable_graph()->mutable_output(0)->set_name("nowhere"); },
       {"nowhere"}},
  };
  return cases;
}

class BadModelsHandmade : public testing::TestWithParam<size_t> {};

TEST_P(BadModelsHandmade, FailsWithAMessageNamingTheProblem) {
  const BrokenCase& c = broken_cases()[GetParam()];
  onnx::ModelProto m = tiny_model();
  c.mutate(m);
  Status s = load_and_run(m);
  ASSERT_FALSE(s.is_ok()) << c.name << ": the broken model loaded and ran";
  EXPECT_FALSE(s.message().empty());
  for (const std::string& w : c.words)
    EXPECT_NE(s.message().find(w), std::string::npos)
        << c.name << ": '" << w << "' not in: " << s.to_string();
  if (c.check_code) {
    EXPECT_EQ(s.code(), c.code) << s.to_string();
  }
  std::printf("[ bad      ] %s: %s\n", c.name, s.to_string().c_str());
}

INSTANTIATE_TEST_SUITE_P(Cases, BadModelsHandmade, testing::Range<size_t>(0, broken_cases().size()),
                         [](const testing::TestParamInfo<size_t>& info) {
                           return std::string(broken_cases()[info.param].name);
                         });

// Requests that do not fit the model, then a good request on the same Context: a failed run
// must leave it reusable.
TEST(BadRequests, WrongNameShapeDtypeThenRecovers) {
  auto engine = Engine::from_bytes(tiny_model().SerializeAsString(), {});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  Tensor good = random_input({2, 3, 8, 8});
  auto want = ctx->run({{"x", good}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  struct Bad {
    const char* what;
    std::map<std::string, Tensor> inputs;
    std::vector<std::string> words;
    StatusCode code;
  };
  const std::vector<Bad> bad = {
      {"unknown name", {{"images", good}}, {"images", "x"}, StatusCode::kNotFound},
      {"extra input", {{"x", good}, {"y2", good}}, {"y2"}, StatusCode::kNotFound},
      {"no inputs", {}, {"x"}, StatusCode::kInvalidArgument},
      {"channels",
       {{"x", random_input({2, 4, 8, 8})}},
       {"x", "[2,4,8,8]"},
       StatusCode::kInvalidArgument},
      {"spatial",
       {{"x", random_input({1, 3, 9, 8})}},
       {"x", "[1,3,9,8]"},
       StatusCode::kInvalidArgument},
      {"rank", {{"x", random_input({3, 8, 8})}}, {"x", "[3,8,8]"}, StatusCode::kInvalidArgument},
      {"float64",
       {{"x", Tensor::zeros(DataType::kFloat64, {2, 3, 8, 8})}},
       {"float32", "float64"},
       StatusCode::kInvalidArgument},
      {"int64",
       {{"x", Tensor::zeros(DataType::kInt64, {2, 3, 8, 8})}},
       {"float32", "int64"},
       StatusCode::kInvalidArgument},
      {"uint8",
       {{"x", Tensor::zeros(DataType::kUInt8, {2, 3, 8, 8})}},
       {"float32", "uint8"},
       StatusCode::kInvalidArgument},
      {"empty tensor", {{"x", Tensor()}}, {"x"}, StatusCode::kInvalidArgument},
  };
  for (const Bad& b : bad) {
    auto out = ctx->run(b.inputs);
    ASSERT_FALSE(out.is_ok()) << b.what << ": ran";
    EXPECT_EQ(out.status().code(), b.code) << b.what << ": " << out.status().to_string();
    for (const std::string& w : b.words)
      EXPECT_NE(out.status().message().find(w), std::string::npos)
          << b.what << ": '" << w << "' not in: " << out.status().to_string();
  }

  // Batch 0 is an edge case, not an error: either an empty result or a clean refusal.
  auto empty = ctx->run({{"x", Tensor(DataType::kFloat32, {0, 3, 8, 8})}});
  if (empty.is_ok())
    EXPECT_EQ(empty->at("y").shape(), (Shape{0, 2}));
  else
    EXPECT_FALSE(empty.status().message().empty());

  auto again = ctx->run({{"x", good}});
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  const Tensor& a = again->at("y");
  const Tensor& w = want->at("y");
  ASSERT_EQ(a.shape(), w.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], w.data<float>()[i]);
}

}  // namespace
}  // namespace kiln
