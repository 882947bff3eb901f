#include "server/bytes_input.h"

#include <cstdint>

namespace kiln::server {

Result<std::vector<std::string>> split_bytes_elements(std::string_view raw, int64_t count,
                                                      const std::string& where) {
  std::vector<std::string> elements;
  size_t at = 0;
  while (at < raw.size()) {
    if (raw.size() - at < 4)
      return invalid_argument(where + ": BYTES data ends inside element " +
                              std::to_string(elements.size()) + "'s 4-byte length");
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data() + at);
    const uint32_t n = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    at += 4;
    if (n > raw.size() - at)
      return invalid_argument(where + ": BYTES element " + std::to_string(elements.size()) +
                              " says " + std::to_string(n) + " bytes where " +
                              std::to_string(raw.size() - at) + " are left");
    if (static_cast<int64_t>(elements.size()) == count)
      return invalid_argument(where + ": more BYTES elements than the shape's " +
                              std::to_string(count));
    elements.emplace_back(raw.substr(at, n));
    at += n;
  }
  if (static_cast<int64_t>(elements.size()) != count)
    return invalid_argument(where + ": " + std::to_string(elements.size()) +
                            " BYTES elements where the shape holds " + std::to_string(count));
  return elements;
}

std::string join_bytes_elements(const std::vector<std::string_view>& elements) {
  std::string out;
  for (std::string_view e : elements) {
    const auto n = static_cast<uint32_t>(e.size());
    const char length[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                            static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
    out.append(length, 4).append(e);
  }
  return out;
}

}  // namespace kiln::server
