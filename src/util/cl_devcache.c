/*  cl_devcache.c - host/device verdicts for pointers, cached (see the
    header for the rules).

    Host table: CL_DC_HOST_SLOTS words, a pair of slots chosen by a hash of
    the first page of the queried buffer.  A word holds the first page (high 44 bits) and
    the number of pages (low 20 bits, up to 4 GiB) of a range known to be
    host memory; 0 is an empty slot.  Ranges are the queried buffer rounded
    out to whole pages: a page is host-mapped or device-mapped as a whole.
    A word is written and read atomically, so a reader sees one whole
    entry, an older one or an empty slot, never a mix.  Buffers above 4 GiB
    or beyond 47-bit addresses are not cached (they are asked every time).

    Device table: CL_DC_DEV_SLOTS allocation ranges with their buffer id,
    replaced round-robin, under a mutex.
*/
#include "util/cl_devcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CL_DC_HOST_SLOTS 1024 /* power of two */
#define CL_DC_DEV_SLOTS 64
#define CL_DC_PAGE_SHIFT 12
#define CL_DC_NPAGES_BITS 20
#define CL_DC_PAGE_LIMIT ((uint64_t)1 << 44) /* 47-bit user addresses */

struct cl_devcache {
    _Atomic uint64_t host[CL_DC_HOST_SLOTS]; /* first page << 20 | pages; 0 = empty */
    pthread_mutex_t mu;                      /* guards dev[] and dev_next */
    cl_devattr_t dev[CL_DC_DEV_SLOTS];       /* size 0 = empty */
    int dev_next;                            /* next slot to replace */
    cl_devcache_query_fn *query;             /* the driver */
    void *arg;                               /* its argument */
    _Atomic uint64_t device_hits, queries;   /* counters */
};

cl_devcache_t *cl_devcache_new(cl_devcache_query_fn *q, void *arg)
{
    if (q == NULL)
        return NULL;
    cl_devcache_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    pthread_mutex_init(&self->mu, NULL);
    self->query = q;
    self->arg = arg;
    return self;
}

void cl_devcache_destroy(cl_devcache_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    pthread_mutex_destroy(&(*self_p)->mu);
    free(*self_p);
    *self_p = NULL;
}

static inline size_t host_slot(uint64_t page)
{
    return (size_t)((page * 0x9e3779b97f4a7c15ull) >> 54) & (CL_DC_HOST_SLOTS - 1);
}

/* Pages [first, last] of [p, p + len), len >= 1. */
static inline void page_span(uintptr_t p, size_t len, uint64_t *first, uint64_t *last)
{
    *first = (uint64_t)p >> CL_DC_PAGE_SHIFT;
    *last = ((uint64_t)p + len - 1) >> CL_DC_PAGE_SHIFT;
}

static void host_insert(cl_devcache_t *self, uint64_t first, uint64_t last)
{
    uint64_t n = last - first + 1;
    if (last >= CL_DC_PAGE_LIMIT || n >= ((uint64_t)1 << CL_DC_NPAGES_BITS))
        return;
    /* Two-way: the first of the slot pair that is empty or holds a range
       starting at the same page, else the second (so two hot buffers whose
       pages hash alike do not evict each other). */
    size_t s0 = host_slot(first), s1 = (s0 + 1) & (CL_DC_HOST_SLOTS - 1);
    uint64_t e0 = atomic_load_explicit(&self->host[s0], memory_order_relaxed);
    size_t s = e0 == 0 || e0 >> CL_DC_NPAGES_BITS == first ? s0 : s1;
    atomic_store_explicit(&self->host[s], first << CL_DC_NPAGES_BITS | n, memory_order_release);
}

/* True when host word e covers pages [first, last]. */
static inline bool host_covers(uint64_t e, uint64_t first, uint64_t last)
{
    uint64_t f = e >> CL_DC_NPAGES_BITS, n = e & ((1u << CL_DC_NPAGES_BITS) - 1);
    return e != 0 && first >= f && last < f + n;
}

/* Clears host entries overlapping [start, start + size). */
static void host_evict(cl_devcache_t *self, uintptr_t start, size_t size)
{
    if (size == 0)
        return;
    uint64_t first, last;
    page_span(start, size, &first, &last);
    for (size_t i = 0; i < CL_DC_HOST_SLOTS; i++) {
        uint64_t e = atomic_load_explicit(&self->host[i], memory_order_acquire);
        if (e == 0)
            continue;
        uint64_t f = e >> CL_DC_NPAGES_BITS, l = f + (e & ((1u << CL_DC_NPAGES_BITS) - 1)) - 1;
        if (f <= last && l >= first)
            atomic_compare_exchange_strong(&self->host[i], &e, 0);
    }
}

static bool dev_contains(const cl_devattr_t *d, uintptr_t p, size_t len)
{
    return d->size > 0 && p >= d->start && p - d->start < d->size &&
           len <= d->size - (p - d->start);
}

/* Remembers a device allocation (replacing an entry for the same range). */
static void dev_insert(cl_devcache_t *self, const cl_devattr_t *a)
{
    pthread_mutex_lock(&self->mu);
    int slot = -1;
    for (int i = 0; i < CL_DC_DEV_SLOTS && slot < 0; i++)
        if (self->dev[i].size > 0 && self->dev[i].start == a->start)
            slot = i;
    if (slot < 0) {
        slot = self->dev_next;
        self->dev_next = (self->dev_next + 1) % CL_DC_DEV_SLOTS;
    }
    self->dev[slot] = *a;
    pthread_mutex_unlock(&self->mu);
}

/* Drops the device entry starting at start, if any. */
static void dev_forget(cl_devcache_t *self, uintptr_t start)
{
    pthread_mutex_lock(&self->mu);
    for (int i = 0; i < CL_DC_DEV_SLOTS; i++)
        if (self->dev[i].size > 0 && self->dev[i].start == start)
            memset(&self->dev[i], 0, sizeof self->dev[i]);
    pthread_mutex_unlock(&self->mu);
}

/* Asks the driver and records the answer. */
static int ask(cl_devcache_t *self, uintptr_t p, size_t len, cl_devattr_t *out)
{
    cl_devattr_t a;
    memset(&a, 0, sizeof a);
    atomic_fetch_add_explicit(&self->queries, 1, memory_order_relaxed);
    int k = self->query(self->arg, (const void *)p, &a);
    if (k == CL_DEVQ_NOCTX)
        return CL_DEVQ_HOST; /* not cached: see the header */
    if (k == CL_DEVQ_HOST) {
        uint64_t first, last;
        page_span(p, len, &first, &last);
        host_insert(self, first, last);
        return CL_DEVQ_HOST;
    }
    if (k != CL_DEVQ_DEVICE)
        return CL_DEVQ_ERR;
    if (!dev_contains(&a, p, len))
        return CL_DEVQ_ERR; /* the buffer runs past its allocation */
    host_evict(self, a.start, a.size);
    dev_insert(self, &a);
    *out = a;
    return CL_DEVQ_DEVICE;
}

int cl_devcache_kind(cl_devcache_t *self, const void *ptr, size_t len, cl_devattr_t *out)
{
    uintptr_t p = (uintptr_t)ptr;
    if (p == 0)
        return CL_DEVQ_HOST;
    if (len == 0)
        len = 1;
    if (len > UINTPTR_MAX - p)
        return CL_DEVQ_ERR;
    /* Fast path: a host range seen before. */
    uint64_t first, last;
    page_span(p, len, &first, &last);
    size_t s0 = host_slot(first);
    if (host_covers(atomic_load_explicit(&self->host[s0], memory_order_acquire), first, last) ||
        host_covers(atomic_load_explicit(&self->host[(s0 + 1) & (CL_DC_HOST_SLOTS - 1)],
                                         memory_order_acquire),
                    first, last))
        return CL_DEVQ_HOST; /* not counted: a shared counter would cost more than this */
    /* A device allocation seen before: revalidate its buffer id. */
    cl_devattr_t hit;
    bool found = false;
    pthread_mutex_lock(&self->mu);
    for (int i = 0; i < CL_DC_DEV_SLOTS && !found; i++)
        if (dev_contains(&self->dev[i], p, len)) {
            hit = self->dev[i];
            found = true;
        }
    pthread_mutex_unlock(&self->mu);
    if (found) {
        cl_devattr_t now;
        memset(&now, 0, sizeof now);
        atomic_fetch_add_explicit(&self->queries, 1, memory_order_relaxed);
        int k = self->query(self->arg, ptr, &now);
        if (k == CL_DEVQ_DEVICE && now.buffer_id == hit.buffer_id && now.start == hit.start &&
            now.size == hit.size) {
            atomic_fetch_add_explicit(&self->device_hits, 1, memory_order_relaxed);
            *out = now;
            return CL_DEVQ_DEVICE;
        }
        dev_forget(self, hit.start); /* freed, reused or resized: ask afresh */
    }
    return ask(self, p, len, out);
}

void cl_devcache_clear(cl_devcache_t *self)
{
    for (size_t i = 0; i < CL_DC_HOST_SLOTS; i++)
        atomic_store(&self->host[i], 0);
    pthread_mutex_lock(&self->mu);
    memset(self->dev, 0, sizeof self->dev);
    self->dev_next = 0;
    pthread_mutex_unlock(&self->mu);
}

void cl_devcache_stats(const cl_devcache_t *self, cl_devcache_stats_t *out)
{
    cl_devcache_t *s = (cl_devcache_t *)self;
    out->device_hits = atomic_load(&s->device_hits);
    out->queries = atomic_load(&s->queries);
}
