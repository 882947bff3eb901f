// Whole models that are broken, and requests that do not fit the model: Engine loading and
// Context::run must return an error Status that names the problem, never crash or hang.
//
// Corrupted bytes come from the shipped Fashion-MNIST model (truncations, bit flips,
// garbled runs, semantic mutations of its protobuf); hand-made broken models are built here
// as ModelProtos on a tiny Conv net. A corruption may be harmless (a flipped weight bit):
// then the model loads and runs, which is fine; what is not fine is a crash, an exception
// or an error without a message.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace kiln {
namespace {

const std::string& fashion_bytes() {
  static const std::string bytes = [] {
    std::ifstream f(std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx", std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  return bytes;
}

#define REQUIRE_FASHION_MODEL()                               \
  ASSERT_GT(fashion_bytes().size(), 1000u) << KILN_SOURCE_DIR \
      "/models/fashion_mnist.onnx is missing (train it: "     \
      "scripts/models/train_fashion_mnist.py)"

// A tensor for a declared input: symbolic batch → 2, other unknown dims → 1. Returns an
// undefined tensor when the declared shape is too large to be worth running.
Tensor input_for(const TensorInfo& info) {
  Shape shape;
  for (size_t i = 0; i < info.dims.size(); ++i)
    shape.push_back(info.dims[i] >= 0 ? info.dims[i] : (i == 0 ? 2 : 1));
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d > (int64_t{1} << 22)) return Tensor();
    numel *= d;
    if (numel > (int64_t{1} << 22)) return Tensor();
  }
  if (dtype_size(info.dtype) == 0) return Tensor();
  Tensor t = Tensor::zeros(info.dtype, shape);
  if (info.dtype == DataType::kFloat32) {
    std::mt19937 gen(7);
    std::normal_distribution<float> dist;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  }
  return t;
}

struct Tally {
  int load_errors = 0, run_errors = 0, ran = 0;
  std::string first_error;  // one example message, for the log
};

// Loads `bytes` and, if that works, runs the model once on a seeded input. Either step may
// fail, but only with a message. Returns the first error (OK when it loaded and ran).
Status load_and_run(const std::string& bytes, Tally* tally = nullptr) {
  auto engine = Engine::from_bytes(bytes, {});
  if (!engine.is_ok()) {
    if (tally && tally->load_errors++ == 0) tally->first_error = engine.status().to_string();
    return engine.status();
  }
  std::map<std::string, Tensor> inputs;
  for (const TensorInfo& info : (*engine)->inputs()) {
    Tensor t = input_for(info);
    if (!t.defined()) {
      if (tally) ++tally->ran;  // loaded; the input it declares is too large to try
      return Status::ok();
    }
    inputs[info.name] = t;
  }
  auto ctx = (*engine)->create_context();
  auto out = ctx->run(inputs);
  if (!out.is_ok()) {
    if (tally) ++tally->run_errors;
    return out.status();
  }
  if (tally) ++tally->ran;
  return Status::ok();
}

void expect_clean(const Status& s, const std::string& what) {
  if (!s.is_ok()) {
    EXPECT_FALSE(s.message().empty()) << what << ": error without a message";
  }
}

TEST(BadModels, MissingFile) {
  const std::string path = "/nonexistent/dir/no_such_model.onnx";
  auto engine = Engine::load(path, {});
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kNotFound);
  EXPECT_NE(engine.status().message().find("no_such_model.onnx"), std::string::npos)
      << engine.status().to_string();
}

TEST(BadModels, DirectoryAndEmptyAndTextFiles) {
  auto dir = Engine::load(std::string(KILN_SOURCE_DIR) + "/tests", {});
  EXPECT_FALSE(dir.is_ok());
  for (const std::string& bytes :
       {std::string(), std::string("not an onnx model\n"), std::string(64, '\xff')}) {
    Status s = load_and_run(bytes);
    EXPECT_FALSE(s.is_ok()) << "loaded " << bytes.size() << " bytes of junk";
    expect_clean(s, "junk");
  }
}

// Every cut point before the end of the model's opset imports must fail to load (the
// graph or the opset is incomplete or missing); cuts inside the trailing metadata may land
// on a field boundary and load.
TEST(BadModels, TruncatedFashionMnist) {
  REQUIRE_FASHION_MODEL();
  const std::string& bytes = fashion_bytes();
  const size_t size = bytes.size();

  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  m.clear_metadata_props();
  std::string no_meta = m.SerializeAsString();
  // Where the metadata starts, if the file is in protobuf's canonical field order.
  size_t must_fail_below = bytes.compare(0, no_meta.size(), no_meta) == 0 ? no_meta.size() : 0;

  std::vector<size_t> cuts;
  for (size_t c = 0; c < 256 && c < size; ++c) cuts.push_back(c);
  for (size_t i = 1; i < 200; ++i) cuts.push_back(size * i / 200);
  for (size_t c = size > 512 ? size - 512 : 0; c < size; c += 3) cuts.push_back(c);
  Tally tally;
  for (size_t cut : cuts) {
    Status s = load_and_run(bytes.substr(0, cut), &tally);
    expect_clean(s, "cut at " + std::to_string(cut));
    if (cut < must_fail_below) {
      EXPECT_FALSE(s.is_ok()) << "model cut at byte " << cut << " of " << size << " loaded and ran";
    }
  }
  std::printf(
      "[ bad      ] %zu cuts of %zu bytes: %d load errors, %d run errors, %d ran; e.g. %s\n",
      cuts.size(), size, tally.load_errors, tally.run_errors, tally.ran, tally.first_error.c_str());
  EXPECT_GT(tally.load_errors, static_cast<int>(cuts.size()) * 9 / 10);
}

// Seeded random byte-level corruptions: bit flips, garbled runs, deleted and inserted bytes.
// Half land in the first and last 4 KiB, where nodes, graph inputs/outputs and opsets live.
TEST(BadModels, CorruptedBytesFashionMnist) {
  REQUIRE_FASHION_MODEL();
  const std::string& bytes = fashion_bytes();
  std::mt19937_64 gen(2024);
  auto pick_pos = [&](size_t size) -> size_t {
    size_t edge = std::min<size_t>(4096, size / 2);
    switch (gen() % 3) {
      case 0: return gen() % edge;
      case 1: return size - 1 - gen() % edge;
      default: return gen() % size;
    }
  };
  Tally tally;
  constexpr int kCases = 400;
  for (int i = 0; i < kCases; ++i) {
    std::string b = bytes;
    int kind = i % 4;
    size_t pos = pick_pos(b.size());
    if (kind == 0) {
      b[pos] ^= static_cast<char>(1u << (gen() % 8));
    } else if (kind == 1) {
      for (int k = 0; k < 8; ++k) b[pick_pos(b.size())] ^= static_cast<char>(1u << (gen() % 8));
    } else if (kind == 2) {
      size_t len = 1 + gen() % 16;
      for (size_t k = pos; k < std::min(b.size(), pos + len); ++k) b[k] = static_cast<char>(gen());
    } else {
      if (gen() % 2)
        b.erase(pos, 1 + gen() % 4);
      else
        b.insert(pos, std::string(1 + gen() % 4, static_cast<char>(gen())));
    }
    expect_clean(load_and_run(b, &tally), "corruption " + std::to_string(i));
  }
  std::printf("[ bad      ] %d corruptions: %d load errors, %d run errors, %d ran; e.g. %s\n",
              kCases, tally.load_errors, tally.run_errors, tally.ran, tally.first_error.c_str());
  EXPECT_EQ(tally.load_errors + tally.run_errors + tally.ran, kCases);
  EXPECT_GT(tally.load_errors, 0);
}

// Seeded mutations of the parsed model: absurd initializer dims and dtypes, absurd
// attribute values, rewired inputs (cycles, undefined names), swapped op types, removed
// nodes, changed graph input dims.
TEST(BadModels, MutatedProtoFashionMnist) {
  REQUIRE_FASHION_MODEL();
  onnx::ModelProto base;
  ASSERT_TRUE(base.ParseFromString(fashion_bytes()));
  const int64_t kAbsurd[] = {-7,
                             -1,
                             0,
                             1,
                             2,
                             1000003,
                             int64_t{1} << 31,
                             int64_t{1} << 40,
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::min()};
  std::mt19937_64 gen(99);
  auto absurd = [&] { return kAbsurd[gen() % std::size(kAbsurd)]; };
  Tally tally;
  constexpr int kCases = 300;
  for (int i = 0; i < kCases; ++i) {
    onnx::ModelProto m = base;
    onnx::GraphProto& g = *m.mutable_graph();
    std::string what;
    switch (i % 7) {
      case 0: {
        auto& init = *g.mutable_initializer(gen() % g.initializer_size());
        if (init.dims_size() == 0)
          init.add_dims(absurd());
        else
          init.set_dims(gen() % init.dims_size(), absurd());
        what = "dims of initializer " + init.name();
        break;
      }
      case 1: {
        auto& init = *g.mutable_initializer(gen() % g.initializer_size());
        init.set_data_type(static_cast<int32_t>(gen() % 20));
        what = "dtype of initializer " + init.name();
        break;
      }
      case 2: {
        auto& node = *g.mutable_node(gen() % g.node_size());
        if (node.attribute_size() == 0) continue;
        auto& attr = *node.mutable_attribute(gen() % node.attribute_size());
        if (attr.ints_size() > 0)
          attr.set_ints(gen() % attr.ints_size(), absurd());
        else if (attr.type() == onnx::AttributeProto::INT)
          attr.set_i(absurd());
        else if (attr.type() == onnx::AttributeProto::FLOAT)
          attr.set_f(static_cast<float>(absurd()));
        what = "attribute " + attr.name() + " of " + node.name();
        break;
      }
      case 3: {  // rewire an input to any value, possibly a later one (a cycle)
        auto& node = *g.mutable_node(gen() % g.node_size());
        const auto& src = g.node(gen() % g.node_size());
        if (node.input_size() == 0 || src.output_size() == 0) continue;
        node.set_input(gen() % node.input_size(), gen() % 5 ? src.output(0) : "ghost");
        what = "rewired input of " + node.name();
        break;
      }
      case 4: {
        auto& node = *g.mutable_node(gen() % g.node_size());
        node.set_op_type(g.node(gen() % g.node_size()).op_type());
        what = "op type of " + node.name();
        break;
      }
      case 5: {
        int k = static_cast<int>(gen() % g.node_size());
        g.mutable_node()->DeleteSubrange(k, 1);
        what = "removed node " + std::to_string(k);
        break;
      }
      default: {
        auto* shape = g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
        auto* dim = shape->mutable_dim(gen() % shape->dim_size());
        dim->set_dim_value(absurd() % 64);
        what = "graph input dims";
        break;
      }
    }
    expect_clean(load_and_run(m.SerializeAsString(), &tally),
                 "mutation " + std::to_string(i) + " (" + what + ")");
  }
  std::printf("[ bad      ] %d mutations: %d load errors, %d run errors, %d ran; e.g. %s\n", kCases,
              tally.load_errors, tally.run_errors, tally.ran, tally.first_error.c_str());
  EXPECT_GT(tally.load_errors + tally.run_errors, kCases / 4);
}

// The shipped model, fed what it does not take: each request fails naming the input and
// what was expected, and the Context still runs a good request afterwards.
TEST(BadModels, FashionMnistWrongInputs) {
  REQUIRE_FASHION_MODEL();
  auto engine = Engine::from_bytes(fashion_bytes(), {});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  TensorInfo info = (*engine)->inputs().at(0);
  Tensor good = input_for(info);
  struct Bad {
    std::string name;
    Tensor t;
    std::vector<std::string> words;
  };
  const std::vector<Bad> bad = {
      {"images", good, {"images", "input"}},
      {"input", Tensor::zeros(DataType::kFloat32, {2, 3, 28, 28}), {"input", "[2,3,28,28]"}},
      {"input", Tensor::zeros(DataType::kFloat32, {2, 28, 28}), {"input", "[2,28,28]"}},
      {"input", Tensor::zeros(DataType::kFloat32, {1, 1, 32, 32}), {"input", "[1,1,32,32]"}},
      {"input", Tensor::zeros(DataType::kUInt8, {2, 1, 28, 28}), {"input", "float32", "uint8"}},
      {"input", Tensor::zeros(DataType::kFloat64, {2, 1, 28, 28}), {"input", "float64"}},
  };
  for (const Bad& b : bad) {
    auto out = ctx->run({{b.name, b.t}});
    ASSERT_FALSE(out.is_ok()) << b.name << " " << shape_str(b.t.shape()) << " ran";
    for (const std::string& w : b.words)
      EXPECT_NE(out.status().message().find(w), std::string::npos)
          << "'" << w << "' not in: " << out.status().to_string();
  }
  auto out = ctx->run({{"input", good}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("logits").shape(), (Shape{2, 10}));
}

}  // namespace
}  // namespace kiln
