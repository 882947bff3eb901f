// What every `kiln` subcommand shares: global options, loading an engine, turning a Status
// into the one-line error and exit code, and small parsers for option values.
//
// Exit codes: 0 success, 1 bad input or model (a file is missing or malformed, an input
// has the wrong shape...), 2 usage errors and unsupported requests (bad flag, --device cuda
// in a build without CUDA, an op kiln cannot run).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/calibration.h"
#include "kiln/engine.h"
#include "kiln/fp16_range.h"
#include "kiln/gpu_monitor.h"
#include "kiln/pipeline.h"

namespace kiln::cli {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

struct GlobalOptions {
  // The engine options: every options.def option with a flag sets its field here (main.cc
  // makes the flags from option_list()).
  EngineOptions engine;
  int verbose = 0;  // -v info, -vv debug, -vvv trace
  // --input-format jpeg: the engine takes uint8-nhwc (engine.input_format), and kiln bench
  // decodes JPEGs into it (--images DIR, else synthetic photo-like ones).
  bool jpeg_input = false;
  // --no-fp16-fallback: the fp16 range guard's findings only warn, instead of being kept in
  // fp32 (EngineOptions::fp32_values).
  bool no_fp16_fallback = false;
  // --precision best (kiln build): engine.precision is the device's 8-bit format (fp8 on CUDA,
  // int8 on the CPU), and the layers whose measured error exceeds the budget stay in a higher
  // precision (kiln build's --max-layer-error, kBestMaxLayerError unless given).
  bool best_precision = false;
  bool calibration_method_given = false;  // --calib-method appeared
  std::string command_line;               // the command as typed (argv joined), for reports

  bool cuda() const { return engine.device == Device::kCuda; }
  const char* device_name() const { return kiln::device_name(engine.device); }
};

// A registered subcommand: its CLI11 app and what to run once parsing succeeded.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Each subcommand file defines one of these.
Command add_run_command(CLI::App& root, const GlobalOptions& global);
Command add_inspect_command(CLI::App& root, const GlobalOptions& global);
Command add_bench_command(CLI::App& root, const GlobalOptions& global);
Command add_demo_command(CLI::App& root, const GlobalOptions& global);
Command add_build_command(CLI::App& root, const GlobalOptions& global);
Command add_quantize_command(CLI::App& root, const GlobalOptions& global);
Command add_serve_command(CLI::App& root, const GlobalOptions& global);
Command add_perf_command(CLI::App& root, const GlobalOptions& global);

// Prints "kiln: error: <message>" (newlines flattened) to stderr.
void print_error(const std::string& message);
// Prints the error and returns its exit code: 2 for kUnsupported, 1 otherwise.
int fail(const Status& status);
// Prints the error and returns 2.
int usage_error(const std::string& message);

// The thread count the engine runs with (the option, or the core count when 0).
int resolved_threads(const GlobalOptions& global);
// Up to `batches` batches of at most `batch` samples each from `source`, fewer where it runs
// out.
Result<std::vector<std::map<std::string, Tensor>>> next_batches(CalibrationSource& source,
                                                                int batches, int batch);
// An int8 build that will calibrate (samples given, no cache to read): calibrated here, with a
// progress bar, into the cache the build then reads (a temporary one where none is named, which
// `options` then names).
Status calibrate_first(const std::string& path, EngineOptions& options);
// Calibration's progress bar on stderr, rewritten in place:
// "[=========>          ] 256/512 samples, 180.3/s, 1.4 s left (pass 1 of 2)".
void print_calibration_progress(const CalibrationProgress& p);
// Up to `batches` batches of the calibration samples (EngineOptions::calibration_data) to
// measure a reduced engine's error on: those after the ones calibration takes where the data
// holds more (held aside), else the same ones; `what` says which.
Result<std::vector<std::map<std::string, Tensor>>> held_aside_samples(const Engine& fp32,
                                                                      const EngineOptions& o,
                                                                      int batches,
                                                                      std::string* what);
// An int8 engine's quantization, one line per layer (nothing for other engines).
void print_quantization(const QuantizationReport& q, Precision format);

// The engine --device, --precision, --shapes... ask for; `fp32_values` are the values kept in
// fp32 (what fp16_guard returned). Notes what they kept, one "kiln: note:" line a node.
// `adjust`, if given, changes the options last (kiln bench --ladder's rows).
Result<std::shared_ptr<Engine>> load_engine(const std::string& path, const GlobalOptions& global,
                                            const std::vector<std::string>& fp32_values = {},
                                            const std::function<void(EngineOptions&)>& adjust = {});

// "0.5" or "0.485,0.456,0.406" → floats; an error names `what`.
Result<std::vector<float>> parse_floats(const std::string& text, const std::string& what);
// --gpus: "all" (every one of the `visible` GPUs) or indices "0,1,..." (repeats kept), each
// below `visible`; errors name the entry and what the machine has.
Result<std::vector<int>> parse_gpu_list(const std::string& text, int visible);
// "1x3x224x224" → {1,3,224,224}.
Result<Shape> parse_dims(const std::string& text);
// Declared shape with symbolic dims by name: "[batch,3,224,224]".
std::string declared_shape(const TensorInfo& info);
// Output name → file name: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize_file_name(const std::string& name);

double now_seconds();  // steady clock

// Random inputs for benchmarking and building: the shape of each input from --shape
// overrides ("NAME=1x3x224x224" or "1x3x224x224" for a single input), else the declared
// shape with a symbolic dim 0 set to `batch` (0: 1).
Result<std::map<std::string, Tensor>> random_inputs(const Engine& e, int64_t batch,
                                                    const std::vector<std::string>& shapes,
                                                    uint32_t seed);
// Moves each input into pinned host memory (pinned_tensor), which a CUDA engine copies to the
// GPU in place.
Status pin_inputs(std::map<std::string, Tensor>& inputs);
// Moves each input into the memory of GPU `gpu` (copy_to_gpu), which a CUDA engine there copies
// device to device (kiln bench --gpu-inputs).
Status inputs_to_gpu(std::map<std::string, Tensor>& inputs, int gpu);
// Images per run: the leading dimension of the engine's first input in `inputs` (1 when it
// has none).
int64_t images_per_run(const Engine& e, const std::map<std::string, Tensor>& inputs);

// `kiln bench --alternate B1,B2,...` (bench_alternate.cc): the batch sizes alone, then in
// rotation on one Context; prints each batch's median latency both ways and the plan builds and
// arena allocations during the rotation.
// The nearest-rank `p`-th percentile (0 < p ≤ 100) of `sorted` (ascending, not empty).
double percentile(const std::vector<double>& sorted, double p);

// `kiln bench --streams N` (bench_streams.cc): a Pipeline of N Contexts kept busy, spread over
// `engines` (one per --gpus entry, or the one engine).
struct StreamsBench {
  int streams = 1;
  int inflight = 0;  // requests kept in flight; 0: 2 per stream
  PipelineOptions::ComputeOrder compute_order = PipelineOptions::ComputeOrder::kTimed;
  double warmup = 1, duration = 3;
  // --monitor: one a GPU (--gpus), started and stopped around the timed phase.
  std::vector<GpuMonitor*> monitors;
};
int bench_streams(const std::vector<std::shared_ptr<const Engine>>& engines,
                  const std::string& model, const GlobalOptions& g, const StreamsBench& b,
                  const std::map<std::string, Tensor>& feeds, int64_t batch);
// The Pipeline parts of --streams and --ladder (bench_streams.cc). warm_pipeline builds every
// Context's plan, then keeps 4·streams requests going until `warmup` seconds have passed.
// time_pipeline keeps `inflight` requests in flight until `duration` seconds (and 3 results)
// have passed, with `monitor` (if any) sampling meanwhile; the requests still in flight then are
// drained and not counted. The first failed request's error is returned.
struct PipelineTiming {
  double wall_s = 0;
  std::vector<double> lat_ms;  // per request, submit to result, in completion order
  PipelineStats at_end;        // the Pipeline's stats when the timed phase ended
  // Requests failed by a device that failed (kUnavailable) while other devices went on; they
  // are not in lat_ms.
  int64_t device_failures = 0;
};
Status warm_pipeline(Pipeline& pipeline, const std::map<std::string, Tensor>& feeds, int streams,
                     double warmup);
Result<PipelineTiming> time_pipeline(Pipeline& pipeline, const std::map<std::string, Tensor>& feeds,
                                     size_t inflight, double duration,
                                     const std::vector<GpuMonitor*>& monitors);
int bench_alternating(const Engine& e, const std::string& model, const GlobalOptions& g,
                      const std::vector<int64_t>& batches, const std::vector<std::string>& shapes,
                      double duration, uint32_t seed);

// `kiln bench --ladder` (bench_ladder.cc): the optimization stages of `model`, one real
// configuration a row, measured in this process; prints the table and, with `out`, writes
// out.json, out.md and out.svg.
struct LadderOptions {
  int64_t batch = 0;  // 0: 1
  std::vector<std::string> shapes;
  uint32_t seed = 1;
  double warmup = 1, duration = 3;  // per row and round
  int rounds = 1;
  int streams = 0;   // the Pipeline rows' contexts; 0: 4 on CUDA, the thread count on the CPU
  int inflight = 0;  // 0: 2 per stream
  std::string out;   // file prefix; "" writes none
  // --peer-torch NAME: PyTorch rows of the torchvision model NAME from bench/ladder_torch.py
  // (--peer-script, else found next to the kiln binary), run by python3 after kiln's rows.
  std::string peer_torch, peer_script;
};
int bench_ladder(const std::string& model, const GlobalOptions& g, const LadderOptions& o);

// `kiln bench --images DIR` (bench_images.cc): end to end from DIR's JPEG and PNG files held
// in memory: decoded in batches on `decode_threads` threads, run through a Pipeline of
// `streams` contexts of the model built for uint8 NHWC input.
struct ImagesBench {
  std::string dir;
  bool letterbox = false;
  int decode_threads = 0;  // 0: one per core
  // --image-decoder: "host" (decode and resize on the threads), "gpu" (batches made on the GPU:
  // nvJPEG where it loads, else libjpeg-turbo, resized there) or "nvjpeg"; "": gpu on CUDA.
  std::string decoder;
  int decoders = 1;  // threads decoding batches ahead, each with a decoder of its own
  int streams = 2, inflight = 0;
  int64_t batch = 0;  // 0: 1
  double warmup = 1, duration = 3;
};
int bench_images(const std::string& model, const GlobalOptions& g, const ImagesBench& b);

// The fp16 range guard (fp16_check.cc): runs `model` in float32 on the CPU on two random
// inputs (shapes as random_inputs, the batch at most 2) and prints the values that leave fp16's
// range, to stdout when `always` (with a line when there are none), else as a warning on stderr.
// Returns those values (none when the check could not run: it warns so).
std::vector<std::string> print_fp16_range(const std::string& model, const GlobalOptions& g,
                                          int64_t batch, const std::vector<std::string>& shapes,
                                          bool always);
// Before a CUDA fp16 engine of `model` is built: the guard's values to keep in fp32, printed
// as a warning; none for other engines, for a .kiln plan (its overrides are recorded in it)
// and with --no-fp16-fallback (then the values are only warned of).
std::vector<std::string> fp16_guard(const std::string& model, const GlobalOptions& g, int64_t batch,
                                    const std::vector<std::string>& shapes);
// The first ten findings, one "  node '…' (Op): …" line each, then how many more.
void print_fp16_findings(std::FILE* out, const std::vector<Fp16RangeFinding>& findings);

}  // namespace kiln::cli
