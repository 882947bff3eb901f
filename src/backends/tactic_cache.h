// Tactic choices by key (e.g. "conv|fp16|nhwc|n1c64h56w56|k64r3s3|p1s1d1g1|relu+res"), shared
// by an Engine's contexts and kept in a timing cache file so that a later build of the same
// model skips the timing. Device-neutral: the keys and values are the backends' own text.
// Thread-safe.
//
// The file: a header line naming the device and library versions, then key<TAB>value lines.
// save() is safe with many Contexts and processes writing one file: under an exclusive lock
// (flock on FILE.lock) it reads what the file holds for the same device, adds its own entries
// over it, writes a temporary file of its own and renames it over FILE, so a reader sees the
// old file or the new one, never a mixture, and no writer's entries are lost.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "kiln/status.h"

namespace kiln {

class TacticCache {
 public:
  bool get(const std::string& key, std::string* value) const;
  void put(const std::string& key, const std::string& value);
  size_t size() const;
  std::map<std::string, std::string> entries() const;
  // Adds the entries of the file at `path` (false, adding nothing, when it is missing, damaged
  // or written for another device or library version).
  bool load(const std::string& path, const std::string& device_tag);
  Status save(const std::string& path, const std::string& device_tag) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> entries_;
};

}  // namespace kiln
