// `kiln run MODEL --input NAME=FILE ... [--output-dir DIR]`: runs a model once (a model
// without inputs, such as one that only computes constants, runs with no --input).
//
// Inputs are .npy files, ONNX TensorProto .pb files (the backend test-data format) or
// JPEG/PNG images (preprocessed as image.h describes); the kind is told by the file's
// first bytes, not its name. Outputs go to DIR/<name>.npy; without --output-dir each
// output is summarized. With an image input (or --top-k given) the first output's top-k
// classes are printed.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli_common.h"
#include "image.h"
#include "kiln/fp16_range.h"
#include "kiln/tensor_io.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string size;
  std::string mean, std;
  int top_k = 5;
  bool top_k_given = false;
  std::string labels;
  // Parsed from size/mean/std before anything runs (bad values are usage errors).
  int height = 0, width = 0;
  std::vector<float> mean_values, std_values;
};

Status parse_image_options(RunOptions& o) {
  if (!o.size.empty()) {
    auto dims = parse_dims(o.size);
    if (!dims.is_ok() || dims->size() > 2 || (*dims)[0] <= 0 || dims->back() <= 0 ||
        (*dims)[0] > 65536 || dims->back() > 65536)
      return invalid_argument("--size '" + o.size + "': expected H or HxW, e.g. 224x224");
    o.height = static_cast<int>((*dims)[0]);
    o.width = static_cast<int>(dims->back());
  }
  if (!o.mean.empty()) {
    KILN_ASSIGN_OR_RETURN(o.mean_values, parse_floats(o.mean, "--mean"));
  }
  if (!o.std.empty()) {
    KILN_ASSIGN_OR_RETURN(o.std_values, parse_floats(o.std, "--std"));
    for (float v : o.std_values)
      if (!(v != 0.f)) return invalid_argument("--std must not be 0");
  }
  return Status::ok();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const TensorInfo* find_input(const Engine& e, const std::string& name) {
  for (const auto& i : e.inputs())
    if (i.name == name) return &i;
  return nullptr;
}

std::string input_names(const Engine& e) {
  std::string r;
  for (const auto& i : e.inputs()) r += (r.empty() ? "'" : ", '") + i.name + "'";
  return r;
}

// Builds the preprocessing of an image for input `info` from the options.
Result<Preprocess> image_preprocess(const Engine& e, const TensorInfo& info, const RunOptions& o) {
  std::string where = "input '" + info.name + "'";
  if (info.dtype != DataType::kFloat32)
    return unsupported(where + ": image inputs need a float32 input, this one is " +
                       dtype_name(info.dtype));
  if (info.has_shape && info.dims.size() != 4)
    return unsupported(where + " has shape " + declared_shape(info) +
                       "; image inputs need an NCHW input [N,C,H,W]");
  Preprocess p;
  int channels = info.has_shape && info.dims[1] > 0 ? static_cast<int>(info.dims[1]) : 3;
  KILN_RETURN_IF_ERROR(default_normalization(channels, e.metadata(), &p));
  if (o.height > 0) {
    p.height = o.height;
    p.width = o.width;
  } else if (info.has_shape && info.dims[2] > 0 && info.dims[3] > 0) {
    p.height = static_cast<int>(info.dims[2]);
    p.width = static_cast<int>(info.dims[3]);
  }
  if (!o.mean_values.empty()) p.mean = o.mean_values;
  if (!o.std_values.empty()) p.std = o.std_values;
  return p;
}

// Loads one --input: .npy, image or TensorProto, told apart by their first bytes.
Result<Tensor> load_input(const Engine& e, const std::string& name, const std::string& path,
                          const RunOptions& o, bool* was_image) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  KILN_RETURN_IF_ERROR(check_image_name(path, bytes));
  if (bytes.rfind("\x93NUMPY", 0) == 0) return parse_npy(bytes, path);
  if (!looks_like_image(bytes)) return read_tensor_pb(path);
  *was_image = true;
  const TensorInfo* info = find_input(e, name);
  if (!info)
    return not_found("unknown input '" + name + "' (the model's inputs: " + input_names(e) + ")");
  KILN_ASSIGN_OR_RETURN(Preprocess p, image_preprocess(e, *info, o).with_context(path));
  KILN_ASSIGN_OR_RETURN(Image img, decode_image(bytes, path));
  spdlog::info("{}: {}x{} image → [1,{},{},{}], mean {} std {}", path, img.width, img.height,
               p.channels, p.height, p.width, fmt::join(p.mean, ","), fmt::join(p.std, ","));
  return image_to_tensor(img, p).with_context(path);
}

Result<std::vector<std::string>> read_labels(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::vector<std::string> labels;
  std::istringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  return labels;
}

void print_summary(const std::string& name, const Tensor& t) {
  std::printf("%s: %s %s", name.c_str(), dtype_name(t.dtype()), shape_str(t.shape()).c_str());
  if (dtype_size(t.dtype()) && t.numel() > 0) {
    double mn = t.at_double(0), mx = mn, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.at_double(i);
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sum += v;
    }
    std::printf("  min %.6g  max %.6g  mean %.6g", mn, mx, sum / t.numel());
  }
  std::printf("\n");
}

int64_t nonfinite_count(const Tensor& t) {
  if (t.dtype() != DataType::kFloat32) return 0;
  int64_t n = 0;
  for (int64_t k = 0; k < t.numel(); ++k) n += !std::isfinite(t.data<float>()[k]);
  return n;
}

// An fp16 output with inf or NaN where float32's has none is never silent: say so, and name
// the values that leave fp16's range on these inputs (a float32 run on the CPU). Returns them
// (to keep in fp32 for a second run), or none.
std::vector<std::string> warn_fp16_nonfinite(const RunOptions& o, const GlobalOptions& g,
                                             const std::map<std::string, Tensor>& feeds,
                                             const std::map<std::string, Tensor>& outputs) {
  int64_t bad = 0;
  for (const auto& [name, t] : outputs) bad += nonfinite_count(t);
  if (bad == 0 || is_plan_file(o.model)) return {};
  EngineOptions cpu;
  cpu.threads = g.engine.threads;
  auto fp32 = Engine::load(o.model, cpu);
  if (!fp32.is_ok()) return {};
  auto want = (*fp32)->create_context()->run(feeds);
  if (!want.is_ok()) return {};
  int64_t bad32 = 0;
  for (const auto& [name, t] : *want) bad32 += nonfinite_count(t);
  if (bad32 >= bad) return {};  // float32 has them too: the model's, not fp16's
  std::fprintf(stderr,
               "kiln: warning: the fp16 outputs hold %lld inf/NaN values where float32's hold "
               "%lld: fp16 overflowed\n",
               static_cast<long long>(bad), static_cast<long long>(bad32));
  auto report = check_fp16_range(**fp32, {feeds});
  if (!report.is_ok()) return {};
  print_fp16_findings(stderr, report->findings);
  std::vector<std::string> values;
  for (const Fp16RangeFinding& f : report->findings) values.push_back(f.value);
  return values;
}

int run(RunOptions& o, const GlobalOptions& g) {
  if (Status s = parse_image_options(o); !s.is_ok()) return usage_error(s.message());
  auto engine_or = load_engine(o.model, g);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;

  if (o.inputs.empty() && !e.inputs().empty())
    return usage_error("--input is required: the model has " + std::to_string(e.inputs().size()) +
                       " input" + (e.inputs().size() == 1 ? "" : "s") + ": " + input_names(e));
  std::map<std::string, Tensor> feeds;
  bool any_image = false;
  for (const std::string& spec : o.inputs) {
    size_t eq = spec.find('=');
    std::string name, path;
    if (eq != std::string::npos && find_input(e, spec.substr(0, eq))) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    } else if (eq == std::string::npos || fs::exists(spec)) {
      if (e.inputs().size() != 1)
        return usage_error("--input " + spec +
                           ": name the input (--input NAME=FILE); the model "
                           "has " +
                           std::to_string(e.inputs().size()) + " inputs: " + input_names(e));
      name = e.inputs()[0].name;
      path = spec;
    } else {
      name = spec.substr(0, eq);  // unknown: the engine's run says so, listing the inputs
      path = spec.substr(eq + 1);
    }
    if (feeds.count(name)) return usage_error("input '" + name + "' given twice");
    bool was_image = false;
    auto t = load_input(e, name, path, o, &was_image);
    if (!t.is_ok()) return fail(t.status());
    any_image |= was_image;
    feeds[name] = std::move(t).value();
  }

  auto ctx = e.create_context();
  double t0 = now_seconds();
  auto outputs = ctx->run(feeds);
  if (!outputs.is_ok()) return fail(outputs.status());
  spdlog::info("ran in {:.2f} ms", (now_seconds() - t0) * 1e3);
  for (const std::string& note : ctx->stats().notes) spdlog::warn("{}", note);
  if (e.options().device == Device::kCuda && g.engine.precision == Precision::kFp16) {
    const std::vector<std::string> values = warn_fp16_nonfinite(o, g, feeds, *outputs);
    // Unless asked not to, run again with what overflowed kept in fp32, and keep that answer.
    if (!values.empty() && !g.no_fp16_fallback) {
      std::fprintf(stderr,
                   "kiln: note: running again with those values kept in fp32 "
                   "(--no-fp16-fallback keeps the fp16 result)\n");
      auto again = load_engine(o.model, g, values);
      if (!again.is_ok()) return fail(again.status());
      auto second = (*again)->create_context()->run(feeds);
      if (!second.is_ok()) return fail(second.status());
      outputs = std::move(second);
    }
  }
  // The plan's shape at a glance (-v): how many steps, and how many fell back to the CPU.
  if (g.verbose >= 1 && e.options().device == Device::kCuda) {
    auto layers = ctx->profile_layers(1);
    if (layers.is_ok()) {
      int cpu = 0;
      for (const LayerProfile& l : *layers) cpu += l.on_cpu;
      spdlog::info("plan: {} steps, {} on the CPU", layers->size(), cpu);
    }
  }

  if (!o.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.output_dir, ec);
    if (ec) return fail(invalid_argument("cannot create '" + o.output_dir + "': " + ec.message()));
    std::set<std::string> used;
    for (const TensorInfo& info : e.outputs()) {
      std::string file = sanitize_file_name(info.name);
      for (int i = 1; used.count(file); ++i)
        file = sanitize_file_name(info.name) + "_" + std::to_string(i);
      used.insert(file);
      std::string path = (fs::path(o.output_dir) / (file + ".npy")).string();
      const Tensor& t = outputs->at(info.name);
      Status s = write_npy(path, t);
      if (!s.is_ok()) return fail(s.with_context("output '" + info.name + "'"));
      std::printf("wrote %s (%s %s)\n", path.c_str(), dtype_name(t.dtype()),
                  shape_str(t.shape()).c_str());
    }
  } else {
    for (const TensorInfo& info : e.outputs()) print_summary(info.name, outputs->at(info.name));
  }

  if ((any_image || o.top_k_given) && !e.outputs().empty()) {
    std::vector<std::string> labels;
    if (!o.labels.empty()) {
      auto l = read_labels(o.labels);
      if (!l.is_ok()) return fail(l.status());
      labels = std::move(l).value();
    } else if (auto it = e.metadata().find("kiln.labels"); it != e.metadata().end()) {
      std::istringstream ss(it->second);
      for (std::string item; std::getline(ss, item, ',');) labels.push_back(item);
    }
    const std::string& name = e.outputs()[0].name;
    TopK top = top_k(outputs->at(name), o.top_k);
    std::printf("top-%zu of '%s'%s:\n", top.entries.size(), name.c_str(),
                top.softmax_applied ? " (softmax)" : "");
    for (size_t i = 0; i < top.entries.size(); ++i) {
      auto [cls, prob] = top.entries[i];
      std::string line = "class " + std::to_string(cls);
      if (cls < static_cast<int64_t>(labels.size()) && !labels[cls].empty())
        line += std::string(line.size() < 11 ? 11 - line.size() : 1, ' ') + labels[cls];
      std::printf("  %2zu. %8.4f%%  %s\n", i + 1, prob * 100, line.c_str());
    }
  }
  return kExitOk;
}

}  // namespace

Command add_run_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand("run", "run a model once on inputs from files");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_option("-i,--input", o->inputs,
                  "NAME=FILE (.npy, TensorProto .pb, JPEG or PNG); FILE alone for a model with "
                  "one input; none for a model without inputs")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("-o,--output-dir", o->output_dir, "write each output to DIR/<name>.npy");
  app->add_option("--size", o->size,
                  "image inputs: resize to HxW (default: the model's H×W, "
                  "else 224x224)");
  app->add_option("--mean", o->mean,
                  "image inputs: per-channel mean of [0,1] pixels, one "
                  "value or C comma-separated (default: model metadata "
                  "kiln.mean, else ImageNet's for 3 channels, 0 for 1)");
  app->add_option("--std", o->std,
                  "image inputs: per-channel std (default: kiln.std, else "
                  "ImageNet's for 3 channels, 1 for 1)");
  CLI::Option* k = app->add_option("-k,--top-k", o->top_k,
                                   "classes to print for the first "
                                   "output (printed with image inputs)")
                       ->check(CLI::PositiveNumber);
  app->add_option("--labels", o->labels,
                  "class names, one per line (default: model metadata "
                  "kiln.labels)");
  return {app, [o, k, &global] {
            o->top_k_given = k->count() > 0;
            return run(*o, global);
          }};
}

}  // namespace kiln::cli
