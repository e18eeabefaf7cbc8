/*  nf_follow.c - where the bytes of start-up broadcasts go (docs/nccl.md §5).

    PyTorch DDP broadcasts its parameters at construction through a
    temporary flattened bucket and then copies each slice of the bucket
    into its parameter (device-to-device cudaMemcpyAsync, from the
    program's thread, right after the broadcast).  The core registers the
    bucket as start-up state; by the time a joiner arrives, the bucket's
    memory serves other tensors.  This file follows those copies so that
    donors serve the parameters instead:

    - Each ncclBroadcast/ncclBcast on the world communicator opens a
      window on its receive buffer (nf_follow_bcast).
    - This library exports cudaMemcpyAsync: preloaded, it comes before
      the CUDA runtime, runs the real call (found with dlsym RTLD_NEXT, or
      in a libcudart loaded locally) and, while a window is open, notes a
      device-to-device copy whose source lies in an open window.
    - The next call that is not a broadcast closes the windows
      (nf_follow_close): the notes go to the core (collab_state_follow)
      from the broadcast's own proxy thread, queued behind the broadcast,
      so that the core has registered the buffer first.

    A closed window costs a copy one relaxed atomic load.  Nothing else is
    interposed: without a window the real call runs untouched.
*/
#define _GNU_SOURCE
#include "nf.h"

#include "util/cl_log.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NF_FOLLOW_WINDOWS 4096     /* open broadcast buffers at most */
#define NF_FOLLOW_NOTES (1u << 20) /* copies noted at most between two closes */

typedef cudaError_t (*memcpy_async_fn)(void *, const void *, size_t, enum cudaMemcpyKind,
                                       cudaStream_t);

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static atomic_int s_open;                                /* windows are open */
static struct window {
    ncclComm_t comm;
    uintptr_t addr;
    size_t bytes;
} s_win[NF_FOLLOW_WINDOWS];
static int s_nwin;
static struct note {
    ncclComm_t comm;
    collab_follow_t copy;
} *s_notes;
static size_t s_nnotes, s_cap;
static bool s_warned;

/* ---------------------------------------------------------------------- */
/* The real cudaMemcpyAsync. */

static atomic_uintptr_t s_real;

static int find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libcudart.so") == NULL)
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return 0;
    void *f = dlsym(h, "cudaMemcpyAsync");
    dlclose(h);
    if (f == NULL || f == (void *)cudaMemcpyAsync)
        return 0;
    *(void **)arg = f;
    return 1;
}

static memcpy_async_fn real_memcpy_async(void)
{
    uintptr_t f = atomic_load_explicit(&s_real, memory_order_acquire);
    if (f != 0)
        return (memcpy_async_fn)f;
    void *p = dlsym(RTLD_NEXT, "cudaMemcpyAsync");
    if (p == NULL || p == (void *)cudaMemcpyAsync) {
        /* A runtime loaded with RTLD_LOCAL (a Python extension's) is not in
           the global scope that RTLD_NEXT searches. */
        p = NULL;
        dl_iterate_phdr(find_cudart, &p);
    }
    if (p != NULL)
        atomic_store_explicit(&s_real, (uintptr_t)p, memory_order_release);
    return (memcpy_async_fn)p;
}

/* ---------------------------------------------------------------------- */
/* Windows and notes. */

static void note(const void *src, void *dst, size_t count)
{
    uintptr_t s = (uintptr_t)src;
    pthread_mutex_lock(&s_mu);
    for (int i = s_nwin; i-- > 0;) {
        const struct window *w = &s_win[i];
        if (s < w->addr || s - w->addr >= w->bytes)
            continue;
        if (s_nnotes == s_cap) {
            size_t cap = s_cap != 0 ? 2 * s_cap : 256;
            struct note *n = cap <= NF_FOLLOW_NOTES ? realloc(s_notes, cap * sizeof *n) : NULL;
            if (n == NULL) {
                if (!s_warned)
                    cl_warn("more than %zu copies out of start-up broadcast buffers: later ones "
                            "are not followed, and joiners may be served stale bytes for them",
                            s_cap);
                s_warned = true;
                break;
            }
            s_notes = n;
            s_cap = cap;
        }
        s_notes[s_nnotes++] =
            (struct note){.comm = w->comm, .copy = {.src = src, .dst = dst, .bytes = count}};
        break;
    }
    pthread_mutex_unlock(&s_mu);
}

NF_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    memcpy_async_fn real = real_memcpy_async();
    if (real == NULL)
        return cudaErrorInitializationError; /* no CUDA runtime in this process */
    cudaError_t r = real(dst, src, count, kind, stream);
    if (r == cudaSuccess && count > 0 && atomic_load_explicit(&s_open, memory_order_relaxed) &&
        (kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault))
        note(src, dst, count);
    return r;
}

void nf_follow_bcast(ncclComm_t comm, void *buf, size_t bytes)
{
    if (buf == NULL || bytes == 0)
        return;
    pthread_mutex_lock(&s_mu);
    if (s_nwin < NF_FOLLOW_WINDOWS) {
        s_win[s_nwin++] = (struct window){.comm = comm, .addr = (uintptr_t)buf, .bytes = bytes};
        atomic_store_explicit(&s_open, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s_mu);
}

/* Hands comm's notes to its proxy in a batch of their own. */
static void hand_over(ncclComm_t comm, collab_follow_t *v, size_t n)
{
    nf_op_t *op = calloc(1, sizeof *op);
    if (op == NULL) {
        free(v);
        return;
    }
    op->kind = NF_FOLLOW;
    op->follow = v;
    op->count = n;
    if (nf_proxy_submit(comm, op, "ncclBroadcast") != ncclSuccess)
        cl_debug("copies out of start-up broadcasts not followed: the communicator is going");
}

void nf_follow_close(void)
{
    if (!atomic_load_explicit(&s_open, memory_order_relaxed))
        return;
    pthread_mutex_lock(&s_mu);
    struct note *notes = s_notes;
    size_t n = s_nnotes;
    s_notes = NULL;
    s_nnotes = s_cap = 0;
    s_nwin = 0;
    atomic_store_explicit(&s_open, 0, memory_order_relaxed);
    pthread_mutex_unlock(&s_mu);
    /* One batch per communicator, each with its notes in copy order. */
    for (size_t i = 0; i < n; i++) {
        ncclComm_t comm = notes[i].comm;
        if (comm == NULL)
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            k += notes[j].comm == comm;
        collab_follow_t *v = malloc(k * sizeof *v);
        size_t m = 0;
        for (size_t j = i; j < n; j++)
            if (notes[j].comm == comm) {
                if (v != NULL)
                    v[m++] = notes[j].copy;
                notes[j].comm = NULL;
            }
        if (v != NULL && nf_comm_live(comm) != NULL)
            hand_over(comm, v, m);
        else
            free(v);
    }
    free(notes);
}

void nf_follow_forget(ncclComm_t comm)
{
    pthread_mutex_lock(&s_mu);
    int k = 0;
    for (int i = 0; i < s_nwin; i++)
        if (s_win[i].comm != comm)
            s_win[k++] = s_win[i];
    s_nwin = k;
    size_t m = 0;
    for (size_t i = 0; i < s_nnotes; i++)
        if (s_notes[i].comm != comm)
            s_notes[m++] = s_notes[i];
    s_nnotes = m;
    if (s_nwin == 0 && s_nnotes == 0)
        atomic_store_explicit(&s_open, 0, memory_order_relaxed);
    pthread_mutex_unlock(&s_mu);
}
