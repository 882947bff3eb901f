// A model's config.pbtxt (Triton's text protobuf, the subset in proto/model_config.proto): read,
// checked against what kiln serve does, completed from the model where fields are missing, and
// turned into the dynamic batcher's options.
#pragma once

#include <string>
#include <vector>

#include "kiln/engine.h"
#include "server/dynamic_batcher.h"
#include "server/proto/model_config.pb.h"

namespace kiln::server {

struct ParsedConfig {
  inference::ModelConfig config;
  std::vector<std::string> warnings;  // "config.pbtxt:3:5: ..." for fields kiln ignores
};

// Parses config.pbtxt text (`where` names it in messages). Unknown fields are warnings; a
// syntax error or a value of the wrong type is an error naming the line and column.
Result<ParsedConfig> parse_model_config(const std::string& text, const std::string& where);

// What kiln serve cannot do, or a config that contradicts itself, as an error naming the field:
// sequence or ensemble scheduling, a platform or backend other than kiln's or ONNX's, a negative
// max_batch_size, preferred sizes over it, dims of 0 or below −1, priority levels without a
// default level inside them, instance kinds other than GPU, CPU or AUTO. Fields kiln reads but
// does not act on are added to `warnings`.
Status check_model_config(const inference::ModelConfig& c, std::vector<std::string>* warnings);

// Fills what the config leaves out from the model itself (Triton's auto-complete): the name,
// the inputs and outputs (names, types, dims without the batch dimension), and max_batch_size
// where every input's first dimension is symbolic (8 then, and a dynamic batcher). Inputs or
// outputs the config declares must be the model's, of its types and dims: else an error naming
// them.
Status complete_model_config(inference::ModelConfig& c, const std::string& model_name,
                             const Engine& engine);

// The dynamic batcher's options from the config (instances: the instance groups' counts).
BatcherOptions batcher_options(const inference::ModelConfig& c);

// kiln's DataType of a config type, and back ("TYPE_STRING" has none: kUndefined).
DataType data_type_of(inference::DataType t);
inference::DataType config_type_of(DataType t);

}  // namespace kiln::server
