// ImageDecoder (kiln/images.h): a batch of encoded images decoded and resized on a thread pool,
// each image into its own slot of one uint8 NHWC tensor.
#include <thread>

#include "core/thread_pool.h"
#include "kiln/engine.h"
#include "kiln/images.h"

namespace kiln {

struct ImageDecoder::Impl {
  ImageBatchOptions options;
  ThreadPool pool;
  explicit Impl(const ImageBatchOptions& o, int workers) : options(o), pool(workers) {}
};

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
  const unsigned cores = std::thread::hardware_concurrency();
  const int threads = o.threads ? o.threads : static_cast<int>(cores ? cores : 1);
  return std::unique_ptr<ImageDecoder>(
      new ImageDecoder(std::make_unique<Impl>(o, threads - 1)));  // the caller decodes too
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
  if (o.pinned) {
    KILN_ASSIGN_OR_RETURN(batch.pixels, pinned_tensor(DataType::kUInt8, shape));
  } else {
    batch.pixels = Tensor(DataType::kUInt8, shape);
  }
  batch.status.assign(images.size(), Status::ok());
  batch.placement.assign(images.size(), ImagePlacement{});
  const int64_t row = int64_t{o.width} * o.channels, slot = row * o.height;
  uint8_t* base = batch.pixels.data<uint8_t>();
  auto one = [&](size_t i) {
    uint8_t* out = base + static_cast<int64_t>(i) * slot;
    const std::string what = "image " + std::to_string(i);
    Result<Image> im =
        images[i].size() > static_cast<size_t>(o.max_image_bytes)
            ? Result<Image>(invalid_argument(what + ": " + std::to_string(images[i].size()) +
                                             " bytes, more than the " +
                                             std::to_string(o.max_image_bytes) + " allowed"))
            : decode_image(images[i], what, o.width, o.height, o.resize, o.max_pixels);
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
