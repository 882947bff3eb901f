// Conv: N-d grouped convolution with strides, dilations, pads / auto_pad and optional
// bias. The reference kernel favours clarity but is used on whole ResNet-50 models, so its
// loops run over whole output rows: for each (n, oc, ic, kernel position, output row) the
// innermost loop walks the contiguous last output axis, which compilers vectorize.

#include "ops/conv.h"

#include <algorithm>
#include <type_traits>

#include "ops/op_util.h"

namespace kiln {

namespace {

std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

// Floor/ceil of a / b for b > 0 and any sign of a.
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

Result<ConvAttrs> parse_conv_attrs(const Attributes& attrs) {
  ConvAttrs a;
  KILN_ASSIGN_OR_RETURN(a.auto_pad, parse_auto_pad(attrs.get_string("auto_pad", "NOTSET")));
  a.group = attrs.get_int("group", 1);
  if (a.group < 1) return invalid_argument("group " + std::to_string(a.group) + " must be ≥ 1");
  a.kernel_shape = attrs.get_ints("kernel_shape");
  a.strides = attrs.get_ints("strides");
  a.dilations = attrs.get_ints("dilations");
  a.pads = attrs.get_ints("pads");
  for (int64_t k : a.kernel_shape)
    if (k < 1) return invalid_argument("kernel_shape " + ints_str(a.kernel_shape) + " must be ≥ 1");
  for (int64_t s : a.strides)
    if (s < 1) return invalid_argument("strides " + ints_str(a.strides) + " must be ≥ 1");
  for (int64_t d : a.dilations)
    if (d < 1) return invalid_argument("dilations " + ints_str(a.dilations) + " must be ≥ 1");
  for (int64_t p : a.pads)
    if (p < 0) return invalid_argument("pads " + ints_str(a.pads) + " must be ≥ 0");
  if (a.pads.size() % 2 != 0)
    return invalid_argument("pads " + ints_str(a.pads) + " must have 2 entries per spatial axis");
  return a;
}

Result<std::vector<int64_t>> conv_axis_values(const std::vector<int64_t>& values, int64_t rank,
                                              int64_t def, const char* what) {
  if (values.empty()) return std::vector<int64_t>(rank, def);
  if (static_cast<int64_t>(values.size()) != rank)
    return invalid_argument(std::string(what) + " " + ints_str(values) + " has " +
                            std::to_string(values.size()) + " entries for " + std::to_string(rank) +
                            " spatial axes");
  return values;
}

Status check_conv_ranks(const Shape& x, const Shape& w, const std::vector<int64_t>& kernel_shape) {
  if (x.size() < 3)
    return invalid_argument("input X " + shape_str(x) + " must have rank ≥ 3 ([N, C, spatial...])");
  if (w.size() != x.size())
    return invalid_argument("weight W " + shape_str(w) + " must have the rank of X " +
                            shape_str(x));
  if (!kernel_shape.empty() &&
      !std::equal(kernel_shape.begin(), kernel_shape.end(), w.begin() + 2, w.end()))
    return invalid_argument("kernel_shape " + ints_str(kernel_shape) +
                            " differs from the spatial dims of W " + shape_str(w));
  return Status::ok();
}

Shape ConvGeometry::output_shape() const {
  Shape s = {batch, out_channels};
  s.insert(s.end(), out_spatial.begin(), out_spatial.end());
  return s;
}

Result<ConvGeometry> conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w) {
  KILN_RETURN_IF_ERROR(check_conv_ranks(x, w, a.kernel_shape));
  const int64_t rank = static_cast<int64_t>(x.size()) - 2;
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[0];
  g.group = a.group;
  g.in_spatial.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (g.out_channels % a.group != 0)
    return invalid_argument("W " + shape_str(w) + ": output channels " +
                            std::to_string(g.out_channels) + " not divisible by group " +
                            std::to_string(a.group));
  if (g.in_channels >= 0 && g.in_channels != w[1] * a.group)
    return invalid_argument("X " + shape_str(x) + " has " + std::to_string(g.in_channels) +
                            " channels but W " + shape_str(w) + " × group " +
                            std::to_string(a.group) + " expects " + std::to_string(w[1] * a.group));
  KILN_ASSIGN_OR_RETURN(g.strides, conv_axis_values(a.strides, rank, 1, "strides"));
  KILN_ASSIGN_OR_RETURN(g.dilations, conv_axis_values(a.dilations, rank, 1, "dilations"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, conv_axis_values(a.pads, 2 * rank, 0, "pads"));
  g.pad_begin.assign(pads.begin(), pads.begin() + rank);
  g.pad_end.assign(pads.begin() + rank, pads.end());
  g.out_spatial.assign(rank, -1);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t in = g.in_spatial[i], s = g.strides[i];
    const int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;  // dilated kernel extent
    if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
      if (in < 0) continue;
      const int64_t out = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      const int64_t small = total / 2;
      g.pad_begin[i] = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      g.out_spatial[i] = out;
      continue;
    }
    if (a.auto_pad == AutoPad::kValid) g.pad_begin[i] = g.pad_end[i] = 0;
    if (in < 0) continue;
    const int64_t padded = in + g.pad_begin[i] + g.pad_end[i];
    if (span > padded)
      return invalid_argument("spatial axis " + std::to_string(i) + ": kernel extent " +
                              std::to_string(span) + " (W " + shape_str(w) + ", dilation " +
                              std::to_string(g.dilations[i]) + ") exceeds padded input " +
                              std::to_string(padded) + " (X " + shape_str(x) + ", pads " +
                              ints_str(pads) + ")");
    g.out_spatial[i] = (padded - span) / s + 1;
  }
  return g;
}

namespace {

Status infer_conv(const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  const DataType dt = in[0].dtype;
  if (!dtype_is_float(dt))
    return unsupported(std::string("Conv on ") + dtype_name(dt) + " (takes float types)");
  KILN_RETURN_IF_ERROR(check_same_dtypes(in));
  KILN_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(attrs, in[0].shape, in[1].shape));
  if (in.size() > 2 && in[2].present() && in[2].shape != Shape{g.out_channels})
    return invalid_argument("bias B " + shape_str(in[2].shape) + " must have shape [" +
                            std::to_string(g.out_channels) + "] (W " + shape_str(in[1].shape) +
                            ")");
  out[0] = {dt, g.output_shape()};
  return Status::ok();
}

// Where output pixels read their input, computed once per run. Spatial axes are split into
// rows (every axis but the last) and the contiguous last axis.
struct RowMap {
  int64_t in_plane = 1, out_plane = 1, k_size = 1;
  int64_t rows = 0, k_outer = 0;                // output rows; kernel positions on the outer axes
  int64_t out_w = 0, in_w = 0, kw = 0, sw = 1;  // last axis: sizes and stride
  // Per kernel position kx on the last axis: output x range [lo, hi) whose input
  // x = ox·stride + off falls inside X (outside is zero padding, contributing nothing).
  std::vector<int64_t> x_lo, x_hi, x_off;
  // Per (outer kernel position, output row): offset in an input plane of the input row
  // it reads, or -1 when that row lies in the padding.
  std::vector<int64_t> row_in;
};

RowMap make_row_map(const ConvGeometry& g) {
  RowMap m;
  const int64_t rank = g.spatial_rank(), last = rank - 1;
  for (int64_t i = 0; i < rank; ++i) {
    m.in_plane *= g.in_spatial[i];
    m.out_plane *= g.out_spatial[i];
    m.k_size *= g.kernel[i];
  }
  if (m.out_plane == 0) return m;
  m.out_w = g.out_spatial[last];
  m.in_w = g.in_spatial[last];
  m.kw = g.kernel[last];
  m.sw = g.strides[last];
  m.rows = m.out_plane / m.out_w;
  m.k_outer = m.k_size / m.kw;
  m.x_lo.resize(m.kw);
  m.x_hi.resize(m.kw);
  m.x_off.resize(m.kw);
  for (int64_t kx = 0; kx < m.kw; ++kx) {
    const int64_t off = kx * g.dilations[last] - g.pad_begin[last];
    m.x_off[kx] = off;
    m.x_lo[kx] = std::min(m.out_w, std::max<int64_t>(0, ceil_div(-off, m.sw)));
    m.x_hi[kx] = std::max(m.x_lo[kx], std::min(m.out_w, floor_div(m.in_w - 1 - off, m.sw) + 1));
  }
  m.row_in.assign(m.k_outer * m.rows, -1);
  // Multi-indices over the outer axes of the kernel and of the output.
  const std::vector<int64_t> k_dims(g.kernel.begin(), g.kernel.end() - 1);
  const std::vector<int64_t> o_dims(g.out_spatial.begin(), g.out_spatial.end() - 1);
  std::vector<int64_t> kidx(last, 0), oidx(last, 0);
  for (int64_t ko = 0; ko < m.k_outer; ++ko) {
    for (int64_t r = 0; r < m.rows; ++r) {
      int64_t off = 0, ok = 1;
      for (int64_t d = 0; d < last && ok; ++d) {
        const int64_t pos = oidx[d] * g.strides[d] - g.pad_begin[d] + kidx[d] * g.dilations[d];
        ok = pos >= 0 && pos < g.in_spatial[d];
        off = off * g.in_spatial[d] + pos;
      }
      if (ok) m.row_in[ko * m.rows + r] = off * m.in_w;
      advance(oidx, o_dims);
    }
    advance(kidx, k_dims);
  }
  return m;
}

// Direct convolution, for few output channels per group (depthwise): for each (n, oc, ic,
// kernel position, output row) the innermost loop walks the contiguous output row.
template <class A>
void conv_direct(const ConvGeometry& g, const RowMap& m, const A* x, const A* w, const A* b, A* y) {
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      A* yp = y + (n * g.out_channels + oc) * m.out_plane;
      std::fill(yp, yp + m.out_plane, b ? b[oc] : A(0));
      for (int64_t ci = 0; ci < cg; ++ci) {
        const A* xp = x + (n * g.in_channels + (oc / mg) * cg + ci) * m.in_plane;
        const A* wp = w + (oc * cg + ci) * m.k_size;
        for (int64_t ko = 0; ko < m.k_outer; ++ko) {
          for (int64_t r = 0; r < m.rows; ++r) {
            const int64_t in_row = m.row_in[ko * m.rows + r];
            if (in_row < 0) continue;
            A* yr = yp + r * m.out_w;
            const A* xr = xp + in_row;
            for (int64_t kx = 0; kx < m.kw; ++kx) {
              const A wv = wp[ko * m.kw + kx];
              const int64_t lo = m.x_lo[kx], hi = m.x_hi[kx], off = m.x_off[kx];
              if (m.sw == 1) {
                const A* xs = xr + lo + off;
                A* ys = yr + lo;
                for (int64_t i = 0; i < hi - lo; ++i) ys[i] += wv * xs[i];
              } else {
                for (int64_t ox = lo; ox < hi; ++ox) yr[ox] += wv * xr[ox * m.sw + off];
              }
            }
          }
        }
      }
    }
  }
}

// The GEMM path treats one group as Y[mg × P] = W[mg × K] · col[K × P] (K = C/group ·
// kernel size, P = output pixels), where col holds the input value each (k, pixel) pair
// reads ("im2col"). col is built for a chunk of pixels at a time, as panels of kPanel
// pixels stored k-major, so the micro-kernel reads it contiguously and keeps a
// kRows × kPanel block of outputs in registers (fixed sizes let compilers vectorize).
constexpr int64_t kPanel = 4;
constexpr int64_t kRows = 4;
constexpr size_t kChunkBytes = 256 * 1024;  // col chunk: about an L2's worth

// col[q][k][j] = input read by kernel tap k for output pixel p0 + q·kPanel + j (0 beyond P).
template <class A>
void pack_columns(const RowMap& m, int64_t cg, const A* xg, int64_t p0, int64_t panels, A* col) {
  const int64_t kk = cg * m.k_size, p_end = p0 + panels * kPanel;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const A* xc = xg + ci * m.in_plane;
    for (int64_t ko = 0; ko < m.k_outer; ++ko) {
      const int64_t* rin = m.row_in.data() + ko * m.rows;
      for (int64_t kx = 0; kx < m.kw; ++kx) {
        const int64_t k = (ci * m.k_outer + ko) * m.kw + kx;
        const int64_t lo = m.x_lo[kx], hi = m.x_hi[kx], off = m.x_off[kx];
        int64_t r = p0 / m.out_w, ox = p0 % m.out_w;
        for (int64_t p = p0; p < p_end; ++p) {
          A v = A(0);
          if (p < m.out_plane && rin[r] >= 0 && ox >= lo && ox < hi)
            v = xc[rin[r] + ox * m.sw + off];
          col[((p - p0) / kPanel * kk + k) * kPanel + (p - p0) % kPanel] = v;
          if (++ox == m.out_w) ox = 0, ++r;
        }
      }
    }
  }
}

// For i < rows (≤ kRows), j < valid: y[i][j] = b[i] + Σ_k w[i][k] · panel[k][j]. Rows
// i ≥ rows reuse weight row 0 and are dropped. The rows are spelt out so that compilers
// keep the kRows × kPanel accumulators in vector registers (one register per row).
template <class A>
void micro_kernel(int64_t kk, const A* w, int64_t rows, const A* panel, const A* b, A* y,
                  int64_t ys, int64_t valid) {
  const A* w0 = w;
  const A* w1 = rows > 1 ? w + kk : w0;
  const A* w2 = rows > 2 ? w + 2 * kk : w0;
  const A* w3 = rows > 3 ? w + 3 * kk : w0;
  A a0[kPanel] = {}, a1[kPanel] = {}, a2[kPanel] = {}, a3[kPanel] = {};
  for (int64_t k = 0; k < kk; ++k) {
    const A* c = panel + k * kPanel;
    const A v0 = w0[k], v1 = w1[k], v2 = w2[k], v3 = w3[k];
    // Optimization barrier: without it GCC -O3 vectorizes this loop across k as an
    // in-order float reduction with shuffles, 2-3× slower than the per-k vector code
    // it emits otherwise (and at -O2).
    asm volatile("");
    for (int64_t j = 0; j < kPanel; ++j) {
      a0[j] += v0 * c[j];
      a1[j] += v1 * c[j];
      a2[j] += v2 * c[j];
      a3[j] += v3 * c[j];
    }
  }
  const A* acc[kRows] = {a0, a1, a2, a3};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < valid; ++j) y[i * ys + j] = acc[i][j] + (b ? b[i] : A(0));
}

template <class A>
void conv_gemm(const ConvGeometry& g, const RowMap& m, const A* x, const A* w, const A* b, A* y) {
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  const int64_t kk = cg * m.k_size, panels = ceil_div(m.out_plane, kPanel);
  const int64_t chunk =
      std::clamp<int64_t>(kChunkBytes / (std::max<int64_t>(kk, 1) * kPanel * sizeof(A)), 1, panels);
  std::vector<A> col(chunk * kk * kPanel);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const A* xg = x + (n * g.in_channels + grp * cg) * m.in_plane;
      A* yg = y + (n * g.out_channels + grp * mg) * m.out_plane;
      for (int64_t q0 = 0; q0 < panels; q0 += chunk) {
        const int64_t nq = std::min(chunk, panels - q0);
        pack_columns(m, cg, xg, q0 * kPanel, nq, col.data());
        for (int64_t oc = 0; oc < mg; oc += kRows) {
          const int64_t mr = std::min(kRows, mg - oc);
          const A* wr = w + (grp * mg + oc) * kk;
          const A* br = b ? b + grp * mg + oc : nullptr;
          for (int64_t q = 0; q < nq; ++q) {
            const int64_t p = (q0 + q) * kPanel;
            const int64_t valid = std::min(kPanel, m.out_plane - p);
            const A* panel = col.data() + q * kk * kPanel;
            A* yp = yg + oc * m.out_plane + p;
            micro_kernel(kk, wr, mr, panel, br, yp, m.out_plane, valid);
          }
        }
      }
    }
  }
}

// y (whole output, N·M planes) = conv(x, w) + b, all in the accumulation type A.
template <class A>
void conv_forward(const ConvGeometry& g, const A* x, const A* w, const A* b, A* y) {
  const RowMap m = make_row_map(g);
  if (m.out_plane == 0 || g.batch == 0) return;
  // Packing costs about K·P per group whatever the channel count, so the GEMM path pays
  // off only when several output channels share each packed column.
  if (g.out_channels / g.group >= kRows)
    conv_gemm(g, m, x, w, b, y);
  else
    conv_direct(g, m, x, w, b, y);
}

template <class T>
std::vector<float> to_float_vector(const Tensor* t) {
  std::vector<float> v(t ? t->numel() : 0);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t->data<T>()[i]);
  return v;
}

Status run_conv(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node.attrs));
  KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(attrs, in[0]->shape(), in[1]->shape()));
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  return dispatch_float(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      conv_forward<T>(g, in[0]->data<T>(), in[1]->data<T>(), bias ? bias->data<T>() : nullptr,
                      out[0]->data<T>());
    } else {
      // Half / BFloat16: compute in float, round once at the end.
      std::vector<float> x = to_float_vector<T>(in[0]), w = to_float_vector<T>(in[1]);
      std::vector<float> b = to_float_vector<T>(bias), y(out[0]->numel());
      conv_forward<float>(g, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
      for (size_t i = 0; i < y.size(); ++i) out[0]->data<T>()[i] = T(y[i]);
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(Conv, infer_conv, run_conv);

}  // namespace kiln
