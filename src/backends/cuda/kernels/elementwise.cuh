// Device helpers shared by kiln's elementwise kernels (convert, epilogue, unary, binary,
// cast): element loads/stores through float, the activations of ir/epilogue.h on the
// device, aligned vector access and launch sizing.
//
// Floats compute in float whatever their storage (float16 is rounded once, on store), as
// the reference does for its Half type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/cuda/cuda_common.h"
#include "ir/epilogue.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cuda {

// The type an element computes in: float for float16 and bfloat16, itself otherwise.
template <class T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<__half> {
  using type = float;
};
template <>
struct AccOf<__nv_bfloat16> {
  using type = float;
};
template <class T>
using Acc = typename AccOf<T>::type;

template <class T>
__device__ __forceinline__ Acc<T> load_acc(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}

template <class T, class A>
__device__ __forceinline__ T store_as(A v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// Calls f(float{}), f(__half{}) or f(__nv_bfloat16{}) by a device float dtype
// (is_device_float); kUnsupported naming `what` otherwise.
template <class F>
Status dispatch_float(DataType dt, const char* what, F&& f) {
  switch (dt) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat16: return f(__half{});
    case DataType::kBFloat16: return f(__nv_bfloat16{});
    default:
      return unsupported(std::string(what) + " on " + dtype_name(dt) +
                         " (float32, float16 or bfloat16 only)");
  }
}

// V elements of T in one aligned access (16 bytes for V = 16 / sizeof(T)).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

inline bool aligned_to(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Grid size for a grid-stride loop over `work` items with `threads` per block: enough
// blocks to fill the GPU several times over, never more than the work needs.
inline unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{132} * 32));
}

// y[i] = f(x[i]) for i < n, V elements per access where both pointers allow it. x and y
// may be the same buffer (in-place ops): each element is read and written by one thread.
template <class Tin, class Tout, int V, class F>
__global__ void map_kernel(const Tin* x, Tout* y, int64_t n, F f) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += stride) {
    const Vec<Tin, V> a = reinterpret_cast<const Vec<Tin, V>*>(x)[i];
    Vec<Tout, V> b;
#pragma unroll
    for (int k = 0; k < V; ++k) b.v[k] = f(a.v[k]);
    reinterpret_cast<Vec<Tout, V>*>(y)[i] = b;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) y[i] = f(x[i]);
}

// Launches map_kernel on `stream` with 16-byte accesses on the wider of the two types when
// both pointers are aligned for them, else one element per access. `what` names the
// launch in errors.
template <class Tin, class Tout, class F>
Status launch_map(const Tin* x, Tout* y, int64_t n, F f, cudaStream_t stream, const char* what) {
  if (n <= 0) return Status::ok();
  constexpr int kThreads = 256;
  constexpr int kV = static_cast<int>(16 / std::max(sizeof(Tin), sizeof(Tout)));
  if (aligned_to(x, sizeof(Vec<Tin, kV>)) && aligned_to(y, sizeof(Vec<Tout, kV>))) {
    map_kernel<Tin, Tout, kV><<<grid_for(n / kV + 1, kThreads), kThreads, 0, stream>>>(x, y, n, f);
  } else {
    map_kernel<Tin, Tout, 1><<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, y, n, f);
  }
  KILN_CUDA_LAUNCHED(what);
  return Status::ok();
}

// ir/epilogue.h's apply_activation, for an activation known at compile time. Written with
// the same comparisons so NaN behaves the same (Relu gives 0, Clip passes it through).
template <Activation A>
__device__ __forceinline__ float activate(float x, float alpha, float beta) {
  if constexpr (A == Activation::kNone) {
    return x;
  } else if constexpr (A == Activation::kRelu) {
    return x > 0.f ? x : 0.f;
  } else if constexpr (A == Activation::kClip) {
    const float y = x < alpha ? alpha : x;  // std::max(x, alpha)
    return beta < y ? beta : y;             // std::min(y, beta)
  } else if constexpr (A == Activation::kLeakyRelu) {
    return x < 0.f ? alpha * x : x;
  } else if constexpr (A == Activation::kSigmoid) {
    return 1.f / (1.f + expf(-x));
  } else if constexpr (A == Activation::kTanh) {
    return tanhf(x);
  } else if constexpr (A == Activation::kSilu) {
    return x / (1.f + expf(-x));
  } else if constexpr (A == Activation::kHardSigmoid) {
    return fmaxf(0.f, fminf(1.f, alpha * x + beta));
  } else if constexpr (A == Activation::kHardSwish) {
    return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
  } else {
    static_assert(A == Activation::kGelu);
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
}

// activate<A> for an activation chosen at run time: one uniform branch per element, for
// memory-bound kernels where 9 instantiations per variant would cost more than they save.
__device__ __forceinline__ float activate_rt(Activation a, float v, float alpha, float beta) {
  switch (a) {
    case Activation::kRelu: return activate<Activation::kRelu>(v, alpha, beta);
    case Activation::kClip: return activate<Activation::kClip>(v, alpha, beta);
    case Activation::kLeakyRelu: return activate<Activation::kLeakyRelu>(v, alpha, beta);
    case Activation::kSigmoid: return activate<Activation::kSigmoid>(v, alpha, beta);
    case Activation::kTanh: return activate<Activation::kTanh>(v, alpha, beta);
    case Activation::kSilu: return activate<Activation::kSilu>(v, alpha, beta);
    case Activation::kHardSigmoid: return activate<Activation::kHardSigmoid>(v, alpha, beta);
    case Activation::kHardSwish: return activate<Activation::kHardSwish>(v, alpha, beta);
    case Activation::kGelu: return activate<Activation::kGelu>(v, alpha, beta);
    case Activation::kNone: break;
  }
  return v;
}

// Calls f(std::integral_constant<Activation, A>{}) for the runtime activation `a`.
template <class F>
decltype(auto) dispatch_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::kRelu: return f(std::integral_constant<Activation, Activation::kRelu>{});
    case Activation::kClip: return f(std::integral_constant<Activation, Activation::kClip>{});
    case Activation::kLeakyRelu:
      return f(std::integral_constant<Activation, Activation::kLeakyRelu>{});
    case Activation::kSigmoid: return f(std::integral_constant<Activation, Activation::kSigmoid>{});
    case Activation::kTanh: return f(std::integral_constant<Activation, Activation::kTanh>{});
    case Activation::kSilu: return f(std::integral_constant<Activation, Activation::kSilu>{});
    case Activation::kHardSigmoid:
      return f(std::integral_constant<Activation, Activation::kHardSigmoid>{});
    case Activation::kHardSwish:
      return f(std::integral_constant<Activation, Activation::kHardSwish>{});
    case Activation::kGelu: return f(std::integral_constant<Activation, Activation::kGelu>{});
    case Activation::kNone: break;
  }
  return f(std::integral_constant<Activation, Activation::kNone>{});
}

}  // namespace kiln::cuda
