// What the NonMaxSuppression and EfficientNMS_TRT kernels share: the box geometry of
// src/ops/non_max_suppression.h on the device, every product, sum and quotient rounded on its
// own (no FMA contraction) and std::min/max's NaN behaviour, so that float32 inputs give
// exactly the reference's IoU; the sort key of a scored candidate; their workspace carving,
// thresholds as the device holds them, and the checks of their box and score inputs.
#pragma once

#include <cstdint>
#include <cub/cub.cuh>
#include <string>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels/structured.cuh"
#include "core/half.h"

namespace kiln {
namespace cuda {

struct DeviceBox {
  float y_lo, x_lo, y_hi, x_hi;
};

// std::min and std::max exactly (which operand a NaN or a signed zero gives).
__device__ __forceinline__ float std_min(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ float std_max(float a, float b) { return a < b ? b : a; }

// nms_box(): opposite corners [y1, x1, y2, x2] (or [x1, y1, x2, y2]: IoU is the same) sorted
// per axis, or [xc, yc, w, h] with center_point.
__device__ __forceinline__ DeviceBox make_box(float b0, float b1, float b2, float b3,
                                              bool center_point) {
  if (center_point) {
    const float half_w = __fdiv_rn(b2, 2.f), half_h = __fdiv_rn(b3, 2.f);
    return {__fsub_rn(b1, half_h), __fsub_rn(b0, half_w), __fadd_rn(b1, half_h),
            __fadd_rn(b0, half_w)};
  }
  return {std_min(b0, b2), std_min(b1, b3), std_max(b0, b2), std_max(b1, b3)};
}

template <class T>
__device__ __forceinline__ DeviceBox load_box(const T* b, bool center_point) {
  return make_box(to_float(b[0]), to_float(b[1]), to_float(b[2]), to_float(b[3]), center_point);
}

// nms_iou(): 0 where either box has no area.
__device__ __forceinline__ float box_iou(const DeviceBox& a, const DeviceBox& b) {
  const float area_a = __fmul_rn(__fsub_rn(a.y_hi, a.y_lo), __fsub_rn(a.x_hi, a.x_lo));
  const float area_b = __fmul_rn(__fsub_rn(b.y_hi, b.y_lo), __fsub_rn(b.x_hi, b.x_lo));
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = __fsub_rn(std_min(a.y_hi, b.y_hi), std_max(a.y_lo, b.y_lo));
  const float w = __fsub_rn(std_min(a.x_hi, b.x_hi), std_max(a.x_lo, b.x_lo));
  if (h <= 0 || w <= 0) return 0;
  const float inter = __fmul_rn(h, w);
  return __fdiv_rn(inter, __fsub_rn(__fadd_rn(area_a, area_b), inter));
}

// A candidate's sort key: the score's bits flipped so that ascending keys are descending
// scores, then the candidate's index in the low `index_bits` bits (equal scores by the lower
// index); bit 32 + index_bits is 0, so a key with it set sorts after every candidate.
__device__ __forceinline__ uint64_t candidate_key(float score, int64_t i, int index_bits) {
  const uint32_t u = __float_as_uint(score == 0.f ? 0.f : score);
  const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(~ascending) << index_bits) | static_cast<uint64_t>(i);
}

// Carves a workspace into pieces of 256-byte aligned starts, in order; with a null base only
// the size is counted.
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(char* base) : base_(base) {}
  template <class T>
  T* take(size_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
  void* rest() const { return base_ ? base_ + used_ : nullptr; }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

// The bytes of CUB's temporary storage for a segmented radix sort of `items` 64-bit keys in
// `segments` over bits [0, end_bit), plus `before` (the workspace's other pieces); an error
// naming `op` past `limit`.
inline Result<size_t> sort_workspace(int64_t items, int64_t segments, int end_bit, size_t before,
                                     size_t limit, const char* op) {
  size_t bytes = 0;
  const int* offsets = nullptr;
  KILN_CUDA(cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int>(items), static_cast<int>(segments), offsets, offsets, 0, end_bit));
  if (before + bytes > limit)
    return unsupported(std::string(op) + " needs " + std::to_string((before + bytes) >> 20) +
                       " MiB of workspace, over the limit of " + std::to_string(limit >> 20));
  return bytes;
}

// A float32 threshold as the device holds a float of `dt`.
inline float stored_as(float v, DataType dt) {
  if (dt == DataType::kFloat16) return half_bits_to_float(float_to_half_bits(v));
  if (dt == DataType::kBFloat16) return bf16_bits_to_float(float_to_bf16_bits(v));
  return v;
}

// Boxes (input 0) and scores (input 1) in one activation dtype, plain.
inline Status check_boxes_and_scores(const TensorDesc& boxes, const TensorDesc& scores,
                                     const char* op) {
  KILN_RETURN_IF_ERROR(check_act_dtype(boxes.dtype, "boxes (input 0)"));
  if (scores.dtype != boxes.dtype)
    return unsupported(std::string("scores (input 1) in ") + dtype_name(scores.dtype) +
                       ", boxes in " + dtype_name(boxes.dtype));
  if (boxes.layout != Layout::kPlain || scores.layout != Layout::kPlain)
    return invalid_argument(std::string(op) + " takes plain inputs");
  return Status::ok();
}

// The node's inputs 0 and 1 (boxes and scores) are there and of a float type.
inline Status check_float_boxes_and_scores(const Node& node) {
  for (size_t i : {size_t{0}, size_t{1}}) {
    const Value* v = node.input(i);
    if (!v) return invalid_argument("input " + std::to_string(i) + " is missing");
    if (!dtype_is_float(v->dtype))
      return unsupported("input " + std::to_string(i) + ": element type " + dtype_name(v->dtype));
  }
  return Status::ok();
}

}  // namespace cuda
}  // namespace kiln
