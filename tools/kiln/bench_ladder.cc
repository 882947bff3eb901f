// `kiln bench MODEL --ladder`: the optimization stages, one real configuration each, measured on
// this model in one process:
//   1. framework-like: fp32, no fusion, every tensor its own memory, no graph, one synchronous
//      Context with pageable copies;
//   2. the lowered precision (fp16 on CUDA) with fused epilogues;
//   3. plus the memory plan (one reused arena);
//   4. plus the CUDA graph (CUDA only);
//   5. plus a Pipeline of N Contexts (streams) with pinned, overlapped copies;
//   6. plus 8-bit NHWC input normalized in the graph (image inputs only).
// Each round builds, warms up, times and frees every row in turn, so each row's memory is its
// own; images/s is the median round, latency percentiles pool the rounds. See ladder_report.h
// for the output forms.
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "kiln/gpu_monitor.h"
#include "ladder_report.h"

namespace kiln::cli {

namespace {

struct Rung {
  std::string name, skipped;
  Precision precision = Precision::kFp32;
  bool optimize = true, reuse_memory = true, cuda_graph = false;
  // Per-layer kernel timing; off in row 1, which takes the libraries' heuristic choices as a
  // framework does by default (PyTorch's cudnn.benchmark is off unless set).
  bool time_tactics = true;
  int streams = 0;  // 0: one Context run synchronously; else a Pipeline of this many
  bool uint8 = false;
};

std::string on_off(bool b) { return b ? "on" : "off"; }

std::string config_of(const Rung& r, bool cuda, int threads, int inflight) {
  std::string c = std::string("precision=") + precision_name(r.precision) +
                  " optimize=" + on_off(r.optimize) + " reuse_memory=" + on_off(r.reuse_memory);
  if (cuda) c += " cuda_graph=" + on_off(r.cuda_graph) + " time_tactics=" + on_off(r.time_tactics);
  c += r.streams ? " pipeline contexts=" + std::to_string(r.streams) +
                       " inflight=" + std::to_string(inflight) + (cuda ? " pinned input" : "")
                 : std::string(" one context, synchronous");
  if (!cuda)
    c += " threads=" + std::to_string(r.streams ? std::max(1, threads / r.streams) : threads);
  c += std::string(" input=") + (r.uint8 ? "uint8-nhwc" : "float32-nchw");
  return c;
}

std::vector<Rung> make_rungs(bool cuda, Precision lowered, int streams) {
  std::vector<Rung> r(6);
  r[0].name = "framework-like: fp32, unfused, a buffer per tensor";
  r[0].optimize = r[0].reuse_memory = r[0].time_tactics = false;
  r[1] = r[0];
  r[1].time_tactics = true;
  r[1].precision = lowered;
  r[1].optimize = true;
  r[1].name = std::string(precision_name(lowered)) + ", fused epilogues";
  r[2] = r[1];
  r[2].reuse_memory = true;
  r[2].name = "+ memory plan (one arena)";
  r[3] = r[2];
  r[3].cuda_graph = cuda;
  r[3].name = "+ CUDA graph";
  if (!cuda) r[3].skipped = "CUDA graphs are for CUDA engines";
  r[4] = r[3];
  r[4].skipped.clear();
  r[4].streams = streams;
  r[4].name = "+ " + std::to_string(streams) +
              (cuda ? " streams, pinned copies overlapped" : " contexts in a Pipeline");
  r[5] = r[4];
  r[5].uint8 = true;
  r[5].name = "+ uint8 NHWC input";
  return r;
}

struct Measured {
  double ips = 0;
  std::vector<double> lat_ms;
  double own_mib = NAN, used_mib = NAN;
  bool image_input = false;  // one input of rank 4: an 8-bit image format applies
};

// Times `run` (one request, returning its latency) for `duration` seconds and 3 runs at least.
template <class Run>
Status time_runs(double duration, std::vector<double>& lat_ms, double& wall, Run run) {
  const double start = now_seconds();
  while (lat_ms.size() < 3 || now_seconds() - start < duration) {
    const double t0 = now_seconds();
    KILN_RETURN_IF_ERROR(run());
    lat_ms.push_back((now_seconds() - t0) * 1e3);
  }
  wall = now_seconds() - start;
  return Status::ok();
}

Result<Measured> measure(const std::string& model, const GlobalOptions& g, const LadderOptions& o,
                         const Rung& r, int inflight, const std::vector<std::string>& fp32_values,
                         GpuMonitor* monitor, double baseline_mib) {
  const bool cuda = g.cuda();
  const int threads = resolved_threads(g);
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<Engine> engine,
      load_engine(model, g,
                  r.precision == Precision::kFp16 ? fp32_values : std::vector<std::string>{},
                  [&](EngineOptions& e) {
                    e.precision = r.precision;
                    e.optimize = r.optimize;
                    e.reuse_memory = r.reuse_memory;
                    e.cuda_graph = r.cuda_graph;
                    if (!r.time_tactics) e.time_tactics = false;
                    e.input_format = r.uint8 ? InputFormat::kUint8Nhwc : InputFormat::kFloat32Nchw;
                    if (r.streams && !cuda) e.threads = std::max(1, threads / r.streams);
                  }));
  Measured m;
  m.image_input = engine->inputs().size() == 1 && engine->inputs()[0].dims.size() == 4;
  KILN_ASSIGN_OR_RETURN(auto feeds, random_inputs(*engine, o.batch, o.shapes, o.seed));
  if (cuda && r.streams) KILN_RETURN_IF_ERROR(pin_inputs(feeds));
  const int64_t batch = images_per_run(*engine, feeds);
  double wall = 0;
  DeviceMemoryInfo mem;
  if (r.streams == 0) {
    auto ctx = engine->create_context();
    const double w0 = now_seconds();
    for (int runs = 0; runs < (cuda ? 2 : 1) || now_seconds() - w0 < o.warmup; ++runs)
      KILN_RETURN_IF_ERROR(ctx->run(feeds).status());
    if (monitor) monitor->start();
    Status st = time_runs(o.duration, m.lat_ms, wall, [&] { return ctx->run(feeds).status(); });
    if (monitor) monitor->stop();
    KILN_RETURN_IF_ERROR(st);
    KILN_ASSIGN_OR_RETURN(mem, ctx->device_memory());
  } else {
    PipelineOptions po;
    po.contexts = r.streams;
    po.max_queued = static_cast<size_t>(inflight);
    KILN_ASSIGN_OR_RETURN(auto pipeline, Pipeline::create(engine, po));
    KILN_RETURN_IF_ERROR(warm_pipeline(*pipeline, feeds, r.streams, o.warmup));
    KILN_ASSIGN_OR_RETURN(
        PipelineTiming t,
        time_pipeline(*pipeline, feeds, static_cast<size_t>(inflight), o.duration,
                      monitor ? std::vector<GpuMonitor*>{monitor} : std::vector<GpuMonitor*>{}));
    m.lat_ms = std::move(t.lat_ms);
    wall = t.wall_s;
    KILN_ASSIGN_OR_RETURN(mem, pipeline->device_memory());
  }
  m.ips = static_cast<double>(batch) * static_cast<double>(m.lat_ms.size()) / wall;
  m.own_mib = static_cast<double>(mem.device_total()) / (1 << 20);
  if (monitor) {
    const GpuSeries used = series(monitor->samples(), &GpuSample::mem_used_mib);
    if (used.max > 0) m.used_mib = used.max - baseline_mib;
  }
  return m;
}

// 'text' for /bin/sh, single quotes inside closed, escaped and reopened.
std::string shell_quote(const std::string& text) {
  std::string r = "'";
  for (char c : text) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// bench/ladder_torch.py: --peer-script, else next to the binary (an install's share/kiln, or
// the source tree above a build directory).
Result<std::string> find_peer_script(const std::string& given) {
  namespace fs = std::filesystem;
  if (!given.empty()) {
    if (!fs::is_regular_file(given))
      return not_found("--peer-script '" + given + "': no such file");
    return given;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const char* rel : {"../share/kiln/ladder_torch.py", "../bench/ladder_torch.py",
                            "../../bench/ladder_torch.py"})
      if (fs::is_regular_file(exe.parent_path() / rel)) return (exe.parent_path() / rel).string();
  return not_found(
      "cannot find ladder_torch.py next to the kiln binary: give it with --peer-script");
}

// The PyTorch rows, from a python3 child run after kiln's rows (PyTorch's memory and kiln's
// do not overlap). `used_now_mib` is the GPU's used memory just before, which the child's
// used-memory figures are taken above. Errors say why no row came.
Status add_torch_rows(LadderReport& report, const LadderOptions& o, double used_now_mib) {
  for (char c : o.peer_torch)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return invalid_argument("--peer-torch '" + o.peer_torch +
                              "': expected a torchvision model name such as resnet50");
  KILN_ASSIGN_OR_RETURN(std::string script, find_peer_script(o.peer_script));
  const std::string json = (std::filesystem::temp_directory_path() /
                            ("kiln_ladder_torch_" + std::to_string(::getpid()) + ".json"))
                               .string();
  char num[160];
  std::snprintf(num, sizeof num,
                " --batch %lld --warmup %g --duration %g --rounds %d --baseline-used-mib %.1f",
                static_cast<long long>(report.batch), o.warmup, o.duration, o.rounds, used_now_mib);
  const std::string cmd = "python3 " + shell_quote(script) + " --model " + o.peer_torch + num +
                          " --json " + shell_quote(json) + " 1>&2";
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    std::filesystem::remove(json);
    return unsupported("--peer-torch: '" + cmd + "' failed (exit " +
                       std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1) +
                       "; its reason is above)");
  }
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  f.close();
  std::filesystem::remove(json);
  if (j.is_discarded() || !j.contains("rows") || !j["rows"].is_array())
    return internal_error("--peer-torch: " + script + " wrote no rows");
  for (const nlohmann::json& r : j["rows"]) {
    LadderRow row;
    row.source = "pytorch";
    row.name = r.value("name", std::string("PyTorch"));
    row.config = r.value("config", std::string());
    row.failed = r.value("failed", std::string());
    if (row.failed.empty()) {
      row.round_ips = r.value("round_ips", std::vector<double>{});
      row.p50_ms = r.value("p50_ms", 0.0);
      row.p99_ms = r.value("p99_ms", 0.0);
      row.own_mib = r.value("own_mib", NAN);
      row.used_mib = r.value("used_mib", NAN);
      if (row.round_ips.empty()) row.failed = "no rounds measured";
    }
    report.rows.push_back(row);
  }
  return Status::ok();
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace

int bench_ladder(const std::string& model, const GlobalOptions& g, const LadderOptions& o) {
  if (o.rounds < 1 || o.rounds > 50) return usage_error("--rounds must be 1 to 50");
  if (o.warmup < 0 || o.duration <= 0)
    return usage_error("--ladder needs --warmup >= 0 and --duration > 0");
  const bool cuda = g.cuda();
  if (!o.peer_torch.empty() && !cuda) return usage_error("--peer-torch needs --device cuda");
  const int threads = resolved_threads(g);
  const Precision lowered = g.engine.precision != Precision::kFp32
                                ? g.engine.precision
                                : (cuda ? Precision::kFp16 : Precision::kFp32);
  const int streams = o.streams ? o.streams : (cuda ? 4 : std::max(2, threads));
  const int inflight = o.inflight ? o.inflight : 2 * streams;
  std::vector<Rung> rungs = make_rungs(cuda, lowered, streams);

  std::vector<std::string> fp32_values;
  if (cuda && lowered == Precision::kFp16) {
    GlobalOptions fp16 = g;
    fp16.engine.precision = Precision::kFp16;
    fp32_values = fp16_guard(model, fp16, o.batch, o.shapes);
  }
  // Device memory as nvidia-smi shows it: NVML's used memory, above what it was before the
  // first row (the ladder's own CUDA context and libraries count, as they would for any
  // process).
  std::unique_ptr<GpuMonitor> monitor;
  double baseline_mib = 0;
  if (cuda) {
    auto m = GpuMonitor::open_cuda(g.engine.device_index);
    if (m.is_ok()) {
      monitor = std::move(m).value();
      monitor->start();
      monitor->stop();
      const auto s = monitor->samples();
      baseline_mib = s.empty() ? 0 : s[0].mem_used_mib;
      if (std::isnan(baseline_mib)) monitor.reset();
    } else {
      std::fprintf(stderr, "kiln: note: --ladder: %s; the used-memory column stays empty\n",
                   m.status().message().c_str());
    }
  }

  LadderReport report;
  report.model = std::filesystem::path(model).filename().string();
  report.device =
      cuda ? "cuda:" + std::to_string(g.engine.device_index) +
                 (monitor && !monitor->name().empty() ? " (" + monitor->name() + ")" : "")
           : "cpu, " + std::to_string(threads) + " threads";
  report.command = g.command_line;
  report.kiln_version = KILN_VERSION;
  report.date = utc_date();
  report.rounds = o.rounds;
  report.duration_s = o.duration;
  report.batch = o.batch ? o.batch : 1;
  for (const Rung& r : rungs) {
    LadderRow row;
    row.name = r.name;
    row.skipped = r.skipped;
    row.config = config_of(r, cuda, threads, inflight);
    report.rows.push_back(row);
  }
  std::vector<std::vector<double>> lat(rungs.size());
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t i = 0; i < rungs.size(); ++i) {
      LadderRow& row = report.rows[i];
      if (!row.skipped.empty() || !row.failed.empty()) continue;
      auto m = measure(model, g, o, rungs[i], inflight, fp32_values, monitor.get(), baseline_mib);
      if (!m.is_ok()) {
        // The first row is the baseline every other is compared with: without it, stop.
        if (i == 0) return fail(m.status().with_context("--ladder row 1 (" + row.name + ")"));
        row.failed = m.status().message();
        std::fprintf(stderr, "kiln: error: --ladder row %zu (%s): %s\n", i + 1, row.name.c_str(),
                     row.failed.c_str());
        continue;
      }
      if (i == 0 && !m->image_input && report.rows[5].skipped.empty())
        report.rows[5].skipped = "the model's input is not one image tensor (N,C,H,W)";
      row.round_ips.push_back(m->ips);
      lat[i].insert(lat[i].end(), m->lat_ms.begin(), m->lat_ms.end());
      if (std::isnan(row.own_mib) || m->own_mib > row.own_mib) row.own_mib = m->own_mib;
      if (!std::isnan(m->used_mib) && (std::isnan(row.used_mib) || m->used_mib > row.used_mib))
        row.used_mib = m->used_mib;
      std::printf("round %d/%d, row %zu (%s): %.1f images/s\n", round + 1, o.rounds, i + 1,
                  row.name.c_str(), m->ips);
      std::fflush(stdout);
    }
  }
  bool any_failed = false;
  for (size_t i = 0; i < rungs.size(); ++i) {
    LadderRow& row = report.rows[i];
    any_failed |= !row.failed.empty();
    if (!row.ran() || row.round_ips.empty()) continue;
    std::sort(lat[i].begin(), lat[i].end());
    row.p50_ms = percentile(lat[i], 50);
    row.p99_ms = percentile(lat[i], 99);
  }
  if (!o.peer_torch.empty()) {
    double used_now = baseline_mib;
    if (monitor) {
      monitor->start();
      monitor->stop();
      const auto s = monitor->samples();
      if (!s.empty() && !std::isnan(s[0].mem_used_mib)) used_now = s[0].mem_used_mib;
    }
    if (Status st = add_torch_rows(report, o, used_now); !st.is_ok())
      std::fprintf(stderr, "kiln: note: %s; the ladder goes on without PyTorch rows\n",
                   st.message().c_str());
  }
  for (LadderRow& row : report.rows) {
    if (!row.ran() || row.round_ips.empty()) continue;
    std::vector<double> v = row.round_ips;
    std::sort(v.begin(), v.end());
    row.ips = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  std::printf("%s", ladder_table(report).c_str());
  if (!o.out.empty()) {
    if (Status st = write_ladder(report, o.out); !st.is_ok()) return fail(st);
    std::printf("ladder written to %s.json, %s.md and %s.svg\n", o.out.c_str(), o.out.c_str(),
                o.out.c_str());
  }
  return any_failed ? kExitBadInput : kExitOk;
}

}  // namespace kiln::cli
