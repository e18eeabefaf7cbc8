/*  cl_fast_fixture.h - what the selftests of the fast path (cl_fast_test.c,
    cl_fast_group_test.c) share: the clock, a thread that revokes a grant
    amid a call, and a look at a receive buffer. */
#ifndef CL_FAST_FIXTURE_H_INCLUDED
#define CL_FAST_FIXTURE_H_INCLUDED

#include "engine/cl_fast.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Monotonic seconds. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A thread: revokes the grant of the cl_fast_t arg after 3 ms. */
static inline void *revoke_soon(void *arg)
{
    usleep(3000);
    cl_fast_revoke(arg);
    return NULL;
}

/* True when every byte of buf[0 .. bytes) is `byte` (a receive buffer a
   call must not have touched). */
static inline bool untouched(const void *buf, size_t bytes, uint8_t byte)
{
    for (size_t k = 0; k < bytes; k++)
        if (((const uint8_t *)buf)[k] != byte)
            return false;
    return true;
}

#endif
