// The zoo's runner: one model, several precisions and inputs, in one process (the CUDA
// context, the import and the weights upload are paid once per model, not per case).
//
//   kiln_zoo_run MODEL.onnx OUT_DIR --device cpu|cuda --precisions fp32,tf32,fp16
//                [--no-tactics] [--max-tactics N] [--timing-cache FILE] [--fp16-range]
//                [--calib FILE.npy] [--report] INPUT.npy...
//
// For each precision it builds one Engine and one Context, and runs every input through it
// (each new shape builds a new plan). A case is named by its input's folder (the zoo's
// <model>/b3/input.npy is case b3); its outputs go to OUT_DIR/<precision>/<case>/<output>.npy,
// and one line per case to stdout (seconds: the run, plus the engine's load for the first):
//   case <precision> <case>: ok <seconds> s, steps <n>, cpu <m>
//   case <precision> <case>: error <message>
// With --fp16-range, the fp16 range guard (kiln/fp16_range.h) runs on the inputs and prints
//   fp16-range <findings> <values checked>[: <the first finding>]
// 8-bit precisions (int8, fp8) calibrate on --calib's samples (all of them, in batches of 8).
// With --report, each reduced precision is compared with fp32 layer by layer on the inputs
// (kiln/precision_report.h; budget 0.05 relative L2 for 8 bits, 0.01 otherwise) and one line
// names where the error comes in, the five worst such layers:
//   report <precision> <over> <values>: <node> (<op>) <relative L2>; ...
// The exit status is 0 when every case ran, 1 otherwise, 2 on a usage error. GPU activation
// memory is poisoned before every run (EngineOptions::poison_memory).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/fp16_range.h"
#include "kiln/precision_report.h"
#include "kiln/tensor_io.h"

namespace {

namespace fs = std::filesystem;
using kiln::Status;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> r;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) r.push_back(item);
  return r;
}

std::string file_name_for(const std::string& output) {
  std::string f = output;
  for (char& c : f)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  return f;
}

std::string case_name(const std::string& input) {
  return fs::path(input).parent_path().filename().string();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int usage(const char* msg) {
  std::fprintf(stderr,
               "kiln_zoo_run: %s\nusage: kiln_zoo_run MODEL OUT_DIR --device cpu|cuda "
               "--precisions P[,P...] [--no-tactics] [--max-tactics N] [--timing-cache FILE] "
               "[--fp16-range] [--calib FILE.npy] [--report] INPUT.npy...\n",
               msg);
  return 2;
}

// The `report` line of a reduced-precision engine (see the top of this file).
void print_report(const std::string& model, const std::string& precision,
                  const kiln::Engine& reduced, const kiln::EngineOptions& base,
                  const std::vector<std::string>& inputs) {
  kiln::EngineOptions o = base;
  o.precision = kiln::Precision::kFp32;
  auto fp32 = kiln::Engine::load(model, o);
  std::vector<std::map<std::string, kiln::Tensor>> samples;
  for (const std::string& in : inputs) {
    auto x = kiln::read_npy(in);
    if (x.is_ok()) samples.push_back({{reduced.inputs()[0].name, *x}});
  }
  const double budget = kiln::precision_is_8bit(reduced.options().precision) ? 0.05 : 0.01;
  auto r = fp32.is_ok() ? kiln::compare_precision(reduced, **fp32, samples, budget)
                        : kiln::Result<kiln::PrecisionReport>(fp32.status());
  if (!r.is_ok()) {
    std::printf("report %s error %s\n", precision.c_str(), r.status().to_string().c_str());
    return;
  }
  int over = 0;
  for (const kiln::LayerError& l : r->layers) over += l.over_budget;
  std::vector<kiln::LayerError> origins = kiln::error_origins(*r);
  std::stable_sort(origins.begin(), origins.end(),
                   [](const auto& a, const auto& b) { return a.relative_l2 > b.relative_l2; });
  if (origins.size() > 5) origins.resize(5);
  std::string names;
  for (const kiln::LayerError& l : origins) {
    char e[32];
    std::snprintf(e, sizeof e, " %.3e", l.relative_l2);
    names += (names.empty() ? "" : "; ") + l.node + " (" + l.op + ")" + e;
  }
  std::printf("report %s %d %zu: %s\n", precision.c_str(), over, r->layers.size(), names.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage("MODEL and OUT_DIR are required");
  const std::string model = argv[1], out_dir = argv[2];
  kiln::EngineOptions base;
  std::vector<std::string> precisions = {"fp32"}, inputs;
  bool fp16_range = false, report = false;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--device") {
      std::string d = value();
      if (d != "cpu" && d != "cuda") return usage("--device: cpu or cuda");
      base.device = d == "cuda" ? kiln::Device::kCuda : kiln::Device::kCpu;
    } else if (a == "--precisions") {
      precisions = split(value(), ',');
    } else if (a == "--no-tactics") {
      base.time_tactics = false;
    } else if (a == "--fp16-range") {
      fp16_range = true;
    } else if (a == "--max-tactics") {
      base.max_tactics = std::atoi(value().c_str());
    } else if (a == "--timing-cache") {
      base.timing_cache = value();
    } else if (a == "--calib") {
      base.calibration_data = value();
      base.calibration_batch = 8;
    } else if (a == "--report") {
      report = true;
    } else if (a.rfind("--", 0) == 0) {
      return usage(("unknown option " + a).c_str());
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) return usage("no inputs");
  base.poison_memory = true;

  int failed = 0;
  for (const std::string& precision : precisions) {
    kiln::EngineOptions o = base;
    auto parsed = kiln::parse_precision(precision);
    if (!parsed.is_ok()) return usage(parsed.status().message().c_str());
    o.precision = *parsed;
    auto t0 = std::chrono::steady_clock::now();
    auto engine = kiln::Engine::load(model, o);
    if (!engine.is_ok()) {
      for (const std::string& in : inputs)
        std::printf("case %s %s: error %s\n", precision.c_str(), case_name(in).c_str(),
                    engine.status().to_string().c_str());
      failed += static_cast<int>(inputs.size());
      continue;
    }
    double load_s = seconds_since(t0);
    auto ctx = (*engine)->create_context();
    for (const std::string& in : inputs) {
      const std::string stem = case_name(in);
      auto x = kiln::read_npy(in);
      if (!x.is_ok()) {
        std::printf("case %s %s: error %s\n", precision.c_str(), stem.c_str(),
                    x.status().to_string().c_str());
        ++failed;
        continue;
      }
      auto t1 = std::chrono::steady_clock::now();
      auto y = ctx->run({{(*engine)->inputs()[0].name, *x}});
      double run_s = seconds_since(t1) + load_s;
      load_s = 0;  // counted in the first case
      if (!y.is_ok()) {
        std::printf("case %s %s: error %s\n", precision.c_str(), stem.c_str(),
                    y.status().to_string().c_str());
        ++failed;
        continue;
      }
      fs::path dir = fs::path(out_dir) / precision / stem;
      fs::create_directories(dir);
      Status written = Status::ok();
      for (const auto& [name, t] : *y) {
        Status s = kiln::write_npy((dir / (file_name_for(name) + ".npy")).string(), t);
        if (!s.is_ok()) written = s;
      }
      if (!written.is_ok()) {
        std::printf("case %s %s: error %s\n", precision.c_str(), stem.c_str(),
                    written.to_string().c_str());
        ++failed;
        continue;
      }
      int steps = 0, cpu = 0;
      if (o.device == kiln::Device::kCuda) {
        auto layers = ctx->profile_layers(1);
        if (layers.is_ok()) {
          steps = static_cast<int>(layers->size());
          for (const kiln::LayerProfile& l : *layers) cpu += l.on_cpu;
        }
      }
      std::printf("case %s %s: ok %.3f s, steps %d, cpu %d\n", precision.c_str(), stem.c_str(),
                  run_s, steps, cpu);
      for (const std::string& note : ctx->stats().notes)
        std::printf("note %s %s: %s\n", precision.c_str(), stem.c_str(), note.c_str());
      std::fflush(stdout);
    }
    if (report && o.precision != kiln::Precision::kFp32)
      print_report(model, precision, **engine, base, inputs);
  }
  // The fp16 range guard on the same inputs (a CPU float32 engine): one line,
  //   fp16-range <findings> <values checked>[: <the first finding>]
  if (fp16_range) {
    std::vector<std::map<std::string, kiln::Tensor>> samples;
    auto engine = kiln::Engine::load(model, kiln::EngineOptions{});
    for (const std::string& in : inputs) {
      auto x = kiln::read_npy(in);
      if (x.is_ok() && engine.is_ok()) samples.push_back({{(*engine)->inputs()[0].name, *x}});
    }
    auto r = engine.is_ok() ? kiln::check_fp16_range(**engine, samples)
                            : kiln::Result<kiln::Fp16RangeReport>(engine.status());
    if (!r.is_ok()) {
      std::printf("fp16-range error %s\n", r.status().to_string().c_str());
      ++failed;
    } else {
      std::printf("fp16-range %zu %lld%s%s\n", r->findings.size(),
                  static_cast<long long>(r->values_checked), r->findings.empty() ? "" : ": ",
                  r->findings.empty() ? "" : kiln::describe(r->findings[0]).c_str());
    }
  }
  return failed ? 1 : 0;
}
