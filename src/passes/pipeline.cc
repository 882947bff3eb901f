// Every pass an engine's graph goes through, in order, in one place, with the engines it
// applies to:
//  - normalize_image_inputs first and always (8-bit image inputs, EngineOptions::input_format),
//    so the optimizer fuses the normalization like any other per-channel affine;
//  - then, with EngineOptions::optimize, the optimizer: a model stored in float16 widened to
//    float32 first (its weights then fold and fuse like any other's); identity removal so the
//    patterns below see through it, and again after constant folding (a Pad by zeros whose pads a
//    Constant node gave); constant folding before BN folding (exporters sometimes compute BN
//    params with Constant nodes); BN folding before epilogue fusion so Conv + BN + Relu fuses as
//    one; channel shuffles as one node; dead nodes last, to sweep what folding orphaned. Their
//    fused groups are merged by surviving node (conv + bn, then conv + relu, is one group);
//  - then the rewrites that follow the optimizer's groups (each group reported as it is made):
//    standalone channel affines as one node on every device, and on CUDA the concat + norm and
//    squeeze-and-excitation fusions, which only CUDA kernels run;
//  - last, for int8 engines given their calibration's magnitudes, quantize_int8: the Q/DQ pairs
//    before the layers, after every fusion so the patterns above see the float graph; then on
//    the CPU fuse_int8_conv, which folds each pair into the Conv, Gemm or MatMul reading it for
//    oneDNN's 8-bit kernel, and on CUDA fp8 engines fuse_fp8_conv, which does the same for
//    cudnn-fp8 (CUDA int8 engines run the pairs themselves). fuse_int8_conv also runs on models
//    quantized by another tool (their own Q/DQ pairs), with the optimizer.
#include <map>

#include "passes/pass.h"

namespace kiln {

namespace {

using Groups = std::vector<std::vector<std::string>>;

struct PassInputs {
  const EngineOptions& options;
  const std::map<std::string, double>* amax;  // int8 engines: per value, from calibration
  QuantizationReport* quantization;
  Precision format;  // 8-bit engines: kInt8 or kFp8
};

// Which engines a pass applies to, and when.
enum class When {
  kAlways,         // every engine, with or without the optimizer
  kOptimize,       // with EngineOptions::optimize; its groups merged after the last of these
  kAfter,          // with optimize, after the merge; its groups reported as they are made
  kAfterCudaOnly,  // the same, CUDA engines only
  kInt8,           // int8 engines (optimize_graph given magnitudes), after everything
  kInt8CpuOnly,    // CPU engines: int8 ones, and any with the optimizer (a model's own Q/DQ)
  kFp8CudaOnly     // CUDA fp8 engines, after quantize_int8
};

struct Pass {
  const char* name;
  When when;
  Result<bool> (*run)(Graph&, const PassInputs&, Groups*);
  bool listed_if_changed = false;  // reported only where it changed the graph
};

const Pass kPasses[] = {
    {"normalize_image_inputs", When::kAlways,
     [](Graph& g, const PassInputs& in, Groups*) {
       const EngineOptions& o = in.options;
       return normalize_image_inputs(g, o.input_format, o.input_mean, o.input_std);
     }},
    {"widen_float16", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups*) { return widen_float16(g); }, true},
    {"remove_identity", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups*) { return remove_identity(g); }},
    {"fold_constants", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups*) { return fold_constants(g); }},
    // Again: folding makes constants of inputs Constant nodes gave (a Pad's zero pads).
    {"remove_identity", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups*) { return remove_identity(g); }},
    {"fold_batch_norm", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups* gr) { return fold_batch_norm(g, gr); }},
    {"fuse_epilogue", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups* gr) { return fuse_epilogue(g, gr); }},
    {"fuse_channel_shuffle", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups* gr) { return fuse_channel_shuffle(g, gr); }},
    {"eliminate_dead_nodes", When::kOptimize,
     [](Graph& g, const PassInputs&, Groups*) { return eliminate_dead_nodes(g); }},
    {"fuse_channel_affine", When::kAfter,
     [](Graph& g, const PassInputs&, Groups* gr) { return fuse_channel_affine(g, gr); }},
    {"fuse_concat_affine", When::kAfterCudaOnly,
     [](Graph& g, const PassInputs&, Groups* gr) { return fuse_concat_affine(g, gr); }},
    {"fuse_squeeze_excite", When::kAfterCudaOnly,
     [](Graph& g, const PassInputs&, Groups* gr) { return fuse_squeeze_excite(g, gr); }},
    {"quantize_int8", When::kInt8,
     [](Graph& g, const PassInputs& in, Groups*) {
       return quantize_int8(g, *in.amax, in.quantization, &in.options.precision_overrides,
                            in.format);
     }},
    // The CPU's oneDNN runs int8 convs; CUDA runs the Q → DQ pairs until it has 8-bit kernels.
    {"fuse_int8_conv", When::kInt8CpuOnly,
     [](Graph& g, const PassInputs& in, Groups*) { return fuse_int8_conv(g, in.quantization); }},
    // CUDA fp8 convs read the e4m3 codes, run by cudnn-fp8 (checked against the reference on an
    // H100: tests/backends/cuda/test_cudnn_fp8.cc, CudaFp8.*; CUDA int8 engines still run their
    // Q → DQ pairs in float).
    {"fuse_fp8_conv", When::kFp8CudaOnly,
     [](Graph& g, const PassInputs& in, Groups*) { return fuse_fp8_conv(g, in.quantization); }},
};

// "conv1 + bn1 + relu1 → Conv[→ Relu]": a group's names, and what its surviving node is now.
std::string group_line(const std::vector<std::string>& names, const Node* head) {
  std::string line;
  for (const std::string& s : names) line += (line.empty() ? "" : " + ") + s;
  if (!head) return line;
  line += std::string(" → ") + op_name(head->op);
  if (!head->epilogue.empty()) line += "[" + head->epilogue.describe() + "]";
  return line;
}

// Adds `groups` to the report as they stand in `g`: each group's nodes after the first were
// fused into it. With `merge`, groups sharing a surviving node are one, and a group whose node
// a later pass removed is left out.
void report_groups(const Graph& g, const Groups& groups, bool merge, PassReport& report) {
  std::map<std::string, const Node*> by_name;
  for (const auto& n : g.nodes()) by_name[n->name] = n.get();
  Groups lines;
  if (merge) {
    std::map<std::string, size_t> at;
    for (const auto& grp : groups) {
      auto [it, fresh] = at.emplace(grp[0], lines.size());
      if (fresh) lines.push_back({grp[0]});
      lines[it->second].insert(lines[it->second].end(), grp.begin() + 1, grp.end());
    }
  } else {
    lines = groups;
  }
  for (const auto& names : lines) {
    auto it = by_name.find(names[0]);
    if (merge && it == by_name.end()) continue;  // folded away later
    for (size_t i = 1; i < names.size(); ++i)
      report.fused_into[names[i]] = {names[0], report.fused_groups.size()};
    report.fused_groups.push_back(group_line(names, it == by_name.end() ? nullptr : it->second));
  }
}

}  // namespace

Status optimize_graph(Graph& g, const EngineOptions& options, PassReport* report,
                      const std::map<std::string, double>* amax, Precision format) {
  const bool verify = kVerifyEachPass || options.verify_passes;
  const bool cuda = options.device == Device::kCuda;
  if (report) report->nodes_before = static_cast<int64_t>(g.nodes().size());
  Groups optimizer_groups;
  bool merged = false;
  for (const Pass& p : kPasses) {
    const bool int8 =
        p.when == When::kInt8 || p.when == When::kInt8CpuOnly || p.when == When::kFp8CudaOnly;
    const bool own_qdq = p.when == When::kInt8CpuOnly && options.optimize;
    if (int8 ? !amax && !own_qdq : p.when != When::kAlways && !options.optimize) continue;
    if (p.when == When::kAfterCudaOnly && !cuda) continue;
    if (p.when == When::kInt8CpuOnly && cuda) continue;
    if (p.when == When::kFp8CudaOnly && (!cuda || !amax || format != Precision::kFp8)) continue;
    const bool after = p.when != When::kAlways && p.when != When::kOptimize;
    if (after && !merged && report) report_groups(g, optimizer_groups, true, *report);
    merged = merged || after;
    Groups groups;
    auto changed =
        p.run(g, {options, amax, report ? &report->quantization : nullptr, format}, &groups);
    if (!changed.is_ok()) return changed.status().with_context(std::string("pass ") + p.name);
    if (verify) KILN_RETURN_IF_ERROR_CTX(verify_graph(g), std::string("after pass ") + p.name);
    if (!report) continue;
    if (after)
      report_groups(g, groups, false, *report);
    else
      optimizer_groups.insert(optimizer_groups.end(), groups.begin(), groups.end());
    // A pass that applies to every engine is listed where it changed the graph, and so are
    // widen_float16 and fuse_int8_conv on an engine that is not int8 (a model's own Q/DQ).
    if ((p.when == When::kAlways || p.listed_if_changed || (own_qdq && !amax)) && !*changed)
      continue;
    report->steps.push_back({std::string(p.name) + (p.when == When::kAfterCudaOnly ? " (CUDA)"
                                                    : p.when == When::kInt8CpuOnly ? " (CPU)"
                                                    : p.when == When::kFp8CudaOnly ? " (CUDA)"
                                                                                   : ""),
                             static_cast<int64_t>(g.nodes().size())});
  }
  if (report && !merged) report_groups(g, optimizer_groups, true, *report);
  return Status::ok();
}

}  // namespace kiln
