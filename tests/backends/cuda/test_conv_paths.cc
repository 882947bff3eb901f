// The cuDNN Conv kernel's two paths forced one at a time (EngineOptions::cudnn_conv_path,
// which the kernel reads at prepare): the legacy convolution API and the backend graph API, against
// the reference over geometries × epilogues × precisions, timed and heuristic, in place and cached;
// and the channel padding that lets tensor cores run the RGB stem.
#include <cuda_runtime.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/conv_test_cases.h"
#include "backends/cuda/cudnn/pad_channels.h"
#include "core/half.h"

namespace kiln::test {
namespace {

// Geometries every path must run; the others (depthwise, dilated, asymmetric pads) the
// graph path may decline when cuDNN offers no engine for them.
bool core_geometry(const ConvCase& c) {
  for (const char* n : {"resnet_3x3", "downsample_1x1_s2", "stem_7x7_s2", "odd_1x5x9x7", "batch3"})
    if (std::string(c.name) == n) return true;
  return false;
}

// One forced-path run: must match the reference and report the path in its tactic. The
// graph path may decline (kUnsupported) a non-core geometry, and a strict-fp32 conv with a
// residual: cuDNN 9's heuristics offer no engine for that NCHW fp32 graph.
void expect_path(const char* path, const ConvCase& c, const EpiCase& e, Precision p, uint32_t seed,
                 LibRunOptions opt = {}) {
  SCOPED_TRACE(std::string(path) + " / " + c.name + " / " + e.name + " / " + precision_name(p) +
               (opt.time_tactics ? " timed" : " heuristic") + (opt.in_place ? " in place" : ""));
  auto cn = make_conv(c, e, seed);
  TacticCache cache;
  const bool graph = std::strcmp(path, "graph") == 0;
  opt.conv_path = graph ? CudnnConvPath::kGraph : CudnnConvPath::kLegacy;
  if (graph && (!core_geometry(c) || (p == Precision::kFp32 && e.residual))) {
    auto got = run_lib_kernel(*cn->node, cn->in, p, cache, opt);
    if (!got.is_ok()) {
      EXPECT_EQ(got.status().code(), StatusCode::kUnsupported) << got.status().to_string();
      return;
    }
  }
  std::string tactic;
  expect_lib_kernel_matches(*cn->node, cn->in, p, cache, opt, &tactic);
  EXPECT_EQ(tactic.find("graph") != std::string::npos, graph) << tactic;
  if (!opt.time_tactics) {
    EXPECT_NE(tactic.find("heuristic"), std::string::npos) << tactic;
  }
}

// The forced-path tables use the heuristic choice: timing every candidate of every case
// takes many minutes. Timed runs of each path are in the tests below.
const LibRunOptions kHeuristic{false, false};

TEST(CudnnConvPaths, LegacyMatchesReference) {
  uint32_t seed = 2000;
  for (const ConvCase& c : kConvs)
    for (const EpiCase& e : kEpilogues)
      for (Precision p : kPrecisions) expect_path("legacy", c, e, p, seed += 5, kHeuristic);
}

// Every geometry with two epilogues, rotating so that every epilogue meets one or more
// geometries: each case finalizes cuDNN plans (some compiled at runtime); the full product
// took more than 5 minutes on the H200, four per geometry 58 s, three 42 s.
TEST(CudnnConvPaths, GraphMatchesReference) {
  uint32_t seed = 3000;
  const int n_epi = static_cast<int>(std::size(kEpilogues));
  int ci = 0;
  for (const ConvCase& c : kConvs) {
    for (int k = 0; k < 2; ++k) {
      const EpiCase& e = kEpilogues[(ci * 2 + k) % n_epi];
      for (Precision p : kPrecisions) expect_path("graph", c, e, p, seed += 5, kHeuristic);
    }
    ++ci;
  }
}

// Each timed graph case finalizes and times up to ten plans (some compiled at runtime): two
// geometries and three epilogues keep this under a minute. The graph path never runs in place
// (CudnnConvKernel::inplace_input: its engines promise no read-before-write order).
TEST(CudnnConvPaths, GraphHeuristicAndTimed) {
  uint32_t seed = 4000;
  for (int ci : {0, 8})
    for (int ei : {2, 4, 12})
      for (Precision p : kPrecisions) {
        expect_path("graph", kConvs[ci], kEpilogues[ei], p, seed += 3, {false, false});
        expect_path("graph", kConvs[ci], kEpilogues[ei], p, seed += 3, {true, false});
      }
}

// EngineOptions::cudnn_runtime_fusion off: the graph path's timed choice is never an engine
// that compiles its kernel at runtime ("rtc" in the tactic), and still matches the reference.
TEST(CudnnConvPaths, GraphWithoutRuntimeFusion) {
  uint32_t seed = 4500;
  for (int ci : {0, 8})
    for (int ei : {2, 4})
      for (Precision p : {Precision::kFp16, Precision::kBf16}) {
        SCOPED_TRACE(std::string(kConvs[ci].name) + " / " + kEpilogues[ei].name + " / " +
                     precision_name(p));
        auto cn = make_conv(kConvs[ci], kEpilogues[ei], seed += 3);
        TacticCache cache;
        LibRunOptions opt;
        opt.conv_path = CudnnConvPath::kGraph;
        opt.runtime_fusion = false;
        auto got = run_lib_kernel(*cn->node, cn->in, p, cache, opt);
        if (!got.is_ok()) {  // no precompiled engine for this graph
          EXPECT_EQ(got.status().code(), StatusCode::kUnsupported) << got.status().to_string();
          continue;
        }
        std::string tactic;
        expect_lib_kernel_matches(*cn->node, cn->in, p, cache, opt, &tactic);
        EXPECT_EQ(tactic.find(" rtc"), std::string::npos) << tactic;
      }
}

TEST(CudnnConvPaths, LegacyHeuristicAndInPlace) {
  uint32_t seed = 5000;
  for (int ci : {0, 7, 9, 11})
    for (int ei : {0, 2, 4, 10, 13})
      for (Precision p : kPrecisions) {
        expect_path("legacy", kConvs[ci], kEpilogues[ei], p, seed += 3, {false, false});
        if (kEpilogues[ei].residual)
          expect_path("legacy", kConvs[ci], kEpilogues[ei], p, seed += 3, {true, true});
      }
}

// The graph choice is cached (heuristic mode, rank, engine) and rebuilt from the cache.
TEST(CudnnConvPaths, GraphTacticCache) {
  for (Precision p : kPrecisions) {
    SCOPED_TRACE(precision_name(p));
    TacticCache cache;
    // Strict fp32 with a residual has no graph engine (expect_path): relu alone there.
    auto cn = make_conv(kConvs[0], kEpilogues[p == Precision::kFp32 ? 2 : 4], 61);
    std::string first, second;
    const LibRunOptions graph = on_path({}, CudnnConvPath::kGraph);
    expect_lib_kernel_matches(*cn->node, cn->in, p, cache, graph, &first);
    ASSERT_EQ(cache.size(), 1u);
    EXPECT_EQ(first.find("cached"), std::string::npos) << first;
    expect_lib_kernel_matches(*cn->node, cn->in, p, cache, graph, &second);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_NE(second.find("cached"), std::string::npos) << second;
    EXPECT_EQ(first.substr(0, first.find('(')), second.substr(0, second.find('(')));
  }
}

// Stems with few input channels (3, 1, 5, and 12 = a multiple of 4 but not of 8), batch
// 2, through the auto choice (padded or not, whichever is faster) and the graph path.
TEST(CudnnConvPaths, FewInputChannels) {
  uint32_t seed = 6000;
  for (int64_t ch : {3, 1, 5, 12})
    for (const char* path : {"auto", "graph"}) {
      ConvCase c{"stem", {2, ch, 23, 20}, {16, ch, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, nullptr};
      for (int ei : {2, 4, 8})
        for (Precision p : kPrecisions) {
          SCOPED_TRACE(std::string(path) + " C=" + std::to_string(ch) + " / " +
                       kEpilogues[ei].name + " / " + precision_name(p));
          auto cn = make_conv(c, kEpilogues[ei], seed += 3);
          TacticCache cache;
          // Timed in fp16 (the stems' real precision), heuristic otherwise: timing every
          // candidate costs seconds per case.
          const LibRunOptions opt = on_path(
              {p == Precision::kFp16, false},
              std::strcmp(path, "graph") == 0 ? CudnnConvPath::kGraph : CudnnConvPath::kAuto);
          if (std::strcmp(path, "graph") == 0 && p == Precision::kFp32 && kEpilogues[ei].residual) {
            // No graph engine for strict-fp32 NCHW convs with a residual (see expect_path).
            auto got = run_lib_kernel(*cn->node, cn->in, p, cache, opt);
            if (!got.is_ok()) {
              EXPECT_EQ(got.status().code(), StatusCode::kUnsupported) << got.status().to_string();
              continue;
            }
          }
          expect_lib_kernel_matches(*cn->node, cn->in, p, cache, opt);
        }
    }
}

// launch_pad_channels against a host copy: padded channels are zero, the others equal.
TEST(CudnnConvPaths, PadChannelsKernel) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (auto [rows, c, cp] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 8},
                               {37, 3, 8},
                               {1000, 5, 8},
                               {17, 12, 16},
                               {9, 8, 8}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " rows " + std::to_string(rows) + " c " +
                   std::to_string(c) + " -> " + std::to_string(cp));
      const size_t es = dtype_size(dt);
      std::vector<uint8_t> src(static_cast<size_t>(rows * c) * es);
      uint32_t s = 12345;
      for (int64_t i = 0; i < rows * c; ++i) {
        s = s * 1664525u + 1013904223u;
        const float v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) + 0.5f;
        if (dt == DataType::kFloat16) {
          const uint16_t h = float_to_half_bits(v);
          std::memcpy(&src[static_cast<size_t>(i) * 2], &h, 2);
        } else {
          std::memcpy(&src[static_cast<size_t>(i) * 4], &v, 4);
        }
      }
      void *d_src = nullptr, *d_dst = nullptr;
      const size_t dst_bytes = static_cast<size_t>(rows * cp) * es;
      ASSERT_EQ(cudaMalloc(&d_src, src.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_dst, dst_bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d_src, src.data(), src.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(d_dst, 0x7F, dst_bytes), cudaSuccess);  // poison
      Status st = launch_pad_channels(dt, d_src, d_dst, rows, c, cp, nullptr);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      std::vector<uint8_t> dst(dst_bytes);
      ASSERT_EQ(cudaMemcpy(dst.data(), d_dst, dst_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(d_src);
      cudaFree(d_dst);
      std::vector<uint8_t> want(dst_bytes, 0);
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(&want[static_cast<size_t>(r * cp) * es], &src[static_cast<size_t>(r * c) * es],
                    static_cast<size_t>(c) * es);
      EXPECT_EQ(dst, want);
    }
  EXPECT_FALSE(launch_pad_channels(DataType::kFloat32, nullptr, nullptr, 4, 9, 8, nullptr).is_ok());
}

}  // namespace
}  // namespace kiln::test
