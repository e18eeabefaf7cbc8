/*  selftest.h - the check the selftests share (tests/unit/<area>/).

    CHECK(cond) prints the file, line and condition of a check that fails
    and counts it in s_failures; a selftest returns s_failures != 0.  A
    selftest of several files defines SELFTEST_SHARED_COUNTER before the
    include and `int s_failures` in one of them.
*/
#ifndef COLLAB_SELFTEST_H
#define COLLAB_SELFTEST_H

#include <stdio.h>

#ifdef SELFTEST_SHARED_COUNTER
extern int s_failures;
#else
static int s_failures = 0;
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

#endif
