// 8-bit image inputs (EngineOptions::input_format, passes/normalize_image_inputs.cc): uint8
// NHWC and NCHW pixels give the float32 engine's result on (pixel / 255 − mean) / std, with
// the default, the model's metadata or the options' mean and std; the input's declared dtype
// and dims change; a mean of the wrong length or a std of 0 is refused, naming the input.
#include <gtest/gtest.h>

#include "backends/dnnl_test_net.h"

namespace kiln::test {
namespace {

// x[N,3,8,8] → conv 4 (+relu) → GlobalAveragePool: a symbolic batch.
std::unique_ptr<Graph> image_net(std::map<std::string, std::string> metadata = {}) {
  Net n;
  Value* x = n.input("x", {1, 3, 8, 8});
  x->dims[0] = Dim{-1, "N"};
  Value* a = n.conv(x, 4, 3, {1, 4, 8, 8});
  Value* y = n.pool(OpKind::GlobalAveragePool, a, {1, 4, 1, 1}, {});
  n.g->outputs() = {y};
  n.g->metadata = std::move(metadata);
  return std::move(n.g);
}

Tensor pixels(const Shape& s, uint32_t seed) {
  Tensor t(DataType::kUInt8, s);
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(gen());
  return t;
}

// The float32 NCHW input the pixels stand for.
Tensor normalized(const Tensor& u, bool nhwc, const std::vector<float>& mean,
                  const std::vector<float>& stdev) {
  const Shape& s = u.shape();
  const int64_t n = s[0], c = nhwc ? s[3] : s[1], h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3];
  std::vector<float> f(static_cast<size_t>(u.numel()));
  for (int64_t a = 0; a < n; ++a)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          const int64_t src = nhwc ? ((a * h + i) * w + j) * c + k : ((a * c + k) * h + i) * w + j;
          f[((a * c + k) * h + i) * w + j] = (u.data<uint8_t>()[src] / 255.f - mean[k]) / stdev[k];
        }
  return Tensor::from_floats({n, c, h, w}, f);
}

Tensor run_one(std::unique_ptr<Graph> g, const EngineOptions& o, const Tensor& x) {
  auto e = build_engine(std::move(g), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return Tensor();
  auto r = (*e)->create_context()->run({{"x", x}});
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r->begin()->second : Tensor();
}

TEST(InputFormat, EightBitPixelsGiveTheNormalizedFloatResult) {
  const std::vector<float> imagenet_mean = {0.485f, 0.456f, 0.406f},
                           imagenet_std = {0.229f, 0.224f, 0.225f};
  for (InputFormat f : {InputFormat::kUint8Nhwc, InputFormat::kUint8Nchw}) {
    SCOPED_TRACE(input_format_name(f));
    const bool nhwc = f == InputFormat::kUint8Nhwc;
    const Tensor u = pixels(nhwc ? Shape{2, 8, 8, 3} : Shape{2, 3, 8, 8}, 3);
    struct Case {
      std::map<std::string, std::string> metadata;
      std::vector<float> mean, stdev;  // options
      std::vector<float> want_mean, want_std;
    };
    const std::vector<Case> cases = {
        {{}, {}, {}, imagenet_mean, imagenet_std},
        {{{"kiln.mean", "0.5,0.5,0.5"}, {"kiln.std", "0.25"}},
         {},
         {},
         {0.5f, 0.5f, 0.5f},
         {0.25f, 0.25f, 0.25f}},
        {{{"kiln.mean", "0.5,0.5,0.5"}},
         {0.1f, 0.2f, 0.3f},
         {0.3f, 0.2f, 0.1f},
         {0.1f, 0.2f, 0.3f},
         {0.3f, 0.2f, 0.1f}},
    };
    for (const Case& c : cases) {
      EngineOptions plain;
      plain.backend = KernelChoice::kReference;
      const Tensor want =
          run_one(image_net(c.metadata), plain, normalized(u, nhwc, c.want_mean, c.want_std));
      for (const char* backend : {"reference", "auto"}) {
        EngineOptions o;
        o.backend = *parse_kernel_choice(backend);
        o.input_format = f;
        o.input_mean = c.mean;
        o.input_std = c.stdev;
        auto e = build_engine(image_net(c.metadata), o);
        ASSERT_TRUE(e.is_ok()) << e.status().to_string();
        const TensorInfo& in = (*e)->inputs()[0];
        EXPECT_EQ(in.name, "x");
        EXPECT_EQ(in.dtype, DataType::kUInt8);
        EXPECT_EQ(in.dims[1], nhwc ? 8 : 3);
        EXPECT_EQ(in.dims[3], nhwc ? 3 : 8);
        auto r = (*e)->create_context()->run({{"x", u}});
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        expect_near(r->begin()->second, want, 1e-5, 1e-4);
      }
    }
  }
}

TEST(InputFormat, BadMeanOrStdIsRefusedNamingTheInput) {
  EngineOptions o;
  o.input_format = InputFormat::kUint8Nhwc;
  o.input_mean = {0.5f, 0.5f};
  auto e = build_engine(image_net(), o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("input 'x' has 3 channels, but 2 values of mean"),
            std::string::npos)
      << e.status().message();
  o.input_mean = {};
  o.input_std = {0.2f, 0.f, 0.2f};
  e = build_engine(image_net(), o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("std of channel 1 is 0"), std::string::npos)
      << e.status().message();
  // float32 NCHW (the default) leaves the input as the model declares it.
  auto plain = build_engine(image_net(), EngineOptions());
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ((*plain)->inputs()[0].dtype, DataType::kFloat32);
}

}  // namespace
}  // namespace kiln::test
