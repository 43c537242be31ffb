/*
 * fuzz_require.h — REQUIRE(cond) for the fuzz targets: an invariant that
 * must hold for every input; a failure prints it and aborts, which
 * libFuzzer reports as a crash with the input that broke it.
 */
#ifndef RIFT_FUZZ_REQUIRE_H
#define RIFT_FUZZ_REQUIRE_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond)                                                          \
 do {                                                                          \
  if (!(cond)) {                                                               \
   fprintf(stderr, "invariant failed: %s (line %d)\n", #cond, __LINE__);       \
   abort();                                                                    \
  }                                                                            \
 } while (0)

#endif /* RIFT_FUZZ_REQUIRE_H */
