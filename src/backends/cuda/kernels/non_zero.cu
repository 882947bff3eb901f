// NonZero: the multi-indices of X's nonzero elements as int64 [rank(X), n], column j the index
// of the j-th nonzero element in row-major order (src/ops/non_zero.cc); a scalar gives [0, n].
// Any element type of 1, 2, 4 or 8 bytes, rank up to 8, plain layout. n follows the data, so
// the kernel runs bounded only (BuildContext::bounded): its buffer holds the bound
// [rank, numel(X)], the kernel writes [rank, n] row-major at its start (element [d][j] at
// d·n + j) and n into the extent.
//
// An element is nonzero when a bit other than a float's sign bit is set: -0 is zero, NaN is
// not, as the reference's x != 0. Three launches on tiles of kTile elements, no host read:
//   count  one block per tile: the tile's nonzero count (workspace);
//   scan   CUB's exclusive sum over the tile counts: each tile's first output column;
//   write  one block per tile again: a block scan of the tile's flags gives each nonzero
//          element its column j; n (the last tile's offset plus its count) is read on the
//          device, the element's multi-index goes to out[d·n + j], and block 0 writes n into
//          the extent.
// The workspace is 16 bytes per tile plus CUB's scratch, whatever the tensor's size.

#include <cub/cub.cuh>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 8;  // per thread: a tile is kThreads·kItems elements
constexpr int64_t kTile = int64_t{kThreads} * kItems;
constexpr int kMaxRank = 8;

// X's dimensions, passed by value to the write kernel.
struct NonZeroDims {
  int64_t d[kMaxRank];
  int rank;
};

// Element bits as an unsigned integer of the element's size; nonzero when a bit of `mask` is.
template <class U>
__device__ __forceinline__ int nonzero_flag(U bits, U mask) {
  return (bits & mask) != 0 ? 1 : 0;
}

template <class U>
__global__ void non_zero_count_kernel(const U* __restrict__ x, int64_t numel, U mask,
                                      int64_t* __restrict__ tile_count) {
  using BlockReduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const int64_t base = int64_t{blockIdx.x} * kTile;
  int n = 0;
#pragma unroll
  for (int q = 0; q < kItems; ++q) {
    const int64_t i = base + q * kThreads + threadIdx.x;
    if (i < numel) n += nonzero_flag(x[i], mask);
  }
  n = BlockReduce(temp).Sum(n);
  if (threadIdx.x == 0) tile_count[blockIdx.x] = n;
}

template <class U>
__global__ void non_zero_write_kernel(const U* __restrict__ x, int64_t numel, U mask,
                                      NonZeroDims dims, const int64_t* __restrict__ tile_count,
                                      const int64_t* __restrict__ tile_offset, int64_t tiles,
                                      int64_t* __restrict__ y, int64_t* __restrict__ extent) {
  using BlockLoad = cub::BlockLoad<U, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using BlockScan = cub::BlockScan<int, kThreads>;
  __shared__ union {
    typename BlockLoad::TempStorage load;
    typename BlockScan::TempStorage scan;
  } temp;
  const int64_t base = int64_t{blockIdx.x} * kTile;
  // n, the row stride of the output: known on the device only.
  const int64_t n = tile_offset[tiles - 1] + tile_count[tiles - 1];
  if (blockIdx.x == 0 && threadIdx.x == 0) *extent = n;
  U v[kItems];  // blocked: thread t holds elements base + t·kItems + q
  const int valid = static_cast<int>(numel - base < kTile ? numel - base : kTile);
  BlockLoad(temp.load).Load(x + base, v, valid, U(0));
  __syncthreads();  // temp is reused by the scan
  int flag[kItems], pos[kItems];
#pragma unroll
  for (int q = 0; q < kItems; ++q) flag[q] = nonzero_flag(v[q], mask);
  BlockScan(temp.scan).ExclusiveSum(flag, pos);
  const int64_t first = tile_offset[blockIdx.x];
#pragma unroll
  for (int q = 0; q < kItems; ++q) {
    if (!flag[q]) continue;
    int64_t f = base + int64_t{threadIdx.x} * kItems + q;
    const int64_t j = first + pos[q];
    for (int d = dims.rank - 1; d >= 0; --d) {
      y[d * n + j] = f % dims.d[d];
      f /= dims.d[d];
    }
  }
}

// The bits that make an element of `dt` nonzero: all but the sign for floats, all otherwise.
uint64_t nonzero_mask(DataType dt) {
  const uint64_t all =
      dtype_size(dt) == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * dtype_size(dt))) - 1;
  return dtype_is_float(dt) ? all >> 1 : all;
}

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

class NonZeroKernel final : public CudaKernel {
 public:
  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (!ctx.bounded)
      return unsupported("NonZero's output shape follows its data: the kernel runs on its bound");
    if (out.size() != 2) return internal_error("bounded NonZero: expected 2 output descs");
    const TensorDesc& x = in[0];
    if (x.layout != Layout::kPlain) return invalid_argument("NonZero takes plain input");
    elem_ = dtype_size(x.dtype);
    if (x.dtype == DataType::kString || (elem_ != 1 && elem_ != 2 && elem_ != 4 && elem_ != 8))
      return unsupported(std::string("NonZero of ") + dtype_name(x.dtype));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank > kMaxRank)
      return unsupported("NonZero of rank " + std::to_string(rank) + " (at most " +
                         std::to_string(kMaxRank) + ")");
    mask_ = nonzero_mask(x.dtype);
    dims_.rank = static_cast<int>(rank);
    for (int64_t d = 0; d < rank; ++d) dims_.d[d] = x.shape[d];
    numel_ = x.numel();
    tiles_ = (numel_ + kTile - 1) / kTile;
    if (tiles_ > 0x7fffffff)
      return unsupported("NonZero of " + std::to_string(numel_) + " elements");
    scan_bytes_ = 0;
    if (tiles_ > 0)
      KILN_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes_, static_cast<int64_t*>(nullptr),
                                              static_cast<int64_t*>(nullptr), tiles_));
    out[0] = TensorDesc{DataType::kInt64, {rank, numel_}};  // ops/non_zero.cc's bound
    out[1] = TensorDesc{DataType::kInt64, {1}};
    return Status::ok();
  }

  size_t workspace_bytes() const override {
    return tiles_ > 0 ? 2 * align_up(tiles_ * sizeof(int64_t)) + scan_bytes_ : 0;
  }

  std::string tactic() const override { return "kiln non_zero"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    int64_t* extent = out[1]->as<int64_t>();
    if (numel_ == 0) {
      KILN_CUDA(cudaMemsetAsync(extent, 0, sizeof(int64_t), run.stream));
      return Status::ok();
    }
    switch (elem_) {
      case 1: return launch<uint8_t>(in[0]->data, out[0]->as<int64_t>(), extent, run);
      case 2: return launch<uint16_t>(in[0]->data, out[0]->as<int64_t>(), extent, run);
      case 4: return launch<uint32_t>(in[0]->data, out[0]->as<int64_t>(), extent, run);
      default: return launch<unsigned long long>(in[0]->data, out[0]->as<int64_t>(), extent, run);
    }
  }

 private:
  template <class U>
  Status launch(const void* xv, int64_t* y, int64_t* extent, const CudaRunContext& run) const {
    const U* x = static_cast<const U*>(xv);
    const U mask = static_cast<U>(mask_);
    auto* ws = static_cast<char*>(run.workspace);
    auto* tile_count = reinterpret_cast<int64_t*>(ws);
    auto* tile_offset = reinterpret_cast<int64_t*>(ws + align_up(tiles_ * sizeof(int64_t)));
    void* scan_temp = ws + 2 * align_up(tiles_ * sizeof(int64_t));
    const unsigned grid = static_cast<unsigned>(tiles_);
    non_zero_count_kernel<U><<<grid, kThreads, 0, run.stream>>>(x, numel_, mask, tile_count);
    KILN_CUDA_LAUNCHED("non_zero_count_kernel");
    size_t bytes = scan_bytes_;
    KILN_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp, bytes, tile_count, tile_offset, tiles_,
                                            run.stream));
    non_zero_write_kernel<U><<<grid, kThreads, 0, run.stream>>>(x, numel_, mask, dims_, tile_count,
                                                                tile_offset, tiles_, y, extent);
    KILN_CUDA_LAUNCHED("non_zero_write_kernel");
    return Status::ok();
  }

  size_t elem_ = 0;
  uint64_t mask_ = 0;
  NonZeroDims dims_{};
  int64_t numel_ = 0, tiles_ = 0;
  size_t scan_bytes_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_non_zero(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (dtype_size(x->dtype) == 0)
    return unsupported(std::string("NonZero of ") + dtype_name(x->dtype));
  return std::unique_ptr<CudaKernel>(new NonZeroKernel());
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(NonZero, make_non_zero);

}  // namespace kiln
