// Resize in fp32 for the CPU backend, on kiln's own loops rather than oneDNN's resampling:
// oneDNN 2.6's JIT resampling writes out of bounds for some shapes in either layout (it
// crashed on [1,21,28,28] → [1,21,224,224] plain and [4,16,28,28] → [4,16,224,224]
// channels-last, linear), and its simple implementation is slow (7.6 ms for
// [1,21,14,14] → 224² on 2 threads, 2.1 ms channels-last plus reorders).
//
// The coordinate math is the reference kernel's (resize_axis_taps in ops/resize.h), so every
// mode, coordinate transform and rounding rule ONNX defines runs here, cubic and crop-and-
// resize included. What the kernel adds: the taps of the last two axes are precomputed once
// per prepared shape, the axes before them must map each index to itself (batch and
// channels are not resized), the two axes are resized in separate passes (run() below), and
// rows are spread over the threads. Each element sums, like the reference, over the rows'
// taps of (row weight × sum over the columns' taps of (column weight × x)), so it matches
// the reference up to the compiler's use of fused multiply-adds.

#include <omp.h>

#include <algorithm>

#include "backends/cpu/dnnl_common.h"
#include "ops/resize.h"

namespace kiln::dnnl_cpu {

namespace {

// Whether `t` maps every index of its axis to itself with weight 1 (an axis not resized).
bool identity(const ResizeAxisTaps& t, int64_t len, int64_t stride) {
  for (int64_t o = 0; o < len; ++o) {
    if (t.outside[o] || t.begin[o + 1] - t.begin[o] != 1) return false;
    if (t.offset[t.begin[o]] != o * stride || t.weight[t.begin[o]] != 1.0) return false;
  }
  return true;
}

// One axis's taps in the form the loop reads: float weights, contiguous per output index.
struct Taps {
  std::vector<int64_t> begin, offset;
  std::vector<float> weight;
  std::vector<uint8_t> outside;
};

Taps to_loop_taps(const ResizeAxisTaps& t) {
  Taps r{t.begin, t.offset, {}, t.outside};
  r.weight.assign(t.weight.begin(), t.weight.end());
  return r;
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
    const Shape& xs = in[0].shape;
    const Shape& ys = out[0].shape;
    if (xs.size() < 2 || !all_positive(xs) || !all_positive(ys)) return false;
    const size_t rank = xs.size();
    for (size_t d = 0; d + 2 < rank; ++d)
      if (!identity(resize_axis_taps(*attrs, *geo, d, 1), xs[d], 1)) return false;
    in_h_ = xs[rank - 2];
    in_w_ = xs[rank - 1];
    out_h_ = ys[rank - 2];
    out_w_ = ys[rank - 1];
    planes_ = 1;
    for (size_t d = 0; d + 2 < rank; ++d) planes_ *= ys[d];
    rows_ = to_loop_taps(resize_axis_taps(*attrs, *geo, rank - 2, 1));  // input row indices
    cols_ = to_loop_taps(resize_axis_taps(*attrs, *geo, rank - 1, 1));
    outside_cols_.clear();
    for (int64_t ow = 0; ow < out_w_; ++ow)
      if (cols_.outside[ow]) outside_cols_.push_back(ow);
    tmp_.resize(static_cast<size_t>(planes_ * in_h_ * out_w_));
    extrapolated_ = static_cast<float>(attrs->extrapolation_value);
    return true;
  }

  // Separable, in two passes over each plane, both spread over the threads:
  //  1. every input row → tmp row of out_w: inner[ow] = Σ_j col_weight[j] · x[row][col_j];
  //  2. every output row: y[ow] = Σ_i row_weight[i] · tmp[row_i][ow], a weighted sum of whole
  //     rows that the compiler vectorizes.
  // Per element that is the reference's order of operations (rows outside, columns inside).
  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    const float* x = in[0]->as<float>();
    float* y = out[0]->as<float>();
    float* tmp = tmp_.data();
    const int64_t in_rows = planes_ * in_h_, out_rows = planes_ * out_h_;
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < in_rows; ++r) {
        const float* xr = x + r * in_w_;
        float* tr = tmp + r * out_w_;
        for (int64_t ow = 0; ow < out_w_; ++ow) {
          float inner = 0;
          for (int64_t j = cols_.begin[ow]; j < cols_.begin[ow + 1]; ++j)
            inner += cols_.weight[j] * xr[cols_.offset[j]];
          tr[ow] = inner;
        }
      }
#pragma omp for schedule(static)
      for (int64_t r = 0; r < out_rows; ++r) {
        const int64_t p = r / out_h_, oh = r % out_h_;
        float* yr = y + r * out_w_;
        if (rows_.outside[oh]) {
          std::fill(yr, yr + out_w_, extrapolated_);
          continue;
        }
        const float* plane = tmp + p * in_h_ * out_w_;
        const int64_t i0 = rows_.begin[oh], i1 = rows_.begin[oh + 1];
        if (i1 - i0 == 2) {  // linear: one pass over the output row
          const float w0 = rows_.weight[i0], w1 = rows_.weight[i0 + 1];
          const float* t0 = plane + rows_.offset[i0] * out_w_;
          const float* t1 = plane + rows_.offset[i0 + 1] * out_w_;
          for (int64_t ow = 0; ow < out_w_; ++ow) yr[ow] = w0 * t0[ow] + w1 * t1[ow];
        } else {
          std::fill(yr, yr + out_w_, 0.f);
          for (int64_t i = i0; i < i1; ++i) {
            const float w = rows_.weight[i];
            const float* tr = plane + rows_.offset[i] * out_w_;
            for (int64_t ow = 0; ow < out_w_; ++ow) yr[ow] += w * tr[ow];
          }
        }
        for (int64_t ow : outside_cols_) yr[ow] = extrapolated_;
      }
    }
  }

 private:
  int64_t planes_ = 0, in_h_ = 0, in_w_ = 0, out_h_ = 0, out_w_ = 0;
  Taps rows_, cols_;
  std::vector<int64_t> outside_cols_;  // tf_crop_and_resize: columns outside the input
  std::vector<float> tmp_;             // pass 1's rows: planes × in_h × out_w
  float extrapolated_ = 0.f;
};

}  // namespace

static bool resize_supported(const Node& node) {
  if (node.inputs.empty() || node.outputs.size() != 1 || !node.epilogue.empty()) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.outputs[0])) return false;
  return parse_resize_attrs(node.attrs).is_ok();
}

static std::unique_ptr<Kernel> make_resize_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlResizeKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(resize, resize_supported, make_resize_kernel, OpKind::Resize);

}  // namespace kiln::dnnl_cpu
