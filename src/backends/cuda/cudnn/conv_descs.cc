#include "backends/cuda/cudnn/conv_descs.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "backends/cuda/cuda_common.h"
#include "core/half.h"

namespace kiln {

CudnnConvDescs::~CudnnConvDescs() {
  for (cudnnTensorDescriptor_t t : {x, y, y_full, y_crop, bias})
    if (t) cudnnDestroyTensorDescriptor(t);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (act) cudnnDestroyActivationDescriptor(act);
}

Status CudnnConvDescs::create() {
  for (cudnnTensorDescriptor_t* t : {&x, &y, &y_full, &y_crop, &bias})
    if (!*t) KILN_CUDNN(cudnnCreateTensorDescriptor(t));
  if (!w) KILN_CUDNN(cudnnCreateFilterDescriptor(&w));
  if (!conv) KILN_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  if (!act) KILN_CUDNN(cudnnCreateActivationDescriptor(&act));
  return Status::ok();
}

CudnnPadMapping map_conv_padding(const ConvGeometry& g) {
  CudnnPadMapping m;
  for (int i = 0; i < 2; ++i) {
    const int64_t pb = g.pad_begin[i], pe = g.pad_end[i], s = g.strides[i];
    const int64_t t = pe > pb ? (pe - pb + s - 1) / s : 0;
    const int64_t pad = pb + t * s;
    const int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t full = (g.in_spatial[i] + 2 * pad - span) / s + 1;
    m.pad[i] = static_cast<int>(pad);
    m.offset[i] = static_cast<int>(t);
    if (t != 0 || full != g.out_spatial[i]) m.crop = true;
  }
  return m;
}

std::vector<uint8_t> encode_floats(const std::vector<float>& v, DataType dtype) {
  std::vector<uint8_t> bytes(v.size() * dtype_size(dtype));
  store_floats(v.data(), v.size(), dtype, bytes.data());
  return bytes;
}

std::vector<uint8_t> pack_filter_krsc(const Tensor& w, DataType dtype, int64_t padded_channels) {
  const std::vector<float> v = w.to_floats();
  const int64_t m = w.dim(0), c = w.dim(1), r = w.dim(2), s = w.dim(3);
  const int64_t cp = std::max(c, padded_channels);
  std::vector<float> krsc(static_cast<size_t>(m * r * s * cp), 0.f);
  for (int64_t k = 0; k < m; ++k)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < r; ++y)
        for (int64_t x = 0; x < s; ++x)
          krsc[((k * r + y) * s + x) * cp + ch] = v[((k * c + ch) * r + y) * s + x];
  return encode_floats(krsc, dtype);
}

std::string conv_tactic_key(const ConvGeometry& g, Precision precision, DataType dtype,
                            const Epilogue& e, bool bias, size_t workspace_limit, bool nhwc) {
  std::ostringstream k;
  k << "conv|" << precision_name(precision) << "|" << dtype_name(dtype)
    << (nhwc ? "|nhwc|n" : "|nchw|n") << g.batch << "c" << g.in_channels << "h" << g.in_spatial[0]
    << "w" << g.in_spatial[1] << "|k" << g.out_channels << "r" << g.kernel[0] << "s" << g.kernel[1]
    << "|p" << g.pad_begin[0] << "," << g.pad_begin[1] << "," << g.pad_end[0] << "," << g.pad_end[1]
    << "|u" << g.strides[0] << "," << g.strides[1] << "|d" << g.dilations[0] << ","
    << g.dilations[1] << "|g" << g.group << "|" << (bias ? "bias+" : "") << activation_name(e.act)
    << (e.residual_input >= 0 ? "+res" : "") << "|ws" << (workspace_limit >> 20);
  return k.str();
}

cudnnDataType_t cudnn_dtype(DataType dt) {
  return dt == DataType::kFloat16      ? CUDNN_DATA_HALF
         : dt == DataType::kBFloat16   ? CUDNN_DATA_BFLOAT16
         : dt == DataType::kFloat8E4M3 ? CUDNN_DATA_FP8_E4M3
                                       : CUDNN_DATA_FLOAT;
}

const char* cudnn_algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

}  // namespace kiln
