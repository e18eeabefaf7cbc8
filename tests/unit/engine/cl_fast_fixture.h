/*  cl_fast_fixture.h - what the selftests of the fast path (cl_fast_test.c,
    cl_fast_group_test.c) share: the clock, a thread that revokes a grant
    amid a call, and a look at a receive buffer. */
#ifndef CL_FAST_FIXTURE_H_INCLUDED
#define CL_FAST_FIXTURE_H_INCLUDED

#include "engine/cl_fast.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Monotonic seconds. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A thread that revokes member f's grant once a call's transfer is under
   way: a page equal to `page` (4096 bytes of a member's input) shows in
   the area (a ring holds a chunk of it), or after 1 s.  The revocation
   then lands mid-transfer however the threads are scheduled; between
   looks the thread sleeps 100 us, so it leaves the members the cores. */
typedef struct {
    cl_fast_t *f;
    uint8_t *area; /* a mapping of the area of `bytes`, unmapped by revoker_join */
    size_t bytes;
    const uint8_t *page;
    pthread_t t;
} revoker_t;

static inline void *revoke_on_progress(void *arg)
{
    const revoker_t *r = arg;
    double t0 = now_s();
    bool seen = false;
    while (r->area != NULL && !seen && now_s() - t0 < 1.0) {
        for (size_t off = 0; off + 4096 <= r->bytes && !seen; off += 4096)
            seen = memcmp(r->area + off, r->page, 4096) == 0;
        if (!seen)
            usleep(100);
    }
    cl_fast_revoke(r->f);
    return NULL;
}

static inline void revoker_start(revoker_t *r, cl_fast_t *f, void *area, size_t bytes,
                                 const uint8_t *page)
{
    *r = (revoker_t){f, area, bytes, page, 0};
    pthread_create(&r->t, NULL, revoke_on_progress, r);
}

static inline void revoker_join(revoker_t *r)
{
    pthread_join(r->t, NULL);
    if (r->area != NULL)
        munmap(r->area, r->bytes);
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
