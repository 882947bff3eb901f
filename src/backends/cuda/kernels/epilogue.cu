// launch_epilogue (launch.h): data = act(data + bias[c] + residual) in place, one pass over
// the tensor with 16-byte accesses. Used where a library cannot fuse the epilogue itself.
//
// The channel of flat element e is (e / inner) % C, with inner = 1 in NHWC and the product
// of the dimensions after C in plain layout; a thread computes it once per vector and
// steps it along, so the per-element cost is a compare.
#include <cuda_fp16.h>

#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/launch.h"

namespace kiln {

namespace {

using cuda::activate;
using cuda::load_acc;
using cuda::store_as;
using cuda::Vec;

struct EpilogueArgs {
  const float* bias;  // C values or nullptr
  int64_t inner;      // elements per channel step (1 in NHWC)
  int64_t channels;
  float alpha;
  float beta;
};

template <class T, Activation A, int V>
__device__ __forceinline__ void epilogue_vector(Vec<T, V>& d, const Vec<T, V>* r, int64_t e,
                                                const EpilogueArgs& a) {
  int64_t c = 0, rem = 0;
  if (a.bias) {
    const int64_t q = e / a.inner;
    rem = e - q * a.inner;
    c = q % a.channels;
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float x = load_acc(d.v[k]);
    if (a.bias) {
      x += __ldg(a.bias + c);
      if (++rem == a.inner) {
        rem = 0;
        if (++c == a.channels) c = 0;
      }
    }
    if (r) x += load_acc(r->v[k]);
    d.v[k] = store_as<T>(activate<A>(x, a.alpha, a.beta));
  }
}

template <class T, Activation A, int V>
__global__ void epilogue_kernel(T* data, const T* residual, int64_t n, EpilogueArgs a) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  auto* dv = reinterpret_cast<Vec<T, V>*>(data);
  const auto* rv = reinterpret_cast<const Vec<T, V>*>(residual);
  for (int64_t i = first; i < nvec; i += stride) {
    Vec<T, V> d = dv[i];
    Vec<T, V> r;
    if (rv) r = rv[i];
    epilogue_vector<T, A, V>(d, rv ? &r : nullptr, i * V, a);
    dv[i] = d;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) {
    Vec<T, 1> d{{data[i]}};
    Vec<T, 1> r{{residual ? residual[i] : data[i]}};
    epilogue_vector<T, A, 1>(d, residual ? &r : nullptr, i, a);
    data[i] = d.v[0];
  }
}

template <class T>
Status epilogue_typed(int64_t n, T* data, const T* residual, Activation act,
                      const EpilogueArgs& args, cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr int kV = static_cast<int>(16 / sizeof(T));
  const bool vec = cuda::aligned_to(data, 16) && (!residual || cuda::aligned_to(residual, 16));
  return cuda::dispatch_activation(act, [&](auto a) -> Status {
    constexpr Activation kAct = decltype(a)::value;
    if (vec) {
      epilogue_kernel<T, kAct, kV>
          <<<cuda::grid_for(n / kV + 1, kThreads), kThreads, 0, stream>>>(data, residual, n, args);
    } else {
      epilogue_kernel<T, kAct, 1>
          <<<cuda::grid_for(n, kThreads), kThreads, 0, stream>>>(data, residual, n, args);
    }
    KILN_CUDA_LAUNCHED("epilogue");
    return Status::ok();
  });
}

}  // namespace

Status launch_epilogue(const TensorDesc& desc, void* data, const float* bias, const void* residual,
                       Activation act, float alpha, float beta, cudaStream_t stream) {
  const std::string what = std::string("epilogue on ") + dtype_name(desc.dtype) + " " +
                           layout_name(desc.layout) + " " + shape_str(desc.shape);
  const Shape& s = desc.shape;
  if (desc.layout == Layout::kNHWC && s.size() != 4)
    return invalid_argument(what + ": NHWC needs rank 4");
  if (bias && s.size() < 2) return invalid_argument(what + ": a bias needs a channel axis");
  const int64_t n = desc.numel();
  if (n == 0) return Status::ok();
  EpilogueArgs args{bias, 1, 1, alpha, beta};
  if (bias) {
    args.channels = s[1];
    if (desc.layout == Layout::kPlain)
      for (size_t d = 2; d < s.size(); ++d) args.inner *= s[d];
  }
  return cuda::dispatch_float(desc.dtype, "epilogue",
                              [&](auto tag) -> Status {
                                using T = decltype(tag);
                                return epilogue_typed(n, static_cast<T*>(data),
                                                      static_cast<const T*>(residual), act, args,
                                                      stream);
                              })
      .with_context(what);
}

}  // namespace kiln
