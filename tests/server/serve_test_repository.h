// The model repository the protocol tests serve (HTTP and gRPC alike), and the offline
// engine's answers they compare with:
//   fashion  the shipped Fashion-MNIST net, max_batch_size 8, a 1 ms queue delay;
//   deep     the deeper net behind a queue of 4 (for overload), one thread;
//   patient  the Fashion-MNIST net waiting up to 5 s to fill a batch of 8 (a request sent alone
//            stays queued: for cancellation);
//   images   the Fashion-MNIST net taking encoded images (its input declared TYPE_STRING);
//   broken   a config that asks for sequence batching (UNAVAILABLE, with the reason).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "server/model_server.h"

namespace kiln::server::testing_repo {

namespace fs = std::filesystem;

inline fs::path write_repository(const std::string& tag) {
  const fs::path root =
      fs::temp_directory_path() / ("kiln_" + tag + "_" + std::to_string(getpid()));
  const std::string models = std::string(KILN_SOURCE_DIR) + "/models/";
  auto add = [&](const std::string& name, const std::string& file, const std::string& config) {
    fs::create_directories(root / name / "1");
    fs::copy_file(models + file, root / name / "1" / "model.onnx",
                  fs::copy_options::overwrite_existing);
    std::ofstream(root / name / "config.pbtxt") << config;
  };
  add("fashion", "fashion_mnist.onnx",
      "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n"
      "instance_group [ { count: 1 kind: KIND_CPU } ]\n");
  add("deep", "fashion_resnet18.onnx",
      "max_batch_size: 4\ndynamic_batching { default_queue_policy { max_queue_size: 4 } }\n"
      "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
      "parameters { key: \"threads\" value: { string_value: \"1\" } }\n");
  add("patient", "fashion_mnist.onnx",
      "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 5000000 }\n"
      "instance_group [ { count: 1 kind: KIND_CPU } ]\n");
  add("images", "fashion_mnist.onnx",
      "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n"
      "input [ { name: \"input\" data_type: TYPE_STRING dims: [ 1 ] } ]\n"
      "instance_group [ { count: 1 kind: KIND_CPU } ]\n");
  fs::create_directories(root / "broken" / "1");
  std::ofstream(root / "broken" / "config.pbtxt") << "sequence_batching { }";
  std::ofstream(root / "broken" / "1" / "model.onnx") << "x";
  return root;
}

// A ModelServer over write_repository(tag)'s folder `root`, its five models loaded (explicit
// model control), its GPU metrics read from the fake NVML (tests/fakes/fake_nvml.cc).
inline Result<std::unique_ptr<ModelServer>> start_server(const fs::path& root) {
  ServerOptions o;
  o.repository = root.string();
  o.model_control = "explicit";
  o.load_models = {"fashion", "broken", "deep", "patient", "images"};
  o.nvml_library = KILN_FAKE_NVML;
  return ModelServer::start(o);
}

// A 28×28 image of normal values, the same for the same seed.
inline std::vector<float> image(uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(784);
  for (float& x : v) x = d(gen);
  return v;
}

// `rows` images of seeds first..first+rows-1, one after the other.
inline std::vector<float> images(uint32_t first, int64_t rows) {
  std::vector<float> x;
  for (int64_t r = 0; r < rows; ++r) {
    auto v = image(first + static_cast<uint32_t>(r));
    x.insert(x.end(), v.begin(), v.end());
  }
  return x;
}

// The offline engine's logits for images(first, rows).
inline std::vector<float> offline_logits(const Engine& engine, uint32_t first, int64_t rows) {
  auto out = engine.create_context()->run(
      {{"input", Tensor::from_floats({rows, 1, 28, 28}, images(first, rows))}});
  return out.is_ok() ? out->at("logits").to_floats() : std::vector<float>{};
}

}  // namespace kiln::server::testing_repo
