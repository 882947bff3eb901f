// ConvTranspose: the adjoint of Conv (a.k.a. deconvolution), N-d, grouped. The reference
// kernel scatters each input row into output rows; its innermost loop walks the contiguous
// last input axis, so the common stride-1 case vectorizes.

#include "ops/conv_transpose.h"

#include <algorithm>
#include <type_traits>

#include "ops/op_util.h"

namespace kiln {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Advances the row-major multi-index idx over dims (both of one size), wrapping to zeros.
void advance(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return;
    idx[d] = 0;
  }
}

}  // namespace

Result<ConvTransposeAttrs> parse_conv_transpose_attrs(const Attributes& attrs) {
  ConvTransposeAttrs a;
  KILN_ASSIGN_OR_RETURN(a.conv, parse_conv_attrs(attrs));
  a.output_padding = attrs.get_ints("output_padding");
  a.output_shape = attrs.get_ints("output_shape");
  for (int64_t p : a.output_padding)
    if (p < 0)
      return invalid_argument("output_padding " + shape_str(a.output_padding) + " must be ≥ 0");
  for (int64_t o : a.output_shape)
    if (o < 0)
      return invalid_argument("output_shape " + shape_str(a.output_shape) + " must be ≥ 0");
  return a;
}

Result<ConvGeometry> conv_transpose_geometry(const ConvTransposeAttrs& a, const Shape& x,
                                             const Shape& w) {
  KILN_RETURN_IF_ERROR(check_conv_ranks(x, w, a.conv.kernel_shape));
  const int64_t rank = static_cast<int64_t>(x.size()) - 2;
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[1] * a.conv.group;
  g.group = a.conv.group;
  g.in_spatial.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (g.in_channels >= 0 && g.in_channels != w[0])
    return invalid_argument("X " + shape_str(x) + " has " + std::to_string(g.in_channels) +
                            " channels but W " + shape_str(w) + " expects " + std::to_string(w[0]) +
                            " (W is [C, M/group, kernel...])");
  if (w[0] % a.conv.group != 0)
    return invalid_argument("W " + shape_str(w) + ": input channels " + std::to_string(w[0]) +
                            " not divisible by group " + std::to_string(a.conv.group));
  KILN_ASSIGN_OR_RETURN(g.strides, conv_axis_values(a.conv.strides, rank, 1, "strides"));
  KILN_ASSIGN_OR_RETURN(g.dilations, conv_axis_values(a.conv.dilations, rank, 1, "dilations"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                        conv_axis_values(a.conv.pads, 2 * rank, 0, "pads"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_pad,
                        conv_axis_values(a.output_padding, rank, 0, "output_padding"));
  // output_shape may list only the spatial dims (the spec) or the whole shape (older models).
  std::vector<int64_t> out_shape = a.output_shape;
  if (static_cast<int64_t>(out_shape.size()) == rank + 2)
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  KILN_ASSIGN_OR_RETURN(out_shape, conv_axis_values(out_shape, rank, -1, "output_shape"));
  const bool same =
      a.conv.auto_pad == AutoPad::kSameUpper || a.conv.auto_pad == AutoPad::kSameLower;

  g.pad_begin.assign(pads.begin(), pads.begin() + rank);
  g.pad_end.assign(pads.begin() + rank, pads.end());
  g.out_spatial.assign(rank, -1);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t in = g.in_spatial[i], s = g.strides[i];
    // Size of the full scatter result, before any cropping by pads.
    const int64_t full = s * (in - 1) + out_pad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (a.conv.auto_pad == AutoPad::kValid) g.pad_begin[i] = g.pad_end[i] = 0;
    int64_t out = out_shape[i];
    if (out < 0 && same && in >= 0) out = in * s;
    if (out >= 0) {
      if (in < 0) {
        g.out_spatial[i] = out;
        continue;
      }
      const int64_t total = full - out;
      if (total < 0) {
        g.pad_begin[i] = 0;
      } else {
        g.pad_begin[i] = a.conv.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      }
      g.pad_end[i] = total - g.pad_begin[i];
      g.out_spatial[i] = out;
      continue;
    }
    if (in < 0) continue;
    g.out_spatial[i] = full - g.pad_begin[i] - g.pad_end[i];
    if (g.out_spatial[i] < 1)
      return invalid_argument("spatial axis " + std::to_string(i) + ": pads " + shape_str(pads) +
                              " crop the whole output (X " + shape_str(x) + ", W " + shape_str(w) +
                              ", full size " + std::to_string(full) + ")");
  }
  return g;
}

namespace {

Status infer_conv_transpose(const Node& node, const std::vector<TensorDesc>& in,
                            std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  const DataType dt = in[0].dtype;
  if (!dtype_is_float(dt))
    return unsupported(std::string("ConvTranspose on ") + dtype_name(dt) + " (takes float types)");
  KILN_RETURN_IF_ERROR(check_same_dtypes(in));
  KILN_ASSIGN_OR_RETURN(ConvTransposeAttrs attrs, parse_conv_transpose_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_transpose_geometry(attrs, in[0].shape, in[1].shape));
  if (in.size() > 2 && in[2].present() && in[2].shape != Shape{g.out_channels})
    return invalid_argument("bias B " + shape_str(in[2].shape) + " must have shape [" +
                            std::to_string(g.out_channels) + "] (W " + shape_str(in[1].shape) +
                            ")");
  out[0] = {dt, g.output_shape()};
  return Status::ok();
}

template <class A>
void conv_transpose_forward(const ConvGeometry& g, const A* x, const A* w, const A* b, A* y) {
  const int64_t rank = g.spatial_rank(), last = rank - 1;
  int64_t in_plane = 1, out_plane = 1, k_size = 1;
  for (int64_t i = 0; i < rank; ++i) {
    in_plane *= g.in_spatial[i];
    out_plane *= g.out_spatial[i];
    k_size *= g.kernel[i];
  }
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oc = 0; oc < g.out_channels; ++oc)
      std::fill(y + (n * g.out_channels + oc) * out_plane,
                y + (n * g.out_channels + oc + 1) * out_plane, b ? b[oc] : A(0));
  if (in_plane == 0 || out_plane == 0) return;
  const int64_t out_w = g.out_spatial[last], in_w = g.in_spatial[last], kw = g.kernel[last];
  const int64_t sw = g.strides[last];
  const int64_t rows = in_plane / in_w, k_outer = k_size / kw;

  // For each kernel position kx on the last axis: input x range [lo, hi) whose output
  // x = ix·stride + off lands inside Y (the rest is cropped by the pads).
  std::vector<int64_t> x_lo(kw), x_hi(kw), x_off(kw);
  for (int64_t kx = 0; kx < kw; ++kx) {
    x_off[kx] = kx * g.dilations[last] - g.pad_begin[last];
    x_lo[kx] = std::min(in_w, std::max<int64_t>(0, ceil_div(-x_off[kx], sw)));
    x_hi[kx] = std::max(x_lo[kx], std::min(in_w, floor_div(out_w - 1 - x_off[kx], sw) + 1));
  }
  // For each (outer kernel position, input row): offset of the output row it feeds, or -1.
  std::vector<int64_t> row_out(k_outer * rows, -1);
  // Multi-indices over the outer axes of the kernel and of the input.
  const std::vector<int64_t> k_dims(g.kernel.begin(), g.kernel.end() - 1);
  const std::vector<int64_t> i_dims(g.in_spatial.begin(), g.in_spatial.end() - 1);
  std::vector<int64_t> kidx(last, 0), iidx(last, 0);
  for (int64_t ko = 0; ko < k_outer; ++ko) {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0, ok = 1;
      for (int64_t d = 0; d < last && ok; ++d) {
        const int64_t pos = iidx[d] * g.strides[d] - g.pad_begin[d] + kidx[d] * g.dilations[d];
        ok = pos >= 0 && pos < g.out_spatial[d];
        off = off * g.out_spatial[d] + pos;
      }
      if (ok) row_out[ko * rows + r] = off * out_w;
      advance(iidx, i_dims);
    }
    advance(kidx, k_dims);
  }

  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      const int64_t grp = oc / mg, m = oc % mg;
      A* yp = y + (n * g.out_channels + oc) * out_plane;
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t ic = grp * cg + ci;
        const A* xp = x + (n * g.in_channels + ic) * in_plane;
        const A* wp = w + (ic * mg + m) * k_size;
        for (int64_t ko = 0; ko < k_outer; ++ko) {
          const A* wk = wp + ko * kw;
          const int64_t* rout = row_out.data() + ko * rows;
          for (int64_t r = 0; r < rows; ++r) {
            if (rout[r] < 0) continue;
            const A* xr = xp + r * in_w;
            A* yr = yp + rout[r];
            for (int64_t kx = 0; kx < kw; ++kx) {
              const A wv = wk[kx];
              const int64_t lo = x_lo[kx], hi = x_hi[kx], off = x_off[kx];
              if (sw == 1) {
                A* ys = yr + lo + off;
                const A* xs = xr + lo;
                for (int64_t i = 0; i < hi - lo; ++i) ys[i] += wv * xs[i];
              } else {
                for (int64_t ix = lo; ix < hi; ++ix) yr[ix * sw + off] += wv * xr[ix];
              }
            }
          }
        }
      }
    }
  }
}

template <class T>
std::vector<float> to_float_vector(const Tensor* t) {
  std::vector<float> v(t ? t->numel() : 0);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t->data<T>()[i]);
  return v;
}

Status run_conv_transpose(const Node& node, const std::vector<const Tensor*>& in,
                          const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ConvTransposeAttrs attrs, parse_conv_transpose_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ConvGeometry g,
                        conv_transpose_geometry(attrs, in[0]->shape(), in[1]->shape()));
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  return dispatch_float(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      conv_transpose_forward<T>(g, in[0]->data<T>(), in[1]->data<T>(),
                                bias ? bias->data<T>() : nullptr, out[0]->data<T>());
    } else {
      // Half / BFloat16: compute in float, round once at the end.
      std::vector<float> x = to_float_vector<T>(in[0]), w = to_float_vector<T>(in[1]);
      std::vector<float> b = to_float_vector<T>(bias), y(out[0]->numel());
      conv_transpose_forward<float>(g, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
      for (size_t i = 0; i < y.size(); ++i) out[0]->data<T>()[i] = T(y[i]);
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(ConvTranspose, infer_conv_transpose, run_conv_transpose);

}  // namespace kiln
