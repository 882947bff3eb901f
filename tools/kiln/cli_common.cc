#include "cli_common.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "gpu_monitor.h"

namespace kiln::cli {

void print_error(const std::string& message) {
  std::string one_line = message;
  for (char& c : one_line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "kiln: error: %s\n", one_line.c_str());
}

int fail(const Status& status) {
  print_error(status.message());
  return status.code() == StatusCode::kUnsupported ? kExitUsage : kExitBadInput;
}

int usage_error(const std::string& message) {
  print_error(message);
  return kExitUsage;
}

EngineOptions engine_options(const GlobalOptions& global) {
  EngineOptions o;
  o.device = global.device == "cuda" ? Device::kCuda : Device::kCpu;
  o.threads = global.threads;
  o.precision = global.precision;
  o.cpu_conv_algo = global.cpu_conv_algo;
  o.cpu_layout = global.cpu_layout;
  o.input_format = global.input_format;
  o.input_mean = global.input_mean;
  o.input_std = global.input_std;
  o.cudnn_conv_path = global.cudnn_conv_path;
  o.device_index = global.gpu;
  o.space_to_depth = global.space_to_depth;
  o.cuda_graph = global.cuda_graph;
  o.time_tactics = !global.no_tactics;
  o.max_tactics = global.max_tactics;
  o.timing_cache = global.timing_cache;
  o.workspace_limit = global.workspace_mib < 0 ? -1 : global.workspace_mib << 20;
  return o;
}

int resolved_threads(const GlobalOptions& global) {
  if (global.threads > 0) return global.threads;
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

Result<std::vector<std::map<std::string, std::vector<int64_t>>>> parse_shape_profiles(
    const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::vector<Shape>>> per_input;
  size_t count = 1;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return invalid_argument("--shapes '" + spec + "': expected NAME=DIMS[,DIMS...]");
    std::vector<Shape> shapes;
    std::stringstream list(spec.substr(eq + 1));
    for (std::string item; std::getline(list, item, ',');) {
      if (item.find_first_not_of("0123456789x") != std::string::npos || item.empty())
        return invalid_argument("--shapes '" + spec + "': '" + item +
                                "' is not a shape like 1x3x224x224");
      KILN_ASSIGN_OR_RETURN(Shape s, parse_dims(item));
      shapes.push_back(std::move(s));
    }
    if (shapes.size() > 1 && count > 1 && shapes.size() != count)
      return invalid_argument("--shapes: every input needs the same number of shapes (or one)");
    count = std::max(count, shapes.size());
    per_input.emplace_back(spec.substr(0, eq), std::move(shapes));
  }
  std::vector<std::map<std::string, std::vector<int64_t>>> profiles(specs.empty() ? 0 : count);
  for (size_t k = 0; k < profiles.size(); ++k)
    for (const auto& [name, shapes] : per_input)
      profiles[k][name] = shapes.size() == 1 ? shapes[0] : shapes[k];
  return profiles;
}

Result<std::map<std::string, ShapeRange>> parse_shape_ranges(
    const std::vector<std::string>& specs) {
  std::map<std::string, ShapeRange> r;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    auto bad = [&](const std::string& why) {
      return invalid_argument("--shape-range '" + spec + "': " + why);
    };
    if (eq == std::string::npos || eq == 0) return bad("expected NAME=MIN:OPT:MAX");
    std::vector<Shape> shapes;
    std::stringstream list(spec.substr(eq + 1));
    for (std::string item; std::getline(list, item, ':');) {
      if (item.empty() || item.find_first_not_of("0123456789x") != std::string::npos)
        return bad("'" + item + "' is not a shape like 1x3x224x224");
      KILN_ASSIGN_OR_RETURN(Shape s, parse_dims(item));
      shapes.push_back(std::move(s));
    }
    if (shapes.size() != 3) return bad("expected NAME=MIN:OPT:MAX (three shapes)");
    const std::string name = spec.substr(0, eq);
    if (r.count(name)) return bad("input '" + name + "' has a range already");
    r[name] = ShapeRange{shapes[0], shapes[1], shapes[2]};
  }
  return r;
}

Result<std::map<std::string, Precision>> parse_precision_overrides(
    const std::vector<std::string>& specs) {
  std::map<std::string, Precision> r;
  for (const std::string& spec : specs) {
    std::stringstream list(spec);
    for (std::string item; std::getline(list, item, ',');) {
      const size_t eq = item.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
        return invalid_argument("--precision-overrides '" + item +
                                "': expected NODE=PRECISION (such as conv1=fp32)");
      Result<Precision> p = parse_precision(item.substr(eq + 1));
      if (!p.is_ok()) return p.status().with_context("--precision-overrides '" + item + "'");
      r[item.substr(0, eq)] = *p;
    }
  }
  return r;
}

Result<std::shared_ptr<Engine>> load_engine(const std::string& path, const GlobalOptions& global,
                                            const std::vector<std::string>& fp32_values,
                                            const std::function<void(EngineOptions&)>& adjust) {
  double t0 = now_seconds();
  EngineOptions options = engine_options(global);
  options.fp32_values = fp32_values;
  KILN_ASSIGN_OR_RETURN(options.shape_profiles, parse_shape_profiles(global.shapes));
  KILN_ASSIGN_OR_RETURN(options.precision_overrides,
                        parse_precision_overrides(global.precision_overrides));
  KILN_ASSIGN_OR_RETURN(options.shape_ranges, parse_shape_ranges(global.shape_ranges));
  options.only_profile_shapes = global.only_shapes;
  if (adjust) adjust(options);
  auto engine = Engine::load(path, options);
  if (engine.is_ok())
    for (const std::string& line : (*engine)->report().fp32_kept)
      std::fprintf(stderr, "kiln: note: %s\n", line.c_str());
  if (engine.is_ok())
    spdlog::info("loaded {} in {:.1f} ms ({} nodes)", path, (now_seconds() - t0) * 1e3,
                 (*engine)->stats().num_nodes);
  return engine;
}

Result<std::vector<float>> parse_floats(const std::string& text, const std::string& what) {
  std::vector<float> r;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    float v = std::strtof(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size())
      return invalid_argument(what + ": '" + text + "' is not a number or a comma-separated list");
    r.push_back(v);
    start = end + 1;
  }
  return r;
}

Result<Shape> parse_dims(const std::string& text) {
  Shape s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("x,", start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return invalid_argument("'" + text + "' is not a shape like 1x3x224x224");
    s.push_back(std::stoll(item));
    start = end + 1;
  }
  return s;
}

std::string declared_shape(const TensorInfo& info) {
  if (!info.has_shape) return "[?]";
  std::string r = "[";
  for (size_t i = 0; i < info.dims.size(); ++i) {
    if (i) r += ",";
    r += info.dims[i] >= 0 ? std::to_string(info.dims[i])
                           : (info.dim_params[i].empty() ? "?" : info.dim_params[i]);
  }
  return r + "]";
}

std::string sanitize_file_name(const std::string& name) {
  std::string r = name;
  for (char& c : r) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  // "." and ".." would name directories.
  if (r.empty() || r.find_first_not_of('.') == std::string::npos) r = "_" + r;
  return r;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

Result<std::unique_ptr<GpuMonitor>> open_gpu_monitor(int gpu, int period_ms) {
  auto bus_id = cuda_pci_bus_id(gpu);
  // Where CUDA cannot name the GPU (no CUDA in this build, or none it sees), NVML's own index.
  return bus_id.is_ok() ? GpuMonitor::open_pci(*bus_id, gpu, period_ms)
                        : GpuMonitor::open(gpu, period_ms);
}

Result<std::vector<int>> parse_gpu_list(const std::string& text, int visible) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string seen = visible == 0
                               ? "no CUDA GPU is visible"
                               : std::to_string(visible) + " CUDA GPU" + (visible == 1 ? "" : "s") +
                                     " visible (0 to " + std::to_string(visible - 1) + ")";
  const std::string where =
      seen + (env ? std::string(", CUDA_VISIBLE_DEVICES=") + env : std::string());
  std::vector<int> r;
  if (text == "all") {
    if (visible == 0) return invalid_argument("--gpus all: " + where);
    for (int i = 0; i < visible; ++i) r.push_back(i);
    return r;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || stop != item.c_str() + item.size() || v < 0 || v > 1023)
      return invalid_argument("--gpus '" + text + "': '" + item +
                              "' is not a GPU index (expected all, or 0,1,...)");
    r.push_back(static_cast<int>(v));
    start = end + 1;
  }
  for (int v : r)
    if (v >= visible)
      return invalid_argument("--gpus '" + text + "': there is no GPU " + std::to_string(v) + "; " +
                              where);
  return r;
}

}  // namespace kiln::cli
