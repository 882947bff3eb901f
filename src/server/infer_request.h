// One inference request through a served model, whatever the protocol: its inputs checked
// against the model's config (names, datatypes, dims; rows within max_batch_size), queued on
// the model's batcher, its outputs filtered to the ones asked for, its statistics recorded.
#pragma once

#include <chrono>

#include "server/model_server.h"
#include "server/v2_json.h"

namespace kiln::server {

// Inputs that do not fit the config: an error (kInvalidArgument) naming the input and what the
// config says.
Status check_inputs(const inference::ModelConfig& c, const Outputs& inputs);

// Runs `request` on `model`, blocking until its result; `start` is when the request arrived.
// Errors: a bad input (kInvalidArgument), an unknown requested output (kInvalidArgument), a full
// queue (kUnavailable "Exceeds maximum queue size"), the model's own failure.
Result<Outputs> run_request(ModelServer& server, ServedModel& model, const V2Request& request,
                            std::chrono::steady_clock::time_point start);

}  // namespace kiln::server
