// A model repository in Triton's layout, read:
//
//   DIR/<model>/config.pbtxt          (optional: completed from the model where missing)
//   DIR/<model>/<version>/model.onnx  (or model.kiln, a plan kiln built; or the config's
//                                      default_model_filename)
//
// Version folders are positive numbers without a leading zero; other folders and files are
// ignored, as Triton ignores them. version_policy picks the versions served: the latest 1 by
// default, the latest N, all, or the ones named. A model whose config is invalid, or that has
// no version to serve, is refused with the reason, and the others load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/status.h"
#include "server/proto/model_config.pb.h"

namespace kiln::server {

struct ModelVersion {
  int64_t version = 0;
  std::string model_file;  // the file to load
};

struct RepositoryModel {
  std::string name, dir;
  bool has_config = false;        // config.pbtxt was there
  inference::ModelConfig config;  // as read, not completed
  std::vector<std::string> warnings;
  std::vector<ModelVersion> versions;  // served, ascending
  Status status;                       // not ok: refused, and why
};

// One model folder, `dir`/`name`.
RepositoryModel read_repository_model(const std::string& dir, const std::string& name);

// What model `name`'s folder holds now, as one string that changes when any of it changes:
// every file under it (to a depth of 3), by path, size and modification time, and the text of
// its .pbtxt and .txt files (a config rewritten within the clock's step still shows). "" where
// the folder is gone.
std::string model_fingerprint(const std::string& dir, const std::string& name);

// Every model folder of `dir`, by name. An unreadable or missing `dir` is an error.
Result<std::vector<RepositoryModel>> read_model_repository(const std::string& dir);

}  // namespace kiln::server
