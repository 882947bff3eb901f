// KILN_CHECK: internal invariants. A failure is a kiln bug, not bad input: it prints file
// and line and aborts. Bad input is reported through Status instead.
#pragma once

#include <cstdio>
#include <cstdlib>

#define KILN_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "kiln internal error: %s:%d: check failed: %s\n", __FILE__, \
                   __LINE__, #cond);                                                  \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
