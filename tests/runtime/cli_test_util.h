// Shared by the CLI tests: a small ONNX model builder and a fixture that runs the built
// `kiln` binary (KILN_CLI_PATH) in a scratch folder and captures its exit code and output.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <stb_image_write.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "kiln/tensor_io.h"
#include "kiln/tensor.h"

namespace kiln::test {

namespace fs = std::filesystem;

const fs::path kRelu = "/usr/share/libonnx-testdata/data/node/test_relu";
const fs::path kFashion = "/usr/share/datasets/fashion-mnist";

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A small ONNX model written with the protobuf API. Dims are strings: digits are fixed
// sizes, anything else a symbolic name.
class ModelBuilder {
 public:
  ModelBuilder() {
    m_.set_ir_version(8);
    auto* op = m_.add_opset_import();
    op->set_domain("");
    op->set_version(13);
    m_.mutable_graph()->set_name("cli_test");
  }
  ModelBuilder& input(const std::string& name, const std::vector<std::string>& dims) {
    set_type(m_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name, const std::vector<std::string>& dims) {
    set_type(m_.mutable_graph()->add_output(), name, dims);
    return *this;
  }
  ModelBuilder& node(const std::string& op, const std::vector<std::string>& ins,
                     const std::vector<std::string>& outs,
                     const std::map<std::string, int64_t>& int_attrs = {}) {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + std::to_string(m_.graph().node_size()));
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    for (const auto& [k, v] : int_attrs) {
      auto* a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const Shape& shape,
                            const std::vector<float>& values) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  ModelBuilder& metadata(const std::string& k, const std::string& v) {
    auto* p = m_.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
    return *this;
  }
  std::string save(const fs::path& path) const {
    std::ofstream f(path, std::ios::binary);
    m_.SerializeToOstream(&f);
    return path.string();
  }

 private:
  static void set_type(onnx::ValueInfoProto* v, const std::string& name,
                       const std::vector<std::string>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos)
        dim->set_dim_value(std::stoll(d));
      else
        dim->set_dim_param(d);
    }
  }
  onnx::ModelProto m_;
};

struct CliResult {
  int code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("kiln_cli_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path path(const std::string& name) const { return dir_ / name; }

  CliResult kiln(const std::string& args) const {
    std::string cmd = std::string(KILN_CLI_PATH) + " " + args + " >" + path("stdout").string() +
                      " 2>" + path("stderr").string();
    int status = std::system(cmd.c_str());
    CliResult r;
    // sh reports a child killed by a signal as 128+signal.
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1000;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

  // Exit `code`, exactly one "kiln: error: ..." line on stderr that contains `says`.
  static void expect_error(const CliResult& r, int code, const std::string& says) {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err.rfind("kiln: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << "want '" << says << "' in: " << r.err;
  }

  Tensor read_output(const std::string& file) const {
    auto t = read_npy(path(file).string());
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return t.is_ok() ? *t : Tensor();
  }

  // Identity model image[1,C,H,W] → out, to see exactly what the preprocessing produced.
  std::string identity_model(int c, int h, int w, const std::string& name = "identity.onnx") {
    std::vector<std::string> dims = {"1", std::to_string(c), std::to_string(h), std::to_string(w)};
    return ModelBuilder()
        .input("image", dims)
        .output("out", dims)
        .node("Identity", {"image"}, {"out"})
        .save(path(name));
  }

  fs::path dir_;
};

inline std::vector<uint8_t> random_pixels(int n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> px(n);
  for (auto& p : px) p = static_cast<uint8_t>(gen());
  return px;
}

inline void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.at_double(i), want.at_double(i), tol) << "element " << i;
}

// image[batch,3,8,8] → GlobalAveragePool → Flatten → probs[batch,3]: the "class scores"
// are the normalized channel means.
inline std::string channel_mean_model(const fs::path& p, const std::string& h = "8") {
  return ModelBuilder()
      .input("image", {"batch", "3", h, "8"})
      .output("scores", {"batch", "3"})
      .node("GlobalAveragePool", {"image"}, {"pooled"})
      .node("Flatten", {"pooled"}, {"scores"})
      .save(p);
}

}  // namespace kiln::test
