/* The unit tests' check: counts a failure and names its line, and goes on
 * (main returns failures != 0). */
#ifndef GP_TEST_CHECK_H
#define GP_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: FAIL %s\n", __FILE__, __LINE__, #c);             \
    }                                                                          \
  } while (0)

#endif
