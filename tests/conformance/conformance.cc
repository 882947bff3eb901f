// kiln_conformance: runs the ONNX backend node tests (Debian's libonnx-testdata) through
// kiln and compares with the expected outputs.
//
//   kiln_conformance [--data DIR] [--skip-list FILE] [--filter SUBSTR] [--verbose] [--no-fork]
//                    [--device cpu|cuda] [--device-steps-only]
//
// --device cuda runs the cases on the GPU in fp32; --device-steps-only then fails a case whose
// plan runs a kernel on the host (a fallback), naming it.
//
// A case (DIR/<case>/model.onnx + test_data_set_*/{input,output}_N.pb) is in scope when
// every node is a default-domain op the importer knows; the others are only counted. Each
// in-scope case runs in a forked child so a crashing or hanging kernel fails that case, not
// the run. Tolerances follow the ONNX backend tests: |got − want| ≤ atol + rtol·|want| with
// atol 1e-7, rtol 1e-3 for floats (NaN matches NaN), exact for integers and bool.

#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "onnx/importer.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;

namespace {

constexpr double kAtol = 1e-7;
constexpr double kRtol = 1e-3;
constexpr unsigned kCaseTimeoutSeconds = 60;

struct Options {
  std::string data = "/usr/share/libonnx-testdata/data/node";
  std::string skip_list = KILN_CONFORMANCE_SKIP_LIST;
  std::string filter;
  bool verbose = false;
  bool fork = true;
  std::string device = "cpu";
  bool device_steps_only = false;
};

std::map<std::string, std::string> read_skip_list(const std::string& path) {
  std::map<std::string, std::string> skips;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    auto end = line.find_first_of(" \t", start);
    std::string name = line.substr(start, end - start);
    std::string reason;
    if (end != std::string::npos) {
      auto r = line.find_first_not_of(" \t", end);
      if (r != std::string::npos) reason = line.substr(r);
    }
    skips[name] = reason.empty() ? "(no reason given)" : reason;
  }
  return skips;
}

// The op types of the model that kiln cannot import ("domain:op" for other domains);
// empty when the case is in scope. `error` is set when the model cannot be read at all.
std::vector<std::string> missing_ops(const fs::path& model, std::string* error) {
  std::ifstream f(model, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::ModelProto m;
  if (!f || !m.ParseFromString(ss.str())) {
    *error = "cannot read " + model.string();
    return {};
  }
  std::vector<std::string> missing;
  for (const auto& n : m.graph().node()) {
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain && kiln::onnx_op_importable(n.op_type())) continue;
    missing.push_back(default_domain ? n.op_type() : n.domain() + ":" + n.op_type());
  }
  return missing;
}

std::string value_str(const kiln::Tensor& t, int64_t i) {
  std::ostringstream os;
  os << t.at_double(i);
  return os.str();
}

// Empty when `got` matches `want`; else the first mismatch.
std::string compare(const kiln::Tensor& got, const kiln::Tensor& want) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + kiln::dtype_name(got.dtype()) + ", want " +
           kiln::dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + kiln::shape_str(got.shape()) + ", want " + kiln::shape_str(want.shape());
  const bool is_float = kiln::dtype_is_float(want.dtype());
  const size_t esize = kiln::dtype_size(want.dtype());
  int64_t mismatches = 0;
  std::string first;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (is_float) {
      double a = got.at_double(i), b = want.at_double(i);
      ok = (std::isnan(a) && std::isnan(b)) || a == b ||
           std::fabs(a - b) <= kAtol + kRtol * std::fabs(b);
    } else {
      ok = std::memcmp(static_cast<const char*>(got.raw()) + i * esize,
                       static_cast<const char*>(want.raw()) + i * esize, esize) == 0;
    }
    if (!ok && mismatches++ == 0)
      first = "element " + std::to_string(i) + ": got " + value_str(got, i) + ", want " +
              value_str(want, i);
  }
  if (!mismatches) return "";
  return first + " (" + std::to_string(mismatches) + " of " + std::to_string(want.numel()) +
         " elements differ)";
}

// ONNX ≤ 1.12 test data stores bfloat16 tensors as uint16 holding the bf16 bits (numpy has
// no bfloat16); read them as the bfloat16 the model declares.
kiln::Tensor as_declared(const kiln::Tensor& t, kiln::DataType declared) {
  if (t.dtype() != kiln::DataType::kUInt16 || declared != kiln::DataType::kBFloat16) return t;
  kiln::Tensor r(kiln::DataType::kBFloat16, t.shape());
  if (t.nbytes()) std::memcpy(r.raw(), t.raw(), t.nbytes());
  return r;
}

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// The kernel steps of the context's last plan that do not run on `device`, by name.
std::string host_kernels(const kiln::Context& ctx, const std::string& device) {
  auto plan = ctx.plan();
  if (!plan.is_ok()) return "no plan: " + plan.status().to_string();
  std::string r;
  for (const kiln::PlanStepInfo& s : plan->steps)
    if (s.kind == "kernel" && s.device != device)
      r += (r.empty() ? "" : ", ") + s.op + " " + s.name;
  return r;
}

// Runs one case; empty on success, else what went wrong.
std::string run_case(const fs::path& dir, const Options& opt) {
  kiln::EngineOptions eo;
  if (opt.device == "cuda") {
    eo.device = kiln::Device::kCuda;
    eo.precision = kiln::Precision::kFp32;
    eo.time_tactics = false;
  }
  auto engine = kiln::Engine::load((dir / "model.onnx").string(), eo);
  if (!engine.is_ok()) return "load: " + engine.status().to_string();
  const auto& e = **engine;
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* folder";
  auto ctx = e.create_context();
  for (const fs::path& set : sets) {
    std::string where = set.filename().string() + ": ";
    auto inputs = numbered_files(set, "input");
    auto outputs = numbered_files(set, "output");
    if (inputs.size() != e.inputs().size())
      return where + std::to_string(inputs.size()) + " input files, the model has " +
             std::to_string(e.inputs().size()) + " inputs";
    if (outputs.size() != e.outputs().size())
      return where + std::to_string(outputs.size()) + " output files, the model has " +
             std::to_string(e.outputs().size()) + " outputs";
    std::map<std::string, kiln::Tensor> feed;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto t = kiln::read_tensor_pb(inputs[i].string());
      if (!t.is_ok()) return where + t.status().to_string();
      feed[e.inputs()[i].name] = as_declared(*t, e.inputs()[i].dtype);
    }
    auto got = ctx->run(feed);
    if (!got.is_ok()) return where + "run: " + got.status().to_string();
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto want = kiln::read_tensor_pb(outputs[i].string());
      if (!want.is_ok()) return where + want.status().to_string();
      const std::string& name = e.outputs()[i].name;
      auto it = got->find(name);
      if (it == got->end()) return where + "output '" + name + "' missing";
      std::string diff = compare(it->second, as_declared(*want, e.outputs()[i].dtype));
      if (!diff.empty()) return where + "output '" + name + "': " + diff;
    }
    if (opt.device_steps_only) {
      std::string host = host_kernels(*ctx, opt.device);
      if (!host.empty()) return where + "kernels on the host: " + host;
    }
  }
  return "";
}

// Runs the case in a child process so a crash or hang fails only this case.
std::string run_case_isolated(const fs::path& dir, const Options& opt) {
  int fds[2];
  if (pipe(fds) != 0) return run_case(dir, opt);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_case(dir, opt);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(kCaseTimeoutSeconds);
    std::string r = run_case(dir, opt);
    size_t off = 0;
    while (off < r.size()) {
      ssize_t n = write(fds[1], r.data() + off, r.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return sig == SIGALRM ? "timed out after " + std::to_string(kCaseTimeoutSeconds) + " s"
                          : std::string("crashed: ") + strsignal(sig);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  return r;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " [--data DIR] [--skip-list FILE] [--filter SUBSTR] [--verbose] [--no-fork]"
               " [--device cpu|cuda] [--device-steps-only]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--verbose" || a == "-v")
      opt.verbose = true;
    else if (a == "--no-fork")
      opt.fork = false;
    else if (a == "--device-steps-only")
      opt.device_steps_only = true;
    else if (a == "--device") {
      const char* v = next();
      if (!v || (std::string(v) != "cpu" && std::string(v) != "cuda")) return usage(argv[0]);
      opt.device = v;
    } else if (a == "--data" || a == "--skip-list" || a == "--filter") {
      const char* v = next();
      if (!v) return usage(argv[0]);
      (a == "--data" ? opt.data : a == "--skip-list" ? opt.skip_list : opt.filter) = v;
    } else {
      return usage(argv[0]);
    }
  }
  std::error_code ec;
  if (!fs::is_directory(opt.data, ec)) {
    std::cerr << "conformance: data folder '" << opt.data << "' not found\n";
    return 2;
  }
  auto skips = read_skip_list(opt.skip_list);
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(opt.data))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
        entry.path().filename().string().find(opt.filter) != std::string::npos)
      cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());

  int passed = 0, failed = 0, skipped = 0, out_of_scope = 0;
  std::map<std::string, int> missing_count;  // op type → cases that need it
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    auto skip = skips.find(name);
    if (skip != skips.end()) {
      ++skipped;
      std::cout << "skip " << name << ": " << skip->second << "\n";
      continue;
    }
    std::string error;
    auto missing = missing_ops(dir / "model.onnx", &error);
    if (error.empty() && !missing.empty()) {
      ++out_of_scope;
      std::sort(missing.begin(), missing.end());
      missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
      for (const auto& op : missing) ++missing_count[op];
      continue;
    }
    if (error.empty()) error = opt.fork ? run_case_isolated(dir, opt) : run_case(dir, opt);
    if (error.empty()) {
      ++passed;
      if (opt.verbose) std::cout << "pass " << name << "\n";
    } else {
      ++failed;
      std::cout << "FAIL " << name << ": " << error << "\n";
    }
  }
  if (opt.verbose && !missing_count.empty()) {
    std::vector<std::pair<int, std::string>> top;
    for (const auto& [op, n] : missing_count) top.push_back({n, op});
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::cout << "ops kiln lacks (cases needing each), top " << std::min<size_t>(top.size(), 30)
              << " of " << top.size() << ":";
    for (size_t i = 0; i < top.size() && i < 30; ++i)
      std::cout << (i % 6 == 0 ? "\n  " : "  ") << top[i].second << " " << top[i].first;
    std::cout << "\n";
  }
  std::cout << "conformance: " << passed << " passed, " << failed << " failed, " << skipped
            << " skipped (explicit), " << out_of_scope << " cases use ops kiln lacks\n";
  return failed > 0 ? 1 : 0;
}
