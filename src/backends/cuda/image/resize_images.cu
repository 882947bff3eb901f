// launch_resize_images (resize_images.h): one thread per output pixel, one grid row per image.
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/image/resize_images.h"

namespace kiln {
namespace {

// The source coordinate pair and the weight of the second, as kiln::resize_into computes them
// (double coordinates, float weight), so both sides sample the same points.
__device__ void tap(int d, int src, int dst, int* i0, int* i1, float* w1) {
  const double ratio = static_cast<double>(src) / dst;
  double s = (d + 0.5) * ratio - 0.5;
  s = s < 0 ? 0 : (s > src - 1 ? src - 1 : s);
  const int i = static_cast<int>(s);
  *i0 = i;
  *i1 = i + 1 < src ? i + 1 : src - 1;
  *w1 = static_cast<float>(s - i);
}

__device__ uint8_t to_u8(float v) {
  v += 0.5f;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

__global__ void resize_images_kernel(const GpuImageSlot* __restrict__ slots,
                                     uint8_t* __restrict__ out, int H, int W, int C, uint8_t fill) {
  const int image = blockIdx.y;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= H * W) return;
  const int y = p / W, x = p % W;
  const GpuImageSlot s = slots[image];
  uint8_t* o = out + (static_cast<int64_t>(image) * H * W + p) * C;
  const int rx = x - s.pad_x, ry = y - s.pad_y;
  if (!s.src || rx < 0 || ry < 0 || rx >= s.dw || ry >= s.dh) {
    for (int c = 0; c < C; ++c) o[c] = fill;
    return;
  }
  int x0, x1, y0, y1;
  float fx, fy;
  tap(rx, s.w, s.dw, &x0, &x1, &fx);
  tap(ry, s.h, s.dh, &y0, &y1, &fy);
  const uint8_t* r0 = s.src + y0 * s.pitch;
  const uint8_t* r1 = s.src + y1 * s.pitch;
  float rgb[3];
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    const float a = r0[x0 * 3 + c], b = r0[x1 * 3 + c], d = r1[x0 * 3 + c], e = r1[x1 * 3 + c];
    const float top = __fadd_rn(a, __fmul_rn(fx, b - a));
    const float bottom = __fadd_rn(d, __fmul_rn(fx, e - d));
    rgb[c] = __fadd_rn(top, __fmul_rn(fy, bottom - top));
  }
  if (C == 3) {
    o[0] = to_u8(rgb[0]);
    o[1] = to_u8(rgb[1]);
    o[2] = to_u8(rgb[2]);
  } else {
    o[0] = to_u8(__fadd_rn(__fadd_rn(__fmul_rn(0.299f, rgb[0]), __fmul_rn(0.587f, rgb[1])),
                           __fmul_rn(0.114f, rgb[2])));
  }
}

}  // namespace

Status launch_resize_images(const GpuImageSlot* slots, int n, uint8_t* out, int H, int W, int C,
                            uint8_t fill, cudaStream_t stream) {
  if (n <= 0 || H <= 0 || W <= 0) return Status::ok();
  const int threads = 256;
  const dim3 grid((H * W + threads - 1) / threads, n);
  resize_images_kernel<<<grid, threads, 0, stream>>>(slots, out, H, W, C, fill);
  KILN_CUDA_LAUNCHED("resize_images");
  return Status::ok();
}

}  // namespace kiln
