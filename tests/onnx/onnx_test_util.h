// Builds small ONNX models in C++ for the importer tests.
//
//   ModelBuilder b(13);
//   b.input("x", kFloat, {"N", 3});
//   b.node("Relu", {"x"}, {"y"});
//   b.output("y", kFloat, {"N", 3});
//   auto g = import_onnx_bytes(b.bytes(), ".");
#pragma once

#include <gtest/gtest.h>
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "kiln/engine.h"
#include "onnx/importer.h"

namespace kiln::test {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

// A dimension: a size, or a symbolic name.
using DimSpec = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("kiln-test");
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  void input(const std::string& name, int elem, const std::vector<DimSpec>& dims) {
    set_value(graph().add_input(), name, elem, dims);
  }
  void output(const std::string& name, int elem, const std::vector<DimSpec>& dims) {
    set_value(graph().add_output(), name, elem, dims);
  }
  // An output of known rank whose dims are left to shape inference (the checker wants
  // a shape on every graph output).
  void output_any(const std::string& name, int elem, int rank) {
    auto* v = graph().add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (int i = 0; i < rank; ++i) shape->add_dim();
  }

  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *t;
  }
  onnx::TensorProto& initializer_ints(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(kInt64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *t;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void set_value(onnx::ValueInfoProto* v, const std::string& name, int elem,
                        const std::vector<DimSpec>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (auto* i = std::get_if<int64_t>(&d))
        dim->set_dim_value(*i);
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  onnx::ModelProto model_;
};

template <class T>
void add_attr(onnx::NodeProto& n, const std::string& name, const T& value) {
  *n.add_attribute() = onnx::MakeAttribute(name, value);
}

// `n` floats drawn uniformly from [lo, hi), the same for the same seed (weights and inputs of
// the models these tests build).
inline std::vector<float> uniform_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// A fresh empty folder under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("kiln_test_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path_ / name, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::filesystem::path path_;
};

// The graph's nodes of kind `op`.
inline std::vector<const Node*> nodes_of(const Graph& g, OpKind op) {
  std::vector<const Node*> r;
  for (const auto& n : g.nodes())
    if (n->op == op) r.push_back(n.get());
  return r;
}

// The single node of kind `op`, failing the test when there is not exactly one.
inline const Node* only_node(const Graph& g, OpKind op) {
  auto ns = nodes_of(g, op);
  EXPECT_EQ(ns.size(), 1u) << "nodes of " << op_name(op) << " in\n" << print_graph(g);
  return ns.size() == 1 ? ns[0] : nullptr;
}

// The int64 contents of a constant Value (failing the test when it is not one).
inline std::vector<int64_t> ints_of(const Value* v) {
  EXPECT_TRUE(v && v->is_constant());
  return v && v->is_constant() ? v->constant.to_int64s() : std::vector<int64_t>{};
}

// Imports, expecting success and a graph that verifies.
inline std::unique_ptr<Graph> import_ok(const ModelBuilder& b) {
  auto g = import_onnx_bytes(b.bytes(), ".");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g.is_ok()) return nullptr;
  EXPECT_TRUE(verify_graph(**g).is_ok());
  return std::move(g).value();
}

// Runs the model on {name: tensor} and returns output `out`.
inline Tensor run_model(const ModelBuilder& b, const std::map<std::string, Tensor>& feed,
                        const std::string& out) {
  auto e = Engine::from_bytes(b.bytes(), {});
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return Tensor();
  auto r = (*e)->create_context()->run(feed);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r->at(out) : Tensor();
}

// Deterministic non-trivial float data.
inline Tensor ramp(const Shape& shape, float scale = 0.37f, float offset = -1.1f) {
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = std::sin(static_cast<float>(i) * scale) * 2.f + offset;
  return t;
}

// An opset-6 model using the legacy forms the importer rewrites:
// x[1,3,4,4] → Add(bias[3], broadcast=1, axis=1) → Clip(min -0.5, max 0.8)
//   → Pad(pads [0,0,1,1,0,0,0,0], value 0.25) → Upsample-1(×2, nearest) → Softmax(axis 1) → y
inline ModelBuilder legacy_pipeline_model() {
  ModelBuilder b(6);
  b.input("x", kFloat, {1, 3, 4, 4});
  b.initializer("bias", {3}, {0.1f, -0.2f, 0.3f});
  auto& add = b.node("Add", {"x", "bias"}, {"a"}, "add");
  add_attr(add, "broadcast", int64_t{1});
  add_attr(add, "axis", int64_t{1});
  auto& clip = b.node("Clip", {"a"}, {"c"}, "clip");
  add_attr(clip, "min", -0.5f);
  add_attr(clip, "max", 0.8f);
  auto& pad = b.node("Pad", {"c"}, {"p"}, "pad");
  add_attr(pad, "pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 0});
  add_attr(pad, "value", 0.25f);
  auto& up = b.node("Upsample", {"p"}, {"u"}, "up");
  add_attr(up, "height_scale", 2.f);
  add_attr(up, "width_scale", 2.f);
  b.node("Softmax", {"u"}, {"y"}, "softmax");
  b.output("y", kFloat, {1, 3, 10, 10});
  return b;
}

}  // namespace kiln::test
