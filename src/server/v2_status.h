// The KServe v2 protocol's status messages (server and model metadata, statistics, the
// repository index), built once as the gRPC service's messages (grpc_service.proto), whatever
// the protocol: the gRPC frontend answers with them, the HTTP frontend writes them as JSON
// (proto_json). The two cannot drift apart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/model_server.h"
#include "server/proto/grpc_service.pb.h"

namespace kiln::server {

// "kiln", its version, and the protocol extensions it serves.
inference::ServerMetadataResponse server_metadata();

// A model's name, its ready versions (from `index`), platform, and tensors: the datatypes by the
// protocol's names ("FP32"; "BYTES" for encoded images), the shapes with -1 for the batch axis.
inference::ModelMetadataResponse model_metadata(const ServedModel& m,
                                                const std::vector<ModelState>& index);

// A model version's request statistics (Triton's form) and its batches by size.
inference::ModelStatistics model_statistics(ModelServer& server, ServedModel& m);

// The statistics of model `name` (every ready model where empty) at `version` ("" : the newest).
Result<inference::ModelStatisticsResponse> model_statistics(ModelServer& server,
                                                            const std::string& name,
                                                            const std::string& version);

// The repository's models (ready_only: those READY), by name then version.
inference::RepositoryIndexResponse repository_index(ModelServer& server, bool ready_only);

// A message as the v2 HTTP protocol writes it: field names as declared, integers of every width
// as JSON numbers, strings only where not empty, repeated fields always (as arrays), maps as
// objects.
nlohmann::json proto_json(const google::protobuf::Message& m);

}  // namespace kiln::server
