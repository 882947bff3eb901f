// NormalizeImage (ops/normalize_image.h): the reference reads x in its own order and writes y
// as [N, C, H, W].

#include "ops/normalize_image.h"

#include "ops/op_util.h"

namespace kiln {

Result<NormalizeImageParams> normalize_image_params(const Node& node, DataType x_dtype,
                                                    const Shape& x) {
  if (x_dtype != DataType::kUInt8)
    return invalid_argument(std::string("input 0 must be uint8, got ") + dtype_name(x_dtype));
  if (x.size() != 4) return invalid_argument("input 0 " + shape_str(x) + " must have rank 4");
  NormalizeImageParams p;
  p.channels_last = node.attrs.get_int("channels_last", 0) != 0;
  p.scale = node.attrs.get_floats("scale");
  p.bias = node.attrs.get_floats("bias");
  p.n = x[0];
  p.c = p.channels_last ? x[3] : x[1];
  p.h = p.channels_last ? x[1] : x[2];
  p.w = p.channels_last ? x[2] : x[3];
  if (static_cast<int64_t>(p.scale.size()) != p.c || static_cast<int64_t>(p.bias.size()) != p.c)
    return invalid_argument("input 0 " + shape_str(x) + " has " + std::to_string(p.c) +
                            " channels, but the scale and bias attributes have " +
                            std::to_string(p.scale.size()) + " and " +
                            std::to_string(p.bias.size()) + " values");
  p.out = {p.n, p.c, p.h, p.w};
  return p;
}

namespace {

Status infer_normalize_image(const Node& node, const std::vector<TensorDesc>& in,
                             std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_ASSIGN_OR_RETURN(NormalizeImageParams p,
                        normalize_image_params(node, in[0].dtype, in[0].shape));
  out[0] = {DataType::kFloat32, p.out};
  return Status::ok();
}

Status run_normalize_image(const Node& node, const std::vector<const Tensor*>& in,
                           const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(NormalizeImageParams p,
                        normalize_image_params(node, in[0]->dtype(), in[0]->shape()));
  const uint8_t* x = in[0]->data<uint8_t>();
  float* y = out[0]->data<float>();
  const int64_t plane = p.h * p.w;
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t k = 0; k < p.c; ++k) {
      const float s = p.scale[k], t = p.bias[k];
      float* dst = y + (b * p.c + k) * plane;
      if (p.channels_last) {
        const uint8_t* src = x + b * plane * p.c + k;
        for (int64_t i = 0; i < plane; ++i) dst[i] = static_cast<float>(src[i * p.c]) * s + t;
      } else {
        const uint8_t* src = x + (b * p.c + k) * plane;
        for (int64_t i = 0; i < plane; ++i) dst[i] = static_cast<float>(src[i]) * s + t;
      }
    }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(NormalizeImage, infer_normalize_image, run_normalize_image);

}  // namespace kiln
