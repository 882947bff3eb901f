// Encoded images (JPEG, PNG) → 8-bit pixels, one image or a whole batch.
//
//   auto decoder = kiln::ImageDecoder::create({.height = 224, .width = 224});
//   auto batch = (*decoder)->decode({jpeg0, jpeg1, ...});   // std::string_view each
//   // batch->pixels: uint8 [n, 224, 224, 3], what an engine built with
//   // InputFormat::kUint8Nhwc takes; batch->status[i]: image i's error, if any.
//
// A batch is decoded on a pool of threads, one image per task. JPEGs are decoded at the
// smallest of libjpeg-turbo's DCT scales (1/8 ... 1) that is still at least the size the image
// is resized to, then resized bilinearly (half-pixel centres) into the image's slot: the whole
// image stretched to height × width, or, with ResizeMode::kLetterbox, scaled to fit with its
// aspect ratio kept and centred on `fill`-valued padding (what detectors take). A corrupt,
// truncated, oversized or unknown image fails alone: its slot holds `fill` and its status the
// error, naming the image; the rest of the batch is decoded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// 8-bit interleaved RGB pixels (channels 3), rows top to bottom.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
  // The size stored in the file: larger than width × height when decoded at a DCT scale.
  int source_width = 0, source_height = 0;
};

enum class ImageFormat : uint8_t { kUnknown, kJpeg, kPng };
// The format `bytes` start like (the JPEG start marker, the PNG signature).
ImageFormat sniff_image(std::string_view bytes);
const char* image_format_name(ImageFormat f);  // "JPEG", "PNG", "unknown"

enum class ResizeMode : uint8_t {
  kStretch,    // the whole image to height × width, aspect ratio not kept
  kLetterbox,  // scaled to fit inside, aspect ratio kept, centred on padding
};

// Decodes a JPEG or PNG to RGB. With a min_width × min_height box, a JPEG may come back smaller
// than its full size: at the smallest DCT scale (1/8 ... 1) still large enough to be resized to
// that box per `fit` (kStretch: both sides at least the box's; kLetterbox: the side that
// touches the box). Errors name `what` and what is wrong: not an image, a bad or truncated
// file, more than max_pixels pixels.
Result<Image> decode_image(std::string_view bytes, const std::string& what, int min_width = 0,
                           int min_height = 0, ResizeMode fit = ResizeMode::kStretch,
                           int64_t max_pixels = int64_t{1} << 28);

// Who decodes JPEGs for a batch on a GPU (ImageBatchOptions::device kCuda).
enum class JpegDecoder : uint8_t {
  // nvJPEG where its library loads, and libjpeg-turbo on the threads at the same time: the
  // first batch holding JPEGs is decoded each way alone (twice each) to time them; from then
  // on each batch's JPEGs are split between the two in proportion to the speeds each part
  // keeps measuring (all to one where the other is far slower). jpeg_decoder() says the split.
  // Without nvJPEG, libjpeg-turbo.
  kAuto,
  kNvjpeg,        // nvJPEG (libnvjpeg, opened at run time); an error where it does not load
  kLibjpegTurbo,  // libjpeg-turbo on the threads, the pixels then copied to the GPU
};

struct ImageBatchOptions {
  int height = 224, width = 224;
  int channels = 3;  // 3: RGB; 1: luminance 0.299 R + 0.587 G + 0.114 B
  ResizeMode resize = ResizeMode::kStretch;
  uint8_t fill = 114;  // the padding of kLetterbox, and the slot of an image that failed
  int threads = 0;     // decoding threads (0: one per core)
  // The batch in pinned host memory (pinned_tensor), copied to a GPU by DMA. The decoder keeps
  // its pinned batches and reuses each once every copy of the batch made from it is gone.
  bool pinned = false;
  // kCuda: the batch is made in the memory of GPU `device_index` (Tensor::on_gpu), resized
  // there from JPEGs decoded per `jpeg` (and PNGs, or JPEGs nvJPEG cannot take, decoded on the
  // threads and copied up); a CUDA engine on that GPU takes it without a host copy.
  Device device = Device::kCpu;
  int device_index = 0;
  JpegDecoder jpeg = JpegDecoder::kAuto;
  int64_t max_image_bytes = int64_t{64} << 20;
  int64_t max_pixels = int64_t{1} << 28;  // of one decoded image, before it is resized
};

// Where an image landed in its slot: slot = image · scale + (pad_x, pad_y), for mapping boxes
// found on the slot back onto the image. With kStretch, scale_x and scale_y differ and the
// padding is 0.
struct ImagePlacement {
  int width = 0, height = 0;  // the image's size in its file (0 when it failed)
  double scale_x = 0, scale_y = 0;
  int pad_x = 0, pad_y = 0;
};

struct ImageBatch {
  Tensor pixels;  // uint8 [n, height, width, channels]
  std::vector<Status> status;
  std::vector<ImagePlacement> placement;
  int failed() const;
};

class ImageDecoder {
 public:
  static Result<std::unique_ptr<ImageDecoder>> create(const ImageBatchOptions& options);
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  // Decodes `images` into one batch. An error only for the batch as a whole (none given, the
  // memory); each image's own error is in ImageBatch::status. Call from one thread at a time.
  Result<ImageBatch> decode(const std::vector<std::string_view>& images);
  const ImageBatchOptions& options() const;
  // Who decodes the JPEGs: "libjpeg-turbo", or "nvJPEG <version>..." on a GPU (with kAuto,
  // the split of the JPEGs between nvJPEG and the threads, and the speeds measured).
  std::string jpeg_decoder() const;

 private:
  struct Impl;
  explicit ImageDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Encodes `image` (RGB, 4:2:0 chroma; or grey) as a JPEG of `quality` 1 to 100.
Result<std::string> encode_jpeg(const Image& image, int quality = 90);

// A synthetic photo-like RGB image: smooth colour fields, shapes with hard edges and fine
// texture; at 500×375 and quality 90 it encodes to ~60 KB, as a typical photo of that size
// does. The same seed gives the same image.
Image photo_like_image(int width, int height, uint32_t seed);

// Resizes `image` (RGB) bilinearly into `out`, a height × width × channels slot with rows of
// `row_stride` bytes, per `mode` (pixels outside the image get `fill`); returns the placement.
ImagePlacement resize_into(const Image& image, ResizeMode mode, int height, int width, int channels,
                           uint8_t fill, uint8_t* out, int64_t row_stride);

// A classifier's float input made from an image, as `kiln run` and `kiln serve` make it: the
// image resized whole (resize_into, kStretch) to height × width, RGB or luminance (1 channel),
// then (pixel / 255 − mean) / std per channel.
struct ImageNormalization {
  std::vector<float> mean, std;  // one value per channel
};
// The per-channel mean and std of an image input of `channels` channels: `mean`/`stdev` where
// given (one value for all, or one per channel), else the model's kiln.mean and kiln.std
// metadata (comma-separated numbers), else ImageNet's for 3 channels, else 0 and 1. Errors
// name `input`: metadata that is not a number list, a length that does not fit, a std not
// positive. (Also what an engine of 8-bit image input normalizes with.)
Result<ImageNormalization> image_normalization(const std::map<std::string, std::string>& metadata,
                                               int64_t channels,
                                               const std::vector<float>& mean = {},
                                               const std::vector<float>& stdev = {},
                                               const std::string& input = "the image input");
// Writes `image` as channels × height × width floats at `chw`, per `n` (from
// image_normalization).
void image_to_chw(const Image& image, int channels, int height, int width,
                  const ImageNormalization& n, float* chw);

// One class of a classifier's answer.
struct ClassProbability {
  int64_t index = 0;
  double probability = 0;
};
// The k best classes of row 0 of `output` ([N, classes] or [N, classes, 1, 1]), best first.
// The row is taken as probabilities where it already is one (every value in [0, 1], summing
// to 1 within 1e-3), else softmax'd; `softmax_applied` says which.
std::vector<ClassProbability> top_classes(const Tensor& output, int k,
                                          bool* softmax_applied = nullptr);

}  // namespace kiln
