// Transpose (plain, rank ≤ 6, any dtype): out.dim(i) = in.dim(perm[i]), perm defaulting to
// the reversed axes. One thread per output element gathers from the input. Before that,
// prepare drops size-1 dims and merges output dims that stay neighbours in the input (a
// [N,C,H,W] → [N,H,W,C] transpose becomes a 3-D [N, HW, C] one), so the index arithmetic
// has as few dims as the permutation really has.
//
// Two rank-4 permutations move no bytes at all. A logical [N,C,H,W] stored NHWC holds exactly
// the bytes of a plain [N,H,W,C], so perm (0,2,3,1) of an NHWC input and perm (0,3,1,2) of a
// plain input (giving an NHWC output) are views: ConvNeXt's Permute pairs around each block's
// LayerNorm and Linear layers cost nothing. The kernel asks for that layout, and the plan
// converts a producer that offers the other one (a copy the gather would have made anyway).

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/op_util.h"
#include "ops/transpose.h"

namespace kiln {
namespace {

constexpr int kMaxRank = 6;

struct TransposeGeom {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t src_strides[kMaxRank] = {};  // input stride of each output dim
};

template <class U>
__global__ void transpose_kernel(const U* __restrict__ x, U* __restrict__ y, int64_t total,
                                 TransposeGeom g) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t r = i, src = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      src += (r % g.out_dims[d]) * g.src_strides[d];
      r /= g.out_dims[d];
    }
    y[i] = x[src];
  }
}

// The rank-4 permutations that only relabel a tensor's layout.
enum class Relabel { kNone, kToChannelsLast, kToChannelsFirst };

Relabel relabel_of(const std::vector<int64_t>& perm) {
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) return Relabel::kToChannelsLast;
  if (perm == std::vector<int64_t>{0, 3, 1, 2}) return Relabel::kToChannelsFirst;
  return Relabel::kNone;
}

class TransposeKernel final : public CudaKernel {
 public:
  explicit TransposeKernel(const Node& node) : node_(node) {
    if (cuda::known_rank(node, 0) == 4) {
      Result<std::vector<int64_t>> perm = transpose_perm(node, 4);
      if (perm.is_ok()) relabel_ = relabel_of(perm.value());
    }
  }

  // (0,2,3,1) wants its input NHWC, (0,3,1,2) plain: then the output is the input's bytes.
  Layout input_layout(int, Layout) const override {
    return relabel_ == Relabel::kToChannelsLast ? Layout::kNHWC : Layout::kPlain;
  }
  bool is_alias() const override { return alias_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, transpose_perm(node_, rank));
    alias_ = false;
    if (rank == 4) {
      const Relabel r = relabel_of(perm);
      const Shape shape{x.shape[perm[0]], x.shape[perm[1]], x.shape[perm[2]], x.shape[perm[3]]};
      if (r == Relabel::kToChannelsLast && x.layout == Layout::kNHWC) {
        alias_ = true;
        out[0] = TensorDesc{x.dtype, shape};
        return Status::ok();
      }
      if (r == Relabel::kToChannelsFirst && x.layout == Layout::kPlain) {
        alias_ = true;
        out[0] = TensorDesc{x.dtype, shape, nullptr, Layout::kNHWC};
        return Status::ok();
      }
    }
    if (x.layout != Layout::kPlain)
      return invalid_argument(std::string("Transpose input in ") + layout_name(x.layout) +
                              " layout (expected plain)");
    elem_ = dtype_size(x.dtype);
    if (elem_ != 1 && elem_ != 2 && elem_ != 4 && elem_ != 8)
      return unsupported(std::string("Transpose on ") + dtype_name(x.dtype));
    Shape shape(rank);
    for (int64_t i = 0; i < rank; ++i) shape[i] = x.shape[perm[i]];
    const std::vector<int64_t> in_strides = strides_of(x.shape);
    // Output dims (size > 1) with their input strides, merging a dim into the previous one
    // when it is the next input axis (then prev stride == this stride · this dim).
    std::vector<int64_t> dims, strides;
    int64_t last_axis = -2;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t axis = perm[i], d = x.shape[axis];
      if (d == 1) continue;
      if (!dims.empty() && axis == last_axis + 1) {
        dims.back() *= d;
        strides.back() = in_strides[axis];
      } else {
        dims.push_back(d);
        strides.push_back(in_strides[axis]);
      }
      last_axis = axis;
    }
    if (dims.size() > static_cast<size_t>(kMaxRank))
      return unsupported("Transpose of rank " + std::to_string(dims.size()) + " (at most 6)");
    geom_ = TransposeGeom{};
    geom_.rank = static_cast<int>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      geom_.out_dims[i] = dims[i];
      geom_.src_strides[i] = strides[i];
    }
    numel_ = x.numel();
    out[0] = TensorDesc{x.dtype, shape};
    return Status::ok();
  }

  std::string tactic() const override {
    if (alias_) return "view (NCHW <-> NHWC relabel)";
    return "kiln transpose (" + std::to_string(geom_.rank) + " merged dims)";
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (numel_ == 0) return Status::ok();
    constexpr int kThreads = 256;
    const unsigned blocks = cuda::grid_blocks(numel_, kThreads);
    const void* x = in[0]->data;
    void* y = out[0]->data;
    switch (elem_) {
      case 1:
        transpose_kernel<uint8_t><<<blocks, kThreads, 0, run.stream>>>(
            static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), numel_, geom_);
        break;
      case 2:
        transpose_kernel<uint16_t><<<blocks, kThreads, 0, run.stream>>>(
            static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), numel_, geom_);
        break;
      case 4:
        transpose_kernel<uint32_t><<<blocks, kThreads, 0, run.stream>>>(
            static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), numel_, geom_);
        break;
      default:
        transpose_kernel<uint64_t><<<blocks, kThreads, 0, run.stream>>>(
            static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), numel_, geom_);
        break;
    }
    KILN_CUDA_LAUNCHED("transpose_kernel");
    return Status::ok();
  }

 private:
  const Node& node_;
  Relabel relabel_ = Relabel::kNone;
  bool alias_ = false;
  TransposeGeom geom_;
  size_t elem_ = 0;
  int64_t numel_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_transpose(const Node& node, Precision) {
  const int64_t rank = cuda::known_rank(node, 0);
  if (rank > kMaxRank)
    return unsupported("Transpose of rank " + std::to_string(rank) + " (at most 6)");
  return std::unique_ptr<CudaKernel>(new TransposeKernel(node));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Transpose, make_transpose);

}  // namespace kiln
