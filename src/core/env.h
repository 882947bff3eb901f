// Reading the KILN_* switches that force one of a kernel's choices (for tests and
// diagnosis): each is read where the choice is made, so a test can change it between kernels.
#pragma once

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace kiln {

// 1 + the index in `values` of the value of environment variable `name`; 0 when it is unset
// or none of them (the automatic choice).
inline int env_choice(const char* name, std::initializer_list<const char*> values) {
  const char* v = std::getenv(name);
  if (!v) return 0;
  int i = 1;
  for (const char* s : values) {
    if (std::strcmp(v, s) == 0) return i;
    ++i;
  }
  return 0;
}

}  // namespace kiln
