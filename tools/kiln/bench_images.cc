// `kiln bench MODEL --images DIR` (or --input-format jpeg, with DIR's files or synthetic
// photo-like JPEGs): end to end from image files held in memory. Every JPEG and PNG of DIR is
// read once; then batches of them, in turn, are decoded and resized into 8-bit
// NHWC pixels (kiln::ImageDecoder, on --decode-threads threads) and run through a Pipeline of
// --streams contexts of an engine taking uint8 NHWC input (normalized in the graph), with the
// decoding of the next batch overlapping the requests in flight. Prints images/s end to end,
// the decode time per batch and its own images/s, and the images that failed to decode, each
// named once (a failed image's slot runs as padding; the rest of its batch goes on).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "cli_common.h"
#include "kiln/images.h"

namespace kiln::cli {

namespace {

// Every .jpg/.jpeg/.png file of `dir` (not recursing), sorted by name, with its bytes.
Result<std::vector<std::pair<std::string, std::string>>> read_images(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("--images '" + dir + "': not a directory");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (entry.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png"))
      names.push_back(entry.path().string());
  }
  if (ec) return not_found("--images '" + dir + "': " + ec.message());
  if (names.empty()) return not_found("--images '" + dir + "': no .jpg, .jpeg or .png file in it");
  std::sort(names.begin(), names.end());
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& n : names) {
    std::ifstream f(n, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f && !f.eof()) return not_found("--images: cannot read '" + n + "'");
    files.emplace_back(n, std::move(bytes));
  }
  return files;
}

// Batches decoded ahead on `decoders.size()` threads, each with an ImageDecoder of its own
// (on the GPU: its own nvJPEG state and stream), taking the files in turn, window after
// window; at most two a thread wait decoded. A file that fails is warned of once.
class DecodeFeed {
 public:
  struct Batch {
    double started = 0;  // when its decoding began
    Result<Tensor> pixels = Tensor();
  };

  DecodeFeed(const std::vector<std::pair<std::string, std::string>>& files, int64_t batch,
             std::vector<std::unique_ptr<ImageDecoder>> decoders)
      : files_(files), batch_(batch), decoders_(std::move(decoders)) {
    for (size_t k = 0; k < decoders_.size(); ++k) threads_.emplace_back([this, k] { work(k); });
  }
  ~DecodeFeed() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    room_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  Batch next() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait(lock, [&] { return !ready_.empty(); });
    Batch b = std::move(ready_.front());
    ready_.pop_front();
    room_.notify_one();
    return b;
  }
  std::vector<double> decode_ms() {
    std::lock_guard<std::mutex> lock(mu_);
    return decode_ms_;
  }
  void clear_times() {
    std::lock_guard<std::mutex> lock(mu_);
    decode_ms_.clear();
  }
  size_t failed_files() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_.size();
  }

 private:
  void work(size_t k) {
    for (;;) {
      size_t first = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        room_.wait(lock, [&] { return stop_ || ready_.size() < 2 * decoders_.size(); });
        if (stop_) return;
        first = next_;
        next_ = (next_ + static_cast<size_t>(batch_)) % files_.size();
      }
      std::vector<std::string_view> views;
      std::vector<size_t> which;
      for (int64_t i = 0; i < batch_; ++i) {
        which.push_back((first + static_cast<size_t>(i)) % files_.size());
        views.push_back(files_[which.back()].second);
      }
      Batch b;
      b.started = now_seconds();
      Result<ImageBatch> decoded = decoders_[k]->decode(views);
      const double ms = (now_seconds() - b.started) * 1e3;
      std::lock_guard<std::mutex> lock(mu_);
      if (decoded.is_ok()) {
        decode_ms_.push_back(ms);
        for (size_t i = 0; i < which.size(); ++i)
          if (!decoded->status[i].is_ok() && failed_.insert(which[i]).second)
            std::fprintf(stderr, "kiln: warning: %s: %s; its slot runs as padding\n",
                         files_[which[i]].first.c_str(), decoded->status[i].message().c_str());
        b.pixels = std::move(decoded->pixels);
      } else {
        b.pixels = decoded.status();
      }
      ready_.push_back(std::move(b));
      ready_cv_.notify_one();
    }
  }

  const std::vector<std::pair<std::string, std::string>>& files_;
  const int64_t batch_;
  std::vector<std::unique_ptr<ImageDecoder>> decoders_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable room_, ready_cv_;
  std::deque<Batch> ready_;  // guarded by mu_, as the rest below
  bool stop_ = false;
  size_t next_ = 0;
  std::vector<double> decode_ms_;
  std::set<size_t> failed_;
};

}  // namespace

// `count` photo-like JPEGs of w × h at `quality`, named synthetic<i>.jpg.
static Result<std::vector<std::pair<std::string, std::string>>> synthetic_jpegs(int count, int w,
                                                                                int h,
                                                                                int quality) {
  std::vector<std::pair<std::string, std::string>> files(count);
  std::vector<Status> failed(count, Status::ok());
  std::vector<std::thread> threads;
  const int n = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < count; i += n) {
        auto bytes = encode_jpeg(photo_like_image(w, h, static_cast<uint32_t>(i)), quality);
        if (!bytes.is_ok()) {
          failed[i] = bytes.status();
          continue;
        }
        files[i] = {"synthetic" + std::to_string(i) + ".jpg", std::move(*bytes)};
      }
    });
  for (std::thread& t : threads) t.join();
  for (const Status& st : failed) KILN_RETURN_IF_ERROR(st);
  return files;
}

int bench_images(const std::string& model, const GlobalOptions& g, const ImagesBench& b) {
  constexpr int kSynthetic = 128, kSynthW = 500, kSynthH = 375, kSynthQ = 90;
  auto files_or =
      b.dir.empty() ? synthetic_jpegs(kSynthetic, kSynthW, kSynthH, kSynthQ) : read_images(b.dir);
  if (!files_or.is_ok()) return fail(files_or.status());
  const auto& files = *files_or;
  size_t file_bytes = 0;
  for (const auto& f : files) file_bytes += f.second.size();
  const std::string source = b.dir.empty() ? "synthetic photo-like " + std::to_string(kSynthW) +
                                                 "x" + std::to_string(kSynthH) +
                                                 " JPEGs, quality " + std::to_string(kSynthQ)
                                           : b.dir;
  GlobalOptions gu = g;
  gu.engine.input_format = InputFormat::kUint8Nhwc;
  auto engine_or = load_engine(model, gu);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  std::shared_ptr<Engine> engine = *engine_or;
  if (engine->inputs().size() != 1 || engine->inputs()[0].dims.size() != 4)
    return usage_error(
        "--images and --input-format jpeg need a model with one image input "
        "(N,C,H,W)");
  const TensorInfo& in = engine->inputs()[0];  // uint8 [N, H, W, C]
  if (in.dims[1] <= 0 || in.dims[2] <= 0 || in.dims[3] <= 0)
    return usage_error(
        "decoding images needs the model's image height, width and channels "
        "fixed; '" +
        in.name + "' is " + declared_shape(in));
  const bool cuda = g.cuda();
  ImageBatchOptions io;
  io.height = static_cast<int>(in.dims[1]);
  io.width = static_cast<int>(in.dims[2]);
  io.channels = static_cast<int>(in.dims[3]);
  io.resize = b.letterbox ? ResizeMode::kLetterbox : ResizeMode::kStretch;
  io.threads = b.decode_threads;
  const std::string decoder = b.decoder.empty() ? (cuda ? "gpu" : "host") : b.decoder;
  if (decoder != "host" && !cuda)
    return usage_error("--image-decoder " + decoder + " needs --device cuda");
  // The host's batches stay pageable: a pinned one would be allocated per batch (and
  // cudaFreeHost synchronizes the GPU); the engine stages them on its copy threads.
  if (decoder != "host") {
    io.device = Device::kCuda;
    io.device_index = g.engine.device_index;
    io.jpeg = decoder == "nvjpeg" ? JpegDecoder::kNvjpeg : JpegDecoder::kAuto;
  }
  const int decoders = std::max(1, b.decoders);
  // The host threads are shared out among the decoders (on the GPU each keeps two: one waits
  // on nvJPEG while the other decodes its share of the JPEGs).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int host_threads = b.decode_threads ? b.decode_threads : cores;
  io.threads = std::max(io.device == Device::kCuda ? 2 : 1, host_threads / decoders);
  std::vector<std::unique_ptr<ImageDecoder>> made;
  for (int k = 0; k < decoders; ++k) {
    auto d = ImageDecoder::create(io);
    if (!d.is_ok()) return fail(d.status());
    made.push_back(std::move(d).value());
  }
  const ImageDecoder* first_decoder = made[0].get();  // its choice is made on its first batch
  const int64_t batch = b.batch ? b.batch : (in.dims[0] > 0 ? in.dims[0] : 1);
  if (in.dims[0] > 0 && batch != in.dims[0])
    return usage_error("--batch " + std::to_string(batch) + ": the model's batch is fixed at " +
                       std::to_string(in.dims[0]) + " ('" + in.name + "' is " + declared_shape(in) +
                       ")");
  DecodeFeed feed(files, batch, std::move(made));

  PipelineOptions po;
  po.contexts = b.streams;
  const size_t inflight = static_cast<size_t>(b.inflight ? b.inflight : 2 * b.streams);
  po.max_queued = inflight;
  auto pipeline_or = Pipeline::create(engine, po);
  if (!pipeline_or.is_ok()) return fail(pipeline_or.status());
  Pipeline& pipeline = **pipeline_or;
  {
    DecodeFeed::Batch first = feed.next();
    if (!first.pixels.is_ok()) return fail(first.pixels.status());
    const std::map<std::string, Tensor> feeds{{in.name, std::move(*first.pixels)}};
    if (Status st = warm_pipeline(pipeline, feeds, b.streams, b.warmup); !st.is_ok())
      return fail(st);
  }
  feed.clear_times();

  struct InFlight {
    double submitted;
    std::future<Result<Outputs>> result;
  };
  std::deque<InFlight> pending;
  std::vector<double> lat_ms;
  const double start = now_seconds();
  Status failed = Status::ok();
  while (failed.is_ok() && (lat_ms.size() < 3 || now_seconds() - start < b.duration)) {
    while (failed.is_ok() && pending.size() < inflight) {
      DecodeFeed::Batch next = feed.next();
      if (!next.pixels.is_ok()) {
        failed = next.pixels.status();
        break;
      }
      // A batch decoded ahead of the timed phase counts from its start.
      pending.push_back(
          {std::max(next.started, start), pipeline.submit({{in.name, std::move(*next.pixels)}})});
    }
    if (pending.empty()) break;
    auto r = pending.front().result.get();
    lat_ms.push_back((now_seconds() - pending.front().submitted) * 1e3);
    pending.pop_front();
    if (!r.is_ok()) failed = r.status();
  }
  const double total = now_seconds() - start;
  for (auto& p : pending) (void)p.result.get();
  if (!failed.is_ok()) return fail(failed);

  std::sort(lat_ms.begin(), lat_ms.end());
  std::vector<double> dec = feed.decode_ms();
  std::sort(dec.begin(), dec.end());
  const double ips = static_cast<double>(batch) * lat_ms.size() / total;
  const double dec_med = percentile(dec, 50);
  const std::string jpeg_decoder = first_decoder->jpeg_decoder();
  const std::string name = std::filesystem::path(model).filename().string();
  std::printf("%-24s %-6s %5s %-22s %6s %9s %9s %9s %12s\n", "model", "device", "batch", "mode",
              "runs", "median ms", "p90 ms", "p99 ms", "images/s");
  const std::string mode = "images, " + std::to_string(b.streams) + " streams";
  std::printf("%-24s %-6s %5lld %-22s %6zu %9.4g %9.4g %9.4g %12.1f\n", name.c_str(),
              g.device_name(), static_cast<long long>(batch), mode.c_str(), lat_ms.size(),
              percentile(lat_ms, 50), percentile(lat_ms, 90), percentile(lat_ms, 99), ips);
  std::printf(
      "%zu image files (%s, mean %.1f KB); decode (%s%s) and %s to %dx%dx%d, %d host threads, "
      "%d decoders: "
      "%.3f ms per batch (median of %zu), %.1f images/s alone; latency from decode start to "
      "result\n",
      files.size(), source.c_str(), file_bytes / 1024.0 / static_cast<double>(files.size()),
      decoder == "host" ? "host, " : "gpu, ", jpeg_decoder.c_str(),
      b.letterbox ? "letterbox" : "resize", io.height, io.width, io.channels, io.threads * decoders,
      decoders, dec_med, dec.size(), dec_med > 0 ? decoders * batch * 1e3 / dec_med : 0.0);
  if (const size_t bad = feed.failed_files())
    std::printf("%zu of the %zu files failed to decode (named above)\n", bad, files.size());
  return kExitOk;
}

}  // namespace kiln::cli
