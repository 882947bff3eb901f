// Runs the built `kiln` binary on small models: run with tensor inputs, inspect,
// bench --json, demo, and the error contract (one "kiln: error:" line, exit 1 for bad
// input, 2 for usage/unsupported, never a signal). Image inputs: test_cli_image.cc.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "onnx/tensor_proto.h"
#include "runtime/cli_test_util.h"
#include "runtime/plan_file.h"

#ifdef KILN_CLI_PATH

namespace kiln::test {
namespace {

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

// A model without inputs (the backend test `test_constant`: one Constant node) runs with no
// --input and writes its output; a model with inputs and no --input is a usage error naming
// them.
TEST_F(Cli, RunsAModelWithoutInputs) {
  const fs::path dir = kRelu.parent_path() / "test_constant";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  auto want = read_tensor_pb((dir / "test_data_set_0/output_0.pb").string());
  ASSERT_TRUE(want.is_ok());
  auto r = kiln("run " + (dir / "model.onnx").string() + " -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("o/values.npy"), *want, 0);
  r = kiln("run " + (dir / "model.onnx").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("values: float32 [5,5]"), std::string::npos) << r.out;

  expect_error(kiln("run " + (kRelu / "model.onnx").string()), 2,
               "--input is required: the model has 1 input: 'x'");
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

TEST_F(Cli, SeveralInputsAreNamed) {
  std::string model = ModelBuilder()
                          .input("a", {"3"})
                          .input("b", {"3"})
                          .output("sum", {"3"})
                          .node("Add", {"a", "b"}, {"sum"})
                          .save(path("add.onnx"));
  Tensor a = Tensor::from_floats({3}, {1.5f, -2.f, 0.25f});
  Tensor b = Tensor::from_floats({3}, {0.5f, 4.f, -1.f});
  ASSERT_TRUE(write_npy(path("a.npy").string(), a).is_ok());
  ASSERT_TRUE(write_npy(path("b.npy").string(), b).is_ok());
  auto r = kiln("run " + model + " --input b=" + path("b.npy").string() +
                " --input a=" + path("a.npy").string() + " -o " + path("o").string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(read_output("o/sum.npy"), Tensor::from_floats({3}, {2.f, 2.f, -0.75f}), 0);
  expect_error(kiln("run " + model + " -i " + path("a.npy").string()), 2, "name the input");
  expect_error(kiln("run " + model + " -i a=" + path("a.npy").string()), 1, "missing input 'b'");
  expect_error(
      kiln("run " + model + " -i a=" + path("a.npy").string() + " -i a=" + path("b.npy").string()),
      2, "given twice");
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
      {"run " + model + " -i " + x + " --workspace-limit 5PiB", 2, "--workspace-limit: '5PiB'"},
      {"run " + model + " -i " + x + " --max-cached-plans 0", 2, "option max_cached_plans must be"},
      {"run " + model + " -i " + x + " --precision fp16", 2, "needs a CUDA engine"},
      {"bench " + model + " --precision tf32", 2, "precision tf32 needs a CUDA engine"},
      {"run " + model + " -i " + x + " --precision fp4", 2, "fp4"},
      {"run " + model + " -i " + x + " --precision fp8", 1,
       "precision fp8 needs calibration samples"},
      {"run " + model + " -i " + x + " --cpu-layout nchw", 2, "nchw"},
      {"run " + model + " -i " + x + " --cudnn-conv-path both", 2, "both"},
      {"bench " + model + " --shapes x", 2, "--shapes: 'x': expected NAME=DIMS"},
      {"bench " + model + " --shapes x=3x4x5,a", 2, "'a' is not a shape"},
      {"bench " + model + " --shapes nope=3x4x5", 1, "unknown input 'nope'"},
      {"bench " + model + " --shapes x=1x3", 1, "shape profile 1: input 'x': expected shape"},
      {"inspect " + path("garbage.bin").string(), 1, "garbage.bin"},
      {"bench " + model + " --duration -1", 2, "duration"},
      {"bench " + model + " --shape-range x=3x4x5", 2, "expected NAME=MIN:OPT:MAX (three"},
      {"bench " + model + " --shape-range x=3x4x5:3x4x5:3xy", 2, "'3xy' is not a shape"},
      {"bench " + model + " --shape-range x=3x4x5:3x4x5:3x4x6", 1, "dimension 2 of the input"},
      {"bench " + model + " --precision-overrides relu", 2, "expected NODE=PRECISION"},
      {"bench " + model + " --precision-overrides a=fp99", 2, "fp99"},
      {"bench " + model + " --precision-overrides nope=fp32", 1, "the model has no node 'nope'"},
      {"bench " + model + " --precision-overrides nope=fp16", 2, "needs a CUDA engine"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    expect_error(kiln(c.args), c.code, c.says);
  }
  // A good profile builds and runs.
  auto r = kiln("bench " + model +
                " --shapes x=3x4x5 --only-shapes --verify-passes --warmup 0.02 --duration 0.05");
  EXPECT_EQ(r.code, 0) << r.err;
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

// The CPU switches reach the engine as typed options: a 3×3 conv chain run with the layouts
// forced and Winograd forced gives the default run's numbers (to Winograd's rounding).
TEST_F(Cli, CpuLayoutAndConvAlgoFlagsRunTheSameModel) {
  std::mt19937 gen(9);
  auto weights = [&](size_t n) {
    std::vector<float> w(n);
    for (float& v : w) v = static_cast<float>(gen() % 200) / 400.f - 0.25f;
    return w;
  };
  std::string model = ModelBuilder()
                          .input("x", {"1", "16", "12", "12"})
                          .output("y", {"1", "16", "8", "8"})
                          .initializer("w1", {16, 16, 3, 3}, weights(16 * 16 * 9))
                          .initializer("w2", {16, 16, 3, 3}, weights(16 * 16 * 9))
                          .node("Conv", {"x", "w1"}, {"a"})
                          .node("Relu", {"a"}, {"b"})
                          .node("Conv", {"b", "w2"}, {"y"})
                          .save(path("convs.onnx"));
  Tensor x(DataType::kFloat32, {1, 16, 12, 12});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>(gen() % 1000) / 500.f - 1.f;
  ASSERT_TRUE(write_npy(path("cx.npy").string(), x).is_ok());
  auto r = kiln("run " + model + " -i " + path("cx.npy").string() + " -o " + path("d").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const Tensor want = read_output("d/y.npy");
  for (const char* flags :
       {"--cpu-layout nhwc --cpu-conv-algo winograd", "--cpu-layout blocked --cpu-conv-algo auto",
        "--cpu-layout value", "--cpu-layout alternate --cpu-conv-algo direct"}) {
    SCOPED_TRACE(flags);
    r = kiln("run " + model + " -i " + path("cx.npy").string() + " -o " + path("f").string() + " " +
             flags);
    ASSERT_EQ(r.code, 0) << r.err;
    expect_close(read_output("f/y.npy"), want, 1e-4);
  }
}

// --precision fp16: inspect names the node whose float32 values leave fp16's range, and says
// so when none does (bench and build with --device cuda warn on stderr the same way).
TEST_F(Cli, Fp16RangeGuardNamesTheOverflowingNode) {
  std::string hot = ModelBuilder()
                        .input("x", {"batch", "16"})
                        .output("y", {"batch", "16"})
                        .initializer("big", {}, {1e6f})
                        .initializer("small", {}, {1e-6f})
                        .node("Mul", {"x", "big"}, {"hot"})
                        .node("Mul", {"hot", "small"}, {"y"})
                        .save(path("hot.onnx"));
  auto r = kiln("inspect --precision fp16 " + hot);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fp16 range: 1 of 2 float values leave fp16's range"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(Mul): output 'hot' reaches"), std::string::npos) << r.out;
  // The CPU engine only warns: keeping layers in fp32 is for CUDA fp16 engines.
  EXPECT_NE(r.out.find("in fp16 they become inf"), std::string::npos) << r.out;
  r = kiln("inspect --precision fp16 --no-fp16-fallback " + hot);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("output 'hot' reaches"), std::string::npos) << r.out;

  std::string cool = channel_mean_model(path("m.onnx"));
  r = kiln("inspect --precision fp16 " + cool);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("float values inside fp16's range"), std::string::npos) << r.out;

  // y = 1000·x: random inputs stay inside fp16's range, inputs like the real ones (--calib,
  // values of 100) do not. The report says which it ran on.
  std::string scaled = ModelBuilder()
                           .input("x", {"batch", "16"})
                           .output("y", {"batch", "16"})
                           .initializer("k", {}, {1e3f})
                           .node("Mul", {"x", "k"}, {"y"})
                           .save(path("scaled.onnx"));
  const std::string real = path("real.npy").string();
  ASSERT_TRUE(write_npy(real, Tensor::from_floats({4, 16}, std::vector<float>(64, 100.f))).is_ok());
  r = kiln("inspect --precision fp16 " + scaled);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("inside fp16's range (float32 run on 2 random inputs; --calib"),
            std::string::npos)
      << r.out;
  r = kiln("inspect --precision fp16 --calib " + real + " " + scaled);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("1 of 1 float values leave fp16's range (float32 run on 1 samples of " + real),
      std::string::npos)
      << r.out;
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

// --alternate: each batch alone, then in rotation on one context, with no plan built and no
// arena allocated during the rotation (every batch has its cached plan, sharing one arena).
TEST_F(Cli, BenchAlternatesBatchesWithoutRebuilding) {
  std::string model = channel_mean_model(path("m.onnx"));
  auto r = kiln("bench " + model + " --alternate 1,4,2 --duration 0.1 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("alternating"), std::string::npos) << r.out;
  for (const char* row : {"cpu        1 ", "cpu        4 ", "cpu        2 "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  EXPECT_NE(r.out.find("while alternating: 0 plan builds, 0 arena allocations"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("in all: 3 plan builds,"), std::string::npos) << r.out;
  expect_error(kiln("bench " + model + " --alternate 2"), 2, "at least two batch sizes");
  expect_error(kiln("bench " + model + " --alternate 1,0"), 2, "--alternate");
  expect_error(kiln("bench " + model + " --alternate 1,2 --json x.json"), 2,
               "--alternate times whole runs");
}

// --streams: a Pipeline of contexts, each of which ran requests; bad combinations refused.
TEST_F(Cli, BenchStreamsRunsAPipeline) {
  std::string model = channel_mean_model(path("m.onnx"));
  auto r = kiln("bench " + model + " --batch 2 --streams 3 --warmup 0 --duration 0.2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 streams"), std::string::npos) << r.out;
  const size_t at = r.out.find("requests per context (timed and drained):");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream counts(r.out.substr(at + 42));
  int64_t n = 0, contexts = 0, total = 0;
  while (counts >> n) {
    ++contexts;
    total += n;
  }
  EXPECT_EQ(contexts, 3) << r.out;
  EXPECT_GT(total, 0) << r.out;
  expect_error(kiln("bench " + model + " --streams 2 --json x.json"), 2,
               "--streams times whole requests");
  expect_error(kiln("bench " + model + " --streams 0"), 2, "--streams");
  expect_error(kiln("bench " + model + " --inflight 4"), 2, "need --streams");
  expect_error(kiln("bench " + model + " --ordered-compute"), 2, "need --streams");
  expect_error(kiln("bench " + model + " --streams 2 --ordered-compute --unordered-compute"), 2,
               "choose one");
  EXPECT_EQ(r.out.find("compute order"), std::string::npos) << "no compute order on the CPU";
  expect_error(kiln("bench " + model + " --streams 2 --gpus 0,0"), 2, "--gpus needs --device cuda");
  // --gpus is checked against the GPUs CUDA shows before any engine is built: a bad entry is
  // named; on a machine without a GPU, every index (and all) says none is visible.
  expect_error(kiln("bench " + model + " --streams 2 --gpu-inputs"), 2,
               "--gpu-inputs holds the inputs in one CUDA GPU's memory");
  expect_error(kiln("bench " + model + " --device cuda --gpu-inputs --pinned"), 2,
               "takes no --pinned");
  expect_error(kiln("bench " + model + " --device cuda --streams 2 --gpus 0,x"), 2,
               "'x' is not a GPU index (expected all, or 0,1,...)");
  expect_error(kiln("bench " + model + " --device cuda --streams 2 --gpus -1"), 2,
               "'-1' is not a GPU index");
  if (!fs::exists("/dev/nvidia0")) {
    expect_error(kiln("bench " + model + " --device cuda --streams 2 --gpus all"), 2,
                 "--gpus all: no CUDA GPU is visible");
    expect_error(kiln("bench " + model + " --device cuda --streams 2 --gpus 0,1"), 2,
                 "there is no GPU 0; no CUDA GPU is visible");
  }
  // --inflight sets the requests in flight; --monitor goes on, saying why, where NVML is
  // missing, and prints its samples where it is not.
  r = kiln("bench " + model +
           " --batch 2 --streams 2 --inflight 5 --warmup 0 --duration 0.2 --threads 1 --monitor");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("5 in flight"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.find("--monitor: cannot load") != std::string::npos ||
              r.out.find("samples, every 100 ms") != std::string::npos)
      << r.out << r.err;
}

// --ladder: every row a real configuration, measured; the CPU skips the CUDA graph row; the
// files hold the same rows. Options the rows set themselves are refused.
TEST_F(Cli, BenchLadderMeasuresEveryRow) {
  const std::string model = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  const std::string prefix = path("ladder").string();
  auto r = kiln("bench " + model + " --ladder --batch 4 --warmup 0 --duration 0.1 --rounds 2 " +
                "--streams 2 --threads 2 --ladder-out " + prefix);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("round 2/2, row 6 (+ uint8 NHWC input)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: CUDA graphs are for CUDA engines"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(fs::path(prefix + ".json")), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["rounds"], 2);
  ASSERT_EQ(j["rows"].size(), 6u);
  for (int i = 0; i < 6; ++i) {
    const auto& row = j["rows"][i];
    if (i == 3) {
      EXPECT_EQ(row["ran"], false);
      continue;
    }
    EXPECT_EQ(row["ran"], true) << row.dump();
    EXPECT_EQ(row["round_images_per_s"].size(), 2u) << row.dump();
    EXPECT_GT(row["images_per_s"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["own_mib"].get<double>(), 0) << row.dump();
    EXPECT_LE(row["latency_ms"]["p50"].get<double>(), row["latency_ms"]["p99"].get<double>());
    EXPECT_TRUE(row["used_mib"].is_null());  // no GPU
  }
  const std::string first = j["rows"][0]["config"], last = j["rows"][5]["config"];
  EXPECT_NE(first.find("optimize=off reuse_memory=off one context"), std::string::npos) << first;
  EXPECT_NE(last.find("pipeline contexts=2"), std::string::npos) << last;
  EXPECT_NE(last.find("threads=1 input=uint8-nhwc"), std::string::npos) << last;
  // Without the memory plan every value has bytes of its own: more than with it.
  EXPECT_GT(j["rows"][1]["own_mib"].get<double>(), j["rows"][2]["own_mib"].get<double>());
  EXPECT_NE(slurp(fs::path(prefix + ".md")).find("| 6 | + uint8 NHWC input |"), std::string::npos);
  EXPECT_NE(slurp(fs::path(prefix + ".svg")).find("</svg>"), std::string::npos);
  // A model whose input is not an image skips the uint8 row.
  const std::string flat = path("flat.onnx").string();
  ModelBuilder()
      .input("x", {"batch", "5"})
      .output("y", {"batch", "5"})
      .node("Relu", {"x"}, {"y"})
      .save(flat);
  r = kiln("bench " + flat + " --ladder --batch 2 --warmup 0 --duration 0.05 --threads 1");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("skipped: the model's input is not one image tensor"), std::string::npos)
      << r.out;
  expect_error(kiln("bench " + flat + " --ladder --json x.json"), 2, "--ladder sets each row");
  expect_error(kiln("bench " + flat + " --rounds 3"), 2, "need --ladder");
  expect_error(kiln("bench " + flat + " --ladder --rounds 0"), 2, "--rounds");
  expect_error(kiln("bench " + path("missing.onnx").string() + " --ladder"), 1, "row 1");
}

// --plan-steps: the plan as data on the CPU, one line per step with its operands; a plan file
// is inspected only on the device it was built for.
TEST_F(Cli, InspectPrintsThePlanSteps) {
  std::string model = channel_mean_model(path("m.onnx"));
  auto r = kiln("inspect " + model + " --plan-steps --batch 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("plan steps (device, kind, op, name [tactic]: inputs -> outputs)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0 cpu kernel "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" external"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arena cpu: "), std::string::npos) << r.out;
  PlanFile plan;
  plan.kiln_version = kiln_version();
  plan.device_tag = "NVIDIA H200 sm_90 cudnn 91400 cudart 13000";
  plan.onnx_bytes = slurp(fs::path(model));
  const std::string kiln_file = path("m.kiln").string();
  std::ofstream(kiln_file, std::ios::binary) << serialize_plan(plan);
  expect_error(kiln("inspect " + kiln_file), 1, "is a CUDA plan file; run it with --device cuda");
  // A CPU plan file: built, then inspected and run as the engine it holds.
  const std::string cpu_file = path("cpu.kiln").string();
  auto built = kiln("build " + model + " -o " + cpu_file + " --batch 2 --threads 1");
  ASSERT_EQ(built.code, 0) << built.err;
  auto inspected = kiln("inspect " + cpu_file + " --plan-steps --batch 2 --threads 1");
  ASSERT_EQ(inspected.code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("0 cpu kernel "), std::string::npos) << inspected.out;
  auto benched = kiln("bench " + cpu_file + " --batch 2 --warmup 0 --duration 0.05 --threads 1");
  ASSERT_EQ(benched.code, 0) << benched.err;
}

// --dump-profile on the CPU: one entry per node with its backend and a mean time, and the
// slowest printed; --no-transfers stays CUDA-only.
TEST_F(Cli, BenchDumpsACpuProfile) {
  std::string model = channel_mean_model(path("m.onnx"));
  auto r = kiln("bench " + model + " --batch 2 --warmup 0 --duration 0.05 --threads 1 " +
                "--dump-profile " + path("p.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("per-layer profile"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(path("p.json")), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << slurp(path("p.json"));
  ASSERT_TRUE(j.is_array());
  ASSERT_FALSE(j.empty());
  double total = 0;
  for (const auto& l : j) {
    for (const char* key : {"name", "op", "tactic", "cpu", "ms"})
      EXPECT_TRUE(l.contains(key)) << key;
    EXPECT_TRUE(l["cpu"].get<bool>());
    EXPECT_FALSE(l["tactic"].get<std::string>().empty());
    EXPECT_GE(l["ms"].get<double>(), 0);
    total += l["ms"].get<double>();
  }
  EXPECT_GT(total, 0);
  expect_error(kiln("bench " + model + " --no-transfers"), 2, "--no-transfers needs --device cuda");
  expect_error(kiln("bench " + model + " --device cuda --no-transfers --pinned"), 2,
               "take no --pinned or --gpu-inputs");
  expect_error(kiln("bench " + model + " --device cuda --dump-profile p.json --gpu-inputs"), 2,
               "take no --pinned or --gpu-inputs");
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

// An int8 plan: `kiln build --precision int8 --calib` calibrates, writes OUTPUT.calib beside
// the plan, and the plan keeps the scales; without samples or a cache it is a clear error.
TEST_F(Cli, BuildsAnInt8PlanFromCalibrationSamples) {
  const std::string model = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  std::vector<float> v(40 * 784);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 400.f - 1.f;
  const std::string npy = path("calib.npy").string();
  ASSERT_TRUE(write_npy(npy, Tensor::from_floats({40, 1, 28, 28}, v)).is_ok());
  const std::string plan = path("f.kiln").string();
  auto built = kiln("build " + model + " --precision int8 --calib " + npy +
                    " --calib-samples 32 --calib-method minmax --batch 2 --threads 1 -o " + plan);
  ASSERT_EQ(built.code, 0) << built.err;
  EXPECT_NE(built.err.find("int8: 7 layers quantized"), std::string::npos) << built.err;
  EXPECT_NE(built.err.find("calibrating [=============================="), std::string::npos)
      << built.err;
  EXPECT_NE(built.err.find("32/32 samples"), std::string::npos) << built.err;
  EXPECT_NE(built.err.find("(pass 1 of 1)"), std::string::npos) << built.err;  // minmax
  EXPECT_NE(built.out.find("(int8)"), std::string::npos) << built.out;
  EXPECT_TRUE(fs::exists(plan + ".calib"));
  auto inspected = kiln("inspect " + plan + " --plan --batch 2 --threads 1");
  ASSERT_EQ(inspected.code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("minmax scales from the engine's saved calibration"),
            std::string::npos)
      << inspected.out;
  auto run = kiln("bench " + plan + " --batch 2 --warmup 0 --duration 0.05 --threads 1");
  ASSERT_EQ(run.code, 0) << run.err;
  // The per-layer comparison against fp32, on the samples calibration left over (8 of 40).
  auto report = kiln("inspect " + model + " --precision int8 --calib " + npy +
                     " --calib-samples 32 --calib-batch 4 --calib-method minmax --threads 1 "
                     "--precision-report --max-layer-error 0.5");
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_NE(report.out.find("precision report: int8 against fp32 on 2 batches of samples of"),
            std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find("after the 32 calibration takes"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("output logits"), std::string::npos) << report.out;
  // --keep: named layers at the next higher precision (fp32 on the CPU); fp8 the same way.
  auto kept = kiln("build " + model + " --precision int8 --calib " + npy +
                   " --calib-samples 32 --calib-method minmax --batch 2 --threads 1 --keep "
                   "/stem/stem.0/Conv,/conv2/conv2.0/Conv -o " +
                   path("k.kiln").string());
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(kept.err.find("int8: 5 layers quantized"), std::string::npos) << kept.err;
  EXPECT_NE(kept.err.find("2 in float"), std::string::npos) << kept.err;
  auto fp8 = kiln("build " + model + " --precision fp8 --calib " + npy +
                  " --calib-samples 32 --batch 2 --threads 1 -o " + path("f8.kiln").string());
  ASSERT_EQ(fp8.code, 0) << fp8.err;
  EXPECT_NE(fp8.err.find("fp8: 7 layers quantized"), std::string::npos) << fp8.err;
  EXPECT_NE(fp8.err.find("minmax scales"), std::string::npos) << fp8.err;  // entropy → min-max
  // --precision best: int8 on the CPU, the layers over the budget kept in fp32 by measured error.
  auto best = kiln("build " + model + " --precision best --calib " + npy +
                   " --calib-samples 32 --calib-method minmax --batch 2 --threads 1 "
                   "--max-layer-error 0.005 -o " +
                   path("b.kiln").string());
  ASSERT_EQ(best.code, 0) << best.err;
  EXPECT_NE(best.err.find("--precision best (int8, budget 0.005) on 1 batches"), std::string::npos)
      << best.err;
  EXPECT_NE(best.err.find("kiln:   kept "), std::string::npos) << best.err;  // worst 1.7e-2
  EXPECT_NE(best.out.find("(int8)"), std::string::npos) << best.out;
  // Without --calib-method, best calibrates once for every method and keeps the one whose
  // outputs come closest to fp32's.
  auto chosen = kiln("build " + model + " --precision best --calib " + npy +
                     " --calib-samples 32 --batch 2 --threads 1 -o " + path("m.kiln").string());
  ASSERT_EQ(chosen.code, 0) << chosen.err;
  EXPECT_NE(chosen.err.find("by calibration method: entropy "), std::string::npos) << chosen.err;
  EXPECT_NE(chosen.err.find(" kept (--calib-method chooses one)"), std::string::npos) << chosen.err;
  EXPECT_TRUE(fs::exists(path("m.kiln").string() + ".calib"));
  EXPECT_FALSE(fs::exists(path("m.kiln").string() + ".calib.trial"));
  expect_error(kiln("bench " + model + " --precision best"), 2, "--precision best is kiln build's");
  expect_error(kiln("build " + model + " --precision best -o " + path("g.kiln").string()), 2,
               "--precision best measures on samples like the real inputs");
  expect_error(kiln("build " + model + " --keep /stem/stem.0/Conv -o " + path("h.kiln").string()),
               2, "--keep keeps layers of a reduced-precision engine");
  expect_error(kiln("inspect " + model + " --precision-report"), 2, "compares a reduced precision");
  expect_error(kiln("build " + model + " --precision int8 -o " + path("g.kiln").string()), 1,
               "precision int8 needs calibration samples");
  expect_error(kiln("build " + model + " --precision int8 --calib-method median -o " +
                    path("g.kiln").string()),
               2, "calibration_method must be entropy, minmax, percentile");
}

}  // namespace
}  // namespace kiln::test

#endif  // KILN_CLI_PATH
