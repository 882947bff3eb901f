// SqueezeExcite (ops/squeeze_excite.h): the reference pools each plane, then runs the two
// 1×1 convolutions on the pooled vector and scales x, in float throughout.

#include "ops/squeeze_excite.h"

#include <vector>

#include "ops/op_util.h"

namespace kiln {

namespace {

Result<Activation> activation_attr(const Node& n, const std::string& name) {
  const std::string s = n.attrs.get_string(name, "None");
  Activation a = Activation::kNone;
  if (!activation_from_name(s, &a))
    return invalid_argument("attribute " + name + ": unknown activation '" + s + "'");
  return a;
}

}  // namespace

Result<SqueezeExciteAttrs> squeeze_excite_attrs(const Node& n) {
  SqueezeExciteAttrs a;
  KILN_ASSIGN_OR_RETURN(a.squeeze, activation_attr(n, "squeeze_activation"));
  KILN_ASSIGN_OR_RETURN(a.excite, activation_attr(n, "excite_activation"));
  a.squeeze_alpha = n.attrs.get_float("squeeze_alpha", 0.f);
  a.squeeze_beta = n.attrs.get_float("squeeze_beta", 0.f);
  a.excite_alpha = n.attrs.get_float("excite_alpha", 0.f);
  a.excite_beta = n.attrs.get_float("excite_beta", 0.f);
  return a;
}

void set_squeeze_excite_attrs(const SqueezeExciteAttrs& a, Attributes* attrs) {
  attrs->set("squeeze_activation", std::string(activation_name(a.squeeze)));
  attrs->set("squeeze_alpha", a.squeeze_alpha);
  attrs->set("squeeze_beta", a.squeeze_beta);
  attrs->set("excite_activation", std::string(activation_name(a.excite)));
  attrs->set("excite_alpha", a.excite_alpha);
  attrs->set("excite_beta", a.excite_beta);
}

Result<SqueezeExciteDims> squeeze_excite_dims(const Shape& x, const Shape& w1, const Shape* b1,
                                              const Shape& w2, const Shape* b2) {
  if (x.size() != 4)
    return invalid_argument("input 0 (x) must be [N, C, H, W], got " + shape_str(x));
  SqueezeExciteDims d{x[0], x[1], x[2] * x[3], w1.empty() ? 0 : w1[0]};
  if (w1 != Shape{d.r, d.c, 1, 1})
    return invalid_argument("input 1 (W1) must be [R, " + std::to_string(d.c) + ", 1, 1], got " +
                            shape_str(w1));
  if (w2 != Shape{d.c, d.r, 1, 1})
    return invalid_argument("input 3 (W2) must be " + shape_str(Shape{d.c, d.r, 1, 1}) + ", got " +
                            shape_str(w2));
  if (b1 && *b1 != Shape{d.r})
    return invalid_argument("input 2 (B1) must be [" + std::to_string(d.r) + "], got " +
                            shape_str(*b1));
  if (b2 && *b2 != Shape{d.c})
    return invalid_argument("input 4 (B2) must be [" + std::to_string(d.c) + "], got " +
                            shape_str(*b2));
  return d;
}

namespace {

Result<SqueezeExciteDims> dims_of(const std::vector<TensorDesc>& in) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 5));  // B1 may be omitted before W2
  if (in.size() < 4) return invalid_argument("expected 4 or 5 inputs (x, W1, B1, W2[, B2])");
  if (!in[1].present() || !in[3].present())
    return invalid_argument("inputs 1 (W1) and 3 (W2) are required");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].present() && !dtype_is_float(in[i].dtype))
      return invalid_argument("input " + std::to_string(i) + ": expected a float tensor, got " +
                              dtype_name(in[i].dtype));
  const bool has_b2 = in.size() > 4 && in[4].present();
  return squeeze_excite_dims(in[0].shape, in[1].shape, in[2].present() ? &in[2].shape : nullptr,
                             in[3].shape, has_b2 ? &in[4].shape : nullptr);
}

Status infer_squeeze_excite(const Node& node, const std::vector<TensorDesc>& in,
                            std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(squeeze_excite_attrs(node).status());
  KILN_RETURN_IF_ERROR(dims_of(in).status());
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

std::vector<float> floats_of(const Tensor* t, int64_t n) {
  std::vector<float> v(n, 0.f);
  if (t)
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(t->at_double(i));
  return v;
}

Status run_squeeze_excite(const Node& node, const std::vector<const Tensor*>& in,
                          const std::vector<Tensor*>& out) {
  std::vector<TensorDesc> d;
  for (const Tensor* t : in) d.push_back(t ? TensorDesc{t->dtype(), t->shape(), t} : TensorDesc{});
  KILN_ASSIGN_OR_RETURN(SqueezeExciteDims s, dims_of(d));
  KILN_ASSIGN_OR_RETURN(SqueezeExciteAttrs a, squeeze_excite_attrs(node));
  const std::vector<float> w1 = floats_of(in[1], s.r * s.c), b1 = floats_of(in[2], s.r);
  const std::vector<float> w2 = floats_of(in[3], s.c * s.r);
  const std::vector<float> b2 = floats_of(in.size() > 4 ? in[4] : nullptr, s.c);
  return dispatch_float(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = in[0]->data<T>();
    T* y = out[0]->data<T>();
    std::vector<float> mean(s.c), hidden(s.r);
    for (int64_t n = 0; n < s.n; ++n) {
      const T* xn = x + n * s.c * s.hw;
      for (int64_t c = 0; c < s.c; ++c) {
        float acc = 0.f;
        for (int64_t i = 0; i < s.hw; ++i) acc += static_cast<float>(xn[c * s.hw + i]);
        mean[c] = s.hw ? acc / static_cast<float>(s.hw) : 0.f;
      }
      for (int64_t j = 0; j < s.r; ++j) {
        float acc = b1[j];
        for (int64_t c = 0; c < s.c; ++c) acc += w1[j * s.c + c] * mean[c];
        hidden[j] = apply_activation(a.squeeze, a.squeeze_alpha, a.squeeze_beta, acc);
      }
      for (int64_t c = 0; c < s.c; ++c) {
        float acc = b2[c];
        for (int64_t j = 0; j < s.r; ++j) acc += w2[c * s.r + j] * hidden[j];
        const float gate = apply_activation(a.excite, a.excite_alpha, a.excite_beta, acc);
        T* yc = y + (n * s.c + c) * s.hw;
        for (int64_t i = 0; i < s.hw; ++i)
          yc[i] = static_cast<T>(static_cast<float>(xn[c * s.hw + i]) * gate);
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(SqueezeExcite, infer_squeeze_excite, run_squeeze_excite);

}  // namespace kiln
