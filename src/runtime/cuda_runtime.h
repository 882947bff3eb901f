// The runtime's side of CUDA engines: the state an Engine shares across its Contexts
// (uploaded weights, timing cache) and the state each Context owns (stream, library
// handles, the plan for the current input shapes). Builds without CUDA get stubs that
// report the backend missing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/status.h"

namespace kiln {

struct CudaEngineState;
struct CudaContextState;
struct CudaComputeOrder;

// Checks the options and the device, loads the timing cache; `tactics` (key, value) pairs
// come from a plan file.
Result<std::shared_ptr<CudaEngineState>> make_cuda_engine_state(
    const EngineOptions& options,
    const std::vector<std::pair<std::string, std::string>>& tactics = {});

// Runs the context's plan for these inputs' shapes (graph order), building and caching it
// first when no cached plan has them (at most EngineOptions::max_cached_plans per context,
// least recently used dropped first; each plan keeps its own CUDA graph and staging buffers, and
// all share the context's arena and workspace, grown to the largest plan).
Status cuda_run(const Engine::Impl& engine, std::shared_ptr<CudaContextState>& ctx,
                const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

Result<DeviceTiming> cuda_last_timing(const CudaContextState* ctx);
Result<std::vector<double>> cuda_time_compute(CudaContextState* ctx, int iterations);
Result<std::vector<LayerProfile>> cuda_profile_layers(CudaContextState* ctx, int iterations);
Result<DeviceMemoryInfo> cuda_device_memory(const CudaEngineState& e, const CudaContextState* ctx);
bool cuda_uses_graph(const CudaContextState* ctx);
// The plan of the last run, as data.
Result<PlanInfo> cuda_plan_info(const Engine::Impl& engine, const CudaContextState* ctx);
ContextStats cuda_stats(const CudaContextState* ctx);

// A compute order for the Contexts of one GPU (CudaComputeOrder, backends/cuda/cuda_device.h):
// from when a Context joins it, each run's compute waits for the compute of the run let in
// before it, on any Context that joined, while the copies overlap. Null in builds without CUDA.
std::shared_ptr<CudaComputeOrder> make_cuda_compute_order();
Status cuda_join_compute_order(const Engine::Impl& engine, std::shared_ptr<CudaContextState>& ctx,
                               std::shared_ptr<CudaComputeOrder> order);
// Turns the order on or off (it starts on); for a time with no run in flight.
void set_cuda_compute_order(CudaComputeOrder* order, bool on);

// OK when CUDA shows GPU `device`; else "WHAT: no GPU <device> (this machine has <count>)".
Status check_cuda_device(int device, const std::string& what);

// For plan files: the device tag (GPU, compute capability, library versions) and the
// timing cache's entries.
Result<std::string> cuda_current_device_tag(int device_index);
std::vector<std::pair<std::string, std::string>> cuda_tactic_entries(const CudaEngineState& e);

}  // namespace kiln
