// A Pipeline runs requests on several Contexts of one Engine at once: each Context has its
// own stream (on CUDA) and its own plans, and the weights are the Engine's, shared.
//
//   auto pipeline = kiln::Pipeline::create(engine, {.contexts = 4});
//   std::future<kiln::Result<kiln::Outputs>> f = (*pipeline)->submit({{"input", tensor}});
//   auto outputs = f.get();
//
// submit() is safe from many threads. Requests are taken in the order they were submitted, by
// whichever Context is free; every request gets its own result (outputs or an error that
// names what was wrong with it), exactly once. A request that fails leaves the others running.
// At most `max_queued` requests wait; submit() then blocks until one is taken. Destroying the
// Pipeline finishes every request already submitted.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "kiln/engine.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

using Outputs = std::map<std::string, Tensor>;

struct PipelineOptions {
  int contexts = 2;         // Contexts (CUDA streams) running requests at once
  size_t max_queued = 256;  // requests waiting before submit() blocks
};

// What a Pipeline has done so far.
struct PipelineStats {
  int64_t submitted = 0;
  int64_t completed = 0;  // results given, errors included
  int64_t failed = 0;
  std::vector<int64_t> per_context;  // requests each Context ran
};

class Pipeline {
 public:
  // The Engine must outlive the Pipeline; its Contexts are created (with the shape profiles'
  // plans) before this returns.
  static Result<std::unique_ptr<Pipeline>> create(std::shared_ptr<const Engine> engine,
                                                  const PipelineOptions& options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Runs `inputs` `runs` times on each Context in turn, from the calling thread, before any
  // request is submitted: each Context builds its plan for these shapes (on CUDA the first
  // run builds it, the second captures its CUDA graph) one after the other rather than all at
  // once. An error once a request was submitted.
  Status warm_up(const Outputs& inputs, int runs = 2);
  std::future<Result<Outputs>> submit(Outputs inputs);
  PipelineStats stats() const;
  int contexts() const;

  struct Impl;

 private:
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
