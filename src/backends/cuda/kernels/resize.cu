// Resize of rank-4 float activations over H and W, NHWC or plain: nearest, linear and cubic
// with every coordinate transformation of ops/resize.h. Scales/sizes/roi are constants, so
// prepare builds each resized axis's taps on the host exactly as the reference does (source
// coordinate, nearest rounding, linear or Keys-cubic weights, exclude_outside, edge clamp,
// tf_crop_and_resize extrapolation) and uploads them; the kernel only sums
//   y = Σ_i wy_i · Σ_j wx_j · x[iy_i, ix_j]
// in float, skipping zero-weight taps as the reference does. N and C must map to themselves.

#include <cmath>
#include <cstring>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/resize.h"

namespace kiln {
namespace {

// The taps of one output coordinate; count -1: outside (extrapolation_value).
struct ResizeTap {
  int32_t index[4];
  float weight[4];
  int32_t count;
};

struct ResizeGeom {
  int64_t n, c, h, w, oh, ow;
  float extrapolation;
};

// One output coordinate's taps along `axis`, following the reference's make_axis_taps.
Result<ResizeTap> axis_tap(const ResizeAttrs& a, const ResizeGeometry& g, size_t axis, int64_t o) {
  const int64_t len_in = g.input_shape[axis];
  ResizeTap tap{};
  const double x = resize_source_coord(a, g, axis, o);
  if (resize_is_outside(a, x, len_in)) {
    tap.count = -1;
    return tap;
  }
  std::vector<std::pair<int64_t, double>> taps;
  resize_taps(a, x, len_in, taps);
  for (const auto& [i, wt] : taps) {
    if (wt == 0) continue;
    const int64_t clamped = i < 0 ? 0 : (i >= len_in ? len_in - 1 : i);
    tap.index[tap.count] = static_cast<int32_t>(clamped);
    tap.weight[tap.count] = static_cast<float>(wt);
    ++tap.count;
  }
  return tap;
}

// The kernel resizes H and W only: N and C must be copied through (one tap of weight 1 at
// the same index), which every coordinate mode does at scale 1 except
// tf_half_pixel_for_nearest (o + 0.5) when rounding up or blending.
Status check_copies_n_and_c(const ResizeAttrs& a, const ResizeGeometry& g) {
  for (size_t axis = 0; axis < 2; ++axis) {
    if (g.output_shape[axis] != g.input_shape[axis])
      return unsupported("Resize of axis " + std::to_string(axis) + " (only H and W)");
    for (int64_t o = 0; o < g.output_shape[axis]; ++o) {
      KILN_ASSIGN_OR_RETURN(ResizeTap t, axis_tap(a, g, axis, o));
      if (t.count != 1 || t.index[0] != o || t.weight[0] != 1.f)
        return unsupported("Resize that moves data along axis " + std::to_string(axis));
    }
  }
  return Status::ok();
}

// Σ over the taps for V channels at unit stride from `base` (the (n, 0, 0, c) element);
// sy / sx: element strides of a row / column.
template <class T, int V>
__device__ __forceinline__ void resize_point(const T* base, int64_t sy, int64_t sx,
                                             const ResizeTap& ty, const ResizeTap& tx,
                                             float extrapolation, float (&acc)[V]) {
  if (ty.count < 0 || tx.count < 0) {
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = extrapolation;
    return;
  }
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.f;
  for (int i = 0; i < ty.count; ++i) {
    float row[V];
#pragma unroll
    for (int k = 0; k < V; ++k) row[k] = 0.f;
    for (int j = 0; j < tx.count; ++j) {
      float v[V];
      cuda::load_pack<T, V>(base + ty.index[i] * sy + tx.index[j] * sx, v);
#pragma unroll
      for (int k = 0; k < V; ++k) row[k] += tx.weight[j] * v[k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] += ty.weight[i] * row[k];
  }
}

template <class T, int V>
__global__ void resize_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y,
                                   const ResizeTap* __restrict__ taps, ResizeGeom g) {
  const int64_t cv = g.c / V;
  const int64_t total = g.n * g.oh * g.ow * cv;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i % cv) * V;
    int64_t r = i / cv;
    const int64_t ox = r % g.ow;
    r /= g.ow;
    const int64_t oy = r % g.oh, n = r / g.oh;
    float acc[V];
    resize_point<T, V>(x + n * g.h * g.w * g.c + c, g.w * g.c, g.c, taps[oy], taps[g.oh + ox],
                       g.extrapolation, acc);
    cuda::store_pack<T, V>(y + i * V, acc);
  }
}

template <class T>
__global__ void resize_plain_kernel(const T* __restrict__ x, T* __restrict__ y,
                                    const ResizeTap* __restrict__ taps, ResizeGeom g) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ox = i % g.ow;
    const int64_t r = i / g.ow;
    const int64_t oy = r % g.oh, plane = r / g.oh;
    float acc[1];
    resize_point<T, 1>(x + plane * g.h * g.w, g.w, 1, taps[oy], taps[g.oh + ox], g.extrapolation,
                       acc);
    y[i] = cuda::from_float<T>(acc[0]);
  }
}

class ResizeKernel final : public CudaKernel {
 public:
  ResizeKernel(std::string name, ResizeAttrs attrs) : name_(std::move(name)), attrs_(attrs) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 ? offered : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1 && i <= 3; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() != 4)
      return unsupported("Resize of rank " + std::to_string(x.shape.size()) + " (rank 4 only)");
    std::vector<TensorDesc> descs(in.size());
    for (size_t i = 0; i < in.size(); ++i) descs[i] = cuda::desc_of(in[i]);
    KILN_ASSIGN_OR_RETURN(ResizeGeometry g, resize_geometry(descs));
    KILN_RETURN_IF_ERROR(check_copies_n_and_c(attrs_, g));
    std::vector<ResizeTap> taps;
    for (size_t axis = 2; axis < 4; ++axis)
      for (int64_t o = 0; o < g.output_shape[axis]; ++o) {
        KILN_ASSIGN_OR_RETURN(ResizeTap t, axis_tap(attrs_, g, axis, o));
        taps.push_back(t);
      }
    const size_t bytes = taps.size() * sizeof(ResizeTap);
    const std::string key =
        name_ + "/resize/taps/" + std::to_string(cuda::content_hash(taps.data(), bytes));
    KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, taps.data(), bytes));
    taps_ = static_cast<const ResizeTap*>(dev);
    geom_ = ResizeGeom{x.shape[0],
                       x.shape[1],
                       x.shape[2],
                       x.shape[3],
                       g.output_shape[2],
                       g.output_shape[3],
                       static_cast<float>(attrs_.extrapolation_value)};
    layout_ = x.layout;
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, g.output_shape, nullptr, x.layout};
    return Status::ok();
  }

  std::string tactic() const override { return std::string("kiln resize ") + layout_name(layout_); }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (geom_.n * geom_.c * geom_.oh * geom_.ow == 0) return Status::ok();
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      constexpr int kThreads = 256;
      if (layout_ == Layout::kPlain) {
        resize_plain_kernel<T>
            <<<cuda::grid_blocks(geom_.n * geom_.c * geom_.oh * geom_.ow, kThreads), kThreads, 0,
               run.stream>>>(x, y, taps_, geom_);
        KILN_CUDA_LAUNCHED("resize_plain_kernel");
        return Status::ok();
      }
      const int v = cuda::pack_width(sizeof(T), geom_.c, {x, y});
      const unsigned blocks =
          cuda::grid_blocks(geom_.n * geom_.oh * geom_.ow * (geom_.c / v), kThreads);
      switch (v) {
        case 8:
          resize_nhwc_kernel<T, 8><<<blocks, kThreads, 0, run.stream>>>(x, y, taps_, geom_);
          break;
        case 4:
          resize_nhwc_kernel<T, 4><<<blocks, kThreads, 0, run.stream>>>(x, y, taps_, geom_);
          break;
        case 2:
          resize_nhwc_kernel<T, 2><<<blocks, kThreads, 0, run.stream>>>(x, y, taps_, geom_);
          break;
        default:
          resize_nhwc_kernel<T, 1><<<blocks, kThreads, 0, run.stream>>>(x, y, taps_, geom_);
          break;
      }
      KILN_CUDA_LAUNCHED("resize_nhwc_kernel");
      return Status::ok();
    });
  }

 private:
  std::string name_;
  ResizeAttrs attrs_;
  const ResizeTap* taps_ = nullptr;
  ResizeGeom geom_{};
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_resize(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 (X) is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("Resize of ") + dtype_name(x->dtype) + " (float only on CUDA)");
  const int64_t rank = cuda::known_rank(node, 0);
  if (rank != -1 && rank != 4)
    return unsupported("Resize of rank " + std::to_string(rank) + " (rank 4 only)");
  for (size_t i = 1; i <= 3; ++i)
    if (node.input(i) && !node.input(i)->is_constant())
      return unsupported("input " + std::to_string(i) + " (roi/scales/sizes) is not a constant");
  KILN_ASSIGN_OR_RETURN(ResizeAttrs attrs, parse_resize_attrs(node.attrs));
  // With a static input shape, a resize of N or C is found here and left to the CPU
  // (prepare would have to fail).
  Shape shape;
  if (x->static_shape(&shape) && shape.size() == 4) {
    std::vector<TensorDesc> descs(node.inputs.size());
    descs[0] = TensorDesc{x->dtype, shape, nullptr};
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (const Value* v = node.input(i))
        descs[i] = TensorDesc{v->constant.dtype(), v->constant.shape(), &v->constant};
    Result<ResizeGeometry> g = resize_geometry(descs);
    if (g.is_ok()) KILN_RETURN_IF_ERROR(check_copies_n_and_c(attrs, *g));
  }
  return std::unique_ptr<CudaKernel>(new ResizeKernel(node.name, attrs));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Resize, make_resize);

}  // namespace kiln
