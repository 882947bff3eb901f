// Constants that fp16 cannot hold, in fp16 plans: F.normalize's eps of 1e-12 (as Swin V2
// exports it: ReduceL2 → Clip(min = eps) → Div) flushed to 0 made 0/0 =
// NaN for an all-zero row; a -1e9 attention mask became -inf. Such constants are saturated
// into fp16's range (and the plan notes it), Clip's bounds rounded toward their meaning. A row
// of zeros included; activation memory poisoned.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"

namespace kiln::test {
namespace {

// x [N,16] → y = x / Clip(ReduceL2(x), min = 1e-12), z = x / (ReduceL2(x) + 1e-12),
// w = Softmax(x + mask), the mask -1e9 on every other column.
ModelBuilder normalize_model() {
  ModelBuilder b(17);
  b.input("x", kFloat, {"N", 16});
  b.initializer("eps", {}, {1e-12f});
  std::vector<float> mask(16);
  for (int i = 0; i < 16; ++i) mask[i] = i % 2 ? -1e9f : 0.f;
  b.initializer("mask", {16}, mask);
  auto& r = b.node("ReduceL2", {"x"}, {"norm"}, "norm");
  add_attr(r, "axes", std::vector<int64_t>{1});
  add_attr(r, "keepdims", int64_t{1});
  b.node("Clip", {"norm", "eps"}, {"clipped"}, "clip");
  b.node("Div", {"x", "clipped"}, {"y"}, "div_clip");
  b.node("Add", {"norm", "eps"}, {"guarded"}, "add_eps");
  b.node("Div", {"x", "guarded"}, {"z"}, "div_add");
  b.node("Add", {"x", "mask"}, {"masked"}, "add_mask");
  add_attr(b.node("Softmax", {"masked"}, {"w"}, "softmax"), "axis", int64_t{1});
  for (const char* o : {"y", "z", "w"}) b.output(o, kFloat, {"N", 16});
  return b;
}

TEST(CudaFp16Constants, TinyEpsAndHugeMaskStayFinite) {
  const int64_t n = 5;
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> xv(n * 16);
  for (float& v : xv) v = d(gen);
  for (int k = 0; k < 16; ++k) xv[2 * 16 + k] = 0.f;  // row 2: all zeros, its norm 0
  Tensor x = Tensor::from_floats({n, 16}, xv);

  ModelBuilder b = normalize_model();
  EngineOptions ref;
  ref.backend = KernelChoice::kReference;
  auto want_engine = Engine::from_bytes(b.bytes(), ref);
  ASSERT_TRUE(want_engine.is_ok()) << want_engine.status().to_string();
  auto want = (*want_engine)->create_context()->run({{"x", x}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(precision_name(p));
    EngineOptions o;
    o.device = Device::kCuda;
    o.precision = p;
    o.time_tactics = false;
    o.poison_memory = true;
    auto e = Engine::from_bytes(b.bytes(), o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    auto ctx = (*e)->create_context();
    auto got = ctx->run({{"x", x}});
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    for (const char* name : {"y", "z", "w"}) {
      SCOPED_TRACE(name);
      const Tensor& g = got->at(name);
      const Tensor& w = want->at(name);
      ASSERT_EQ(g.shape(), w.shape());
      const std::vector<float> gv = g.to_floats();
      for (size_t i = 0; i < gv.size(); ++i) ASSERT_TRUE(std::isfinite(gv[i])) << "element " << i;
      for (int k = 0; k < 16; ++k)
        if (std::string(name) != "w") EXPECT_EQ(gv[2 * 16 + k], 0.f) << "zero row, column " << k;
      EXPECT_LE(relative_l2(g, w), p == Precision::kFp16 ? 2e-3 : 1e-6);
    }
    const ContextStats s = ctx->stats();
    if (p == Precision::kFp16) {
      // The added eps and the mask were saturated, and the plan says so; Clip's bound is
      // rounded inside the kernel without a note.
      ASSERT_EQ(s.notes.size(), 2u) << ::testing::PrintToString(s.notes);
      for (const std::string& note : s.notes) EXPECT_NE(note.find("saturated"), std::string::npos);
    } else {
      EXPECT_TRUE(s.notes.empty()) << ::testing::PrintToString(s.notes);
    }
  }
}

}  // namespace
}  // namespace kiln::test
