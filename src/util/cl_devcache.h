/*  cl_devcache.h - which memory a pointer is: host or device (docs/cuda.md).

    A cache in front of the plugin's cuPointerGetAttributes (0.25-1 us per
    call).  Host verdicts live in a direct-mapped table of single 64-bit
    words (page number and page count), read without a lock: a host
    buffer seen before costs one hash and one atomic load.  Device
    verdicts live in a short locked table of allocation ranges; a hit is
    revalidated by asking the driver again and comparing the buffer id, so
    an address freed and handed to a new allocation is caught.  A miss is
    never taken for host memory: it always asks the driver.  Finding a
    device allocation clears every host entry that overlaps it.  Managed
    memory counts as device memory (the plugin reports it so).  "No CUDA
    context yet" is host memory but is not cached: a host buffer freed
    before the program initialises CUDA may have its addresses reused by
    the driver for device memory afterwards.

    Pure logic: the driver is reached through the query function given at
    creation, so the selftest drives every path with a fake.  Thread-safe.
*/
#ifndef CL_DEVCACHE_H_INCLUDED
#define CL_DEVCACHE_H_INCLUDED

#include "util/cl_devops.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cl_devcache cl_devcache_t;

/* Asks the driver about p: CL_DEVQ_HOST, CL_DEVQ_DEVICE (out filled),
   CL_DEVQ_NOCTX (no device memory exists: host) or CL_DEVQ_ERR. */
typedef int(cl_devcache_query_fn)(void *arg, const void *p, cl_devattr_t *out);

/* Creates an empty cache that asks q(arg, ...) on a miss.  Returns NULL on
   allocation failure.  Caller owns the result. */
cl_devcache_t *cl_devcache_new(cl_devcache_query_fn *q, void *arg);

/* Destroys the cache and nulls *self_p; accepts NULL. */
void cl_devcache_destroy(cl_devcache_t **self_p);

/* Kind of the buffer [p, p + len) (len 0 counts as 1 byte): CL_DEVQ_HOST,
   CL_DEVQ_DEVICE with *out filled (out may not be NULL then), or
   CL_DEVQ_ERR when the driver failed or the buffer runs past the end of
   its device allocation.  p == NULL is host memory. */
int cl_devcache_kind(cl_devcache_t *self, const void *p, size_t len, cl_devattr_t *out);

/* Forgets every entry (tests; after a context is destroyed). */
void cl_devcache_clear(cl_devcache_t *self);

/* Counters since creation: device hits (revalidated) and queries sent to
   the driver (host hits are not counted: the fast path stays a load). */
typedef struct {
    uint64_t device_hits;
    uint64_t queries;
} cl_devcache_stats_t;
void cl_devcache_stats(const cl_devcache_t *self, cl_devcache_stats_t *out);

#endif
