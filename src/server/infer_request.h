// One inference request through a served model, whatever the protocol: its encoded images
// decoded, its inputs checked
// against the model's config (names, datatypes, dims; rows within max_batch_size), queued on
// the model's batcher, its outputs filtered to the ones asked for, its statistics recorded.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "server/model_server.h"
#include "server/v2_json.h"

namespace kiln::server {

// Inputs that do not fit the config: an error (kInvalidArgument) naming the input and what the
// config says.
Status check_inputs(const inference::ModelConfig& c, const Outputs& inputs);

// The request's inputs with its BYTES inputs (encoded images, one a row) decoded into the
// model's inputs the config declares TYPE_STRING. Errors (kInvalidArgument) name the input: BYTES
// where the model takes tensors or the reverse, a shape that is not one image a row, a corrupt
// image (with its index).
Result<Outputs> request_inputs(const ServedModel& m, const V2Request& r);

// Counts a request that could not be read (malformed, before it reached the model) as a
// failure of `model` (reason OTHER).
void record_unreadable(ModelServer& server, const ServedModel& model);

// The result of one request: its outputs (filtered to the ones asked for), or the error.
using InferDone = std::function<void(Result<Outputs> outputs)>;

// Admits `request` on `model` and returns at once; `done` gets the result exactly once: at once
// (on this thread) where the request is refused, else on a batcher thread when its batch has run.
// `start` is when the request arrived. Returns the batcher's id of the admitted request (for
// DynamicBatcher::cancel), 0 where it was refused. Errors given to `done`: a bad input
// (kInvalidArgument), an unknown requested output (kInvalidArgument), a full queue
// (kUnavailable "Exceeds maximum queue size"), a cancelled request (kCancelled), the model's own
// failure. The request's statistics are recorded before `done` is called.
uint64_t submit_request(ModelServer& server, std::shared_ptr<ServedModel> model,
                        const V2Request& request, std::chrono::steady_clock::time_point start,
                        InferDone done);

// submit_request, blocking until the result.
Result<Outputs> run_request(ModelServer& server, std::shared_ptr<ServedModel> model,
                            const V2Request& request, std::chrono::steady_clock::time_point start);

}  // namespace kiln::server
