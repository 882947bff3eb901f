// Reads Fashion-MNIST's gzipped IDX files (Debian's dataset-fashion-mnist) for the tests.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

inline  // Reads a gzipped IDX file of unsigned bytes; `dims` receives its shape.
    bool
    read_idx_gz(const std::string& path, std::vector<uint8_t>& data, std::vector<int64_t>& dims,
                std::string& error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open " + path;
    return false;
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  int n;
  while ((n = gzread(f, chunk, sizeof(chunk))) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  bool read_ok = n == 0;
  gzclose(f);
  if (!read_ok || bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    error = path + ": not a gzipped unsigned-byte IDX file";
    return false;
  }
  size_t rank = bytes[3];
  size_t offset = 4 + 4 * rank;
  if (bytes.size() < offset) {
    error = path + ": truncated header";
    return false;
  }
  int64_t count = 1;
  dims.clear();
  for (size_t i = 0; i < rank; ++i) {
    const uint8_t* p = &bytes[4 + 4 * i];
    dims.push_back((int64_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
    count *= dims.back();
  }
  if (bytes.size() - offset != static_cast<size_t>(count)) {
    error = path + ": size does not match its header";
    return false;
  }
  data.assign(bytes.begin() + offset, bytes.end());
  return true;
}

}  // namespace kiln::test
