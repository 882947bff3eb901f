// ImageDecoder's GPU batches (image/image_internal.h): JPEGs decoded by nvJPEG's batched
// decoder into GPU scratch memory; PNGs, JPEGs nvJPEG is not given (truncated, unusual
// components) or fails on, and every image when nvJPEG is missing or measures slower than the
// host threads, decoded on the host threads and copied up; then one kernel resizes them all
// into the batch (resize_images.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/image/nvjpeg.h"
#include "backends/cuda/image/resize_images.h"
#include "image/image_internal.h"

namespace kiln {

namespace {

constexpr size_t kAlign = 256;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// GPU memory that grows to the largest request and is kept.
struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  Status reserve(size_t n) {
    if (n <= bytes) return Status::ok();
    if (p) KILN_CUDA(cudaFree(p));
    p = nullptr;
    bytes = 0;
    KILN_CUDA(cudaMalloc(&p, n));
    bytes = n;
    return Status::ok();
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

// A batch's pixels are freed in stream order, after the work that read them (the caller's
// runs finish before the tensor goes).
void free_async(void* p) { cudaFreeAsync(p, cudaStreamPerThread); }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One image of a batch: whether nvJPEG decodes it, and where its decoded pixels lie.
struct Source {
  bool gpu = false;
  int w = 0, h = 0;
  size_t offset = 0, pitch = 0;
  Image host;  // decoded on the host
};

class CudaImageDecoder final : public GpuImageDecoder {
 public:
  explicit CudaImageDecoder(const ImageBatchOptions& o) : o_(o) {}
  ~CudaImageDecoder() override {
    if (!stream_) return;  // init() stopped before choosing the (valid) GPU: nothing made
    cudaSetDevice(o_.device_index);
    if (nv_) {
      if (batched_) nv_->state_destroy(batched_);
      if (single_) nv_->state_destroy(single_);
      if (hw_handle_) nv_->destroy(hw_handle_);
      if (handle_) nv_->destroy(handle_);
    }
    if (slots_host_) cudaFreeHost(slots_host_);
    cudaStreamDestroy(stream_);
  }

  Status init() {
    int count = 0;
    KILN_CUDA(cudaGetDeviceCount(&count));
    if (o_.device_index < 0 || o_.device_index >= count)
      return invalid_argument("ImageDecoder: no GPU " + std::to_string(o_.device_index) +
                              " (this machine has " + std::to_string(count) + ")");
    KILN_CUDA(cudaSetDevice(o_.device_index));
    KILN_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (o_.jpeg == JpegDecoder::kLibjpegTurbo) return Status::ok();
    auto api = nvjpeg::load();
    if (!api.is_ok()) {
      if (o_.jpeg == JpegDecoder::kNvjpeg) return api.status().with_context("ImageDecoder");
      return Status::ok();  // kAuto: libjpeg-turbo
    }
    const nvjpeg::Api* a = *api;
    choice_ = o_.jpeg == JpegDecoder::kNvjpeg ? Choice::kNvjpeg : Choice::kMeasure;
    if (nvjpeg::Status_t s = a->create_simple(&handle_); s != 0)
      return internal_error("ImageDecoder: nvjpegCreateSimple: " + nvjpeg::status_text(s));
    nv_ = a;  // from here the destructor releases what was created
    // Batches go to the GPU's JPEG decode engines where it has them (A100, H100, H200...);
    // else to the default backend, whose batched decode does the Huffman decoding on the
    // calling thread. Single images (the fallback) always take the default backend.
    if (a->create_ex(nvjpeg::kBackendHardware, nullptr, nullptr, 0, &hw_handle_) != 0)
      hw_handle_ = nullptr;
    if (nvjpeg::Status_t s = a->state_create(batch_handle(), &batched_); s != 0)
      return internal_error("ImageDecoder: nvjpegJpegStateCreate: " + nvjpeg::status_text(s));
    if (nvjpeg::Status_t s = a->state_create(handle_, &single_); s != 0)
      return internal_error("ImageDecoder: nvjpegJpegStateCreate: " + nvjpeg::status_text(s));
    return Status::ok();
  }

  std::string jpeg_decoder() const override {
    const std::string nv = nv_ ? "nvJPEG " + nv_->version + (hw_handle_ ? " hardware" : " hybrid") +
                                     " (" + nv_->library + ")"
                               : "";
    const std::string host = "libjpeg-turbo, resized on the GPU";
    std::lock_guard<std::mutex> lock(described_mutex_);
    switch (choice_) {
      case Choice::kNvjpeg: return nv;
      case Choice::kHost: return host;
      case Choice::kSplit: {
        char now[280];
        std::snprintf(now, sizeof now,
                      " and libjpeg-turbo on the threads, JPEGs split by their measured speeds "
                      "(nvJPEG %.0f images/s; libjpeg-turbo %.2f ms an image, %d threads, "
                      "%.3f ms to copy it up): %.0f%% to the threads",
                      nv_rate_, 1e3 * host_image_s_, host_threads_, 1e3 * upload_image_s_,
                      100 * last_host_fraction_);
        return nv + now + measured_;
      }
      case Choice::kMeasure: break;
    }
    return nv +
           " with libjpeg-turbo on the threads, JPEGs split by the speeds measured on the "
           "first batch of JPEGs";
  }

  // kAuto with nvJPEG loaded: the first batch holding JPEGs is decoded each way, alone; from
  // then on every batch's JPEGs are split between nvJPEG and the host threads, which work at
  // once, in proportion to the speeds each part keeps measuring.
  Status decode(const std::vector<std::string_view>& images, ImageBatch& batch,
                ThreadPool& pool) override;

 private:
  enum class Choice : uint8_t { kHost, kNvjpeg, kMeasure, kSplit };
  struct Parts {  // what each part of a batch decoded, and how long it took
    int nv_images = 0, host_images = 0;
    double nv_s = 0;            // nvJPEG's part, until its GPU work ended
    double host_image_s = 0;    // one host image's decode and resize, on average
    double upload_image_s = 0;  // one host image's copy to the GPU, after both parts
  };
  // One batch: nvJPEG for the JPEGs it takes (with `nvjpeg`; with `split`, all but those
  // jpegs_for_threads gives the threads), the rest on the host threads, both parts at once.
  Status decode_with(const std::vector<std::string_view>& images, ImageBatch& batch,
                     ThreadPool& pool, bool nvjpeg, bool split, Parts* parts);
  // nvJPEG's part, on a pool thread, ended when the GPU is done; images it refuses go to
  // `refused`.
  Status decode_on_nvjpeg(const std::vector<std::string_view>& images,
                          const std::vector<int>& on_gpu, std::vector<Source>& src,
                          unsigned char* base, std::vector<int>& refused);

  // Whether nvJPEG is given image `bytes`; its size when it is.
  bool for_nvjpeg(std::string_view bytes, int* w, int* h) const;

  nvjpeg::Handle batch_handle() const { return hw_handle_ ? hw_handle_ : handle_; }

  ImageBatchOptions o_;
  const nvjpeg::Api* nv_ = nullptr;     // null: libjpeg-turbo for every image
  nvjpeg::Handle handle_ = nullptr;     // the default backend: image info, single images
  nvjpeg::Handle hw_handle_ = nullptr;  // the hardware backend, where the GPU has one
  nvjpeg::JpegState batched_ = nullptr, single_ = nullptr;
  int batched_size_ = 0;  // the batch nvjpegDecodeBatchedInitialize was last given
  cudaStream_t stream_ = nullptr;
  // Written under described_mutex_ (jpeg_decoder() reads it from any thread); decode() is
  // called from one thread at a time.
  Choice choice_ = Choice::kHost;  // kHost until init() loads nvJPEG
  mutable std::mutex described_mutex_;
  std::string measured_;  // what the first measurement found, for jpeg_decoder()
  // kSplit's measurements: nvJPEG's images/s, one image's time on a host thread.
  double nv_rate_ = 1, host_image_s_ = 1e30, upload_image_s_ = 0;
  int host_threads_ = 1;           // the threads beside nvJPEG's
  double last_host_fraction_ = 0;  // of the last batch's JPEGs, to the threads
  DeviceBuffer decoded_;           // nvJPEG's output
  DeviceBuffer host_decoded_;      // the images decoded on the host threads, copied up
  DeviceBuffer slots_;
  GpuImageSlot* slots_host_ = nullptr;  // pinned
  size_t slots_cap_ = 0;
};

bool CudaImageDecoder::for_nvjpeg(std::string_view bytes, int* w, int* h) const {
  if (!nv_ || sniff_image(bytes) != ImageFormat::kJpeg ||
      bytes.size() > static_cast<size_t>(o_.max_image_bytes) || !jpeg_has_end_marker(bytes))
    return false;
  int components = 0;
  nvjpeg::ChromaSubsampling css = nvjpeg::kCssUnknown;
  int widths[nvjpeg::kMaxComponent] = {}, heights[nvjpeg::kMaxComponent] = {};
  if (nv_->get_image_info(handle_, reinterpret_cast<const unsigned char*>(bytes.data()),
                          bytes.size(), &components, &css, widths, heights) != 0)
    return false;
  if ((components != 1 && components != 3) || css == nvjpeg::kCssUnknown || widths[0] <= 0 ||
      heights[0] <= 0 || int64_t{widths[0]} * heights[0] > o_.max_pixels)
    return false;
  *w = widths[0];
  *h = heights[0];
  return true;
}

Status CudaImageDecoder::decode(const std::vector<std::string_view>& images, ImageBatch& batch,
                                ThreadPool& pool) {
  KILN_CUDA(cudaSetDevice(o_.device_index));
  switch (choice_) {
    case Choice::kHost: return decode_with(images, batch, pool, false, false, nullptr);
    case Choice::kNvjpeg: return decode_with(images, batch, pool, true, false, nullptr);
    case Choice::kSplit: {
      Parts p;
      KILN_RETURN_IF_ERROR(decode_with(images, batch, pool, true, true, &p));
      // Each part's speed, smoothed; a part given nothing keeps its last figure.
      std::lock_guard<std::mutex> lock(described_mutex_);
      if (p.nv_images && p.nv_s > 0) nv_rate_ = 0.75 * nv_rate_ + 0.25 * p.nv_images / p.nv_s;
      if (p.host_images) {
        host_image_s_ = 0.75 * host_image_s_ + 0.25 * p.host_image_s;
        upload_image_s_ = 0.75 * upload_image_s_ + 0.25 * p.upload_image_s;
      }
      return Status::ok();
    }
    case Choice::kMeasure: break;
  }
  int jpegs = 0, w = 0, h = 0;
  for (std::string_view im : images) jpegs += for_nvjpeg(im, &w, &h) ? 1 : 0;
  if (jpegs == 0) return decode_with(images, batch, pool, false, false, nullptr);  // none to time

  // Each way twice, the first of each paying its one-time costs (nvJPEG's state, buffers, the
  // threads' decompressors); the batch the faster way made is the one returned.
  ImageBatch by_nv[2] = {batch, batch}, by_host[2] = {batch, batch};
  double nv_s = 1e30, host_s = 1e30;
  Parts host_parts;
  for (int round = 0; round < 2; ++round) {
    double t = now_s();
    KILN_RETURN_IF_ERROR(decode_with(images, by_nv[round], pool, true, false, nullptr));
    nv_s = std::min(nv_s, now_s() - t);
    t = now_s();
    KILN_RETURN_IF_ERROR(decode_with(images, by_host[round], pool, false, false, &host_parts));
    host_s = std::min(host_s, now_s() - t);
  }
  batch = std::move(nv_s <= host_s ? by_nv[1] : by_host[1]);
  char first[160];
  std::snprintf(first, sizeof first,
                "; first batch, each alone: nvJPEG %.3g ms, libjpeg-turbo %.3g ms for %d JPEGs",
                1e3 * nv_s, 1e3 * host_s, jpegs);
  std::lock_guard<std::mutex> lock(described_mutex_);
  measured_ = first;
  nv_rate_ = jpegs / nv_s;
  host_image_s_ = host_parts.host_image_s;  // the second round's
  upload_image_s_ = host_parts.upload_image_s;
  choice_ = Choice::kSplit;
  return Status::ok();
}

Status CudaImageDecoder::decode_on_nvjpeg(const std::vector<std::string_view>& images,
                                          const std::vector<int>& on_gpu, std::vector<Source>& src,
                                          unsigned char* base, std::vector<int>& refused) {
  KILN_CUDA(cudaSetDevice(o_.device_index));  // a pool thread
  const int m = static_cast<int>(on_gpu.size());
  std::vector<const unsigned char*> data(m);
  std::vector<size_t> lengths(m);
  std::vector<nvjpeg::Image> dst(m);
  for (int k = 0; k < m; ++k) {
    const Source& s = src[on_gpu[k]];
    data[k] = reinterpret_cast<const unsigned char*>(images[on_gpu[k]].data());
    lengths[k] = images[on_gpu[k]].size();
    dst[k] = nvjpeg::Image{};
    dst[k].channel[0] = base + s.offset;
    dst[k].pitch[0] = s.pitch;
  }
  nvjpeg::Status_t s = 0;
  if (batched_size_ != m) {
    s = nv_->batched_initialize(batch_handle(), batched_, m, 1, nvjpeg::kOutputRgbi);
    batched_size_ = s == 0 ? m : 0;
  }
  if (s == 0)
    s = nv_->decode_batched(batch_handle(), batched_, data.data(), lengths.data(), dst.data(),
                            stream_);
  if (s != 0) {
    // One bad image fails the whole batched call: decode them one by one, and give those
    // nvJPEG still refuses to the host decoder (whose error names what is wrong).
    batched_size_ = 0;
    for (int k = 0; k < m; ++k)
      if (nv_->decode(handle_, single_, data[k], lengths[k], nvjpeg::kOutputRgbi, &dst[k],
                      stream_) != 0) {
        src[on_gpu[k]].gpu = false;
        refused.push_back(on_gpu[k]);
      }
  }
  KILN_CUDA(cudaStreamSynchronize(stream_));  // the part's time includes the GPU's
  return Status::ok();
}

Status CudaImageDecoder::decode_with(const std::vector<std::string_view>& images, ImageBatch& batch,
                                     ThreadPool& pool, bool nvjpeg, bool split, Parts* parts) {
  const int n = static_cast<int>(images.size());
  const int H = o_.height, W = o_.width, C = o_.channels;
  void* out = nullptr;
  const size_t out_bytes = static_cast<size_t>(n) * H * W * C;
  KILN_CUDA(cudaMallocAsync(&out, out_bytes, stream_));
  batch.pixels = Tensor::on_gpu(out, DataType::kUInt8, {n, H, W, C}, o_.device_index, free_async);

  // Which images nvJPEG decodes, and where: nvJPEG's output in decoded_, the host-decoded
  // images in host_decoded_.
  std::vector<Source> src(images.size());
  std::vector<int> jpegs, on_gpu, on_host;
  for (int i = 0; i < n && nvjpeg; ++i)
    if (for_nvjpeg(images[i], &src[i].w, &src[i].h)) jpegs.push_back(i);
  size_t to_host = 0;
  if (split && !jpegs.empty() && pool.workers() > 0) {
    // The threads beside the one waiting on nvJPEG (the pool's workers and the caller; with
    // no worker the caller would run both parts in turn: nothing to split).
    std::lock_guard<std::mutex> lock(described_mutex_);
    host_threads_ = std::max(1, pool.workers());
    to_host = static_cast<size_t>(jpegs_for_threads(static_cast<int>(jpegs.size()), nv_rate_,
                                                    host_image_s_, host_threads_, upload_image_s_));
    last_host_fraction_ = static_cast<double>(to_host) / jpegs.size();
  }
  size_t total = 0;
  for (size_t k = 0; k + to_host < jpegs.size(); ++k) {
    Source& s = src[jpegs[k]];
    s.gpu = true;
    s.pitch = aligned(static_cast<size_t>(s.w) * 3);
    s.offset = total;
    total += s.pitch * s.h;
    on_gpu.push_back(jpegs[k]);
  }
  for (int i = 0; i < n; ++i)
    if (!src[i].gpu) on_host.push_back(i);
  KILN_RETURN_IF_ERROR(decoded_.reserve(std::max<size_t>(total, 1)));
  auto* base = static_cast<unsigned char*>(decoded_.p);

  // nvJPEG's part (task 0, while there is one) and the host's images (the other tasks) at once.
  auto host_image = [&](int i) {
    Result<Image> im = decode_for_batch(images[i], static_cast<size_t>(i), o_);
    if (im.is_ok())
      src[i].host = std::move(*im);
    else
      batch.status[i] = im.status();
  };
  const size_t nv_tasks = on_gpu.empty() ? 0 : 1;
  std::vector<int> refused;
  Status nv_status = Status::ok();
  std::vector<double> took(on_host.size() + nv_tasks);
  auto task = [&](size_t k) {
    const double t = now_s();
    if (k < nv_tasks)
      nv_status = decode_on_nvjpeg(images, on_gpu, src, base, refused);
    else
      host_image(on_host[k - nv_tasks]);
    took[k] = now_s() - t;
  };
  pool.parallel_for(took.size(), task);
  KILN_RETURN_IF_ERROR(nv_status);
  if (parts) {
    parts->nv_images = static_cast<int>(on_gpu.size() - refused.size());
    parts->nv_s = nv_tasks ? took[0] : 0;
    parts->host_images = static_cast<int>(on_host.size());
    double sum = 0;
    for (size_t k = nv_tasks; k < took.size(); ++k) sum += took[k];
    parts->host_image_s = on_host.empty() ? 0 : sum / static_cast<double>(on_host.size());
  }
  // Images nvJPEG refused after all (rare): the host's decoder names what is wrong.
  auto refused_one = [&](size_t k) { host_image(refused[k]); };
  pool.parallel_for(refused.size(), refused_one);
  on_host.insert(on_host.end(), refused.begin(), refused.end());

  size_t host_total = 0;
  for (int i : on_host)
    if (batch.status[i].is_ok()) {
      Source& s = src[i];
      s.w = s.host.width;
      s.h = s.host.height;
      s.pitch = static_cast<size_t>(s.w) * 3;
      s.offset = host_total;
      host_total += aligned(s.pitch * s.h);
    }
  // The previous batch's copies out of host_decoded_ and its slot table are done (every
  // decode ends synchronized, but one that failed midway may not have).
  KILN_CUDA(cudaStreamSynchronize(stream_));
  KILN_RETURN_IF_ERROR(host_decoded_.reserve(std::max<size_t>(host_total, 1)));
  auto* host_base = static_cast<unsigned char*>(host_decoded_.p);
  const double upload_start = now_s();
  int uploaded = 0;
  for (int i : on_host)
    if (batch.status[i].is_ok()) {
      KILN_CUDA(cudaMemcpyAsync(host_base + src[i].offset, src[i].host.pixels.data(),
                                src[i].host.pixels.size(), cudaMemcpyHostToDevice, stream_));
      ++uploaded;
    }
  if (parts && uploaded) {
    // From pageable memory the copies are staged on this thread: done (or nearly) on return.
    KILN_CUDA(cudaStreamSynchronize(stream_));
    parts->upload_image_s = (now_s() - upload_start) / uploaded;
  }

  // The slot table, then one kernel for the batch.
  if (slots_cap_ < images.size()) {
    if (slots_host_) KILN_CUDA(cudaFreeHost(slots_host_));
    slots_host_ = nullptr;
    slots_cap_ = 0;
    KILN_CUDA(cudaMallocHost(reinterpret_cast<void**>(&slots_host_),
                             images.size() * sizeof(GpuImageSlot)));
    slots_cap_ = images.size();
  }
  KILN_RETURN_IF_ERROR(slots_.reserve(images.size() * sizeof(GpuImageSlot)));
  for (int i = 0; i < n; ++i) {
    GpuImageSlot& slot = slots_host_[i];
    slot = GpuImageSlot{};
    if (!batch.status[i].is_ok()) continue;
    const Source& s = src[i];
    // The size in the file: nvJPEG decodes at full size, the host at a DCT scale.
    const int file_w = s.gpu ? s.w : s.host.source_width;
    const int file_h = s.gpu ? s.h : s.host.source_height;
    const ImageRegion r = place_image(file_w, file_h, o_.resize, H, W);
    batch.placement[i] = r.placement;
    slot.src = (s.gpu ? base : host_base) + s.offset;
    slot.pitch = static_cast<int64_t>(s.pitch);
    slot.w = s.w;
    slot.h = s.h;
    slot.dw = r.dw;
    slot.dh = r.dh;
    slot.pad_x = r.placement.pad_x;
    slot.pad_y = r.placement.pad_y;
  }
  auto* slots = static_cast<GpuImageSlot*>(slots_.p);
  KILN_CUDA(cudaMemcpyAsync(slots, slots_host_, n * sizeof(GpuImageSlot), cudaMemcpyHostToDevice,
                            stream_));
  KILN_RETURN_IF_ERROR(
      launch_resize_images(slots, n, static_cast<uint8_t*>(out), H, W, C, o_.fill, stream_));
  KILN_CUDA(cudaStreamSynchronize(stream_));
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<GpuImageDecoder>> make_gpu_image_decoder(const ImageBatchOptions& o) {
  auto d = std::make_unique<CudaImageDecoder>(o);
  KILN_RETURN_IF_ERROR(d->init());
  return std::unique_ptr<GpuImageDecoder>(std::move(d));
}

}  // namespace kiln
