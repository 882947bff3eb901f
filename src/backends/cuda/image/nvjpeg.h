// nvJPEG, opened at run time (dlopen): the library ships with the CUDA toolkit and drivers'
// machines, not with every build machine, and kiln must start without it. The toolkit here has
// no nvjpeg.h, so the few documented entry points used are declared below (nvJPEG API
// reference: nvjpegCreateSimple, nvjpegJpegStateCreate, nvjpegGetImageInfo, nvjpegDecode,
// nvjpegDecodeBatchedInitialize, nvjpegDecodeBatched, and their destroyers).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "kiln/status.h"

namespace kiln::nvjpeg {

using Status_t = int;  // nvjpegStatus_t; NVJPEG_STATUS_SUCCESS is 0
using Handle = struct nvjpegHandle*;
using JpegState = struct nvjpegJpegState*;
using ChromaSubsampling = int;  // nvjpegChromaSubsampling_t; NVJPEG_CSS_UNKNOWN is -1
constexpr int kMaxComponent = 4;
constexpr int kOutputRgbi = 5;  // NVJPEG_OUTPUT_RGBI: one interleaved RGB plane
constexpr ChromaSubsampling kCssUnknown = -1;
constexpr int kBackendHardware = 3;  // NVJPEG_BACKEND_HARDWARE: the GPU's JPEG decode engines

struct Image {  // nvjpegImage_t
  unsigned char* channel[kMaxComponent];
  size_t pitch[kMaxComponent];
};

struct Api {
  Status_t (*create_simple)(Handle*) = nullptr;
  // nvjpegCreateEx(backend, device allocator, pinned allocator, flags, handle).
  Status_t (*create_ex)(int backend, void*, void*, unsigned flags, Handle*) = nullptr;
  Status_t (*destroy)(Handle) = nullptr;
  Status_t (*state_create)(Handle, JpegState*) = nullptr;
  Status_t (*state_destroy)(JpegState) = nullptr;
  Status_t (*get_image_info)(Handle, const unsigned char*, size_t, int* components,
                             ChromaSubsampling*, int* widths, int* heights) = nullptr;
  Status_t (*decode)(Handle, JpegState, const unsigned char*, size_t, int output_format, Image*,
                     cudaStream_t) = nullptr;
  Status_t (*batched_initialize)(Handle, JpegState, int batch, int max_cpu_threads,
                                 int output_format) = nullptr;
  Status_t (*decode_batched)(Handle, JpegState, const unsigned char* const* data,
                             const size_t* lengths, Image* destinations, cudaStream_t) = nullptr;
  Status_t (*get_property)(int type, int* value) = nullptr;  // nvjpegGetProperty
  std::string library;                                       // the file dlopen found
  std::string version;                                       // "13.0.1"
};

// The library (libnvjpeg.so.13, .so.12 or .so), loaded once per process and never unloaded;
// an error says which files were tried and why they failed.
Result<const Api*> load();

// "nvJPEG status 3 (bad JPEG)".
std::string status_text(Status_t s);

}  // namespace kiln::nvjpeg
