/*  selftest.h - the check the selftests share (tests/unit/<area>/).

    CHECK(cond) prints the file, line and condition of a check that fails
    and counts it in s_failures; a selftest returns s_failures != 0.  One
    counter per selftest program: include this from its one source file.
*/
#ifndef COLLAB_SELFTEST_H
#define COLLAB_SELFTEST_H

#include <stdio.h>

static int s_failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

#endif
