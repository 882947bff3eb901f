// Context::enqueue on the CPU: the CPU computes on the calling thread, so on_done has run when
// enqueue returns, with run()'s outputs; outputs go into the caller's buffers where given
// (the returned tensors are those buffers); a wrong buffer (dtype, shape, unknown output) or a
// bad input is an error returned at once, and on_done is never called; runs enqueued after an
// error still run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "kiln/engine.h"

namespace kiln {
namespace {

struct Fixture {
  std::shared_ptr<Engine> engine;
  std::string in, out;
};

bool load(Fixture& f) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx";
  if (!std::filesystem::exists(path)) return false;
  EngineOptions o;
  o.threads = 1;
  auto e = Engine::load(path, o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return false;
  f.engine = std::move(e).value();
  f.in = f.engine->inputs()[0].name;
  f.out = f.engine->outputs()[0].name;
  return true;
}

Tensor pixels(int64_t batch, int seed) {
  std::vector<float> v(static_cast<size_t>(batch) * 28 * 28);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7 + seed) % 23) / 23.f;
  return Tensor::from_floats({batch, 1, 28, 28}, v);
}

TEST(ContextEnqueue, OnTheCpuOnDoneRunsBeforeEnqueueReturnsWithRunsOutputs) {
  Fixture f;
  if (!load(f)) GTEST_SKIP() << "models/fashion_mnist.onnx has not been trained";
  auto ctx = f.engine->create_context();
  for (int64_t batch : {1, 3}) {
    const Tensor x = pixels(batch, static_cast<int>(batch));
    auto want = ctx->run({{f.in, x}});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    int calls = 0;
    Result<std::map<std::string, Tensor>> got = internal_error("not called");
    ASSERT_TRUE(ctx->enqueue({{f.in, x}},
                             [&](Result<std::map<std::string, Tensor>> r) {
                               ++calls;
                               got = std::move(r);
                             })
                    .is_ok());
    EXPECT_EQ(calls, 1);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(got->at(f.out).to_floats(), want->at(f.out).to_floats());
    EXPECT_TRUE(ctx->wait().is_ok());
  }
}

TEST(ContextEnqueue, OutputsGoIntoTheCallersBuffers) {
  Fixture f;
  if (!load(f)) GTEST_SKIP() << "models/fashion_mnist.onnx has not been trained";
  auto ctx = f.engine->create_context();
  const Tensor x = pixels(2, 5);
  auto want = ctx->run({{f.in, x}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const Tensor& w = want->at(f.out);
  Tensor buffer(w.dtype(), w.shape());
  std::vector<float> nan(static_cast<size_t>(w.numel()), std::nanf(""));
  std::memcpy(buffer.raw(), nan.data(), buffer.nbytes());
  EnqueueOptions place;
  place.buffers[f.out] = buffer;
  Tensor got;
  ASSERT_TRUE(ctx->enqueue(
                     {{f.in, x}},
                     [&](Result<std::map<std::string, Tensor>> r) {
                       ASSERT_TRUE(r.is_ok()) << r.status().to_string();
                       got = r->at(f.out);
                     },
                     place)
                  .is_ok());
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.raw(), buffer.raw());  // the caller's bytes, written in place
  EXPECT_EQ(buffer.to_floats(), w.to_floats());
}

TEST(ContextEnqueue, BadBuffersAndInputsAreRefusedAtOnceWithoutACall) {
  Fixture f;
  if (!load(f)) GTEST_SKIP() << "models/fashion_mnist.onnx has not been trained";
  auto ctx = f.engine->create_context();
  const Tensor x = pixels(2, 9);
  int calls = 0;
  auto count = [&](Result<std::map<std::string, Tensor>>) { ++calls; };
  struct Case {
    const char* what;
    EnqueueOptions place;
    std::string want;
  };
  std::vector<Case> cases(5);
  cases[0] = {"shape", {}, "shape"};
  cases[0].place.buffers[f.out] = Tensor(DataType::kFloat32, {3, 10});
  cases[1] = {"dtype", {}, "dtype"};
  cases[1].place.buffers[f.out] = Tensor(DataType::kFloat16, {2, 10});
  cases[2] = {"unknown", {}, "unknown output 'nope'"};
  cases[2].place.buffers["nope"] = Tensor(DataType::kFloat32, {2, 10});
  cases[3] = {"empty", {}, "is empty"};
  cases[3].place.buffers[f.out] = Tensor();
  int stream = 0;  // a CPU engine has no streams
  cases[4] = {"stream", {}, "a stream is given to GPU engines only"};
  cases[4].place.stream = &stream;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Status st = ctx->enqueue({{f.in, x}}, count, c.place);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(c.want), std::string::npos) << st.to_string();
  }
  const Status bad = ctx->enqueue({{f.in, Tensor(DataType::kFloat32, {2, 3, 28, 28})}}, count);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_EQ(calls, 0);
  // The Context still runs.
  EXPECT_TRUE(ctx->enqueue({{f.in, x}}, count).is_ok());
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace kiln
