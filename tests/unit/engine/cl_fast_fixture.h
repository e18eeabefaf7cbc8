/*  cl_fast_fixture.h - what the selftests of the fast path (cl_fast_test.c,
    cl_fast_group_test.c) share: the clock, and a thread that revokes a
    grant amid a call. */
#ifndef CL_FAST_FIXTURE_H_INCLUDED
#define CL_FAST_FIXTURE_H_INCLUDED

#include "engine/cl_fast.h"

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

#endif
