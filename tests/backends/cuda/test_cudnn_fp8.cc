// cuDNN's float8 e4m3 convolutions through the graph API (conv_graph.h, `operand`
// kFloat8E4M3 with a per-channel scale): whether the library has engines for the form an fp8
// conv kernel would build (codes in, float sums times S[k], bias, residual, ReLU, fp16 out),
// whether they compute it (against a host reference on random codes, output poisoned), and how
// fast they are beside the same conv in fp16 at ResNet-50's shapes, batch 256. The timings are
// printed, never asserted: they decide how kiln's fp8 kernels are built.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_graph.h"
#include "backends/cuda/tactic_timing.h"
#include "core/half.h"

namespace kiln {
namespace {

struct Shape4 {
  int64_t n, c, h, w, k, r, stride;
};

ConvGraphSpec spec_of(const Shape4& s, bool fp8, bool residual) {
  ConvGraphSpec g;
  g.dtype = DataType::kFloat16;
  g.operand = fp8 ? DataType::kFloat8E4M3 : DataType::kUndefined;
  g.channel_scale = fp8;
  g.nhwc = true;
  g.n = s.n, g.c = s.c, g.h = s.h, g.w = s.w;
  g.k = s.k, g.cg = s.c, g.r = s.r, g.s = s.r;
  const int64_t pad = s.r / 2;
  g.pre[0] = g.pre[1] = g.post[0] = g.post[1] = pad;
  g.stride[0] = g.stride[1] = s.stride;
  g.ho = (s.h + 2 * pad - s.r) / s.stride + 1;
  g.wo = (s.w + 2 * pad - s.r) / s.stride + 1;
  g.bias = true;
  g.residual = residual;
  g.act = Activation::kRelu;
  return g;
}

struct Handle {
  cudnnHandle_t h = nullptr;
  Handle() { cudnnCreate(&h); }
  ~Handle() { cudnnDestroy(h); }
};

struct DeviceBuf {
  void* p = nullptr;
  explicit DeviceBuf(size_t bytes) { cudaMalloc(&p, std::max<size_t>(bytes, 1)); }
  ~DeviceBuf() { cudaFree(p); }
};

// Up to `max` engine configs of each heuristic mode that finalize into a plan.
std::vector<std::unique_ptr<ConvPlan>> plans_for(cudnnHandle_t h, const ConvGraphSpec& spec,
                                                 std::string* why, int max = 8) {
  auto graph = std::make_shared<ConvGraph>();
  Status built = graph->build(h, spec);
  std::vector<std::unique_ptr<ConvPlan>> plans;
  if (!built.is_ok()) {
    *why = "graph: " + built.message();
    return plans;
  }
  for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    auto cfgs = graph->engine_configs(mode, false, max);
    if (!cfgs.is_ok()) {
      *why += std::string(" heuristics: ") + cfgs.status().message();
      continue;
    }
    for (const ConvEngineCfg& c : *cfgs) {
      auto p = make_conv_plan(h, graph, c);
      if (p.is_ok())
        plans.push_back(std::move(*p));
      else
        *why += " plan: " + p.status().message();
    }
  }
  return plans;
}

TEST(CudnnFp8, ConvComputesTheScaledSums) {
  Handle handle;
  const Shape4 s{2, 32, 9, 7, 16, 3, 1};
  const ConvGraphSpec spec = spec_of(s, true, true);
  std::string why;
  auto plans = plans_for(handle.h, spec, &why);
  if (plans.empty()) GTEST_SKIP() << "cuDNN has no fp8 engine for conv·S+bias+Z→ReLU: " << why;
  std::printf("[ fp8      ] %zu plans; engines", plans.size());
  for (const auto& p : plans) std::printf(" %lld", static_cast<long long>(p->cfg.engine));
  std::printf("\n");

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t nx = s.n * s.h * s.w * s.c, nw = s.k * s.r * s.r * s.c;
  const int64_t ny = s.n * spec.ho * spec.wo * s.k;
  std::vector<uint8_t> x(nx), w(nw);  // NHWC codes, KRSC codes
  for (auto& v : x) v = float_to_fp8e4m3_bits(u(rng) * 40.f);
  for (auto& v : w) v = float_to_fp8e4m3_bits(u(rng) * 200.f);
  std::vector<float> scale(s.k), bias(s.k), z(ny);
  for (auto& v : scale) v = 1e-4f * (1.5f + u(rng));
  for (auto& v : bias) v = u(rng);
  for (auto& v : z) v = u(rng);
  std::vector<uint16_t> bias_h(s.k), z_h(ny);
  for (int64_t i = 0; i < s.k; ++i) bias_h[i] = float_to_half_bits(bias[i]);
  for (int64_t i = 0; i < ny; ++i) z_h[i] = float_to_half_bits(z[i]);

  DeviceBuf dx(nx), dw(nw), ds(s.k * 4), db(s.k * 2), dz(ny * 2), dy(ny * 2);
  cudaMemcpy(dx.p, x.data(), nx, cudaMemcpyHostToDevice);
  cudaMemcpy(dw.p, w.data(), nw, cudaMemcpyHostToDevice);
  cudaMemcpy(ds.p, scale.data(), s.k * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, bias_h.data(), s.k * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dz.p, z_h.data(), ny * 2, cudaMemcpyHostToDevice);

  // The reference: float sums of the decoded codes, times S, plus the fp16 bias and residual.
  std::vector<float> want(ny);
  const int64_t pad = s.r / 2;
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oh = 0; oh < spec.ho; ++oh)
      for (int64_t ow = 0; ow < spec.wo; ++ow)
        for (int64_t k = 0; k < s.k; ++k) {
          double acc = 0;
          for (int64_t i = 0; i < s.r; ++i)
            for (int64_t j = 0; j < s.r; ++j) {
              const int64_t ih = oh - pad + i, iw = ow - pad + j;
              if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
              for (int64_t c = 0; c < s.c; ++c)
                acc += fp8e4m3_bits_to_float(x[((b * s.h + ih) * s.w + iw) * s.c + c]) *
                       fp8e4m3_bits_to_float(w[((k * s.r + i) * s.r + j) * s.c + c]);
            }
          const int64_t o = ((b * spec.ho + oh) * spec.wo + ow) * s.k + k;
          const float v = static_cast<float>(acc) * scale[k] + half_bits_to_float(bias_h[k]) +
                          half_bits_to_float(z_h[o]);
          want[o] = std::max(v, 0.f);
        }

  int correct = 0;
  for (const auto& p : plans) {
    DeviceBuf ws(p->workspace);
    cudaMemset(dy.p, 0xff, ny * 2);  // poison: unwritten fp16 elements read NaN
    Status st = execute_conv_plan(handle.h, *p, dx.p, dw.p, dy.p, db.p, dz.p, ws.p, ds.p);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> got(ny);
    cudaMemcpy(got.data(), dy.p, ny * 2, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int64_t i = 0; i < ny; ++i) {
      const float g = half_bits_to_float(got[i]);
      const double err =
          std::isfinite(g) ? std::fabs(g - want[i]) / (1.0 + std::fabs(want[i])) : 1e9;
      worst = std::max(worst, err);
    }
    std::printf("[ fp8      ] engine %lld: worst relative error %.2e\n",
                static_cast<long long>(p->cfg.engine), worst);
    EXPECT_LT(worst, 4e-3) << "engine " << p->cfg.engine;  // fp16 output: 2^-11, sums in float
    correct += worst < 4e-3;
  }
  EXPECT_GT(correct, 0);
}

// Best time (ms) over the plans, each run `reps` times after a warm-up.
double best_ms(cudnnHandle_t h, const std::vector<std::unique_ptr<ConvPlan>>& plans, void* x,
               void* w, void* y, void* b, void* z, void* sc, int64_t* engine) {
  double best = -1;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const auto& p : plans) {
    DeviceBuf ws(p->workspace);
    if (!execute_conv_plan(h, *p, x, w, y, b, z, ws.p, sc).is_ok()) continue;
    if (cudaDeviceSynchronize() != cudaSuccess) continue;
    constexpr int reps = 20;
    cudaEventRecord(e0);
    for (int i = 0; i < reps; ++i) (void)execute_conv_plan(h, *p, x, w, y, b, z, ws.p, sc);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    ms /= reps;
    if (best < 0 || ms < best) best = ms, *engine = p->cfg.engine;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}

// ResNet-50's conv shapes at batch 256, fp16 against fp8 with the same epilogue (bias, ReLU;
// the residual where ResNet has one). Printed for the record (bench/results/int8.md); a
// measurement, not a check, so it runs only where asked (KILN_BENCH_FP8=1).
TEST(CudnnFp8, ResNet50ShapesAgainstFp16) {
  if (!std::getenv("KILN_BENCH_FP8")) GTEST_SKIP() << "a timing: set KILN_BENCH_FP8=1 to run it";
  Handle handle;
  const std::vector<std::pair<const char*, Shape4>> shapes = {
      {"layer1 1x1 64→64", {256, 64, 56, 56, 64, 1, 1}},
      {"layer1 3x3 64→64", {256, 64, 56, 56, 64, 3, 1}},
      {"layer1 1x1 64→256 +res", {256, 64, 56, 56, 256, 1, 1}},
      {"layer2 3x3 128→128", {256, 128, 28, 28, 128, 3, 1}},
      {"layer3 1x1 1024→256", {256, 1024, 14, 14, 256, 1, 1}},
      {"layer3 3x3 256→256", {256, 256, 14, 14, 256, 3, 1}},
      {"layer4 1x1 512→2048 +res", {256, 512, 7, 7, 2048, 1, 1}},
      {"layer4 3x3 512→512", {256, 512, 7, 7, 512, 3, 1}},
  };
  std::printf("[ fp8      ] %-26s %10s %10s %7s\n", "conv (batch 256)", "fp16 ms", "fp8 ms",
              "ratio");
  double sum16 = 0, sum8 = 0;
  for (const auto& [name, s] : shapes) {
    const bool res = std::string(name).find("+res") != std::string::npos;
    const ConvGraphSpec s16 = spec_of(s, false, res), s8 = spec_of(s, true, res);
    const int64_t nx = s.n * s.h * s.w * s.c, nw = s.k * s.r * s.r * s.c;
    const int64_t ny = s.n * s16.ho * s16.wo * s.k;
    ScratchBuffer x, w, y, b, z, sc;
    ASSERT_TRUE(x.alloc_random(DataType::kFloat16, nx, 1).is_ok());
    ASSERT_TRUE(w.alloc_random(DataType::kFloat16, nw, 2).is_ok());
    ASSERT_TRUE(y.alloc(ny * 2).is_ok());
    ASSERT_TRUE(b.alloc_random(DataType::kFloat16, s.k, 3).is_ok());
    ASSERT_TRUE(z.alloc_random(DataType::kFloat16, ny, 4).is_ok());
    ASSERT_TRUE(sc.alloc_random(DataType::kFloat32, s.k, 5).is_ok());
    std::string why16, why8;
    auto p16 = plans_for(handle.h, s16, &why16, 4);
    auto p8 = plans_for(handle.h, s8, &why8, 4);
    int64_t e16 = -1, e8 = -1;
    const double t16 =
        best_ms(handle.h, p16, x.get(), w.get(), y.get(), b.get(), z.get(), nullptr, &e16);
    // fp8 reads the same bytes as codes: any byte is a code (0x7f/0xff are NaN, which only
    // makes the output NaN, not the time).
    const double t8 =
        best_ms(handle.h, p8, x.get(), w.get(), y.get(), b.get(), z.get(), sc.get(), &e8);
    std::printf("[ fp8      ] %-26s %10.4f %10.4f %7.2f  (engines %lld / %lld%s)\n", name, t16, t8,
                t8 > 0 && t16 > 0 ? t16 / t8 : 0.0, static_cast<long long>(e16),
                static_cast<long long>(e8), p8.empty() ? (", fp8: " + why8).c_str() : "");
    if (t16 > 0 && t8 > 0) sum16 += t16, sum8 += t8;
  }
  std::printf("[ fp8      ] sum of the shapes both ran: fp16 %.3f ms, fp8 %.3f ms (%.2fx)\n", sum16,
              sum8, sum8 > 0 ? sum16 / sum8 : 0.0);
}

}  // namespace
}  // namespace kiln
