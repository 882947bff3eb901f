// The runtime's plan builder and executor (runtime/plan.h) on the host: a plan of reference
// kernels gives the reference engine's results exactly, evaluates shape arithmetic at build,
// places its values in one arena, and says so in its text; the host device converts layouts
// and float dtypes.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/dnnl_test_net.h"
#include "core/half.h"
#include "runtime/plan.h"

namespace kiln::test {
namespace {

// x[2,3,10,10] → conv 8 + relu → maxpool → Reshape(p, Concat(Shape(p)[0], -1)) → output.
std::shared_ptr<Engine> reshape_net(KernelChoice backend = KernelChoice::kReference) {
  Net n;
  Value* x = n.input("x", {2, 3, 10, 10});
  Value* a = n.conv(x, 8, 3, {2, 8, 10, 10});
  Value* p = n.pool(OpKind::MaxPool, a, {2, 8, 5, 5}, pool_attrs(2, 2, 0));
  Graph& g = *n.g;
  Value* shape = g.add_value("shape");
  shape->dtype = DataType::kInt64;
  g.add_node(OpKind::Shape, "shape_of", {p}, {shape});
  Tensor lead(DataType::kInt64, {1});
  lead.data<int64_t>()[0] = -1;
  Value* first = g.add_value("first");
  first->dtype = DataType::kInt64;
  Attributes slice;
  slice.set("axis", int64_t{0});
  Tensor zero(DataType::kInt64, {});
  zero.data<int64_t>()[0] = 0;
  Node* gather =
      g.add_node(OpKind::Gather, "batch_of", {shape, g.add_constant("zero", zero)}, {first});
  gather->attrs = slice;
  Value* first1 = g.add_value("first1");
  first1->dtype = DataType::kInt64;
  Tensor axes(DataType::kInt64, {1});
  axes.data<int64_t>()[0] = 0;
  g.add_node(OpKind::Unsqueeze, "unsq", {first, g.add_constant("axes", axes)}, {first1});
  Value* target = g.add_value("target");
  target->dtype = DataType::kInt64;
  Node* cat = g.add_node(OpKind::Concat, "cat", {first1, g.add_constant("lead", lead)}, {target});
  cat->attrs.set("axis", int64_t{0});
  Value* y = g.add_value("out");
  y->dtype = DataType::kFloat32;
  g.add_node(OpKind::Reshape, "flatten", {p, target}, {y});
  g.outputs() = {y};
  EngineOptions o;
  o.backend = backend;
  o.optimize = false;
  auto e = build_engine(std::move(n.g), o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

TEST(PlanBuilder, HostPlanGivesTheReferenceResultAndEvaluatesShapesAtBuild) {
  std::shared_ptr<Engine> engine = reshape_net();
  ASSERT_TRUE(engine);
  const Engine::Impl& e = engine_impl(*engine);
  const Tensor x = random_tensor({2, 3, 10, 10}, 5);
  auto want = engine->create_context()->run({{"x", x}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  std::unique_ptr<PlanDevice> host = make_host_plan_device();
  PlanDevices devices;
  devices.by_kind[device_index(DeviceKind::kCpu)] = host.get();
  PlanOptions options;  // main: the host
  Plan plan;
  ASSERT_TRUE(
      build_plan(*e.graph, e.order, {TensorDesc{x.dtype(), x.shape()}}, options, devices, plan)
          .is_ok());
  // Shape, Gather, Unsqueeze and Concat ran at build: Conv, MaxPool and Reshape remain.
  ASSERT_EQ(plan.steps.size(), 3u) << plan_info(plan, *e.graph).text();
  for (const PlanStep& s : plan.steps) {
    EXPECT_EQ(s.kind, PlanStepKind::kKernel);
    EXPECT_EQ(s.device, DeviceKind::kCpu);
    EXPECT_FALSE(s.fallback);
    EXPECT_TRUE(s.info.on_cpu);
  }
  EXPECT_FALSE(plan.has_fallback);
  const std::string text = plan_info(plan, *e.graph).text();
  EXPECT_NE(text.find("cpu kernel Conv conv"), std::string::npos) << text;
  EXPECT_NE(text.find("cpu kernel Reshape flatten [view]"), std::string::npos) << text;
  EXPECT_NE(text.find("arena cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("input x [2,3,10,10]"), std::string::npos) << text;
  // The structure leaves the tactics out; the text has them.
  EXPECT_EQ(plan_info(plan, *e.graph).structure().find("[view]"), std::string::npos);
  // Input (2·3·10·10), conv output (2·8·10·10), pool output and the graph output, floats.
  const size_t cpu = device_index(DeviceKind::kCpu);
  EXPECT_GE(plan.arena_bytes[cpu], plan.arena_lower_bound[cpu]);
  EXPECT_GE(plan.arena_lower_bound[cpu], (600 + 1600) * 4);
  EXPECT_LE(plan.arena_bytes[cpu], (600 + 1600 + 400 + 400) * 4 + 4 * 256);

  // Poisoned arena: an element no step writes shows.
  std::vector<uint8_t> arena(static_cast<size_t>(plan.arena_bytes[cpu]), 0xFF);
  void* arenas[kDeviceKinds] = {};
  void* workspaces[kDeviceKinds] = {};
  arenas[cpu] = arena.data();
  bind_plan(plan, arenas, workspaces);
  for (int run = 0; run < 2; ++run) {
    // The input's bytes are the arena's until its last reader: written before every run.
    std::memcpy(plan.data(plan.input_slots[0]), x.raw(), x.nbytes());
    ASSERT_TRUE(run_plan_steps(plan, devices, 0, plan.steps.size()).is_ok());
    const PlanSlot& out = plan.slots[plan.output_slots[0]];
    ASSERT_EQ(out.desc.shape, (Shape{2, 200}));
    const Tensor got = tensor_from_bytes(plan.data(plan.output_slots[0]), out.desc.dtype,
                                         out.desc.shape, DataType::kFloat32);
    const Tensor& w = want->at("out");
    ASSERT_EQ(got.shape(), w.shape());
    int64_t differ = 0;
    for (int64_t i = 0; i < w.numel(); ++i) differ += got.data<float>()[i] != w.data<float>()[i];
    EXPECT_EQ(differ, 0) << "run " << run << "\n" << plan_info(plan, *e.graph).text();
  }
}

// The host device with timing, each kernel's time given by its backend: the planner times
// every candidate that accepts a node and keeps the fastest, whatever the registration order.
class TimedHost final : public PlanDevice {
 public:
  explicit TimedHost(std::map<std::string, float> ms) : ms_(std::move(ms)) {}
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  DataType dtype_for(DataType dt, Precision p) const override { return host_->dtype_for(dt, p); }
  BuildContext& build_context() override { return host_->build_context(); }
  Result<void*> place_constant(const std::string& key, const void* bytes, size_t n) override {
    return host_->place_constant(key, bytes, n);
  }
  Status execute(Kernel& kernel, const KernelOperands& ops, void* ws, size_t bytes) override {
    return host_->execute(kernel, ops, ws, bytes);
  }
  Status convert(const TensorRef& src, const TensorRef& dst) override {
    return host_->convert(src, dst);
  }
  Status copy_to_host(void* h, const void* d, size_t n) override { return internal_error("no"); }
  Status copy_from_host(void* d, const void* h, size_t n) override { return internal_error("no"); }
  bool times_candidates() const override { return true; }
  Result<float> time_kernel(Kernel& kernel, const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out, const std::string& key) override {
    keys.push_back(key);
    EXPECT_FALSE(out.empty() || !out[0].present()) << key;  // prepared
    for (const auto& [backend, ms] : ms_)
      if (key.rfind("kernel|" + backend + "|", 0) == 0) return ms;
    return internal_error("no time for " + key);
  }
  std::vector<std::string> keys;

 private:
  std::unique_ptr<PlanDevice> host_ = make_host_plan_device();
  std::map<std::string, float> ms_;
};

TEST(PlanBuilder, TimesTheCandidatesThatAcceptANodeAndKeepsTheFastest) {
  std::shared_ptr<Engine> engine = reshape_net(KernelChoice::kAuto);
  ASSERT_TRUE(engine);
  const Engine::Impl& e = engine_impl(*engine);
  const std::vector<TensorDesc> in = {TensorDesc{DataType::kFloat32, {2, 3, 10, 10}}};
  for (const auto& [onednn_ms, reference_ms] : {std::pair{5.f, 1.f}, std::pair{1.f, 5.f}}) {
    TimedHost host({{"onednn", onednn_ms}, {"reference", reference_ms}});
    PlanDevices devices;
    devices.by_kind[device_index(DeviceKind::kCpu)] = &host;
    PlanOptions options;
    options.states = &e.states;
    Plan plan;
    ASSERT_TRUE(build_plan(*e.graph, e.order, in, options, devices, plan).is_ok());
    const std::string text = plan_info(plan, *e.graph).text();
    const bool reference_wins = reference_ms < onednn_ms;
    // Conv and MaxPool have both candidates; the Reshape (a view) only the reference.
    int timed_steps = 0;
    for (const PlanStep& s : plan.steps) {
      if (s.kind != PlanStepKind::kKernel || s.timed.empty()) continue;
      ++timed_steps;
      ASSERT_EQ(s.timed.size(), 2u) << text;
      EXPECT_EQ(s.timed[0],
                std::string("onednn: ") + (reference_wins ? "5.0000 ms" : "1.0000 ms (chosen)"));
      EXPECT_EQ(s.timed[1],
                std::string("reference: ") + (reference_wins ? "1.0000 ms (chosen)" : "5.0000 ms"));
      EXPECT_EQ(s.info.tactic.rfind("onednn", 0) == 0, !reference_wins) << s.info.tactic;
    }
    EXPECT_EQ(timed_steps, 2) << text;
    EXPECT_NE(text.find("    timed onednn: "), std::string::npos) << text;
    ASSERT_FALSE(host.keys.empty());
    EXPECT_EQ(host.keys[0].rfind("kernel|onednn|fp32|Conv ", 0), 0u) << host.keys[0];
    EXPECT_NE(host.keys[0].find("|float32[2,3,10,10]"), std::string::npos) << host.keys[0];
  }
}

// Where only one candidate accepts a node (here oneDNN declines, planned without its state),
// nothing is timed: the one that accepts is kept as it was prepared, once, and the reasons of
// those that declined before it are kept with the step.
TEST(PlanBuilder, OneCandidateThatAcceptsIsKeptUntimed) {
  std::shared_ptr<Engine> engine = reshape_net(KernelChoice::kAuto);
  ASSERT_TRUE(engine);
  const Engine::Impl& e = engine_impl(*engine);
  TimedHost host({{"onednn", 1.f}, {"reference", 5.f}});
  PlanDevices devices;
  devices.by_kind[device_index(DeviceKind::kCpu)] = &host;
  PlanOptions options;  // no backend states: oneDNN declines
  Plan plan;
  const std::vector<TensorDesc> in = {TensorDesc{DataType::kFloat32, {2, 3, 10, 10}}};
  ASSERT_TRUE(build_plan(*e.graph, e.order, in, options, devices, plan).is_ok());
  const std::string text = plan_info(plan, *e.graph).text();
  EXPECT_TRUE(host.keys.empty()) << "nothing to choose, nothing timed:\n" << text;
  int conv_and_pool = 0;
  for (const PlanStep& s : plan.steps) {
    if (s.kind != PlanStepKind::kKernel || !s.node) continue;
    if (s.node->op != OpKind::Conv && s.node->op != OpKind::MaxPool) continue;
    ++conv_and_pool;
    EXPECT_TRUE(s.timed.empty()) << text;
    EXPECT_EQ(s.info.tactic.find("onednn"), std::string::npos) << s.info.tactic;
    ASSERT_EQ(s.declined.size(), 1u) << text;
    EXPECT_EQ(s.declined[0].rfind("onednn: ", 0), 0u) << s.declined[0];
  }
  EXPECT_EQ(conv_and_pool, 2) << text;
  EXPECT_NE(text.find("    declined by onednn: "), std::string::npos) << text;
}

// Quantization scales by value name land on every slot of that value, are printed with it,
// and so are part of the structure a plan file saves; a scale that does not fit is an error.
TEST(PlanBuilder, ValueScalesAreKeptOnSlotsAndPrinted) {
  std::shared_ptr<Engine> engine = reshape_net();
  ASSERT_TRUE(engine);
  const Engine::Impl& e = engine_impl(*engine);
  std::unique_ptr<PlanDevice> host = make_host_plan_device();
  PlanDevices devices;
  devices.by_kind[device_index(DeviceKind::kCpu)] = host.get();
  std::map<std::string, QuantScale> scales;
  scales["x"] = QuantScale{{0.5f}, {3}, -1};
  QuantScale per_channel;
  per_channel.axis = 1;
  for (int c = 0; c < 200; ++c) per_channel.scale.push_back(0.01f * static_cast<float>(c + 1));
  scales["out"] = per_channel;
  PlanOptions options;
  options.value_scales = &scales;
  auto build = [&](Plan& plan) {
    return build_plan(*e.graph, e.order, {TensorDesc{DataType::kFloat32, {2, 3, 10, 10}}}, options,
                      devices, plan);
  };
  Plan plan;
  ASSERT_TRUE(build(plan).is_ok());
  const PlanSlot& in = plan.slots[plan.input_slots[0]];
  ASSERT_EQ(in.quant.scale, std::vector<float>{0.5f});
  EXPECT_EQ(in.quant.zero_point, std::vector<int32_t>{3});
  EXPECT_EQ(plan.slots[plan.output_slots[0]].quant.scale.size(), 200u);
  int unscaled = 0;
  for (const PlanSlot& s : plan.slots) unscaled += s.quant.empty();
  EXPECT_GT(unscaled, 0);
  const std::string structure = plan_info(plan, *e.graph).structure();
  EXPECT_NE(structure.find(" q(scale 0.5 zero 3)"), std::string::npos) << structure;
  EXPECT_NE(structure.find(" q(axis 1: 200 scales 0.00999999978..2 #"), std::string::npos)
      << structure;

  // One scale changed: the saved structure differs.
  scales["out"].scale[100] *= 2;
  Plan changed;
  ASSERT_TRUE(build(changed).is_ok());
  EXPECT_NE(plan_info(changed, *e.graph).structure(), structure);

  scales["out"].scale.pop_back();
  Plan wrong_count;
  const Status count = build(wrong_count);
  EXPECT_EQ(count.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(count.message().find("199 scales on axis 1"), std::string::npos) << count.message();
  scales.erase("out");
  scales["nowhere"] = QuantScale{{1.f}, {}, -1};
  Plan unknown;
  const Status missing = build(unknown);
  EXPECT_NE(missing.message().find("'nowhere': no such value"), std::string::npos)
      << missing.message();
}

TEST(PlanBuilder, HostDeviceConvertsLayoutsAndFloatDtypes) {
  std::unique_ptr<PlanDevice> host = make_host_plan_device();
  const Shape s = {2, 3, 4, 5};
  const Tensor x = random_tensor(s, 9);
  // plain float32 → NHWC float16 → plain float32: each element where NHWC puts it, rounded
  // as float16 rounds it.
  std::vector<uint16_t> nhwc(static_cast<size_t>(x.numel()), 0xFFFF);
  TensorRef src{TensorDesc{DataType::kFloat32, s}, const_cast<void*>(x.raw())};
  TensorRef mid{TensorDesc{DataType::kFloat16, s, nullptr, Layout::kNHWC}, nhwc.data()};
  ASSERT_TRUE(host->convert(src, mid).is_ok());
  const float* xp = x.data<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w) {
          const float want =
              half_bits_to_float(float_to_half_bits(xp[((n * s[1] + c) * s[2] + h) * s[3] + w]));
          const float got = half_bits_to_float(nhwc[((n * s[2] + h) * s[3] + w) * s[1] + c]);
          ASSERT_EQ(got, want);
        }
  std::vector<float> back(static_cast<size_t>(x.numel()), -1.f);
  TensorRef dst{TensorDesc{DataType::kFloat32, s}, back.data()};
  ASSERT_TRUE(host->convert(mid, dst).is_ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(back[i], half_bits_to_float(float_to_half_bits(xp[i])));
  // Integers change layout, never dtype.
  Tensor ints(DataType::kInt64, s);
  TensorRef isrc{TensorDesc{DataType::kInt64, s}, ints.raw()};
  TensorRef bad{TensorDesc{DataType::kFloat32, s}, back.data()};
  const Status st = host->convert(isrc, bad);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("int64"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// EngineOptions::reuse_memory off (kiln bench --ladder's framework-like rows): every value
// keeps bytes of its own, so the arena holds the sum of the values, not its reuse's peak;
// the results do not change.
TEST(PlanBuilder, WithoutMemoryReuseEveryValueKeepsItsOwnBytes) {
  auto net = [] {
    Net n;
    Value* x = n.input("x", {2, 4, 12, 12});
    Value* a = n.conv(x, 8, 3, {2, 8, 12, 12});
    Value* b = n.conv(a, 8, 3, {2, 8, 12, 12});
    Value* c = n.conv(b, 8, 3, {2, 8, 12, 12});
    Value* d = n.conv(c, 8, 3, {2, 8, 12, 12});
    n.g->outputs() = {n.pool(OpKind::GlobalAveragePool, d, {2, 8, 1, 1}, {})};
    return std::move(n.g);
  };
  const Tensor x = random_tensor({2, 4, 12, 12}, 31);
  std::vector<float> got[2];
  int64_t arena[2] = {};
  for (bool reuse : {true, false}) {
    EngineOptions o;
    o.backend = KernelChoice::kReference;
    o.threads = 1;
    o.reuse_memory = reuse;
    auto e = build_engine(net(), o);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    auto ctx = (*e)->create_context();
    auto r = ctx->run({{"x", x}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    got[reuse] = r->begin()->second.to_floats();
    auto m = ctx->device_memory();
    ASSERT_TRUE(m.is_ok());
    arena[reuse] = m->arena;
  }
  EXPECT_EQ(got[0], got[1]);
  // Four conv outputs of 2·8·12·12 floats (9216 bytes each): with reuse two at a time suffice.
  EXPECT_GE(arena[0], 4 * 9216) << "without reuse";
  EXPECT_LT(arena[1], arena[0]) << "with reuse";
}

}  // namespace
}  // namespace kiln::test
