// What the image decoders share inside the library (kiln/images.h is the public side).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "kiln/images.h"

namespace kiln {

// Whether a JPEG ends with its EOI marker (FF D9), trailing zero padding aside. A file cut
// short does not; decoders only warn about it and fill the rest of the image with grey.
bool jpeg_has_end_marker(std::string_view bytes);

// One image of a batch decoded on the host per `o` (its byte and pixel limits, at the DCT
// scale its slot needs); errors name "image <index>".
Result<Image> decode_for_batch(std::string_view bytes, size_t index, const ImageBatchOptions& o);

// Where an image of src_w × src_h (its size in the file) goes in a height × width slot per
// `mode`, as resize_into places it: the region of dw × dh pixels at the placement's padding.
struct ImageRegion {
  ImagePlacement placement;
  int dw = 0, dh = 0;
};
ImageRegion place_image(int src_w, int src_h, ResizeMode mode, int height, int width);

// How many of a batch's m JPEGs to give the host's `threads` threads, the rest going to nvJPEG
// at the same time: the split that ends the batch soonest, nvJPEG taking (m - h) / nv_per_s
// seconds and the threads ceil(h / threads) images each of host_image_s, then the host images
// copied to the GPU after both, upload_image_s each. Whole images count: one image on a host
// thread can outlast nvJPEG's whole batch. 0 when nothing is measured.
int jpegs_for_threads(int m, double nv_per_s, double host_image_s, int threads,
                      double upload_image_s = 0);

// A batch made on a GPU (ImageBatchOptions::device kCuda): backends/cuda/image.
class GpuImageDecoder {
 public:
  virtual ~GpuImageDecoder() = default;
  // Fills `batch` (its pixels a GPU tensor of the batch's shape, its status and placement
  // sized), using `pool` for the images decoded on the host. Returns once the pixels are
  // written.
  virtual Status decode(const std::vector<std::string_view>& images, ImageBatch& batch,
                        ThreadPool& pool) = 0;
  virtual std::string jpeg_decoder() const = 0;
};
Result<std::unique_ptr<GpuImageDecoder>> make_gpu_image_decoder(const ImageBatchOptions& o);

}  // namespace kiln
