// launch_convert and launch_epilogue (kernels/launch.h) against host computations: every
// dtype/layout pair of convert on shapes that hit both transpose kernels, and every
// activation of the epilogue with and without bias and residual, in both layouts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cuda/kernels/launch.h"
#include "cuda_test_util.h"

namespace kiln::test {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;

float round_half(float x) { return half_bits_to_float(float_to_half_bits(x)); }

// Copies host bytes to a new device buffer.
DeviceBytes upload(const std::vector<uint8_t>& bytes) {
  DeviceBytes d;
  EXPECT_EQ(cudaMalloc(&d.p, bytes.size() + 16), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

// Reads `desc` back from the device as a float32 (or integer) plain tensor.
Tensor download(const void* p, const TensorDesc& desc) {
  std::vector<uint8_t> bytes(desc.nbytes());
  EXPECT_EQ(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return from_device_bytes(bytes, desc);
}

class ConvertTest : public testing::TestWithParam<Shape> {};

TEST_P(ConvertTest, EveryDtypeAndLayoutPair) {
  const Shape shape = GetParam();
  const Tensor x = random_tensor(shape, 7, -3.f, 3.f);
  for (DataType from : {kF32, kF16})
    for (DataType to : {kF32, kF16})
      for (Layout lf : {Layout::kPlain, Layout::kNHWC})
        for (Layout lt : {Layout::kPlain, Layout::kNHWC}) {
          SCOPED_TRACE(std::string(dtype_name(from)) + " " + layout_name(lf) + " -> " +
                       dtype_name(to) + " " + layout_name(lt) + " " + shape_str(shape));
          TensorRef src{TensorDesc{from, shape, nullptr, lf}, nullptr};
          TensorRef dst{TensorDesc{to, shape, nullptr, lt}, nullptr};
          DeviceBytes in = upload(to_device_bytes(x, from, lf));
          DeviceBytes out;
          ASSERT_EQ(cudaMalloc(&out.p, dst.desc.nbytes() + 16), cudaSuccess);
          ASSERT_EQ(cudaMemset(out.p, 0xFF, dst.desc.nbytes() + 16), cudaSuccess);
          src.data = in.p;
          dst.data = out.p;
          Status st = launch_convert(src, dst, nullptr);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          std::vector<float> want = x.to_floats();
          if (from == kF16 || to == kF16)
            for (float& v : want) v = round_half(v);
          // Conversions are exact (float16 -> float32 is, and float32 -> float16 rounds
          // to nearest even on both sides).
          expect_near(download(out.p, dst.desc), Tensor::from_floats(shape, want), 0.0);
        }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvertTest,
                         testing::Values(Shape{1, 3, 7, 5}, Shape{2, 17, 9, 11},
                                         Shape{4, 64, 56, 56}, Shape{2, 3, 224, 224},
                                         Shape{3, 40, 5, 7}, Shape{2, 16, 3, 3},
                                         Shape{1, 33, 1, 65}, Shape{5, 1, 4, 4}));

TEST(Convert, IntegerPlainCopy) {
  Tensor x(DataType::kInt64, {3, 5, 7});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int64_t>()[i] = i * 7919 - 100000;
  TensorRef src{TensorDesc{DataType::kInt64, x.shape()}, nullptr};
  TensorRef dst = src;
  DeviceBytes in = upload(to_device_bytes(x, DataType::kInt64, Layout::kPlain));
  DeviceBytes out;
  ASSERT_EQ(cudaMalloc(&out.p, x.nbytes()), cudaSuccess);
  src.data = in.p;
  dst.data = out.p;
  ASSERT_TRUE(launch_convert(src, dst, nullptr).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_near(download(out.p, dst.desc), x, 0.0);
}

TEST(Convert, RejectsWhatItCannotDo) {
  const Shape s{1, 3, 4, 4};
  TensorRef i64{TensorDesc{DataType::kInt64, s}, nullptr};
  TensorRef i64_nhwc{TensorDesc{DataType::kInt64, s, nullptr, Layout::kNHWC}, nullptr};
  EXPECT_EQ(launch_convert(i64, i64_nhwc, nullptr).code(), StatusCode::kUnsupported);
  TensorRef f32{TensorDesc{kF32, s}, nullptr};
  EXPECT_EQ(launch_convert(i64, f32, nullptr).code(), StatusCode::kUnsupported);
  TensorRef other{TensorDesc{kF32, {1, 3, 4, 5}}, nullptr};
  EXPECT_FALSE(launch_convert(f32, other, nullptr).is_ok());
  TensorRef rank3{TensorDesc{kF32, {3, 4, 4}, nullptr, Layout::kNHWC}, nullptr};
  TensorRef rank3_plain{TensorDesc{kF32, {3, 4, 4}}, nullptr};
  EXPECT_FALSE(launch_convert(rank3_plain, rank3, nullptr).is_ok());
}

// --- epilogue ---

struct ActCase {
  Activation act;
  float alpha, beta;
};

const ActCase kActs[] = {
    {Activation::kNone, 0, 0},
    {Activation::kRelu, 0, 0},
    {Activation::kClip, 0.f, 6.f},
    {Activation::kClip, -0.5f, 0.25f},
    {Activation::kLeakyRelu, 0.1f, 0},
    {Activation::kSigmoid, 0, 0},
    {Activation::kTanh, 0, 0},
    {Activation::kSilu, 0, 0},
    {Activation::kHardSigmoid, 0.2f, 0.5f},
    {Activation::kHardSwish, 0, 0},
    {Activation::kGelu, 0, 0},
};

struct EpilogueCase {
  Shape shape;
  Layout layout;
};

class EpilogueTest : public testing::TestWithParam<EpilogueCase> {};

TEST_P(EpilogueTest, EveryActivationWithAndWithoutBiasAndResidual) {
  const Shape shape = GetParam().shape;
  const Layout layout = GetParam().layout;
  const int64_t c = shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  const Tensor x = random_tensor(shape, 11, -5.f, 5.f);
  const Tensor r = random_tensor(shape, 12, -2.f, 2.f);
  const std::vector<float> bias_host = random_tensor({c}, 13, -1.f, 1.f).to_floats();
  DeviceBytes bias = upload(
      std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(bias_host.data()),
                           reinterpret_cast<const uint8_t*>(bias_host.data() + bias_host.size())));
  for (DataType dt : {kF32, kF16})
    for (const ActCase& a : kActs)
      for (bool with_bias : {false, true})
        for (bool with_res : {false, true}) {
          SCOPED_TRACE(std::string(activation_name(a.act)) + " " + dtype_name(dt) + " " +
                       layout_name(layout) + " " + shape_str(shape) + (with_bias ? " +bias" : "") +
                       (with_res ? " +residual" : ""));
          const TensorDesc desc{dt, shape, nullptr, layout};
          DeviceBytes data = upload(to_device_bytes(x, dt, layout));
          DeviceBytes res = upload(to_device_bytes(r, dt, layout));
          Status st =
              launch_epilogue(desc, data.p, with_bias ? static_cast<float*>(bias.p) : nullptr,
                              with_res ? res.p : nullptr, a.act, a.alpha, a.beta, nullptr);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          auto q = [&](float v) { return dt == kF16 ? round_half(v) : v; };
          std::vector<float> xs = x.to_floats(), rs = r.to_floats(), want(xs.size());
          for (size_t i = 0; i < xs.size(); ++i) {
            float v = q(xs[i]);
            if (with_bias) v += bias_host[(static_cast<int64_t>(i) / inner) % c];
            if (with_res) v += q(rs[i]);
            want[i] = q(apply_activation(a.act, a.alpha, a.beta, v));
          }
          const double tol = dt == kF16 ? 2e-3 : 1e-5;
          expect_near(download(data.p, desc), Tensor::from_floats(shape, want), tol, tol);
        }
}

INSTANTIATE_TEST_SUITE_P(Shapes, EpilogueTest,
                         testing::Values(EpilogueCase{{1, 3, 7, 5}, Layout::kPlain},
                                         EpilogueCase{{1, 3, 7, 5}, Layout::kNHWC},
                                         EpilogueCase{{2, 17, 9, 11}, Layout::kPlain},
                                         EpilogueCase{{2, 17, 9, 11}, Layout::kNHWC},
                                         EpilogueCase{{4, 64, 56, 56}, Layout::kPlain},
                                         EpilogueCase{{4, 64, 56, 56}, Layout::kNHWC},
                                         EpilogueCase{{5, 37}, Layout::kPlain},  // Gemm output
                                         EpilogueCase{{3, 1000}, Layout::kPlain},
                                         EpilogueCase{{2, 5, 3, 4, 6}, Layout::kPlain}));  // rank 5

TEST(Epilogue, RejectsBadDescriptions) {
  const TensorDesc i64{DataType::kInt64, {1, 3, 4, 4}};
  EXPECT_EQ(
      launch_epilogue(i64, nullptr, nullptr, nullptr, Activation::kRelu, 0, 0, nullptr).code(),
      StatusCode::kUnsupported);
  const TensorDesc nhwc3{kF32, {3, 4, 4}, nullptr, Layout::kNHWC};
  EXPECT_FALSE(
      launch_epilogue(nhwc3, nullptr, nullptr, nullptr, Activation::kRelu, 0, 0, nullptr).is_ok());
}

}  // namespace
}  // namespace kiln::test
