// EngineOptions: the per-layer CUDA workspace limit (an explicit value wins, 0 included; the
// default follows the precision); the switches' names, which the CLI and plan files use: every
// name parses back to its value, and anything else is refused naming the accepted ones; and the
// options list generated from options.def: every option listed, its text form read back exactly,
// bad texts and values refused naming the option.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "kiln/options.h"

namespace kiln {
namespace {

TEST(EngineOptions, WorkspaceLimitDefaultsByPrecision) {
  EngineOptions o;
  EXPECT_LT(o.workspace_limit, 0);
  EXPECT_EQ(o.precision, Precision::kFp32);
  EXPECT_EQ(effective_workspace_limit(o), kFp32WorkspaceLimit);
  for (Precision p : {Precision::kTf32, Precision::kFp16}) {
    o.precision = p;
    EXPECT_EQ(effective_workspace_limit(o), kWorkspaceLimit) << precision_name(p);
  }
  EXPECT_GT(kFp32WorkspaceLimit, kWorkspaceLimit);
}

TEST(EngineOptions, ExplicitWorkspaceLimitWins) {
  EngineOptions o;
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16}) {
    o.precision = p;
    for (int64_t limit : {int64_t{0}, int64_t{123456}, int64_t{4} << 30}) {
      o.workspace_limit = limit;
      EXPECT_EQ(effective_workspace_limit(o), limit) << precision_name(p);
    }
  }
}

// Each of the `count` enumerators of E has a distinct name that parses back to it.
template <typename E>
void expect_round_trip(const char* (*name)(E), Result<E> (*parse)(const std::string&), int count,
                       const std::string& bad) {
  std::string seen;
  for (int i = 0; i < count; ++i) {
    const E e = static_cast<E>(i);
    const std::string n = name(e);
    EXPECT_NE(n, "?");
    EXPECT_EQ(seen.find("|" + n + "|"), std::string::npos) << n << " twice";
    seen += "|" + n + "|";
    auto back = parse(n);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, e) << n;
  }
  EXPECT_STREQ(name(static_cast<E>(count)), "?");
  auto r = parse(bad);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
  for (int i = 0; i < count; ++i)
    EXPECT_NE(msg.find(name(static_cast<E>(i))), std::string::npos) << msg;
}

TEST(EngineOptions, SwitchNamesRoundTripAndBadNamesAreRefused) {
  expect_round_trip<Precision>(precision_name, parse_precision, 6, "fp4");
  expect_round_trip<CudnnConvPath>(cudnn_conv_path_name, parse_cudnn_conv_path, 3, "LEGACY");
  expect_round_trip<SpaceToDepth>(space_to_depth_name, parse_space_to_depth, 3, "");
  expect_round_trip<CpuConvAlgo>(cpu_conv_algo_name, parse_cpu_conv_algo, 3, "fft");
  expect_round_trip<CpuLayout>(cpu_layout_name, parse_cpu_layout, 5, "nchw");
  auto r = parse_precision("fp4");
  EXPECT_NE(r.status().message().find("expected fp32, tf32, fp16, bf16, int8 or fp8"),
            std::string::npos)
      << r.status().message();
}

// Every option of options.def is in option_list(), once, with a name, a help line and a text
// form of its default that sets the default back.
TEST(OptionList, ListsEveryOptionOnceWithItsDefault) {
  constexpr int kDeclared = 0
#define KILN_OPTION(...) +1
#include "kiln/options.def"
#undef KILN_OPTION
      ;
  const std::vector<OptionInfo>& list = option_list();
  ASSERT_EQ(static_cast<int>(list.size()), kDeclared);
  std::set<std::string> names, flags;
  for (const OptionInfo& info : list) {
    SCOPED_TRACE(info.name);
    EXPECT_TRUE(names.insert(info.name).second) << "listed twice";
    if (!info.flag.empty()) EXPECT_TRUE(flags.insert(info.flag).second) << "flag twice";
    EXPECT_FALSE(info.help.empty());
    EXPECT_FALSE(info.type.empty());
    EXPECT_EQ(find_option(info.name), &info);
    const EngineOptions defaults;
    auto texts = option_texts(defaults, info.name);
    ASSERT_TRUE(texts.is_ok());
    if (!info.list) {
      ASSERT_EQ(texts->size(), 1u);
      EXPECT_EQ((*texts)[0], info.default_text);
    }
    EngineOptions o;
    ASSERT_TRUE(set_option(o, info.name, *texts).is_ok());
    EXPECT_EQ(*option_texts(o, info.name), *texts);
  }
  EXPECT_TRUE(names.count("precision") && names.count("shape_profiles") && names.count("threads"));
  EXPECT_EQ(find_option("nope"), nullptr);
  EXPECT_TRUE(validate_options(EngineOptions{}).is_ok());
}

// Values that stress each text form (names holding ',', '=' and ':', inputs left out of a
// profile, scalars, floats that need nine digits) read back exactly, option by option.
TEST(OptionList, TextsReadBackExactly) {
  EngineOptions o;
  o.device = Device::kCuda;
  o.backend = KernelChoice::kReference;
  o.threads = 3;
  o.max_tensor_bytes = (int64_t{3} << 30) + 7;
  o.precision = Precision::kBf16;
  o.precision_overrides = {{"/stem/Conv", Precision::kFp32},
                           {"odd,name=with=signs", Precision::kTf32},
                           {"a,b", Precision::kFp16}};
  o.fp32_values = {"x,y", "", "z=1"};
  o.shape_profiles = {{{"input", {1, 3, 224, 224}}, {"odd=name", {}}},
                      {{"input", {8, 3, 224, 224}}},
                      {{"odd=name", {0}}}};
  o.shape_ranges = {{"input", ShapeRange{{1, 3, 224, 224}, {8, 3, 224, 224}, {32, 3, 224, 224}}},
                    {"odd:range=", ShapeRange{{}, {}, {}}}};
  o.input_format = InputFormat::kUint8Nchw;
  o.input_mean = {0.485f, 1.f / 3.f, -7.25e-6f};
  o.input_std = {0.229f};
  o.workspace_limit = 0;
  o.timing_cache = "/tmp/a cache, with=signs";
  o.cuda_graph = true;
  o.time_tactics = false;
  for (const OptionInfo& info : option_list()) {
    SCOPED_TRACE(info.name);
    auto texts = option_texts(o, info.name);
    ASSERT_TRUE(texts.is_ok());
    EngineOptions back;
    Status st = set_option(back, info.name, *texts);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(*option_texts(back, info.name), *texts);
  }
  EngineOptions back;
  for (const OptionInfo& info : option_list())
    ASSERT_TRUE(set_option(back, info.name, *option_texts(o, info.name)).is_ok());
  EXPECT_EQ(back.precision_overrides, o.precision_overrides);
  EXPECT_EQ(back.fp32_values, o.fp32_values);
  EXPECT_EQ(back.shape_profiles, o.shape_profiles);
  EXPECT_EQ(back.shape_ranges, o.shape_ranges);
  EXPECT_EQ(back.input_mean, o.input_mean);
  EXPECT_EQ(back.input_std, o.input_std);
  EXPECT_EQ(back.max_tensor_bytes, o.max_tensor_bytes);
  EXPECT_EQ(back.timing_cache, o.timing_cache);
  EXPECT_EQ(back.backend, KernelChoice::kReference);
}

// The command-line spellings: one DIMS for every profile, sizes with binary suffixes, bools.
TEST(OptionList, TextFormsAcceptTheCommandLineSpellings) {
  EngineOptions o;
  ASSERT_TRUE(set_option(o, "shape_profiles", {"x=1x3x8x8,4x3x8x8", "y=2"}).is_ok());
  ASSERT_EQ(o.shape_profiles.size(), 2u);
  EXPECT_EQ(o.shape_profiles[1].at("x"), (std::vector<int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(o.shape_profiles[1].at("y"), (std::vector<int64_t>{2}));
  ASSERT_TRUE(set_option(o, "shape_profiles", {"x=1x3x8x8,-"}).is_ok());
  EXPECT_EQ(o.shape_profiles[1].count("x"), 0u);
  ASSERT_TRUE(set_option(o, "workspace_limit", {"256MiB"}).is_ok());
  EXPECT_EQ(o.workspace_limit, int64_t{256} << 20);
  ASSERT_TRUE(set_option(o, "max_tensor_bytes", {"2GiB"}).is_ok());
  EXPECT_EQ(o.max_tensor_bytes, int64_t{2} << 30);
  ASSERT_TRUE(set_option(o, "precision_overrides", {"a=fp32,b=fp16", "c=bf16"}).is_ok());
  EXPECT_EQ(o.precision_overrides.size(), 3u);
  for (const char* t : {"1", "true", "on"}) {
    ASSERT_TRUE(set_option(o, "cuda_graph", {t}).is_ok());
    EXPECT_TRUE(o.cuda_graph);
    ASSERT_TRUE(set_option(o, "cuda_graph", {"off"}).is_ok());
    EXPECT_FALSE(o.cuda_graph);
  }
  ASSERT_TRUE(set_option(o, "input_mean", {"0.5,0.25"}).is_ok());
  EXPECT_EQ(o.input_mean, (std::vector<float>{0.5f, 0.25f}));
}

// A bad text names the option (or the caller's `what`) and the text, and changes nothing.
TEST(OptionList, BadTextsAreRefusedAndChangeNothing) {
  struct Case {
    const char* name;
    std::vector<std::string> texts;
    const char* says;
  };
  const Case cases[] = {
      {"threads", {"two"}, "'two' is not a whole number"},
      {"threads", {"1", "2"}, "takes one value"},
      {"threads", {"99999999999"}, "out of range"},
      {"workspace_limit", {"1.5GiB"}, "is not a whole number"},
      {"workspace_limit", {"3PiB"}, "KiB, MiB, GiB or TiB"},
      {"max_tactics", {"4MiB"}, "is not a whole number"},
      {"precision", {"fp4"}, "expected fp32, tf32, fp16, bf16, int8 or fp8"},
      {"cuda_graph", {"yes"}, "expected 1, 0"},
      {"shape_profiles", {"x"}, "expected NAME=DIMS"},
      {"shape_profiles", {"x=3x4x5,a"}, "'a' is not a shape"},
      {"shape_profiles", {"x=1,2", "y=1,2,3"}, "same number of shapes"},
      {"shape_profiles", {"x=1", "x=2"}, "input 'x' twice"},
      {"shape_ranges", {"x=3x4x5"}, "expected NAME=MIN:OPT:MAX (three"},
      {"shape_ranges", {"x=1:1:1", "x=2:2:2"}, "has a range already"},
      {"precision_overrides", {"relu"}, "expected NODE=PRECISION"},
      {"precision_overrides", {"a=fp99"}, "fp99"},
      {"input_mean", {"0.5,,1"}, "not a number"},
      {"input_mean", {"nan"}, "not a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " " + (c.texts.empty() ? "" : c.texts[0]));
    EngineOptions o;
    const auto before = option_texts(o, c.name);
    Status st = set_option(o, c.name, c.texts);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().rfind(std::string("option ") + c.name + ": ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_EQ(*option_texts(o, c.name), *before);
  }
  EngineOptions o;
  Status st = set_option(o, "threads", {"x"}, "--threads");
  EXPECT_EQ(st.message().rfind("--threads: ", 0), 0u) << st.message();
  EXPECT_FALSE(set_option(o, "no_such_option", {"1"}).is_ok());
  EXPECT_FALSE(option_texts(o, "no_such_option").is_ok());
}

// validate_options applies options.def's checks, naming the option and what it must be.
TEST(OptionList, ValidationNamesTheOptionAndWhatItMustBe) {
  auto refused = [](const std::function<void(EngineOptions&)>& set, const char* says) {
    EngineOptions o;
    set(o);
    Status st = validate_options(o);
    EXPECT_FALSE(st.is_ok()) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  refused([](EngineOptions& o) { o.threads = -1; },
          "option threads must be 0 (all cores) to 4096, not -1");
  refused([](EngineOptions& o) { o.max_cached_plans = 0; },
          "option max_cached_plans must be 1 to 4096");
  refused([](EngineOptions& o) { o.max_tactics = -2; }, "option max_tactics must be");
  refused([](EngineOptions& o) { o.max_tensor_bytes = 0; },
          "option max_tensor_bytes must be positive");
  refused([](EngineOptions& o) { o.input_std.resize(4097, 1.f); },
          "option input_std must be at most 4096 values");
  refused([](EngineOptions& o) { o.precision = static_cast<Precision>(9); },
          "option precision: not a valid value");
  refused([](EngineOptions& o) { o.shape_profiles.resize(1025); }, "at most 1024 profiles");
}

}  // namespace
}  // namespace kiln
