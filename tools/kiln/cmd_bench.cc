// `kiln bench MODEL [--batch N] [--warmup S] [--duration S] [--shape NAME=DIMS] [--json F]
//  [--no-transfers] [--dump-profile F]`: latency and throughput on random inputs.
//
// Runs for `warmup` seconds untimed (CUDA: at least two runs, to build the plan and capture
// the graph), then times single runs until `duration` seconds have passed (at least 3
// runs). Latency is per run (one batch), host wall clock including the copies to and from
// the GPU; throughput is batch·runs / wall time. With --no-transfers (CUDA) each run is the
// device compute alone, timed by CUDA events, and throughput is batch / median. A symbolic
// batch dimension takes --batch; other symbolic dimensions need --shape.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "bench_monitors.h"
#include "cli_common.h"

namespace kiln::cli {

namespace {

struct BenchOptions {
  std::string model;
  int64_t batch = 0;  // 0: not given
  double warmup = 1.0;
  double duration = 3.0;
  std::vector<std::string> shapes;
  std::string json;
  uint32_t seed = 1;
  bool no_transfers = false;
  std::string dump_profile;
  std::vector<int64_t> alternate;       // --alternate: batch sizes run in rotation
  int streams = 0;                      // --streams: contexts of a Pipeline (0: one Context)
  int inflight = 0;                     // --inflight: requests in flight (0: 2 per stream)
  bool unordered = false;               // --unordered-compute
  bool ordered = false;                 // --ordered-compute
  std::string gpus_text;                // --gpus as given: all, or 0,1,...
  std::vector<int> gpus;                // --gpus parsed: one engine per entry
  bool pinned = false;                  // --pinned: inputs in pinned host memory
  bool gpu_inputs = false;              // --gpu-inputs: inputs held in GPU memory
  bool monitor = false;                 // --monitor: NVML samples during the timed phase
  std::string monitor_csv;              // --monitor-csv
  bool ladder = false;                  // --ladder: the optimization stages, a row each
  std::string ladder_out;               // --ladder-out PREFIX
  int rounds = 1;                       // --rounds (--ladder)
  std::string peer_torch, peer_script;  // --peer-torch NAME, --peer-script PATH (--ladder)
  std::string images;                   // --images DIR: end to end from image files
  bool letterbox = false;               // --letterbox (--images)
  int decode_threads = 0;               // --decode-threads (--images)
  std::string image_decoder;            // --image-decoder (--images)
  int decoders = 0;                     // --decoders (--images)
};

// Device-side figures of a CUDA bench.
struct DeviceFigures {
  std::vector<double> h2d, compute, d2h;  // per timed run, ms
  DeviceMemoryInfo memory;
  bool graph = false;
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return percentile(v, 50);
}

// Writes the per-layer profile (JSON) and prints the slowest layers.
Status dump_profile(Context& ctx, const std::string& path, int iterations) {
  KILN_ASSIGN_OR_RETURN(auto layers, ctx.profile_layers(iterations));
  nlohmann::json j = nlohmann::json::array();
  double total = 0;
  for (const LayerProfile& l : layers) {
    total += l.ms;
    j.push_back(
        {{"name", l.name}, {"op", l.op}, {"tactic", l.tactic}, {"cpu", l.on_cpu}, {"ms", l.ms}});
  }
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  f.close();
  if (!f) return not_found("cannot write '" + path + "'");
  std::vector<LayerProfile> sorted = layers;
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerProfile& a, const LayerProfile& b) { return a.ms > b.ms; });
  std::printf("per-layer profile (%zu steps, %.4g ms summed, mean of %d runs; %s):\n",
              layers.size(), total, iterations, path.c_str());
  for (size_t i = 0; i < sorted.size() && i < 15; ++i)
    std::printf("  %8.4f ms %5.1f%%  %-14s %-40s %s\n", sorted[i].ms,
                total > 0 ? 100 * sorted[i].ms / total : 0.0, sorted[i].op.c_str(),
                sorted[i].name.substr(0, 40).c_str(), sorted[i].tactic.c_str());
  return Status::ok();
}

// --images / --input-format jpeg: decoding and the model end to end (bench_images.cc).
int run_images(const BenchOptions& o, const GlobalOptions& g) {
  if (o.ladder || o.no_transfers || !o.json.empty() || !o.dump_profile.empty() ||
      !o.alternate.empty() || !o.gpus.empty() || o.pinned || o.monitor || !o.monitor_csv.empty() ||
      !o.shapes.empty() || o.unordered || o.ordered)
    return usage_error(
        "--images and --input-format jpeg run decoding and the model end to end: they take "
        "--batch, --streams, "
        "--inflight, --letterbox, --decode-threads, --image-decoder, --warmup and --duration "
        "only");
  ImagesBench ib;
  ib.dir = o.images;
  ib.letterbox = o.letterbox;
  ib.decode_threads = o.decode_threads;
  ib.decoder = o.image_decoder;
  // On the GPU, three decoders by default: one's host work (parsing, its share of the JPEGs
  // on the threads) overlaps the others' decoding (bench/results/throughput.md).
  const bool gpu_decoding = g.cuda() && o.image_decoder != "host";
  ib.decoders = o.decoders ? o.decoders : (gpu_decoding ? 3 : 1);
  ib.streams = o.streams ? o.streams : 2;
  ib.inflight = o.inflight;
  ib.batch = o.batch;
  ib.warmup = o.warmup;
  ib.duration = o.duration;
  return bench_images(o.model, g, ib);
}

// --ladder: the optimization stages, a row each (bench_ladder.cc).
int run_ladder(const BenchOptions& o, const GlobalOptions& g) {
  if (o.no_transfers || !o.json.empty() || !o.dump_profile.empty() || !o.alternate.empty() ||
      !o.gpus.empty() || o.pinned || o.unordered || o.ordered || o.monitor ||
      !o.monitor_csv.empty())
    return usage_error(
        "--ladder sets each row's options itself: it takes --streams, --inflight, --rounds, "
        "--ladder-out, --batch, --shape, --warmup and --duration, not --no-transfers, --json, "
        "--dump-profile, --alternate, --gpus, --pinned, --unordered-compute, "
        "--ordered-compute or --monitor");
  LadderOptions lo;
  lo.batch = o.batch;
  lo.shapes = o.shapes;
  lo.seed = o.seed;
  lo.warmup = o.warmup;
  lo.duration = o.duration;
  lo.rounds = o.rounds;
  lo.streams = o.streams;
  lo.inflight = o.inflight;
  lo.out = o.ladder_out;
  lo.peer_torch = o.peer_torch;
  lo.peer_script = o.peer_script;
  return bench_ladder(o.model, g, lo);
}

// The flags that do not go together in a run of one Context or a Pipeline: a usage error's
// message, or "" when they do.
std::string single_conflict(const BenchOptions& o, const GlobalOptions& g) {
  if (o.no_transfers && !g.cuda()) return std::string("--no-transfers needs --device cuda");
  if ((o.no_transfers || !o.dump_profile.empty()) && (o.pinned || o.gpu_inputs))
    return std::string(
        "--no-transfers and --dump-profile repeat the compute on inputs kept on the GPU: they "
        "take no --pinned or --gpu-inputs");
  if (o.streams > 0 &&
      (o.no_transfers || !o.json.empty() || !o.dump_profile.empty() || !o.alternate.empty()))
    return std::string(
        "--streams times whole requests through a Pipeline: it takes no --no-transfers, "
        "--json, --dump-profile or --alternate");
  if (!o.alternate.empty() && (o.no_transfers || !o.json.empty() || !o.dump_profile.empty()))
    return std::string(
        "--alternate times whole runs and prints a table: it takes no "
        "--no-transfers, --json or --dump-profile");
  if (o.streams == 0 && (o.inflight || o.unordered || o.ordered || !o.gpus.empty()))
    return std::string(
        "--inflight, --unordered-compute, --ordered-compute and --gpus need --streams");
  if (o.unordered && o.ordered)
    return std::string("--ordered-compute and --unordered-compute: choose one");
  if (o.gpu_inputs && (!g.cuda() || o.pinned || o.no_transfers ||
                       std::set<int>(o.gpus.begin(), o.gpus.end()).size() > 1))
    return std::string(
        "--gpu-inputs holds the inputs in one CUDA GPU's memory: it needs --device cuda and "
        "takes no --pinned, --no-transfers or --gpus over several GPUs");
  return "";
}

// --streams N: a Pipeline over one engine per GPU listed (bench_streams.cc).
int run_streams(const BenchOptions& o, const GlobalOptions& g,
                const std::shared_ptr<Engine>& engine, int first_gpu,
                const std::map<std::string, Tensor>& feeds, int64_t batch) {
  // One engine per GPU listed (an entry repeated shares its GPU's engine), in list order;
  // the first GPU's engine built again for the others (Engine::for_gpu: its layer timings
  // taken over where the GPUs are the same model).
  std::vector<std::shared_ptr<const Engine>> engines{engine};
  std::map<int, std::shared_ptr<const Engine>> by_gpu{{first_gpu, engine}};
  for (size_t i = 1; i < o.gpus.size(); ++i) {
    auto& slot = by_gpu[o.gpus[i]];
    if (!slot) {
      auto other = engine->for_gpu(o.gpus[i]);
      if (!other.is_ok()) return fail(other.status());
      slot = *other;
    }
    engines.push_back(slot);
  }
  StreamsBench b;
  b.streams = o.streams;
  b.inflight = o.inflight;
  b.compute_order = o.unordered ? PipelineOptions::ComputeOrder::kConcurrent
                    : o.ordered ? PipelineOptions::ComputeOrder::kOrdered
                                : PipelineOptions::ComputeOrder::kTimed;
  b.warmup = o.warmup;
  b.duration = o.duration;
  // --monitor watches each GPU the contexts run on.
  BenchMonitors monitors(o.monitor || !o.monitor_csv.empty(), o.monitor_csv,
                         o.gpus.empty() ? std::vector<int>{first_gpu} : o.gpus);
  b.monitors = monitors.monitors();
  const int rc = bench_streams(engines, o.model, g, b, feeds, batch);
  if (Status st = monitors.finish(); !st.is_ok()) return fail(st);
  return rc;
}

// What the timed phase of one Context saw: each run's latency, the phase's wall time and,
// on CUDA, each run's device figures.
struct SingleTiming {
  std::vector<double> lat_ms;
  double total_s = 0;
  DeviceFigures dev;
};

// The warm-up, then runs (or, with --no-transfers, device computes) until --duration.
Result<SingleTiming> time_single(Context& ctx, const BenchOptions& o,
                                 const std::map<std::string, Tensor>& feeds, bool cuda,
                                 BenchMonitors& monitors) {
  SingleTiming t;
  std::vector<double>& lat_ms = t.lat_ms;
  DeviceFigures& dev = t.dev;
  double start = now_seconds();
  int warmup_runs = 0;
  // A CUDA context builds its plan (and times tactics) on the first run, and captures its
  // graph on the second: both stay out of the timed phase.
  while (warmup_runs < (cuda ? 2 : 1) || now_seconds() - start < o.warmup) {
    auto r = ctx.run(feeds);
    if (!r.is_ok()) return r.status();
    ++warmup_runs;
  }
  spdlog::info("warmup: {} runs in {:.2f} s", warmup_runs, now_seconds() - start);
  for (const std::string& note : ctx.stats().notes) spdlog::warn("{}", note);

  monitors.start();
  start = now_seconds();
  if (o.no_transfers) {
    // Device compute only, timed with CUDA events per run.
    while (lat_ms.size() < 10 || now_seconds() - start < o.duration) {
      auto ms = ctx.time_compute(10);
      if (!ms.is_ok()) return ms.status();
      lat_ms.insert(lat_ms.end(), ms->begin(), ms->end());
    }
  } else {
    while (lat_ms.size() < 3 || now_seconds() - start < o.duration) {
      double t0 = now_seconds();
      auto r = ctx.run(feeds);
      double t1 = now_seconds();
      if (!r.is_ok()) return r.status();
      lat_ms.push_back((t1 - t0) * 1e3);
      if (cuda) {
        auto t = ctx.last_device_timing();
        if (!t.is_ok()) return t.status();
        dev.h2d.push_back(t->h2d_ms);
        dev.compute.push_back(t->compute_ms);
        dev.d2h.push_back(t->d2h_ms);
      }
    }
  }
  t.total_s = now_seconds() - start;
  monitors.stop();
  return t;
}

// One timed phase's figures, as printed and written to --json.
struct Summary {
  double min, median, p90, p99, mean, ips;
  size_t runs;
  int threads;
};

// --json: the figures as `kiln bench --json` writes them (bench/README.md names the keys).
Status write_json(const BenchOptions& o, const GlobalOptions& g, const Engine& e, int64_t batch,
                  const Summary& s, const DeviceFigures& dev) {
  const double mib = 1.0 / (1 << 20);
  nlohmann::json j = {
      {"model", o.model},
      {"device", g.device_name()},
      {"precision", precision_name(e.options().precision)},
      {"batch", batch},
      {"threads", s.threads},
      {"runs", s.runs},
      {"throughput_ips", s.ips},
      {"throughput", s.ips},
      {"compute_only", o.no_transfers},
      {"latency_ms",
       {{"min", s.min},
        {"median", s.median},
        {"p50", s.median},
        {"p90", s.p90},
        {"p99", s.p99},
        {"mean", s.mean}}},
      {"kiln_version", KILN_VERSION},
  };
  if (!g.cuda())
    j["memory_mib"] = {{"arena", dev.memory.arena * mib},
                       {"arena_lower_bound", dev.memory.arena_lower_bound * mib},
                       {"weights", dev.memory.weights * mib}};
  if (g.cuda()) {
    j["cuda_graph"] = dev.graph;
    j["peak_device_mib"] = dev.memory.device_total() * mib;
    j["device_memory_mib"] = {{"arena", dev.memory.arena * mib},
                              {"arena_lower_bound", dev.memory.arena_lower_bound * mib},
                              {"workspace", dev.memory.workspace * mib},
                              {"weights", dev.memory.weights * mib},
                              {"pinned_host", dev.memory.pinned_host * mib}};
    if (!o.no_transfers)
      j["device_ms"] = {{"h2d", median_of(dev.h2d)},
                        {"compute", median_of(dev.compute)},
                        {"d2h", median_of(dev.d2h)}};
  }
  std::ofstream f(o.json);
  f << j.dump(2) << "\n";
  f.close();
  if (!f) return not_found("cannot write '" + o.json + "'");
  return Status::ok();
}

// Prints the timed phase of one Context (and its memory), writes --dump-profile and --json.
int report_single(const Engine& e, Context& ctx, const BenchOptions& o, const GlobalOptions& g,
                  SingleTiming& t, int64_t batch, BenchMonitors& monitors) {
  const bool cuda = g.cuda();
  std::vector<double>& lat_ms = t.lat_ms;
  DeviceFigures& dev = t.dev;
  std::sort(lat_ms.begin(), lat_ms.end());
  double mean = 0;
  for (double v : lat_ms) mean += v / lat_ms.size();
  double med = percentile(lat_ms, 50), p90 = percentile(lat_ms, 90), p99 = percentile(lat_ms, 99);
  // Throughput: images over wall time with transfers (what a caller sees); over the median
  // device time per run for compute only.
  double ips = o.no_transfers ? batch * 1e3 / med : batch * lat_ms.size() / t.total_s;
  int threads = resolved_threads(g);
  {
    auto m = ctx.device_memory();
    if (!m.is_ok()) return fail(m.status());
    dev.memory = *m;
    dev.graph = ctx.uses_cuda_graph();
  }

  std::string name = std::filesystem::path(o.model).filename().string();
  std::string what = cuda ? precision_name(e.options().precision) +
                                std::string(o.no_transfers ? " compute" : " +copies")
                          : std::to_string(threads) + " thr";
  std::printf("%-24s %-6s %5s %-14s %6s %9s %9s %9s %9s %12s\n", "model", "device", "batch", "mode",
              "runs", "min ms", "median ms", "p90 ms", "p99 ms", "images/s");
  std::printf("%-24s %-6s %5lld %-14s %6zu %9.4g %9.4g %9.4g %9.4g %12.1f\n", name.c_str(),
              g.device_name(), static_cast<long long>(batch), what.c_str(), lat_ms.size(),
              lat_ms[0], med, p90, p99, ips);
  const double mib = 1.0 / (1 << 20);
  if (cuda) {
    if (!o.no_transfers)
      std::printf("device time per run (median): h2d %.4g ms, compute %.4g ms, d2h %.4g ms\n",
                  median_of(dev.h2d), median_of(dev.compute), median_of(dev.d2h));
    std::printf(
        "device memory: %.1f MiB (activation arena %.1f MiB [lower bound %.1f], "
        "workspace %.1f MiB, weights %.1f MiB); pinned host %.1f MiB; CUDA graph %s\n",
        dev.memory.device_total() * mib, dev.memory.arena * mib, dev.memory.arena_lower_bound * mib,
        dev.memory.workspace * mib, dev.memory.weights * mib, dev.memory.pinned_host * mib,
        dev.graph ? "on" : "off");
  } else {
    std::printf("memory: activation arena %.1f MiB [lower bound %.1f], weights %.1f MiB\n",
                dev.memory.arena * mib, dev.memory.arena_lower_bound * mib,
                dev.memory.weights * mib);
  }
  if (!o.dump_profile.empty()) {
    Status s = dump_profile(ctx, o.dump_profile, 20);
    if (!s.is_ok()) return fail(s);
  }

  if (!o.json.empty()) {
    const Summary sum{lat_ms[0], med, p90, p99, mean, ips, lat_ms.size(), threads};
    if (Status st = write_json(o, g, e, batch, sum, dev); !st.is_ok()) return fail(st);
  }
  if (Status st = monitors.finish(); !st.is_ok()) return fail(st);
  return kExitOk;
}

int run(BenchOptions o, const GlobalOptions& g) {
  if (!o.gpus_text.empty()) {
    if (!g.cuda()) return usage_error("--gpus needs --device cuda");
    auto gpus = parse_gpu_list(o.gpus_text, cuda_device_count());
    if (!gpus.is_ok()) return usage_error(gpus.status().message());
    o.gpus = *gpus;
  }
  if (o.warmup < 0 || o.duration < 0) return usage_error("--warmup/--duration must be >= 0");
  if (!o.ladder &&
      (!o.ladder_out.empty() || o.rounds != 1 || !o.peer_torch.empty() || !o.peer_script.empty()))
    return usage_error("--ladder-out, --rounds, --peer-torch and --peer-script need --ladder");
  const bool images = !o.images.empty() || g.jpeg_input;
  if (!images && (o.letterbox || o.decode_threads || !o.image_decoder.empty() || o.decoders))
    return usage_error(
        "--letterbox, --decode-threads, --image-decoder and --decoders need --images or "
        "--input-format jpeg");
  if (!o.images.empty() && g.engine.input_format != InputFormat::kFloat32Nchw && !g.jpeg_input)
    return usage_error(std::string("--images decodes into the engine's uint8-nhwc input: it "
                                   "takes --input-format jpeg (or none), not ") +
                       input_format_name(g.engine.input_format));
  if (images) return run_images(o, g);
  if (o.ladder) return run_ladder(o, g);
  if (const std::string why = single_conflict(o, g); !why.empty()) return usage_error(why);
  const std::vector<std::string> fp32_values = fp16_guard(o.model, g, o.batch, o.shapes);
  // With --gpus, the first entry's engine; each other GPU gets its own below.
  GlobalOptions first = g;
  if (!o.gpus.empty()) first.engine.device_index = o.gpus[0];
  auto engine_or = load_engine(o.model, first, fp32_values);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;

  if (!o.alternate.empty())
    return bench_alternating(e, o.model, g, o.alternate, o.shapes, o.duration, o.seed);

  auto feeds_or = random_inputs(e, o.batch, o.shapes, o.seed);
  if (!feeds_or.is_ok())
    return feeds_or.status().code() == StatusCode::kInvalidArgument
               ? usage_error(feeds_or.status().message())
               : fail(feeds_or.status());
  if (o.pinned) {
    // The inputs in pinned host memory: a CUDA engine copies them to the GPU in place.
    if (Status st = pin_inputs(*feeds_or); !st.is_ok()) return fail(st);
  }
  if (o.gpu_inputs) {
    // Copied to the engine's GPU once; each run copies them device to device.
    if (Status st = inputs_to_gpu(*feeds_or, first.engine.device_index); !st.is_ok())
      return fail(st.with_context("--gpu-inputs"));
    std::printf(
        "inputs held in the memory of GPU %d (--gpu-inputs): each run copies them "
        "device to device\n",
        first.engine.device_index);
  }
  const std::map<std::string, Tensor>& feeds = *feeds_or;
  const int64_t batch = images_per_run(e, feeds);
  const bool cuda = g.cuda();
  if (o.streams > 0) return run_streams(o, g, *engine_or, first.engine.device_index, feeds, batch);
  auto ctx = e.create_context();
  BenchMonitors monitors(o.monitor || !o.monitor_csv.empty(), o.monitor_csv,
                         {first.engine.device_index});
  auto timed = time_single(*ctx, o, feeds, cuda, monitors);
  if (!timed.is_ok()) return fail(timed.status());
  return report_single(e, *ctx, o, g, *timed, batch, monitors);
}

}  // namespace

Command add_bench_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = root.add_subcommand("bench", "measure latency and throughput on random inputs");
  app->add_option("model", o->model, "the .onnx model or .kiln plan")->required();
  app->add_option("-b,--batch", o->batch, "batch size for a symbolic batch dimension (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--warmup", o->warmup, "seconds of untimed runs first")->capture_default_str();
  app->add_option("--duration", o->duration, "seconds of timed runs (at least 3 runs)")
      ->capture_default_str();
  app->add_option("--shape", o->shapes, "NAME=1x3x224x224: an input's shape (for symbolic dims)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--json", o->json, "also write the results as JSON to this file");
  app->add_option("--seed", o->seed, "random input seed")->capture_default_str();
  app->add_flag("--no-transfers", o->no_transfers,
                "CUDA: time the device compute alone (inputs already on the GPU)");
  app->add_option("--dump-profile", o->dump_profile,
                  "write per-layer times (JSON) to this file: device time per step on CUDA, "
                  "each node's kernel time on the CPU");
  app->add_flag("--pinned", o->pinned,
                "hold the inputs in pinned host memory (pinned_tensor): CUDA copies them to "
                "the GPU in place, with no staging copy");
  app->add_flag("--gpu-inputs", o->gpu_inputs,
                "CUDA: hold the inputs in GPU memory (copy_to_gpu), copied device to device "
                "each run: the rate with no host copy, the ceiling for --pinned");
  app->add_option("--streams", o->streams,
                  "N: run through a Pipeline of N contexts (CUDA streams) with 2N requests in "
                  "flight, and print the throughput with copies")
      ->check(CLI::Range(1, 64));
  app->add_option("--inflight", o->inflight,
                  "M: with --streams, the requests kept in flight (default 2 per stream)")
      ->check(CLI::Range(1, 1024));
  app->add_flag("--unordered-compute", o->unordered,
                "with --streams on CUDA: let the streams' computes run at once (default: the "
                "faster of the two orders, timed at warm-up; the copies overlap either way)");
  app->add_flag("--ordered-compute", o->ordered,
                "with --streams on CUDA: run the streams' computes one after another");
  app->add_option("--gpus", o->gpus_text,
                  "all or 0,1,...: with --streams, spread the contexts over these GPUs, one "
                  "engine per GPU (a GPU listed twice gets contexts in turn), and print each "
                  "GPU's share");
  app->add_flag("--monitor", o->monitor,
                "sample the GPU's memory used, utilization, SM clock and power every 100 ms "
                "during the timed phase (NVML, libnvidia-ml.so.1) and print min/median/max");
  app->add_option("--monitor-csv", o->monitor_csv,
                  "with --monitor (implied): also write the samples to this CSV file");
  app->add_flag("--ladder", o->ladder,
                "run the optimization stages on this model, a real configuration each: "
                "framework-like fp32, the lowered precision with fused epilogues, + memory plan, "
                "+ CUDA graph, + --streams N overlapped (default 4 on CUDA), + uint8 input; "
                "prints images/s, p50/p99 latency, memory and the speed-up of each");
  app->add_option("--ladder-out", o->ladder_out,
                  "PREFIX: with --ladder, also write PREFIX.json, PREFIX.md and PREFIX.svg");
  app->add_option("--rounds", o->rounds,
                  "with --ladder: run every row this many times (images/s: the median round)")
      ->check(CLI::Range(1, 50));
  app->add_option("--peer-torch", o->peer_torch,
                  "NAME: with --ladder on CUDA, add PyTorch eager fp32, eager fp16 and "
                  "torch.compile fp16 rows of the torchvision model NAME (python3 with torch "
                  "runs bench/ladder_torch.py after kiln's rows)");
  app->add_option("--peer-script", o->peer_script,
                  "with --peer-torch: the ladder_torch.py to run (default: found next to kiln)");
  app->add_option("--images", o->images,
                  "DIR: end to end from DIR's .jpg/.jpeg/.png files (held in memory): decode and "
                  "resize batches on threads into uint8 NHWC, run through a Pipeline of --streams "
                  "contexts (default 2) with the decoding overlapping compute; with "
                  "--input-format jpeg and no --images, 128 synthetic photo-like 500x375 JPEGs "
                  "(quality 90)");
  app->add_flag("--letterbox", o->letterbox,
                "with --images: keep the aspect ratio, padding with 114 (detectors), instead "
                "of stretching");
  app->add_option("--decode-threads", o->decode_threads,
                  "with --images: decoding threads, shared out among the --decoders (default: one "
                  "per core)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--image-decoder", o->image_decoder,
                  "with --images: host (decode and resize on the threads), gpu (batches made on "
                  "the GPU, the default on CUDA: JPEGs split between nvJPEG where it loads and "
                  "libjpeg-turbo on the threads by their measured speeds) or nvjpeg (nvJPEG "
                  "alone; an error without it)")
      ->check(CLI::IsMember({"host", "gpu", "nvjpeg"}));
  app->add_option("--decoders", o->decoders,
                  "with --images: K threads decode batches ahead, each with a decoder of its own "
                  "(on the GPU its own nvJPEG state and stream; default 3 there, else 1)")
      ->check(CLI::Range(1, 16));
  app->add_option("--alternate", o->alternate,
                  "B1,B2,...: run these batch sizes alone, then in rotation on one context "
                  "(as a dynamic batcher would), and compare each one's median latency")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
