// ImageDecoder (kiln/images.h): a batch of encoded images decoded and resized on a thread pool,
// each image into its own slot of one uint8 NHWC tensor.
#include <algorithm>
#include <cmath>
#include <thread>

#include "core/thread_pool.h"
#include "image/image_internal.h"
#include "kiln/engine.h"
#include "kiln/images.h"

namespace kiln {

struct ImageDecoder::Impl {
  ImageBatchOptions options;
  ThreadPool pool;
  std::unique_ptr<GpuImageDecoder> gpu;  // device kCuda
  // Pinned batches (options.pinned), reused once every batch made from them is gone: pinning
  // memory costs far more than decoding into it, and freeing it synchronizes the GPU.
  std::vector<Tensor> pinned_batches;
  explicit Impl(const ImageBatchOptions& o, int workers) : options(o), pool(workers) {}

  Result<Tensor> batch_tensor(const Shape& shape) {
    if (!options.pinned) return Tensor(DataType::kUInt8, shape);
    for (const Tensor& t : pinned_batches)
      if (t.shape() == shape && t.use_count() == 1) return t;
    KILN_ASSIGN_OR_RETURN(Tensor t, pinned_tensor(DataType::kUInt8, shape));
    constexpr size_t kKept = 16;  // beyond this many in use at once, batches are not kept
    if (pinned_batches.size() < kKept) pinned_batches.push_back(t);
    return t;
  }
};

#ifndef KILN_HAVE_CUDA
Result<std::unique_ptr<GpuImageDecoder>> make_gpu_image_decoder(const ImageBatchOptions&) {
  return unsupported("ImageDecoder: this kiln was built without CUDA: no GPU batches");
}
#endif

int jpegs_for_threads(int m, double nv_per_s, double host_image_s, int threads,
                      double upload_image_s) {
  if (m <= 0 || threads <= 0 || !(nv_per_s > 0) || !(host_image_s > 0) || !(upload_image_s >= 0))
    return 0;
  int best = 0;
  double best_s = m / nv_per_s;
  for (int h = 1; h <= m; ++h) {
    const double s = std::max((m - h) / nv_per_s, std::ceil(double(h) / threads) * host_image_s) +
                     h * upload_image_s;
    if (s < best_s) {
      best_s = s;
      best = h;
    }
  }
  return best;
}

int ImageBatch::failed() const {
  int n = 0;
  for (const Status& s : status) n += s.is_ok() ? 0 : 1;
  return n;
}

Result<std::unique_ptr<ImageDecoder>> ImageDecoder::create(const ImageBatchOptions& o) {
  if (o.height < 1 || o.width < 1 || o.height > 16384 || o.width > 16384)
    return invalid_argument("ImageDecoder: height and width must be 1 to 16384, not " +
                            std::to_string(o.height) + "x" + std::to_string(o.width));
  if (o.channels != 1 && o.channels != 3)
    return invalid_argument("ImageDecoder: channels must be 1 or 3, not " +
                            std::to_string(o.channels));
  if (o.threads < 0 || o.threads > 1024)
    return invalid_argument("ImageDecoder: threads must be 0 to 1024, not " +
                            std::to_string(o.threads));
  if (o.max_image_bytes < 1 || o.max_pixels < 1)
    return invalid_argument("ImageDecoder: max_image_bytes and max_pixels must be positive");
  if (o.device == Device::kCuda && o.pinned)
    return invalid_argument("ImageDecoder: a batch on the GPU is not in pinned host memory");
  const unsigned cores = std::thread::hardware_concurrency();
  const int threads = o.threads ? o.threads : static_cast<int>(cores ? cores : 1);
  auto impl = std::make_unique<Impl>(o, threads - 1);  // the caller decodes too
  if (o.device == Device::kCuda) {
    KILN_ASSIGN_OR_RETURN(impl->gpu, make_gpu_image_decoder(o));
  }
  return std::unique_ptr<ImageDecoder>(new ImageDecoder(std::move(impl)));
}

std::string ImageDecoder::jpeg_decoder() const {
  return impl_->gpu ? impl_->gpu->jpeg_decoder() : "libjpeg-turbo";
}

ImageDecoder::ImageDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ImageDecoder::~ImageDecoder() = default;
const ImageBatchOptions& ImageDecoder::options() const { return impl_->options; }

Result<ImageBatch> ImageDecoder::decode(const std::vector<std::string_view>& images) {
  const ImageBatchOptions& o = impl_->options;
  if (images.empty()) return invalid_argument("ImageDecoder: no image to decode");
  const int64_t n = static_cast<int64_t>(images.size());
  const Shape shape{n, o.height, o.width, o.channels};
  ImageBatch batch;
  batch.status.assign(images.size(), Status::ok());
  batch.placement.assign(images.size(), ImagePlacement{});
  if (impl_->gpu) {
    KILN_RETURN_IF_ERROR(impl_->gpu->decode(images, batch, impl_->pool));
    return batch;
  }
  KILN_ASSIGN_OR_RETURN(batch.pixels, impl_->batch_tensor(shape));
  const int64_t row = int64_t{o.width} * o.channels, slot = row * o.height;
  uint8_t* base = batch.pixels.data<uint8_t>();
  auto one = [&](size_t i) {
    uint8_t* out = base + static_cast<int64_t>(i) * slot;
    Result<Image> im = decode_for_batch(images[i], i, o);
    if (!im.is_ok()) {
      std::fill(out, out + slot, o.fill);
      batch.status[i] = im.status();
      return;
    }
    batch.placement[i] =
        resize_into(*im, o.resize, o.height, o.width, o.channels, o.fill, out, row);
  };
  impl_->pool.parallel_for(images.size(), one);
  return batch;
}

}  // namespace kiln
