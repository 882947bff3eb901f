// The cuDNN side of a 2-D NHWC (or NCHW) convolution: owned descriptors, the mapping of ONNX's
// (possibly asymmetric) padding onto cuDNN's symmetric padding, and host-side packing of
// constants. Used by the Conv kernel (cudnn/conv.cc).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "ir/epilogue.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/conv.h"

namespace kiln {

// Every descriptor one convolution call needs; created together, destroyed with the object.
// Read-only after prepare(), so concurrent enqueues on different handles may share them.
struct CudnnConvDescs {
  cudnnTensorDescriptor_t x = nullptr;
  cudnnTensorDescriptor_t y = nullptr;       // the ONNX output [N, M, Ho, Wo]
  cudnnTensorDescriptor_t y_full = nullptr;  // cuDNN's output when it must be cropped
  cudnnTensorDescriptor_t y_crop = nullptr;  // view of the ONNX output inside y_full
  cudnnTensorDescriptor_t bias = nullptr;    // [1, M, 1, 1]
  cudnnFilterDescriptor_t w = nullptr;       // KRSC (NHWC) or KCRS (NCHW)
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;

  CudnnConvDescs() = default;
  CudnnConvDescs(const CudnnConvDescs&) = delete;
  CudnnConvDescs& operator=(const CudnnConvDescs&) = delete;
  ~CudnnConvDescs();
  Status create();
};

// cuDNN's legacy API pads both sides of an axis equally. ONNX pads (SAME_* with stride 2,
// explicit asymmetric pads) are mapped exactly: cuDNN pads `pad` = pad_begin + t·stride on
// both sides, where t = ceil(max(0, pad_end − pad_begin) / stride); ONNX output row o is
// then cuDNN output row o + t (both read input rows o·stride − pad_begin + k·dilation), and
// every extra row cuDNN reads lies in zero padding in both. When cuDNN's output has other
// dims than ONNX's, the kernel convolves into a scratch tensor and copies the window out.
struct CudnnPadMapping {
  int pad[2] = {0, 0};
  int offset[2] = {0, 0};  // t per axis
  bool crop = false;       // true when cuDNN's output differs from ONNX's
};
CudnnPadMapping map_conv_padding(const ConvGeometry& g);

// ONNX W [M, C/g, R, S] as KRSC [M, R, S, Cp] bytes in `dtype` (float32 or float16), where
// Cp = `padded_channels` (≥ C/g; the extra channels are zeros) or C/g when 0.
std::vector<uint8_t> pack_filter_krsc(const Tensor& w, DataType dtype, int64_t padded_channels = 0);
// float values as bytes of `dtype` (float32 or float16).
std::vector<uint8_t> encode_floats(const std::vector<float>& v, DataType dtype);

// The TacticCache key of a conv: everything the choice depends on.
std::string conv_tactic_key(const ConvGeometry& g, Precision precision, DataType dtype,
                            const Epilogue& e, bool bias, size_t workspace_limit, bool nhwc);

cudnnDataType_t cudnn_dtype(DataType dt);  // float32 / float16 / bfloat16 / float8 e4m3
const char* cudnn_algo_name(cudnnConvolutionFwdAlgo_t a);

}  // namespace kiln
