// Device and host helpers shared by kiln's structured (non-elementwise) CUDA kernels:
// pooling, reductions, concat, softmax, batch norm, transpose, resize. Activations are
// float32, float16 or bfloat16 on the device; every kernel computes in float and converts on
// load and store through to_float / from_float.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "backends/cuda/cuda_kernel.h"
#include "kiln/status.h"
#include "ops/op_registry.h"

namespace kiln::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// V consecutive elements moved as one aligned load/store (16 bytes for 8 halves or 4
// floats), so NHWC kernels that work on V channels at once read whole sectors.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ void load_pack(const T* p, float (&out)[V]) {
  Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_float(pk.v[i]);
}

template <class T, int V>
__device__ __forceinline__ void store_pack(T* p, const float (&in)[V]) {
  Pack<T, V> pk;
#pragma unroll
  for (int i = 0; i < V; ++i) pk.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Pack<T, V>*>(p) = pk;
}

// max that lets a NaN through and keeps it once seen (the reference kernels' rule).
__device__ __forceinline__ float nan_max(float a, float b) {
  if (a != a) return a;
  return (b != b || b > a) ? b : a;
}

// Blocks for a grid-stride loop over `n` items: enough to fill the GPU, capped so the
// count fits the grid's x dimension.
inline unsigned grid_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, int64_t{1} << 20));
}

// The widest V in {8, 4, 2, 1} with V·sizeof(T) ≤ 16 dividing `count` (elements per
// contiguous run) whose packs stay aligned on every pointer in `ptrs`.
inline int pack_width(size_t elem_size, int64_t count, std::initializer_list<const void*> ptrs) {
  for (int v : {8, 4, 2}) {
    if (elem_size * v > 16 || count % v != 0) continue;
    bool aligned = true;
    for (const void* p : ptrs)
      aligned = aligned && reinterpret_cast<uintptr_t>(p) % (elem_size * v) == 0;
    if (aligned) return v;
  }
  return 1;
}

// Activation dtypes the kernels take.
inline bool is_act_dtype(DataType dt) { return is_device_float(dt); }

inline Status check_act_dtype(DataType dt, const char* what) {
  if (is_act_dtype(dt)) return Status::ok();
  return unsupported(std::string(what) + ": element type " + dtype_name(dt) +
                     " (this kernel takes float32, float16 or bfloat16)");
}

// Calls f(float{}), f(__half{}) or f(__nv_bfloat16{}) by the activation dtype.
template <class F>
Status dispatch_act(DataType dt, F&& f) {
  if (dt == DataType::kFloat32) return f(float{});
  if (dt == DataType::kFloat16) return f(__half{});
  if (dt == DataType::kBFloat16) return f(__nv_bfloat16{});
  return unsupported(std::string("element type ") + dtype_name(dt) +
                     " (this kernel takes float32, float16 or bfloat16)");
}

// Rank of a node input as the graph knows it, or -1 when unknown.
inline int64_t known_rank(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->has_shape ? static_cast<int64_t>(v->dims.size()) : -1;
}

// kUnsupported unless every input from `first` on is a constant (or omitted): the inputs a
// kernel reads on the host at prepare (starts, pads, shapes).
inline Status inputs_constant_from(const Node& node, size_t first) {
  for (size_t i = first; i < node.inputs.size(); ++i)
    if (node.input(i) && !node.input(i)->is_constant())
      return unsupported("input " + std::to_string(i) + " is not a constant");
  return Status::ok();
}

// The reference's view of a device description (shape rules and helpers take TensorDesc).
inline TensorDesc desc_of(const TensorDesc& d) { return TensorDesc{d.dtype, d.shape, d.value}; }

// FNV-1a over bytes: part of WeightStore keys, so that two nodes of the same name with
// different constants never share a buffer.
inline uint64_t content_hash(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace kiln::cuda
