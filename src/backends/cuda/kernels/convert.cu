// launch_convert (launch.h): the plan's conversions between a producer's and a consumer's
// dtype (float32, float16, bfloat16) and layout (plain <-> NHWC; also of int8 and uint8 codes).
//
// A layout change is a batch of matrix transposes: plain [N][C][HW] -> NHWC [N][HW][C] is
// N transposes of a C x HW matrix, the reverse N transposes of HW x C. Both run through
// shared memory so that reads and writes are coalesced. The model input (C = 3) gets its
// own narrow kernel: a 32 x 32 tile would leave 29 of its 32 rows empty.
#include <cuda_fp16.h>

#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/launch.h"

namespace kiln {

namespace {

using cuda::load_acc;
using cuda::store_as;

constexpr int kTile = 32;
constexpr int kTileRows = 8;      // a 32 x 8 block walks a 32 x 32 tile
constexpr int kNarrowMax = 16;    // rows of the narrow kernel, at most
constexpr int kNarrowCols = 256;  // columns per block of the narrow kernel

// dst[b][s][r] = src[b][r][s] for a batch of R x S matrices. blockIdx.x picks the column
// tile; blockIdx.y strides over (batch, row tile).
template <class Tin, class Tout>
__global__ void transpose_tiled(const Tin* __restrict__ src, Tout* __restrict__ dst,
                                int64_t batches, int64_t rows, int64_t cols, int64_t row_tiles) {
  __shared__ float tile[kTile][kTile + 1];  // +1: column reads hit 32 different banks
  const int64_t s0 = int64_t{blockIdx.x} * kTile;
  const int64_t matrix = rows * cols;
  for (int64_t by = blockIdx.y; by < batches * row_tiles; by += gridDim.y) {
    const int64_t b = by / row_tiles;
    const int64_t r0 = (by % row_tiles) * kTile;
    const Tin* sb = src + b * matrix;
    Tout* db = dst + b * matrix;
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, s = s0 + threadIdx.x;
      if (r < rows && s < cols) tile[j][threadIdx.x] = load_acc(sb[r * cols + s]);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t s = s0 + j, r = r0 + threadIdx.x;
      if (s < cols && r < rows) db[s * rows + r] = store_as<Tout>(tile[threadIdx.x][j]);
    }
    __syncthreads();
  }
}

// The same transpose for rows <= kNarrowMax (plain -> NHWC with few channels): a block
// reads kNarrowCols columns of every row (coalesced), keeps them in shared memory in the
// output's order, then writes rows x kNarrowCols contiguous output elements.
template <class Tin, class Tout>
__global__ void transpose_narrow(const Tin* __restrict__ src, Tout* __restrict__ dst,
                                 int64_t batches, int rows, int64_t cols, int64_t chunks) {
  // Stored as [column][row]: with an odd row count the stores hit distinct banks and the
  // loads are contiguous.
  __shared__ float buf[kNarrowCols * kNarrowMax];
  const int64_t matrix = rows * cols;
  for (int64_t blk = blockIdx.x; blk < batches * chunks; blk += gridDim.x) {
    const int64_t b = blk / chunks;
    const int64_t s0 = (blk % chunks) * kNarrowCols;
    const int n = static_cast<int>(cols - s0 < kNarrowCols ? cols - s0 : kNarrowCols);
    const Tin* sb = src + b * matrix + s0;
    if (threadIdx.x < n)
      for (int r = 0; r < rows; ++r)
        buf[threadIdx.x * rows + r] = load_acc(sb[r * cols + threadIdx.x]);
    __syncthreads();
    Tout* db = dst + b * matrix + s0 * rows;
    for (int k = threadIdx.x; k < n * rows; k += blockDim.x) db[k] = store_as<Tout>(buf[k]);
    __syncthreads();
  }
}

template <class Tin, class Tout>
Status transpose(const Tin* src, Tout* dst, int64_t batches, int64_t rows, int64_t cols,
                 cudaStream_t stream) {
  if (rows <= kNarrowMax) {
    const int64_t chunks = (cols + kNarrowCols - 1) / kNarrowCols;
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(batches * chunks, 1 << 20));
    transpose_narrow<Tin, Tout>
        <<<grid, kNarrowCols, 0, stream>>>(src, dst, batches, static_cast<int>(rows), cols, chunks);
    KILN_CUDA_LAUNCHED("transpose_narrow");
    return Status::ok();
  }
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  if (col_tiles > int64_t{1} << 31) return unsupported("transpose: too many columns");
  const dim3 grid(static_cast<unsigned>(col_tiles),
                  static_cast<unsigned>(std::min<int64_t>(batches * row_tiles, 65535)));
  transpose_tiled<Tin, Tout>
      <<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, dst, batches, rows, cols, row_tiles);
  KILN_CUDA_LAUNCHED("transpose_tiled");
  return Status::ok();
}

template <class Tin, class Tout>
struct ConvertOp {
  __device__ Tout operator()(Tin v) const { return store_as<Tout>(load_acc(v)); }
};

template <class Tin, class Tout>
Status convert_typed(const TensorRef& src, TensorRef& dst, cudaStream_t stream) {
  const Tin* s = static_cast<const Tin*>(src.data);
  Tout* d = static_cast<Tout*>(dst.data);
  if (src.desc.layout == dst.desc.layout)
    return cuda::launch_map(s, d, src.desc.numel(), ConvertOp<Tin, Tout>{}, stream, "convert");
  const Shape& sh = src.desc.shape;
  const int64_t n = sh[0], c = sh[1], hw = sh[2] * sh[3];
  if (src.desc.layout == Layout::kPlain) return transpose(s, d, n, c, hw, stream);  // -> NHWC
  return transpose(s, d, n, hw, c, stream);                                         // -> plain
}

std::string describe(const TensorDesc& d) {
  return std::string(dtype_name(d.dtype)) + " " + layout_name(d.layout) + " " + shape_str(d.shape);
}

}  // namespace

Status launch_convert(const TensorRef& src, TensorRef& dst, cudaStream_t stream) {
  const TensorDesc& a = src.desc;
  const TensorDesc& b = dst.desc;
  auto fail = [&](const std::string& why) {
    return unsupported("convert " + describe(a) + " -> " + describe(b) + ": " + why);
  };
  if (a.shape != b.shape) return fail("shapes differ");
  for (const TensorDesc* d : {&a, &b})
    if (d->layout == Layout::kNHWC && d->shape.size() != 4) return fail("NHWC needs rank 4");
  if (a.numel() == 0) return Status::ok();
  if (a.dtype == b.dtype && a.layout == b.layout) {
    KILN_CUDA(cudaMemcpyAsync(dst.data, src.data, a.nbytes(), cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  }
  if (a.dtype == b.dtype && (a.dtype == DataType::kInt8 || a.dtype == DataType::kUInt8 ||
                             a.dtype == DataType::kFloat8E4M3)) {
    // 8-bit codes (a QuantizeLinear's output keeps its input's layout): the layout changes,
    // byte for byte.
    return a.dtype == DataType::kInt8 ? convert_typed<int8_t, int8_t>(src, dst, stream)
                                      : convert_typed<uint8_t, uint8_t>(src, dst, stream);
  }
  if (!is_device_float(a.dtype) || !is_device_float(b.dtype))
    return fail("only float32/float16/bfloat16 convert or change layout");
  return cuda::dispatch_float(a.dtype, "convert", [&](auto from) -> Status {
    return cuda::dispatch_float(b.dtype, "convert", [&](auto to) -> Status {
      return convert_typed<decltype(from), decltype(to)>(src, dst, stream);
    });
  });
}

}  // namespace kiln
