// NonMaxSuppression (opsets 10 and 11): the int64 [selected, 3] rows (batch, class, box) of
// src/ops/non_max_suppression.cc, ordered by batch, class, then selection. The count follows
// the data, so the kernel runs bounded only (BuildContext::bounded): its buffer holds the bound
// [B·C·min(N, max_output_boxes_per_class), 3], the kernel writes the real rows at its start and
// their count into the extent. Boxes [B, N, 4] and scores [B, C, N] arrive in the activation
// dtype; max_output_boxes_per_class, iou_threshold and score_threshold are read on the host at
// prepare (unknown values: the kernel declines). In float16/bfloat16 the two thresholds are
// rounded to that dtype first, as the device holds every float input.
//
// Every comparison is the reference's, in float32: the box and IoU formulas of
// ops/non_max_suppression.h with each product, sum and quotient rounded on its own (no FMA
// contraction) and std::min/max's NaN behaviour, so that float32 inputs select exactly the
// reference's boxes. Per (batch, class) segment, no host read:
//   keys     one block per segment: a box above the score threshold gets the key
//            (0, descending score, index), the others (1, index); the block counts the
//            candidates. The index in the key orders equal scores by the lower index (the
//            reference's stable sort) without relying on the sort's stability; -0 is +0.
//   sort     CUB's segmented radix sort of the keys (workspace), over the bits they use.
//   select   one block per segment walks its sorted candidates in order: one not suppressed is
//            selected, then the block's threads mark each later candidate whose IoU with it is
//            above the threshold (a bit per candidate in shared memory). This is the
//            reference's test of each candidate against every box kept before it. Stops after
//            max_output_boxes_per_class.
//   compact  one block scans the segments' counts (their total is the extent); then every
//            selected box is written as its row.
// Scores of NaN without a score threshold sort first (positive NaN) or last; the reference's
// order for them is unspecified (its comparison is not a strict weak order there).

#include <cub/cub.cuh>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/nms_common.cuh"
#include "backends/cuda/kernels/structured.cuh"
#include "core/half.h"
#include "ops/non_max_suppression.h"

namespace kiln {
namespace {

using cuda::box_iou;
using cuda::candidate_key;
using cuda::DeviceBox;
using cuda::load_box;

constexpr int kThreads = 256;
// The boxes a segment may hold: a bit each in the select kernel's shared memory (32 KiB).
constexpr int64_t kMaxBoxes = int64_t{1} << 18;

// --- Kernels.

template <class T>
__global__ void nms_keys_kernel(const T* __restrict__ scores, int64_t n, int64_t segments,
                                int index_bits, bool has_threshold, float threshold,
                                uint64_t* __restrict__ keys, int* __restrict__ offsets,
                                int* __restrict__ candidates) {
  using BlockReduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const int64_t seg = blockIdx.x;
  const T* s = scores + seg * n;
  uint64_t* k = keys + seg * n;
  const uint64_t rejected = uint64_t{1} << (32 + index_bits);
  int count = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float v = cuda::to_float(s[i]);
    const bool candidate = !has_threshold || v > threshold;
    k[i] = candidate ? candidate_key(v, i, index_bits) : rejected | static_cast<uint64_t>(i);
    count += candidate;
  }
  count = BlockReduce(temp).Sum(count);
  if (threadIdx.x == 0) {
    candidates[seg] = count;
    offsets[seg] = static_cast<int>(seg * n);
    if (seg == segments - 1) offsets[segments] = static_cast<int>(segments * n);
  }
}

// Greedy selection over one segment's sorted candidates; `selected` gets up to `cap` box
// indices, `selected_count` their number.
template <class T>
__global__ void nms_select_kernel(const T* __restrict__ boxes, int64_t n, int64_t classes,
                                  const uint64_t* __restrict__ sorted,
                                  const int* __restrict__ candidates, int index_bits,
                                  bool center_point, float iou_threshold, int64_t cap,
                                  int* __restrict__ selected, int* __restrict__ selected_count) {
  extern __shared__ uint32_t suppressed[];  // a bit per sorted candidate
  const int64_t seg = blockIdx.x;
  const T* bx = boxes + (seg / classes) * n * 4;
  const uint64_t* keys = sorted + seg * n;
  const uint64_t index_mask = (uint64_t{1} << index_bits) - 1;
  const int count = candidates[seg];
  for (int w = threadIdx.x; w < (count + 31) / 32; w += blockDim.x) suppressed[w] = 0;
  __syncthreads();
  int* out = selected + seg * cap;
  int64_t taken = 0;
  // Every thread walks the same candidates: the bits change only before the barrier that
  // ends a selection's marking.
  for (int r = 0; r < count && taken < cap; ++r) {
    if ((suppressed[r / 32] >> (r % 32)) & 1u) continue;
    const int i = static_cast<int>(keys[r] & index_mask);
    if (threadIdx.x == 0) out[taken] = i;
    if (++taken == cap) break;
    const DeviceBox kept = load_box(bx + int64_t{i} * 4, center_point);
    for (int j = r + 1 + threadIdx.x; j < count; j += blockDim.x) {
      const int64_t b = static_cast<int64_t>(keys[j] & index_mask);
      if (box_iou(kept, load_box(bx + b * 4, center_point)) > iou_threshold)
        atomicOr(&suppressed[j / 32], 1u << (j % 32));
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) selected_count[seg] = static_cast<int>(taken);
}

// One block: each segment's first output row, and the total into the extent.
__global__ void nms_offsets_kernel(const int* __restrict__ selected_count, int64_t segments,
                                   int64_t* __restrict__ row_offset, int64_t* __restrict__ extent) {
  using BlockScan = cub::BlockScan<int64_t, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  int64_t running = 0;
  for (int64_t base = 0; base < segments; base += kThreads) {
    const int64_t s = base + threadIdx.x;
    int64_t first, total;
    BlockScan(temp).ExclusiveSum(s < segments ? int64_t{selected_count[s]} : 0, first, total);
    if (s < segments) row_offset[s] = running + first;
    running += total;
    __syncthreads();  // temp is reused
  }
  if (threadIdx.x == 0) *extent = running;
}

__global__ void nms_rows_kernel(const int* __restrict__ selected,
                                const int* __restrict__ selected_count,
                                const int64_t* __restrict__ row_offset, int64_t segments,
                                int64_t classes, int64_t cap, int64_t* __restrict__ y) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < segments * cap;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t seg = t / cap, q = t % cap;
    if (q >= selected_count[seg]) continue;
    int64_t* row = y + (row_offset[seg] + q) * 3;
    row[0] = seg / classes;
    row[1] = seg % classes;
    row[2] = selected[t];
  }
}

// --- The kernel.

// The workspace's pieces, in order.
struct NmsWorkspace {
  uint64_t* keys;       // segments·n
  uint64_t* sorted;     // segments·n
  int* offsets;         // segments + 1
  int* candidates;      // segments
  int* selected;        // segments·cap
  int* selected_count;  // segments
  int64_t* row_offset;  // segments
  void* sort_temp;
  // Bytes before sort_temp; with base == nullptr only the size is computed.
  static size_t layout(char* base, int64_t segments, int64_t n, int64_t cap, NmsWorkspace* w) {
    cuda::WorkspaceCarver c(base);
    const size_t keys = static_cast<size_t>(segments * n),
                 per_segment = static_cast<size_t>(segments);
    w->keys = c.take<uint64_t>(keys);
    w->sorted = c.take<uint64_t>(keys);
    w->offsets = c.take<int>(per_segment + 1);
    w->candidates = c.take<int>(per_segment);
    w->selected = c.take<int>(static_cast<size_t>(segments * cap));
    w->selected_count = c.take<int>(per_segment);
    w->row_offset = c.take<int64_t>(per_segment);
    w->sort_temp = c.rest();
    return c.used();
  }
};

// The reference's parameters, the inputs' values known at build (else the kernel declines),
// with the thresholds as the device holds a float of `act`.
Result<NmsParams> read_params(const std::vector<TensorDesc>& in, DataType act) {
  std::vector<const Tensor*> values(in.size(), nullptr);
  for (size_t i = 2; i < in.size(); ++i) {
    if (!in[i].present()) continue;
    if (!in[i].value) return unsupported("input " + std::to_string(i) + " is not known at build");
    values[i] = in[i].value;
  }
  KILN_ASSIGN_OR_RETURN(NmsParams p, nms_params(values));
  p.iou_threshold = cuda::stored_as(p.iou_threshold, act);
  p.score_threshold = cuda::stored_as(p.score_threshold, act);
  return p;
}

class NonMaxSuppressionKernel final : public CudaKernel {
 public:
  explicit NonMaxSuppressionKernel(bool center_point) : center_point_(center_point) {}

  bool reads_on_host(int i) const override { return i >= 2; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (!ctx.bounded)
      return unsupported(
          "NonMaxSuppression's output shape follows its data: the kernel runs on its bound");
    if (out.size() != 2)
      return internal_error("bounded NonMaxSuppression: expected 2 output descs");
    if (in.size() < 2 || !in[0].present() || !in[1].present())
      return invalid_argument("boxes (input 0) and scores (input 1) are required");
    const TensorDesc& boxes = in[0];
    const TensorDesc& scores = in[1];
    KILN_RETURN_IF_ERROR(cuda::check_boxes_and_scores(boxes, scores, "NonMaxSuppression"));
    KILN_RETURN_IF_ERROR(check_shapes(boxes.shape, scores.shape));
    KILN_ASSIGN_OR_RETURN(params_, read_params(in, boxes.dtype));
    dtype_ = boxes.dtype;
    n_ = boxes.shape[1];
    classes_ = scores.shape[1];
    segments_ = boxes.shape[0] * classes_;
    cap_ = std::min(n_, params_.max_per_class);
    if (n_ > kMaxBoxes)
      return unsupported("NonMaxSuppression of " + std::to_string(n_) + " boxes (at most " +
                         std::to_string(kMaxBoxes) + ")");
    if (segments_ * n_ > 0x7fffffff)
      return unsupported("NonMaxSuppression of " + std::to_string(segments_) + " segments of " +
                         std::to_string(n_) + " boxes (CUB's sort counts them in int)");
    index_bits_ = 1;
    while ((int64_t{1} << index_bits_) < n_) ++index_bits_;
    workspace_ = 0;
    if (segments_ * cap_ > 0) {
      NmsWorkspace w;
      sort_offset_ = NmsWorkspace::layout(nullptr, segments_, n_, cap_, &w);
      KILN_ASSIGN_OR_RETURN(
          sort_bytes_,
          cuda::sort_workspace(segments_ * n_, segments_, 33 + index_bits_, sort_offset_,
                               ctx.workspace_limit, "NonMaxSuppression"));
      workspace_ = sort_offset_ + sort_bytes_;
    }
    out[0] = TensorDesc{DataType::kInt64, {segments_ * cap_, 3}};  // ops' bound
    out[1] = TensorDesc{DataType::kInt64, {1}};
    return Status::ok();
  }

  size_t workspace_bytes() const override { return workspace_; }

  std::string tactic() const override { return "kiln non_max_suppression"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    int64_t* extent = out[1]->as<int64_t>();
    if (segments_ * cap_ == 0) {
      KILN_CUDA(cudaMemsetAsync(extent, 0, sizeof(int64_t), run.stream));
      return Status::ok();
    }
    NmsWorkspace w;
    NmsWorkspace::layout(static_cast<char*>(run.workspace), segments_, n_, cap_, &w);
    KILN_RETURN_IF_ERROR(cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      return select<T>(static_cast<const T*>(in[0]->data), static_cast<const T*>(in[1]->data), w,
                       run.stream);
    }));
    nms_offsets_kernel<<<1, kThreads, 0, run.stream>>>(w.selected_count, segments_, w.row_offset,
                                                       extent);
    KILN_CUDA_LAUNCHED("nms_offsets_kernel");
    nms_rows_kernel<<<cuda::grid_blocks(segments_ * cap_, kThreads), kThreads, 0, run.stream>>>(
        w.selected, w.selected_count, w.row_offset, segments_, classes_, cap_,
        out[0]->as<int64_t>());
    KILN_CUDA_LAUNCHED("nms_rows_kernel");
    return Status::ok();
  }

 private:
  // keys, sort and select: w.selected and w.selected_count of every segment.
  template <class T>
  Status select(const T* boxes, const T* scores, const NmsWorkspace& w, cudaStream_t s) const {
    const unsigned grid = static_cast<unsigned>(segments_);
    nms_keys_kernel<T>
        <<<grid, kThreads, 0, s>>>(scores, n_, segments_, index_bits_, params_.has_score_threshold,
                                   params_.score_threshold, w.keys, w.offsets, w.candidates);
    KILN_CUDA_LAUNCHED("nms_keys_kernel");
    size_t bytes = sort_bytes_;
    KILN_CUDA(cub::DeviceSegmentedRadixSort::SortKeys(
        w.sort_temp, bytes, w.keys, w.sorted, static_cast<int>(segments_ * n_),
        static_cast<int>(segments_), w.offsets, w.offsets + 1, 0, 33 + index_bits_, s));
    const size_t shared = static_cast<size_t>((n_ + 31) / 32) * sizeof(uint32_t);
    nms_select_kernel<T><<<grid, kThreads, shared, s>>>(
        boxes, n_, classes_, w.sorted, w.candidates, index_bits_, center_point_,
        params_.iou_threshold, cap_, w.selected, w.selected_count);
    KILN_CUDA_LAUNCHED("nms_select_kernel");
    return Status::ok();
  }

  bool center_point_;
  NmsParams params_;
  DataType dtype_ = DataType::kUndefined;
  int64_t n_ = 0, classes_ = 0, segments_ = 0, cap_ = 0;
  int index_bits_ = 1;
  size_t sort_offset_ = 0, sort_bytes_ = 0, workspace_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_non_max_suppression(const Node& node, Precision) {
  if (node.inputs.size() < 2 || node.inputs.size() > 5)
    return invalid_argument("NonMaxSuppression takes 2 to 5 inputs, got " +
                            std::to_string(node.inputs.size()));
  KILN_RETURN_IF_ERROR(cuda::check_float_boxes_and_scores(node));
  const bool center = non_max_suppression_attrs(node).center_point_box != 0;
  return std::unique_ptr<CudaKernel>(new NonMaxSuppressionKernel(center));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(NonMaxSuppression, make_non_max_suppression);

}  // namespace kiln
