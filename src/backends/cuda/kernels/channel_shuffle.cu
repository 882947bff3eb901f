// ChannelShuffle (ops/channel_shuffle.h), any element type.
//   per pixel (x [N, C, H, W] shuffled in G groups of K = C/G channels, y of x's shape): in
//     either layout; NHWC: y[p, k·G + g] = x[p, g·K + k] for each pixel p, one thread per
//     element; plain: the general form below with runs of H·W.
//   general (plain): x as [outer, b, c, inner] copied to y as [outer, c, b, inner], one thread
//     per 16, 8, 4, 2 or 1 bytes of a run (the widest unit dividing the run's bytes).
// 32-bit index arithmetic when the tensor has fewer than 2^31 units.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/channel_shuffle.h"
#include "ops/op_util.h"

namespace kiln {
namespace {

template <class U, class I>
__global__ void shuffle_nhwc_kernel(const U* __restrict__ x, U* __restrict__ y, I total, I c,
                                    I groups, I per_group) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I p = i / c, ch = i - p * c;
    const I k = ch / groups, g = ch - k * groups;
    y[i] = x[p * c + g * per_group + k];
  }
}

template <class U, class I>
__global__ void shuffle_runs_kernel(const U* __restrict__ x, U* __restrict__ y, I total, I b, I c,
                                    I inner) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I q = i / inner, e = i - q * inner;
    const I q2 = q / b, j = q - q2 * b;  // y index: ((o·c + k)·b + j)·inner + e
    const I o = q2 / c, k = q2 - o * c;
    y[i] = x[((o * b + j) * c + k) * inner + e];
  }
}

class ChannelShuffleKernel final : public CudaKernel {
 public:
  Layout input_layout(int i, Layout offered) const override {
    return i == 0 ? offered : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    if (in.size() != 3) return invalid_argument("ChannelShuffle needs x, shape5 and shape4");
    const TensorDesc& x = in[0];
    KILN_ASSIGN_OR_RETURN(auto s5, known_int64s(cuda::desc_of(in[1]), "input 1 (shape5)"));
    KILN_ASSIGN_OR_RETURN(auto s4, known_int64s(cuda::desc_of(in[2]), "input 2 (shape4)"));
    KILN_ASSIGN_OR_RETURN(g_, channel_shuffle_geometry(x.shape, s5, s4));
    elem_ = dtype_size(x.dtype);
    if (elem_ != 1 && elem_ != 2 && elem_ != 4 && elem_ != 8)
      return unsupported(std::string("ChannelShuffle on ") + dtype_name(x.dtype));
    nhwc_ = x.layout == Layout::kNHWC;
    if (nhwc_ && !g_.per_pixel)
      return unsupported("ChannelShuffle of an NHWC tensor that is not a per-pixel shuffle (" +
                         shape_str(x.shape) + " → " + shape_str(g_.out) + ")");
    unit_ = elem_;
    if (!nhwc_) {
      const int64_t run = g_.inner * static_cast<int64_t>(elem_);
      for (size_t u : {16, 8, 4, 2})
        if (u > unit_ && run % static_cast<int64_t>(u) == 0) {
          unit_ = u;
          break;
        }
    }
    units_ = x.numel() * static_cast<int64_t>(elem_) / static_cast<int64_t>(unit_);
    out[0] = TensorDesc{x.dtype, g_.out, nullptr, nhwc_ ? Layout::kNHWC : Layout::kPlain};
    return Status::ok();
  }

  std::string tactic() const override {
    return nhwc_ ? "kiln channel shuffle (NHWC)"
                 : "kiln channel shuffle (runs, " + std::to_string(unit_) + " B units)";
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (units_ == 0) return Status::ok();
    if (units_ < (int64_t{1} << 31)) return launch<uint32_t>(in[0]->data, out[0]->data, run);
    return launch<int64_t>(in[0]->data, out[0]->data, run);
  }

 private:
  template <class I>
  Status launch(const void* x, void* y, const CudaRunContext& run) {
    switch (unit_) {
      case 1: return launch_as<uint8_t, I>(x, y, run);
      case 2: return launch_as<uint16_t, I>(x, y, run);
      case 4: return launch_as<uint32_t, I>(x, y, run);
      case 8: return launch_as<uint2, I>(x, y, run);
      default: return launch_as<uint4, I>(x, y, run);
    }
  }

  template <class U, class I>
  Status launch_as(const void* xv, void* yv, const CudaRunContext& run) {
    constexpr int kThreads = 256;
    const unsigned blocks = cuda::grid_blocks(units_, kThreads);
    const U* x = static_cast<const U*>(xv);
    U* y = static_cast<U*>(yv);
    if (nhwc_) {
      shuffle_nhwc_kernel<U, I>
          <<<blocks, kThreads, 0, run.stream>>>(x, y, I(units_), I(g_.b * g_.c), I(g_.b), I(g_.c));
      KILN_CUDA_LAUNCHED("shuffle_nhwc_kernel");
    } else {
      const I inner = I(g_.inner * static_cast<int64_t>(elem_) / static_cast<int64_t>(unit_));
      shuffle_runs_kernel<U, I>
          <<<blocks, kThreads, 0, run.stream>>>(x, y, I(units_), I(g_.b), I(g_.c), inner);
      KILN_CUDA_LAUNCHED("shuffle_runs_kernel");
    }
    return Status::ok();
  }

  ChannelShuffleGeometry g_;
  bool nhwc_ = false;
  size_t elem_ = 0, unit_ = 0;
  int64_t units_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_channel_shuffle(const Node& node, Precision) {
  KILN_RETURN_IF_ERROR(cuda::inputs_constant_from(node, 1));
  return std::unique_ptr<CudaKernel>(new ChannelShuffleKernel());
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(ChannelShuffle, make_channel_shuffle);

}  // namespace kiln
