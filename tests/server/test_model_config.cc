// config.pbtxt (src/server/model_config.h): Triton's text form parsed, checked, completed from
// the model, and turned into the batcher's options.
#include <gtest/gtest.h>

#include "server/model_config.h"

namespace kiln::server {
namespace {

const char* kFull = R"pb(
  name: "fashion"
  platform: "onnxruntime_onnx"
  max_batch_size: 16 input
  [ {
    name: "input"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 1, 28, 28 ]
  }] output
  [ {
    name: "logits"
    data_type: TYPE_FP32
    dims: [ 10 ]
    label_filename: "labels.txt"
  }]
  dynamic_batching {
    preferred_batch_size: [ 4, 8 ]
    max_queue_delay_microseconds: 500
    preserve_ordering: true
    priority_levels: 2
    default_priority_level: 2
    default_queue_policy {
      max_queue_size: 64
      timeout_action: DELAY
      default_timeout_microseconds: 9
    }
    priority_queue_policy {
      key: 1
      value: { max_queue_size: 8 allow_timeout_override: true }
    }
  } instance_group
  [ {
    count: 2
    kind: KIND_GPU
    gpus: [ 0 ]
  }
    , { count: 1 kind: KIND_CPU }]
  version_policy: { latest { num_versions: 2 } }
  parameters {
    key: "precision"
    value: { string_value: "fp16" }
  } model_warmup
  [ {
    name: "w"
    batch_size: 4
    inputs {
      key: "input"
      value: {
        data_type: TYPE_FP32
        dims: [ 1, 28, 28 ]
        zero_data: true
      }
    }
  }]
)pb";

TEST(ModelConfig, ParsesTritonsTextForm) {
  auto parsed = parse_model_config(kFull, "fashion/config.pbtxt");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->warnings.empty());
  const inference::ModelConfig& c = parsed->config;
  EXPECT_EQ(c.name(), "fashion");
  EXPECT_EQ(c.input(0).dims_size(), 3);
  EXPECT_EQ(c.output(0).label_filename(), "labels.txt");
  EXPECT_EQ(c.parameters().at("precision").string_value(), "fp16");
  std::vector<std::string> warnings;
  ASSERT_TRUE(check_model_config(c, &warnings).is_ok());

  const BatcherOptions o = batcher_options(c);
  EXPECT_EQ(o.max_batch_size, 16);
  EXPECT_EQ(o.preferred_batch_sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(o.max_queue_delay_us, 500u);
  EXPECT_TRUE(o.preserve_ordering);
  EXPECT_EQ(o.priority_levels, 2u);
  EXPECT_EQ(o.default_priority_level, 2u);
  EXPECT_EQ(o.default_policy.max_queue_size, 64u);
  EXPECT_EQ(o.default_policy.timeout_action, QueuePolicy::TimeoutAction::kDelay);
  EXPECT_EQ(o.priority_policies.at(1).max_queue_size, 8u);
  EXPECT_TRUE(o.priority_policies.at(1).allow_timeout_override);
  EXPECT_EQ(o.instances, 3);
  EXPECT_TRUE(o.join_requests);
}

TEST(ModelConfig, UnknownFieldsAreWarnedAboutAndIgnored) {
  auto parsed = parse_model_config(
      "name: \"m\"\nmax_batch_size: 4\nresponse_cache { enable: true }\n", "m/config.pbtxt");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->warnings.size(), 1u);
  EXPECT_NE(parsed->warnings[0].find("m/config.pbtxt:3:"), std::string::npos)
      << parsed->warnings[0];
  EXPECT_NE(parsed->warnings[0].find("response_cache"), std::string::npos) << parsed->warnings[0];
  EXPECT_EQ(parsed->config.max_batch_size(), 4);
}

TEST(ModelConfig, BadTextNamesTheLine) {
  auto parsed = parse_model_config("name: \"m\"\nmax_batch_size: \"four\"\n", "m/config.pbtxt");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("m/config.pbtxt:2:"), std::string::npos)
      << parsed.status().message();
  EXPECT_FALSE(parse_model_config("input [ { name: \"x\" ", "c").is_ok());
}

// Each config kiln serve cannot honour is refused, naming the field.
TEST(ModelConfig, RefusesWhatItCannotDo) {
  const std::pair<const char*, const char*> cases[] = {
      {"sequence_batching { }", "sequence_batching"},
      {"ensemble_scheduling { }", "ensemble_scheduling"},
      {"platform: \"tensorflow_savedmodel\"", "platform"},
      {"max_batch_size: -1", "max_batch_size"},
      {"max_batch_size: 8 dynamic_batching { preferred_batch_size: [ 16 ] }",
       "preferred_batch_size"},
      {"dynamic_batching { }", "dynamic_batching"},
      {"max_batch_size: 8 dynamic_batching { priority_levels: 2 }", "default_priority_level"},
      {"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 0 ] } ]", "input x dims"},
      {"instance_group [ { kind: KIND_MODEL } ]", "instance_group.kind"},
      {"version_policy { latest { num_versions: 0 } }", "num_versions"},
  };
  for (const auto& [text, field] : cases) {
    SCOPED_TRACE(text);
    auto parsed = parse_model_config(text, "c");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
    std::vector<std::string> warnings;
    Status s = check_model_config(parsed->config, &warnings);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  }
}

class CompleteConfig : public testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::load(std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx", {});
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    engine_ = *e;
  }
  std::shared_ptr<Engine> engine_;
};

// No config: the model's own inputs and outputs, batching where its batch axis is symbolic.
TEST_F(CompleteConfig, FromTheModelAlone) {
  inference::ModelConfig c;
  ASSERT_TRUE(complete_model_config(c, "fashion", *engine_).is_ok());
  EXPECT_EQ(c.name(), "fashion");
  EXPECT_EQ(c.max_batch_size(), 8);
  EXPECT_TRUE(c.has_dynamic_batching());
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).name(), "input");
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(std::vector<int64_t>(c.input(0).dims().begin(), c.input(0).dims().end()),
            (std::vector<int64_t>{1, 28, 28}));
  ASSERT_EQ(c.output_size(), 1);
  EXPECT_EQ(c.output(0).name(), "logits");
}

TEST_F(CompleteConfig, DeclaredTensorsMustBeTheModels) {
  const std::pair<const char*, const char*> cases[] = {
      {"max_batch_size: 4 input [ { name: \"image\" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]",
       "the model has no input of that name"},
      {"max_batch_size: 4 input [ { name: \"input\" data_type: TYPE_INT64 dims: [ 1, 28, 28 ] } ]",
       "TYPE_INT64"},
      {"max_batch_size: 4 input [ { name: \"input\" data_type: TYPE_FP32 dims: [ 3, 28, 28 ] } ]",
       "do not match"},
      {"name: \"other\"", "folder"},
  };
  for (const auto& [text, needle] : cases) {
    SCOPED_TRACE(text);
    auto parsed = parse_model_config(text, "c");
    ASSERT_TRUE(parsed.is_ok());
    Status s = complete_model_config(parsed->config, "fashion", *engine_);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  }
  auto declared = parse_model_config(
      "max_batch_size: 4 input [ { name: \"input\" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]",
      "c");
  ASSERT_TRUE(complete_model_config(declared->config, "fashion", *engine_).is_ok());
  EXPECT_EQ(declared->config.output_size(), 1);  // the output it left out, from the model
  EXPECT_FALSE(declared->config.has_dynamic_batching());
  EXPECT_FALSE(batcher_options(declared->config).join_requests);
}

TEST(ModelConfig, DataTypesBothWays) {
  EXPECT_EQ(data_type_of(inference::TYPE_FP16), DataType::kFloat16);
  EXPECT_EQ(config_type_of(DataType::kUInt8), inference::TYPE_UINT8);
  EXPECT_EQ(data_type_of(inference::TYPE_STRING), DataType::kUndefined);
  EXPECT_EQ(config_type_of(DataType::kUndefined), inference::TYPE_INVALID);
}

}  // namespace
}  // namespace kiln::server
