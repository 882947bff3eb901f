// oneDNN resampling for Resize in fp32 on 3-D to 5-D tensors (1 to 3 spatial axes), where
// oneDNN's definition is ONNX's:
//  - linear with half_pixel coordinates (pytorch_half_pixel where no resized axis has length
//    1): oneDNN's linear resampling maps x_out to (x_out + 0.5) / factor - 0.5 and clamps at
//    the edges, as ONNX does. oneDNN's factor is output/input; ONNX's is the scale the node
//    gives, which differs where input·scale is fractional (5 × 1.5 → 7 elements): those run
//    on the reference kernel (measured: oneDNN 2.6 uses output/input even when given other
//    factors);
//  - nearest where every resized axis is scaled up by a whole factor, with half_pixel (or
//    pytorch_half_pixel) and a rounding nearest_mode, or asymmetric with floor: all of them
//    read input index floor(x_out / factor) there, as oneDNN's nearest does.
// Batch and channels are never resized. Everything else (cubic, align_corners, crop and
// resize, fractional nearest) runs on the reference kernel. Scales or sizes computed in the
// graph (from a Shape with a symbolic batch, as segmentation exports have) are read when the
// kernel is prepared; their values are part of what it was prepared for (DnnlKernel).

#include <cmath>
#include <string>

#include "backends/cpu/dnnl_common.h"
#include "ops/resize.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

bool whole(double v) { return v >= 1 && std::floor(v) == v; }

// oneDNN's factors for the spatial axes when its definition matches; empty otherwise.
std::vector<float> onednn_factors(const ResizeAttrs& a, const ResizeGeometry& g) {
  const size_t rank = g.input_shape.size();
  if (rank < 3 || rank > 5) return {};
  for (size_t d = 0; d < 2; ++d)
    if (g.output_shape[d] != g.input_shape[d]) return {};
  std::vector<float> factors;
  bool one_long = false, all_whole = true;
  for (size_t d = 2; d < rank; ++d) {
    const double out = static_cast<double>(g.output_shape[d]);
    if (std::fabs(g.resized_length[d] - out) > 1e-6 * out) return {};
    factors.push_back(static_cast<float>(out / static_cast<double>(g.input_shape[d])));
    one_long |= g.output_shape[d] == 1;
    all_whole &= whole(g.scale[d]) &&
                 g.output_shape[d] == g.input_shape[d] * static_cast<int64_t>(g.scale[d]);
  }
  const ResizeCoordMode c = a.coord_mode;
  const bool half_pixel =
      c == ResizeCoordMode::kHalfPixel || (c == ResizeCoordMode::kPytorchHalfPixel && !one_long);
  if (a.mode == ResizeMode::kLinear) return half_pixel ? factors : std::vector<float>{};
  if (a.mode != ResizeMode::kNearest || !all_whole) return {};
  const ResizeNearestMode n = a.nearest_mode;
  const bool rounding =
      n == ResizeNearestMode::kRoundPreferFloor || n == ResizeNearestMode::kRoundPreferCeil;
  if ((half_pixel && rounding) ||
      (c == ResizeCoordMode::kAsymmetric && n == ResizeNearestMode::kFloor))
    return factors;
  return {};
}

class DnnlResizeKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    auto attrs = parse_resize_attrs(node_.attrs);
    if (!attrs.is_ok()) return false;
    auto geo = resize_geometry(in);
    if (!geo.is_ok()) return false;
    if (!all_positive(in[0].shape) || !all_positive(out[0].shape)) return false;
    const std::vector<float> factors = onednn_factors(*attrs, *geo);
    if (factors.empty()) return false;
    src_md_ = plain_desc(in[0].shape);
    dst_md_ = plain_desc(out[0].shape);
    // Channels last (nwc, nhwc, ndhwc): oneDNN 2.6's simple resampling runs 3.6× faster there
    // than on the plain layout (7.6 → 2.1 ms for [1,21,14,14] → 224², 2 threads), more than
    // the two reorders cost (0.2 ms).
    const size_t rank = in[0].shape.size();
    const tag last = rank == 3 ? tag::acb : rank == 4 ? tag::acdb : tag::acdeb;
    const memory::desc src_work(to_dims(in[0].shape), memory::data_type::f32, last);
    const memory::desc dst_work(to_dims(out[0].shape), memory::data_type::f32, last);
    const auto alg = attrs->mode == ResizeMode::kLinear ? dnnl::algorithm::resampling_linear
                                                        : dnnl::algorithm::resampling_nearest;
    dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, factors, src_work,
                                        dst_work);
    dnnl::resampling_forward::primitive_desc pd(desc, cpu_engine());
    // oneDNN 2.6's JIT resampling writes out of bounds for some shapes in either layout (it
    // crashed on [1,21,28,28] → [1,21,224,224] plain and [4,16,28,28] → [4,16,224,224]
    // channels-last, linear, and ran others): its simple implementation is taken instead.
    while (std::string(pd.impl_info_str()).rfind("jit", 0) == 0)
      if (!pd.next_impl()) return false;
    prim_ = dnnl::resampling_forward(pd);
    src_mem_ = memory(src_work, cpu_engine());
    dst_mem_ = memory(dst_work, cpu_engine());
    to_work_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src_md_, cpu_engine(), src_work));
    from_work_ =
        dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), dst_work, cpu_engine(), dst_md_));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    memory src(src_md_, cpu_engine(), const_cast<void*>(in[0]->raw()));
    memory dst(dst_md_, cpu_engine(), out[0]->raw());
    to_work_.execute(stream_, src, src_mem_);
    prim_.execute(stream_, {{DNNL_ARG_SRC, src_mem_}, {DNNL_ARG_DST, dst_mem_}});
    from_work_.execute(stream_, dst_mem_, dst);
    stream_.wait();
  }

 private:
  memory::desc src_md_, dst_md_;  // plain, as the runtime's tensors hold them
  memory src_mem_, dst_mem_;      // channels-last scratch
  dnnl::reorder to_work_, from_work_;
  dnnl::resampling_forward prim_;
  dnnl::stream stream_;
};

}  // namespace

bool resize_supported(const Node& node) {
  if (node.inputs.empty() || node.outputs.size() != 1 || !node.epilogue.empty()) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.outputs[0])) return false;
  auto attrs = parse_resize_attrs(node.attrs);
  return attrs.is_ok() &&
         (attrs->mode == ResizeMode::kLinear || attrs->mode == ResizeMode::kNearest);
}

std::unique_ptr<Kernel> make_resize_kernel(const Node& node, int threads) {
  return std::make_unique<DnnlResizeKernel>(node, threads);
}

}  // namespace kiln::dnnl_cpu
