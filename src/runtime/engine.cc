#include <algorithm>

#include "backends/cpu/dnnl_backend.h"
#include "core/check.h"
#include "onnx/importer.h"
#include "passes/pass.h"
#include "runtime/engine_impl.h"

namespace kiln {

namespace {

TensorInfo info_of(const Value& v) {
  TensorInfo t;
  t.name = v.name;
  t.dtype = v.dtype;
  t.has_shape = v.has_shape;
  for (const Dim& d : v.dims) {
    t.dims.push_back(d.known() ? d.value : -1);
    t.dim_params.push_back(d.param);
  }
  return t;
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

const std::vector<TensorInfo>& Engine::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Engine::outputs() const { return impl_->outputs; }
const EngineOptions& Engine::options() const { return impl_->options; }
const Graph& Engine::graph() const { return *impl_->graph; }
const std::map<std::string, std::string>& Engine::metadata() const { return impl_->metadata; }

Result<std::shared_ptr<Engine>> build_engine(std::unique_ptr<Graph> graph,
                                             const EngineOptions& options) {
  if (options.device == Device::kCuda)
    return unsupported("--device cuda: this kiln build has no CUDA backend yet");
  if (options.backend != "auto" && options.backend != "reference")
    return invalid_argument("backend '" + options.backend + "': expected auto or reference");
  if (options.optimize) KILN_RETURN_IF_ERROR(optimize_graph(*graph));
  KILN_RETURN_IF_ERROR(graph->topo_sort());
  KILN_RETURN_IF_ERROR(verify_graph(*graph));

  auto impl = std::make_unique<Engine::Impl>();
  impl->options = options;
  for (const Value* v : graph->inputs()) impl->inputs.push_back(info_of(*v));
  for (const Value* v : graph->outputs()) impl->outputs.push_back(info_of(*v));
  impl->metadata = graph->metadata;

  const Backend& ref = reference_backend();
  // "auto": oneDNN for the nodes it supports, the reference kernels for the rest.
  const Backend* fast = options.backend == "auto" ? &onednn_backend(options.threads) : nullptr;
  for (const auto& n : graph->nodes()) {
    const Backend* b = fast && fast->supports(*n) ? fast : &ref;
    if (b == &ref && !ref.supports(*n))
      return unsupported(n->describe() + ": op " + op_name(n->op) + " has no kernel");
    impl->order.push_back(n.get());
    impl->node_backend.push_back(b);
  }
  impl->last_use.assign(graph->value_id_limit(), -1);
  impl->is_graph_output.assign(graph->value_id_limit(), false);
  for (size_t i = 0; i < impl->order.size(); ++i)
    for (const Value* in : impl->order[i]->inputs)
      if (in) impl->last_use[in->id()] = static_cast<int>(i);
  for (const Value* o : graph->outputs()) impl->is_graph_output[o->id()] = true;
  impl->graph = std::move(graph);
  return std::make_shared<Engine>(std::move(impl));
}

Result<std::shared_ptr<Engine>> Engine::load(const std::string& path, const EngineOptions& opts) {
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_file(path));
  return build_engine(std::move(graph), opts).with_context(path);
}

Result<std::shared_ptr<Engine>> Engine::from_bytes(const std::string& bytes,
                                                   const EngineOptions& opts,
                                                   const std::string& base_dir) {
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_bytes(bytes, base_dir));
  return build_engine(std::move(graph), opts);
}

std::unique_ptr<Context> Engine::create_context() const {
  auto impl = std::make_unique<Context::Impl>();
  impl->engine = impl_.get();
  for (size_t i = 0; i < impl_->order.size(); ++i) {
    auto k = impl_->node_backend[i]->create_kernel(*impl_->order[i]);
    // supports() was checked at build time; a failure here is a backend bug.
    KILN_CHECK(k.is_ok());
    impl->kernels.push_back(std::move(k).value());
  }
  impl->slots.resize(impl_->graph->value_id_limit());
  return std::make_unique<Context>(std::move(impl));
}

}  // namespace kiln
