// Runs the built `kiln` binary on small models: run (tensor and image inputs), inspect,
// bench --json, demo, and the error contract (one "kiln: error:" line, exit 1 for bad
// input, 2 for usage/unsupported, never a signal).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/npy.h"
#include "onnx/tensor_proto.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#ifdef KILN_CLI_PATH

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kRelu = "/usr/share/libonnx-testdata/data/node/test_relu";
const fs::path kFashion = "/usr/share/datasets/fashion-mnist";

std::string slurp(const fs::path& p) {
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

std::vector<uint8_t> random_pixels(int n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> px(n);
  for (auto& p : px) p = static_cast<uint8_t>(gen());
  return px;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.at_double(i), want.at_double(i), tol) << "element " << i;
}

TEST_F(Cli, RunMatchesTheBackendTestOutput) {
  if (!fs::exists(kRelu)) GTEST_SKIP() << "libonnx-testdata is not installed";
  auto want = read_tensor_pb((kRelu / "test_data_set_0/output_0.pb").string());
  ASSERT_TRUE(want.is_ok());
  std::string model = (kRelu / "model.onnx").string();
  std::string pb = (kRelu / "test_data_set_0/input_0.pb").string();

  auto r = kiln("run " + model + " --input x=" + pb + " --output-dir " + path("o1").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("o1/y.npy"), *want, 0);
  EXPECT_NE(r.out.find("y.npy"), std::string::npos);

  // The same input as .npy, without NAME= (the model has one input).
  auto x = read_tensor_pb(pb);
  ASSERT_TRUE(x.is_ok());
  ASSERT_TRUE(write_npy(path("x.npy").string(), *x).is_ok());
  r = kiln("run " + model + " -i " + path("x.npy").string() + " -o " + path("o2").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("o2/y.npy"), *want, 0);

  // Without --output-dir the output is summarized.
  r = kiln("run " + model + " -i " + pb);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("y: float32 [3,4,5]"), std::string::npos) << r.out;
}

TEST_F(Cli, OutputFileNamesAreSanitized) {
  std::string model = ModelBuilder()
                          .input("in", {"2"})
                          .output("scores/prob:0", {"2"})
                          .node("Identity", {"in"}, {"scores/prob:0"})
                          .save(path("m.onnx"));
  Tensor x = Tensor::from_floats({2}, {0.25f, -3.5f});
  ASSERT_TRUE(write_npy(path("x.npy").string(), x).is_ok());
  auto r = kiln("run " + model + " --input in=" + path("x.npy").string() + " --output-dir " +
                path("out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("out/scores_prob_0.npy"), x, 0);
}

TEST_F(Cli, BadInputsAreOneLineErrors) {
  if (!fs::exists(kRelu)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string model = (kRelu / "model.onnx").string();
  ASSERT_TRUE(write_npy(path("x.npy").string(),
                        Tensor::from_floats({3, 4, 5}, std::vector<float>(60, 0.5f)))
                  .is_ok());
  ASSERT_TRUE(write_npy(path("wrong_shape.npy").string(), Tensor::from_floats({2, 2}, {1, 2, 3, 4}))
                  .is_ok());
  Tensor f64(DataType::kFloat64, {3, 4, 5});
  for (int64_t i = 0; i < 60; ++i) f64.data<double>()[i] = i * 0.1;
  ASSERT_TRUE(write_npy(path("f64.npy").string(), f64).is_ok());
  std::ofstream(path("garbage.bin")) << "this is neither npy nor a TensorProto \xff\xff\xff";
  std::vector<uint8_t> px = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), 2, 1, 3, px.data(), 6));
  std::string x = path("x.npy").string();

  struct Case {
    std::string args;
    int code;
    std::string says;
  };
  const Case cases[] = {
      {"run " + path("nope.onnx").string() + " -i " + x, 1, "nope.onnx"},
      {"run " + model + " -i x=" + path("missing.npy").string(), 1, "missing.npy"},
      {"run " + model + " -i bogus=" + x, 1, "unknown input 'bogus'"},
      {"run " + model + " -i " + path("wrong_shape.npy").string(), 1, "expected shape"},
      {"run " + model + " -i " + path("f64.npy").string(), 1, "expected dtype float32"},
      {"run " + model + " -i " + path("garbage.bin").string(), 1, "garbage.bin"},
      {"run " + model + " -i " + path("img.png").string(), 2, "image inputs need an NCHW input"},
      {"run " + model + " -i " + x + " --bogus-flag", 2, "--bogus-flag"},
      {"run " + model, 2, "--input"},
      {"", 2, "subcommand"},
      {"frobnicate", 2, "frobnicate"},
      {"--device cuda run " + model + " -i " + x, 2, "cuda"},
      {"run " + model + " -i " + x + " --device cuda", 2, "cuda"},
      {"run " + model + " -i " + x + " --device tpu", 2, "tpu"},
      {"run " + model + " -i " + x + " --threads -1", 2, "threads"},
      {"inspect " + path("garbage.bin").string(), 1, "garbage.bin"},
      {"bench " + model + " --duration -1", 2, "duration"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    expect_error(kiln(c.args), c.code, c.says);
  }
}

TEST_F(Cli, PngInputIsScaledAndNormalized) {
  const int h = 4, w = 5;
  auto px = random_pixels(h * w * 3, 3);
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), w, h, 3, px.data(), w * 3));
  // RGB, per-channel mean/std; the image already has the model's size, so no resampling.
  std::string model = identity_model(3, h, w);
  auto r = kiln("run " + model + " -i " + path("img.png").string() +
                " --mean 0.1,0.2,0.3 --std 0.5,0.25,2 -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const float mean[3] = {0.1f, 0.2f, 0.3f}, stdv[3] = {0.5f, 0.25f, 2.f};
  Tensor want(DataType::kFloat32, {1, 3, h, w});
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < h * w; ++i)
      want.data<float>()[c * h * w + i] = (px[3 * i + c] / 255.f - mean[c]) / stdv[c];
  expect_close(read_output("o/out.npy"), want, 1e-5);

  // One channel: luminance, and a single --mean for all channels; default std 1.
  std::string gray = identity_model(1, h, w, "gray.onnx");
  r = kiln("run " + gray + " -i image=" + path("img.png").string() + " --mean 0.5 -o " +
           path("g").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor want_gray(DataType::kFloat32, {1, 1, h, w});
  for (int i = 0; i < h * w; ++i)
    want_gray.data<float>()[i] =
        (0.299f * px[3 * i] + 0.587f * px[3 * i + 1] + 0.114f * px[3 * i + 2]) / 255.f - 0.5f;
  expect_close(read_output("g/out.npy"), want_gray, 1e-5);
}

TEST_F(Cli, JpegInputIsDecodedAndResized) {
  // A flat colour survives JPEG (almost) and any resampling filter.
  const int h = 24, w = 30;
  const uint8_t color[3] = {200, 50, 120};
  std::vector<uint8_t> px(h * w * 3);
  for (int i = 0; i < h * w; ++i)
    for (int c = 0; c < 3; ++c) px[3 * i + c] = color[c];
  ASSERT_TRUE(stbi_write_jpg(path("img.jpg").c_str(), w, h, 3, px.data(), 100));
  std::string model = identity_model(3, 6, 7);
  auto r = kiln("run " + model + " -i " + path("img.jpg").string() + " --mean 0 --std 1 -o " +
                path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor got = read_output("o/out.npy");
  ASSERT_EQ(got.shape(), (Shape{1, 3, 6, 7}));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 42; ++i)
      ASSERT_NEAR(got.data<float>()[c * 42 + i], color[c] / 255.f, 3 / 255.f);
  // --size must agree with a model of fixed size: the engine refuses the wrong shape.
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --size 8x8"), 1,
               "expected shape");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --size 8y8"), 2,
               "--size");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --mean a,b"), 2,
               "--mean");
  expect_error(kiln("run " + model + " -i " + path("img.jpg").string() + " --std 1,0,1"), 2,
               "--std");
  // Broken images: a PNG signature with garbage after it, a JPEG cut short in its header.
  std::ofstream(path("broken.png")) << "\x89PNG\r\n\x1a\n but then nothing valid";
  std::string jpg = slurp(path("img.jpg"));
  std::ofstream(path("cut.jpg"), std::ios::binary) << jpg.substr(0, 20);
  expect_error(kiln("run " + model + " -i " + path("broken.png").string()), 1,
               "broken.png: bad PNG");
  expect_error(kiln("run " + model + " -i " + path("cut.jpg").string()), 1, "cut.jpg: bad JPEG");
}

TEST_F(Cli, ModelMetadataSetsTheNormalization) {
  const int h = 3, w = 3;
  auto px = random_pixels(h * w * 3, 9);
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), w, h, 3, px.data(), w * 3));
  std::vector<std::string> dims = {"1", "1", "3", "3"};
  std::string model = ModelBuilder()
                          .input("image", dims)
                          .output("out", dims)
                          .node("Identity", {"image"}, {"out"})
                          .metadata("kiln.mean", "0.2860")
                          .metadata("kiln.std", "0.3530")
                          .save(path("m.onnx"));
  auto r = kiln("run " + model + " -i " + path("img.png").string() + " -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  Tensor want(DataType::kFloat32, {1, 1, h, w});
  for (int i = 0; i < h * w; ++i)
    want.data<float>()[i] =
        ((0.299f * px[3 * i] + 0.587f * px[3 * i + 1] + 0.114f * px[3 * i + 2]) / 255.f - 0.286f) /
        0.353f;
  expect_close(read_output("o/out.npy"), want, 1e-5);
}

// image[batch,3,8,8] → GlobalAveragePool → Flatten → probs[batch,3]: the "class scores"
// are the normalized channel means.
std::string channel_mean_model(const fs::path& p, const std::string& h = "8") {
  return ModelBuilder()
      .input("image", {"batch", "3", h, "8"})
      .output("scores", {"batch", "3"})
      .node("GlobalAveragePool", {"image"}, {"pooled"})
      .node("Flatten", {"pooled"}, {"scores"})
      .save(p);
}

TEST_F(Cli, ImageRunPrintsTopKWithLabels) {
  const uint8_t color[3] = {30, 220, 140};
  std::vector<uint8_t> px(8 * 8 * 3);
  for (int i = 0; i < 64; ++i)
    for (int c = 0; c < 3; ++c) px[3 * i + c] = color[c];
  ASSERT_TRUE(stbi_write_png(path("img.png").c_str(), 8, 8, 3, px.data(), 24));
  std::ofstream(path("labels.txt")) << "red\r\ngreen\nblue\n";
  std::string model = channel_mean_model(path("m.onnx"));
  // The model's H×W is 8×8, but its batch is symbolic: --size is not needed.
  auto r = kiln("run " + model + " -i " + path("img.png").string() + " --labels " +
                path("labels.txt").string() + " --top-k 2");
  ASSERT_EQ(r.code, 0) << r.err;
  // ImageNet normalization (the 3-channel default), then softmax over the three means.
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double z[3], sum = 0;
  for (int c = 0; c < 3; ++c) sum += (z[c] = std::exp((color[c] / 255.0 - mean[c]) / stdv[c]));
  EXPECT_NE(r.out.find("top-2 of 'scores' (softmax)"), std::string::npos) << r.out;
  // Lines "  1.  74.6305%  class 1     green": rank, probability, class, label.
  std::istringstream lines(r.out.substr(r.out.find("(softmax):")));
  std::string line;
  std::getline(lines, line);
  const int want_class[2] = {1, 2};
  const char* want_label[2] = {"green", "blue"};
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    int got_rank = 0, got_class = -1;
    double prob = 0;
    char label[32] = {};
    ASSERT_EQ(
        std::sscanf(line.c_str(), " %d. %lf%% class %d %31s", &got_rank, &prob, &got_class, label),
        4)
        << line;
    EXPECT_EQ(got_rank, rank + 1);
    EXPECT_EQ(got_class, want_class[rank]);
    EXPECT_STREQ(label, want_label[rank]);
    EXPECT_NEAR(prob, 100 * z[want_class[rank]] / sum, 2e-4) << line;
  }
  EXPECT_FALSE(std::getline(lines, line)) << "only the top 2 are printed: " << line;
}

TEST_F(Cli, InspectDescribesTheModel) {
  std::vector<float> w(4 * 3 * 3 * 3);
  std::mt19937 gen(5);
  for (float& v : w) v = static_cast<float>(gen() % 100) / 50.f - 1.f;
  std::string model = ModelBuilder()
                          .input("x", {"batch", "3", "8", "8"})
                          .output("y", {"batch", "4", "6", "6"})
                          .initializer("w", {4, 3, 3, 3}, w)
                          .node("Conv", {"x", "w"}, {"c"})
                          .node("Relu", {"c"}, {"y"})
                          .save(path("conv.onnx"));
  auto r = kiln("inspect " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want :
       {"opset       13", "x     float32  [batch,3,8,8]", "y     float32  [batch,4,6,6]",
        "nodes       2", "Conv×1", "Relu×1", "parameters  108 (432 B)",
        "GFLOPs      7.776e-06 per image"})  // 2·4·6·6·3·3·3
    EXPECT_NE(r.out.find(want), std::string::npos) << "want '" << want << "' in:\n" << r.out;
  EXPECT_EQ(r.out.find("= Conv("), std::string::npos);
  r = kiln("inspect --graph " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("= Conv("), std::string::npos) << r.out;
}

TEST_F(Cli, BenchWritesJson) {
  std::string model = channel_mean_model(path("m.onnx"));
  auto r = kiln("bench " + model + " --batch 4 --warmup 0.05 --duration 0.2 --threads 1 --json " +
                path("b.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(path("b.json")), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << slurp(path("b.json"));
  for (const char* key : {"model", "device", "precision", "batch", "threads", "runs",
                          "throughput_ips", "latency_ms", "kiln_version"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["model"], model);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_GE(j["runs"].get<int>(), 3);
  const auto& lat = j["latency_ms"];
  double mn = lat["min"], med = lat["median"], p90 = lat["p90"], p99 = lat["p99"];
  EXPECT_GT(mn, 0);
  EXPECT_LE(mn, med);
  EXPECT_LE(med, p90);
  EXPECT_LE(p90, p99);
  // Throughput is batch·runs over the timed phase, which is at least the runs' sum.
  double ips = j["throughput_ips"];
  EXPECT_GT(ips, 0);
  EXPECT_LE(ips, 4 * 1e3 / mn * 1.001);
}

TEST_F(Cli, BenchAsksForShapesOfSymbolicDims) {
  std::string model = channel_mean_model(path("m.onnx"), "height");
  expect_error(kiln("bench " + model + " --duration 0"), 2, "--shape image=");
  auto r = kiln("bench " + model + " --warmup 0 --duration 0 --shape image=2x3x8x8 --json " +
                path("b.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(path("b.json")));
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["runs"], 3);
}

// input[batch,1,28,28] → Flatten → Gemm with tiny weights (|logit change| < 784·1e-4 =
// 0.08) and a bias that always picks class 3 (Dress) by a margin of 5: accuracy is the
// share of Dress images, which the test set has 1,000 of.
std::string always_dress_model(const fs::path& p) {
  std::vector<float> bias(10, 0.f);
  bias[3] = 5.f;
  std::vector<float> w(7840);
  std::mt19937 gen(11);
  for (float& v : w) v = (static_cast<float>(gen() % 2001) - 1000.f) * 1e-7f;
  return ModelBuilder()
      .input("input", {"batch", "1", "28", "28"})
      .output("logits", {"batch", "10"})
      .initializer("w", {784, 10}, w)
      .initializer("b", {10}, bias)
      .node("Flatten", {"input"}, {"flat"})
      .node("Gemm", {"flat", "w", "b"}, {"logits"})
      .save(p);
}

TEST_F(Cli, DemoCountsAccuracyPerClass) {
  if (!fs::exists(kFashion)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  std::string model = always_dress_model(path("dress.onnx"));
  auto r = kiln("demo --model " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want :
       {"10000 images", "accuracy    10.00% (1000/10000)", "Dress        100.00%  (1000/1000)",
        "Ankle boot     0.00%  (0/1000)", "images/s"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "want '" << want << "' in:\n" << r.out;
  // A partial last batch (250 = 3·64 + 58) and a prefix of the set.
  r = kiln("demo --model " + model + " --batch 64 --limit 250");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("/250)"), std::string::npos) << r.out;
  expect_error(kiln("demo --model " + path("none.onnx").string()), 1, "none.onnx");
  expect_error(kiln("demo --model " + model + " --data " + path("").string()), 1, "t10k-images");
}

}  // namespace
}  // namespace kiln

#endif  // KILN_CLI_PATH
