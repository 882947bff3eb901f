// EfficientNMS_TRT (src/ops/efficient_nms.h): per image, the (box, class) candidates above the
// score threshold, the best kEfficientNmsMaxCandidates of them by score into a greedy class-wise
// (or class-agnostic) NMS, written into the fixed-size outputs. Boxes and scores arrive in the
// activation dtype; detection_boxes and detection_scores leave in it, num_detections and
// detection_classes are int32. In float16/bfloat16 the thresholds are rounded to that dtype
// first, as the device holds every float input (as for NonMaxSuppression).
//
// Every comparison is the reference's, in float32, the geometry rounded step by step
// (nms_common.cuh), so that float32 inputs select exactly the reference's detections; with
// score_activation the sigmoid's expf may differ from the host's exp in the last bit.
//
// No host read:
//   keys     many blocks an image: the candidates' sort keys (descending score, then the
//            candidate index box·C + class: equal scores by the lower box, then the lower
//            class, as the reference's stable sort of its box-major list) appended to the
//            image's list by atomic adds, and their count; the segment to sort is
//            [image·M, image·M + count), M = N·C.
//   sort     CUB's segmented radix sort of those keys only (workspace).
//   select   one block an image walks the first min(count, 4096) sorted candidates: one
//            not suppressed is written as the next detection; then the block's threads mark
//            each later candidate of the same class (any class when agnostic) whose IoU with
//            it is above the threshold (a bit each in shared memory). Stops after
//            max_output_boxes.
// The outputs are zeroed first, so the entries after num_detections are zero.
// The workspace holds two keys per (box, class) pair of the batch: 16·B·N·C bytes and CUB's
// temporary storage; over the workspace limit the kernel declines (the reference runs it).

#include <cub/cub.cuh>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/nms_common.cuh"
#include "backends/cuda/kernels/structured.cuh"
#include "core/half.h"
#include "ops/efficient_nms.h"

namespace kiln {
namespace {

constexpr int kThreads = 256;
constexpr int kCapWords = static_cast<int>(kEfficientNmsMaxCandidates / 32);

struct Geometry {
  int64_t n = 0, classes = 0, m = 0;  // m = n · classes candidates an image
  bool per_class_boxes = false;
  int index_bits = 1;
};

template <class T>
__device__ __forceinline__ float activated(T v, bool sigmoid) {
  const float f = cuda::to_float(v);
  return sigmoid ? __fdiv_rn(1.f, __fadd_rn(1.f, expf(-f))) : f;
}

// Many blocks an image (blockIdx.y): each candidate takes the next place of its image's list
// (a warp's candidates one atomic add together). The list's order follows the scheduling, but
// every key is unique (it holds the candidate's index), so the sort gives one order.
template <class T>
__global__ void enms_keys_kernel(const T* __restrict__ scores, Geometry g, int64_t background,
                                 bool sigmoid, float threshold, uint64_t* __restrict__ keys,
                                 int* __restrict__ count) {
  const int64_t b = blockIdx.y;
  const T* s = scores + b * g.m;
  uint64_t* k = keys + b * g.m;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (int64_t base = int64_t{blockIdx.x} * blockDim.x; base < g.m;
       base += int64_t{gridDim.x} * blockDim.x) {
    const int64_t idx = base + threadIdx.x;
    float v = 0.f;
    bool candidate = false;
    if (idx < g.m && idx % g.classes != background) {
      v = activated(s[idx], sigmoid);
      candidate = v > threshold;
    }
    const unsigned mask = __ballot_sync(0xffffffffu, candidate);
    if (mask == 0) continue;
    const int leader = __ffs(mask) - 1;
    int first = 0;
    if (lane == leader) first = atomicAdd(&count[b], __popc(mask));
    first = __shfl_sync(0xffffffffu, first, leader);
    if (candidate)
      k[first + __popc(mask & ((1u << lane) - 1u))] = cuda::candidate_key(v, idx, g.index_bits);
  }
}

// Each image's segment of the list to sort: [image·M, image·M + count).
__global__ void enms_segments_kernel(const int* __restrict__ count, int64_t batch, int64_t m,
                                     int* __restrict__ begin, int* __restrict__ end) {
  for (int64_t b = threadIdx.x; b < batch; b += blockDim.x) {
    begin[b] = static_cast<int>(b * m);
    end[b] = static_cast<int>(b * m + count[b]);
  }
}

// The corners [x1, y1, x2, y2] of a candidate's box as the reference computes them.
template <class T>
__device__ __forceinline__ void corners(const T* p, int64_t coding, float* c) {
  const float b0 = cuda::to_float(p[0]), b1 = cuda::to_float(p[1]);
  const float b2 = cuda::to_float(p[2]), b3 = cuda::to_float(p[3]);
  if (coding == 0) {
    c[0] = b0, c[1] = b1, c[2] = b2, c[3] = b3;
    return;
  }
  const float hw = __fdiv_rn(b2, 2.f), hh = __fdiv_rn(b3, 2.f);
  c[0] = __fsub_rn(b0, hw), c[1] = __fsub_rn(b1, hh), c[2] = __fadd_rn(b0, hw);
  c[3] = __fadd_rn(b1, hh);
}

template <class T>
__global__ void enms_select_kernel(const T* __restrict__ boxes, const T* __restrict__ scores,
                                   Geometry g, EfficientNmsAttrs a, float iou_threshold,
                                   const uint64_t* __restrict__ sorted,
                                   const int* __restrict__ count, int32_t* __restrict__ num,
                                   T* __restrict__ out_boxes, T* __restrict__ out_scores,
                                   int32_t* __restrict__ out_classes) {
  __shared__ uint32_t suppressed[kCapWords];
  const int64_t b = blockIdx.x;
  const uint64_t* keys = sorted + b * g.m;
  const uint64_t index_mask = (uint64_t{1} << g.index_bits) - 1;
  const int total = min(count[b], static_cast<int>(kEfficientNmsMaxCandidates));
  for (int w = threadIdx.x; w < kCapWords; w += blockDim.x) suppressed[w] = 0;
  __syncthreads();
  const int64_t box_stride = g.per_class_boxes ? g.classes : 1;
  auto box_of = [&](int64_t idx) {
    const int64_t i = idx / g.classes, c = idx % g.classes;
    return boxes + ((b * g.n + i) * box_stride + (g.per_class_boxes ? c : 0)) * 4;
  };
  int64_t taken = 0;
  // Every thread walks the same candidates: the bits change only before the barrier that
  // ends a selection's marking.
  for (int r = 0; r < total && taken < a.max_output_boxes; ++r) {
    if ((suppressed[r / 32] >> (r % 32)) & 1u) continue;
    const int64_t idx = static_cast<int64_t>(keys[r] & index_mask);
    const int64_t cls = idx % g.classes;
    float c[4];
    corners(box_of(idx), a.box_coding, c);
    if (threadIdx.x == 0) {
      const int64_t at = b * a.max_output_boxes + taken;
      for (int e = 0; e < 4; ++e) out_boxes[at * 4 + e] = cuda::from_float<T>(c[e]);
      out_scores[at] = cuda::from_float<T>(activated(scores[b * g.m + idx], a.score_activation));
      out_classes[at] = static_cast<int32_t>(cls);
    }
    if (++taken == a.max_output_boxes) break;
    const cuda::DeviceBox kept = cuda::make_box(c[0], c[1], c[2], c[3], false);
    for (int j = r + 1 + threadIdx.x; j < total; j += blockDim.x) {
      const int64_t other = static_cast<int64_t>(keys[j] & index_mask);
      if (!a.class_agnostic && other % g.classes != cls) continue;
      float d[4];
      corners(box_of(other), a.box_coding, d);
      if (cuda::box_iou(kept, cuda::make_box(d[0], d[1], d[2], d[3], false)) > iou_threshold)
        atomicOr(&suppressed[j / 32], 1u << (j % 32));
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) num[b] = static_cast<int32_t>(taken);
}

// The workspace's pieces, in order.
struct EnmsWorkspace {
  uint64_t* keys;    // batch·m
  uint64_t* sorted;  // batch·m
  int* begin;        // batch
  int* end;          // batch
  int* count;        // batch
  void* sort_temp;
  // Bytes before sort_temp; with base == nullptr only the size is computed.
  static size_t layout(char* base, int64_t batch, int64_t m, EnmsWorkspace* w) {
    cuda::WorkspaceCarver c(base);
    const size_t keys = static_cast<size_t>(batch * m), images = static_cast<size_t>(batch);
    w->keys = c.take<uint64_t>(keys);
    w->sorted = c.take<uint64_t>(keys);
    w->begin = c.take<int>(images);
    w->end = c.take<int>(images);
    w->count = c.take<int>(images);
    w->sort_temp = c.rest();
    return c.used();
  }
};

class EfficientNmsKernel final : public CudaKernel {
 public:
  explicit EfficientNmsKernel(EfficientNmsAttrs attrs) : attrs_(attrs) {}

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.size() != 2 || !in[0].present() || !in[1].present())
      return invalid_argument("boxes (input 0) and scores (input 1) are required");
    if (out.size() != 4) return internal_error("EfficientNMS_TRT: expected 4 output descs");
    const TensorDesc& boxes = in[0];
    const TensorDesc& scores = in[1];
    KILN_RETURN_IF_ERROR(cuda::check_boxes_and_scores(boxes, scores, "EfficientNMS_TRT"));
    KILN_RETURN_IF_ERROR(check_efficient_nms_attrs(attrs_));
    KILN_ASSIGN_OR_RETURN(EfficientNmsShape s, efficient_nms_shape(boxes.shape, scores.shape));
    dtype_ = boxes.dtype;
    batch_ = s.batch;
    g_.n = s.boxes;
    g_.classes = s.classes;
    g_.m = s.boxes * s.classes;
    g_.per_class_boxes = s.per_class_boxes;
    if (batch_ * g_.m > 0x7fffffff)
      return unsupported("EfficientNMS_TRT over " + std::to_string(batch_ * g_.m) +
                         " (box, class) pairs (CUB's sort counts them in int)");
    g_.index_bits = 1;
    while ((int64_t{1} << g_.index_bits) < g_.m) ++g_.index_bits;
    score_threshold_ = cuda::stored_as(attrs_.score_threshold, dtype_);
    iou_threshold_ = cuda::stored_as(attrs_.iou_threshold, dtype_);
    workspace_ = 0;
    if (batch_ * g_.m > 0) {
      EnmsWorkspace w;
      sort_offset_ = EnmsWorkspace::layout(nullptr, batch_, g_.m, &w);
      KILN_ASSIGN_OR_RETURN(
          sort_bytes_, cuda::sort_workspace(batch_ * g_.m, batch_, 32 + g_.index_bits, sort_offset_,
                                            ctx.workspace_limit, "EfficientNMS_TRT"));
      workspace_ = sort_offset_ + sort_bytes_;
    }
    const int64_t k = attrs_.max_output_boxes;
    out[0] = TensorDesc{DataType::kInt32, {batch_, 1}};
    out[1] = TensorDesc{dtype_, {batch_, k, 4}};
    out[2] = TensorDesc{dtype_, {batch_, k}};
    out[3] = TensorDesc{DataType::kInt32, {batch_, k}};
    return Status::ok();
  }

  size_t workspace_bytes() const override { return workspace_; }

  std::string tactic() const override { return "kiln efficient_nms"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int64_t k = attrs_.max_output_boxes;
    const size_t esize = dtype_size(dtype_);
    const cudaStream_t st = run.stream;
    KILN_CUDA(cudaMemsetAsync(out[0]->data, 0, static_cast<size_t>(batch_) * 4, st));
    KILN_CUDA(cudaMemsetAsync(out[1]->data, 0, static_cast<size_t>(batch_ * k * 4) * esize, st));
    KILN_CUDA(cudaMemsetAsync(out[2]->data, 0, static_cast<size_t>(batch_ * k) * esize, st));
    KILN_CUDA(cudaMemsetAsync(out[3]->data, 0, static_cast<size_t>(batch_ * k) * 4, st));
    if (batch_ * g_.m == 0) return Status::ok();
    EnmsWorkspace w;
    EnmsWorkspace::layout(static_cast<char*>(run.workspace), batch_, g_.m, &w);
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* boxes = static_cast<const T*>(in[0]->data);
      const T* scores = static_cast<const T*>(in[1]->data);
      const unsigned grid = static_cast<unsigned>(batch_);
      KILN_CUDA(cudaMemsetAsync(w.count, 0, static_cast<size_t>(batch_) * sizeof(int), st));
      const dim3 spread(std::max(1u, std::min(cuda::grid_blocks(g_.m, kThreads), 1024u)),
                        static_cast<unsigned>(batch_));
      enms_keys_kernel<T><<<spread, kThreads, 0, st>>>(scores, g_, attrs_.background_class,
                                                       attrs_.score_activation, score_threshold_,
                                                       w.keys, w.count);
      KILN_CUDA_LAUNCHED("enms_keys_kernel");
      enms_segments_kernel<<<1, kThreads, 0, st>>>(w.count, batch_, g_.m, w.begin, w.end);
      KILN_CUDA_LAUNCHED("enms_segments_kernel");
      size_t bytes = sort_bytes_;
      KILN_CUDA(cub::DeviceSegmentedRadixSort::SortKeys(
          w.sort_temp, bytes, w.keys, w.sorted, static_cast<int>(batch_ * g_.m),
          static_cast<int>(batch_), w.begin, w.end, 0, 32 + g_.index_bits, st));
      enms_select_kernel<T><<<grid, kThreads, 0, st>>>(
          boxes, scores, g_, attrs_, iou_threshold_, w.sorted, w.count, out[0]->as<int32_t>(),
          static_cast<T*>(out[1]->data), static_cast<T*>(out[2]->data), out[3]->as<int32_t>());
      KILN_CUDA_LAUNCHED("enms_select_kernel");
      return Status::ok();
    });
  }

 private:
  EfficientNmsAttrs attrs_;
  Geometry g_;
  DataType dtype_ = DataType::kUndefined;
  int64_t batch_ = 0;
  float score_threshold_ = 0, iou_threshold_ = 0;
  size_t sort_offset_ = 0, sort_bytes_ = 0, workspace_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_efficient_nms(const Node& node, Precision) {
  if (node.inputs.size() != 2)
    return invalid_argument("EfficientNMS_TRT takes 2 inputs, got " +
                            std::to_string(node.inputs.size()));
  KILN_RETURN_IF_ERROR(cuda::check_float_boxes_and_scores(node));
  return std::unique_ptr<CudaKernel>(new EfficientNmsKernel(efficient_nms_attrs(node.attrs)));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(EfficientNMS_TRT, make_efficient_nms);

}  // namespace kiln
