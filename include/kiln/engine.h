// The public entry point: build an Engine from an ONNX model, run it through Contexts.
//
//   auto engine = kiln::Engine::load("model.onnx", {});
//   auto ctx = (*engine)->create_context();
//   auto outputs = ctx->run({{"input", tensor}});
//
// An Engine is immutable after load() and safe to share across threads. A Context owns
// everything mutable of one execution stream (intermediate tensors, scratch) and must be
// used by one thread at a time; create one per thread. An Engine must outlive its Contexts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;
class Context;

// A graph input or output as the model declares it. A dimension of -1 is symbolic
// (`dim_params` names it, e.g. "batch") or unknown.
struct TensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
  bool has_shape = false;
};

struct ModelStats {
  std::map<std::string, int64_t> op_counts;
  int64_t num_nodes = 0;
  int64_t num_parameters = 0;  // elements in initializers
  int64_t parameter_bytes = 0;
  double flops_per_image = 0;  // multiply-add = 2 FLOPs; symbolic batch taken as 1
};

class Engine {
 public:
  ~Engine();
  static Result<std::shared_ptr<Engine>> load(const std::string& path, const EngineOptions& opts);
  static Result<std::shared_ptr<Engine>> from_bytes(const std::string& bytes,
                                                    const EngineOptions& opts,
                                                    const std::string& base_dir = ".");

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const EngineOptions& options() const;
  // Op counts, parameters and FLOPs per image, from the graph's inferred shapes.
  ModelStats stats() const;
  // The model's metadata_props (key → value).
  const std::map<std::string, std::string>& metadata() const;
  const Graph& graph() const;

  std::unique_ptr<Context> create_context() const;

  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Context {
 public:
  ~Context();
  // Runs the model. Every graph input must be given, with the declared dtype and a shape
  // that matches the declared one (symbolic dimensions take any size).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs);

  struct Impl;
  explicit Context(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
