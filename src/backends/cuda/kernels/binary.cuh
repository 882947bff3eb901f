// Device side of the binary elementwise ops (Add, Sub, Mul, Div, Pow): their element
// functions and the three kernels binary.cu chooses from.
//
//   flat      a, b and y share shape and layout: y[i] = f(a[i], b[i]), 16-byte accesses.
//   indexed   one operand ("big") has y's shape and layout, the other ("small") is a
//             scalar, a per-channel vector or a per-(batch, channel) table: the CNN cases
//             (bias, per-channel scale, squeeze-excite), in plain or NHWC, no conversion.
//   strided   any broadcast and any mix of layouts: y is walked in its physical order and
//             each operand read through per-dimension strides (0 on broadcast dims).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/elementwise.cuh"

namespace kiln::cuda {

// Element functions on the compute type (float for float16). Integer +, -, * wrap modulo
// 2^bits (computed unsigned, as the reference does); integer division truncates, x / 0
// gives 0 (the reference reports an error the device cannot) and min / -1 wraps.
struct AddFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
      return a + b;
  }
};
struct SubFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    else
      return a - b;
  }
};
struct MulFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else
      return a * b;
  }
};
struct DivFn {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if (b == -1) return static_cast<C>(uint64_t{0} - static_cast<uint64_t>(a));
      return a / b;
    } else {
      return a / b;
    }
  }
};
// Float only (binary.cu does not build Pow for integers). The reference computes in double.
struct PowFn {
  __device__ float operator()(float a, float b) const {
    return static_cast<float>(pow(static_cast<double>(a), static_cast<double>(b)));
  }
};

template <class T, class F>
__device__ __forceinline__ T apply_binary(F f, T a, T b) {
  return store_as<T>(f(load_acc(a), load_acc(b)));
}

template <class T, class F, int V>
__global__ void binary_flat(const T* a, const T* b, T* y, int64_t n, F f) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += stride) {
    const Vec<T, V> va = reinterpret_cast<const Vec<T, V>*>(a)[i];
    const Vec<T, V> vb = reinterpret_cast<const Vec<T, V>*>(b)[i];
    Vec<T, V> vy;
#pragma unroll
    for (int k = 0; k < V; ++k) vy.v[k] = apply_binary(f, va.v[k], vb.v[k]);
    reinterpret_cast<Vec<T, V>*>(y)[i] = vy;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) y[i] = apply_binary(f, a[i], b[i]);
}

// Where the small operand's element for flat index e of y lives: e splits into
// (n, rest) by `per_batch` elements and rest's channel is (rest / inner) % channels
// (inner = 1 in NHWC). small index = n * batch_stride + c * channel_stride.
struct IndexedArgs {
  int64_t per_batch;
  int64_t inner;
  int64_t channels;
  int64_t batch_stride;
  int64_t channel_stride;
  bool small_first;  // the small operand is a (f(small, big)), e.g. Sub(bias, x)
};

template <class T, class F, int V>
__device__ __forceinline__ void indexed_vector(const T* small, Vec<T, V>& v, int64_t e, F f,
                                               const IndexedArgs& p) {
  int64_t n = e / p.per_batch;
  int64_t pos = e - n * p.per_batch;
  const int64_t q = pos / p.inner;
  int64_t rem = pos - q * p.inner;
  int64_t c = q % p.channels;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const T s = small[n * p.batch_stride + c * p.channel_stride];
    v.v[k] = p.small_first ? apply_binary(f, s, v.v[k]) : apply_binary(f, v.v[k], s);
    if (++rem == p.inner) {
      rem = 0;
      if (++c == p.channels) c = 0;
    }
    if (++pos == p.per_batch) {
      pos = 0;
      ++n;
    }
  }
}

template <class T, class F, int V>
__global__ void binary_indexed(const T* big, const T* small, T* y, int64_t n, F f, IndexedArgs p) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += stride) {
    Vec<T, V> v = reinterpret_cast<const Vec<T, V>*>(big)[i];
    indexed_vector<T, F, V>(small, v, i * V, f, p);
    reinterpret_cast<Vec<T, V>*>(y)[i] = v;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) {
    Vec<T, 1> v{{big[i]}};
    indexed_vector<T, F, 1>(small, v, i, f, p);
    y[i] = v.v[0];
  }
}

// The indexed case in NHWC with a per-(batch, channel) or per-channel operand whose channel
// count V divides (squeeze-excite's scale, a bias): blockIdx.y is the batch, and V
// consecutive channels of one pixel meet V consecutive entries of the small operand, one
// vector load each. 32-bit index math with one modulo per vector; binary_indexed's general
// walk spends three 64-bit divisions per vector, which made squeeze-excite's Mul bound by
// arithmetic rather than by memory.
template <class T, class F, int V>
__global__ void binary_channels_nhwc(const T* big, const T* small, T* y, uint32_t per_batch_vecs,
                                     uint32_t channel_vecs, int64_t per_batch, int64_t batch_stride,
                                     bool small_first, F f) {
  const int64_t n = blockIdx.y;
  const auto* in = reinterpret_cast<const Vec<T, V>*>(big + n * per_batch);
  auto* out = reinterpret_cast<Vec<T, V>*>(y + n * per_batch);
  const auto* sm = reinterpret_cast<const Vec<T, V>*>(small + n * batch_stride);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < per_batch_vecs;
       i += gridDim.x * blockDim.x) {
    Vec<T, V> v = in[i];
    const Vec<T, V> s = sm[i % channel_vecs];
#pragma unroll
    for (int k = 0; k < V; ++k)
      v.v[k] = small_first ? apply_binary(f, s.v[k], v.v[k]) : apply_binary(f, v.v[k], s.v[k]);
    out[i] = v;
  }
}

inline constexpr int kMaxBinaryRank = 6;

// y's physical dimensions (outermost first) and each operand's element stride along them.
struct StridedArgs {
  int rank;
  int64_t dims[kMaxBinaryRank];
  int64_t stride_a[kMaxBinaryRank];
  int64_t stride_b[kMaxBinaryRank];
};

template <class T, class F>
__global__ void binary_strided(const T* a, const T* b, T* y, int64_t n, F f, StridedArgs p) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rest / p.dims[d];
      const int64_t idx = rest - q * p.dims[d];
      rest = q;
      oa += idx * p.stride_a[d];
      ob += idx * p.stride_b[d];
    }
    y[i] = apply_binary(f, a[oa], b[ob]);
  }
}

}  // namespace kiln::cuda
