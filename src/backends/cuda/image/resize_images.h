// A batch of decoded RGB images in GPU memory resized into one uint8 NHWC batch (the GPU side
// of kiln::ImageDecoder): the same bilinear, half-pixel-centre sampling as kiln::resize_into.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/status.h"

namespace kiln {

// One image and where it goes in its slot.
struct GpuImageSlot {
  const uint8_t* src = nullptr;  // RGB interleaved in GPU memory; null: the slot is all fill
  int64_t pitch = 0;             // bytes per source row
  int w = 0, h = 0;              // the source's size
  int dw = 0, dh = 0;            // the region it is resized to
  int pad_x = 0, pad_y = 0;      // the region's top left corner in the slot
};

// Writes out[n][H][W][C] (C 1: luminance, or 3) from `slots` (n of them, in GPU memory), pixels
// outside each region `fill`.
Status launch_resize_images(const GpuImageSlot* slots, int n, uint8_t* out, int H, int W, int C,
                            uint8_t fill, cudaStream_t stream);

}  // namespace kiln
