/*  cl_stage_test.c - device buffers through the whole collab_* API, on a
    machine without a GPU: a fake device stands in for the plugin.

    The fake's "device memory" is an mmap'ed arena kept PROT_NONE except
    inside the fake's own copies, so any direct access to a device buffer
    by the engine, the algorithms or the API crashes the test instead of
    passing.  One peer founds a swarm of size 1 (SUM of one is the input)
    and runs every collective and point-to-point call with device buffers
    (blocking, nonblocking, in place, mixed host/device), checks that
    results are in the device buffer when the call returns, that pinned
    buffers come from the pool (allocated once), that the device is
    synchronised before inputs are read, that a freed request with
    pending results still delivers them, and that the state registry reads,
    hashes and writes a device entry through the device.  `cl_stage_test
    mixed` runs three processes over loopback, two with device buffers and
    one with host buffers, through a start-up broadcast, all-reduces and an
    allgather.

    The fake's queued copies (the staging pipeline, copy_async) are
    asynchronous as on a GPU: they join one FIFO "stream" that a device
    thread of the fake works through, one copy every FAKE_COPY_US, and an
    event completes only once the device thread has done the copies before
    it.  Until then the destination of a device-to-host copy holds a
    poison pattern (all bits set: NaN in every float type), so a chunk
    read or sent before its event completed turns the result into NaN and
    the bitwise comparisons with the host path fail; a result read from
    the device before the library waited for its stream is stale.
*/
#define _GNU_SOURCE
#include "elastic/cl_statereg.h"
#include "test_peers.h"
#include "mpi_collab.h"
#include "util/cl_device.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selftest.h"

#define ARENA ((size_t)64 << 20)
#define FAKE_MAX 64

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static char *s_arena;
static size_t s_used;
static struct {
    uintptr_t start;
    size_t size;
    uint64_t id;
} s_alloc[FAKE_MAX];
static int s_nalloc;
static uint64_t s_next_id = 1;
static int s_host_allocs, s_syncs, s_d2h, s_h2d;

/* The fake's stream (see the top comment). */
#define FAKE_COPY_US 300
typedef struct fake_op {
    struct fake_op *next;
    void *dst;
    const void *src, *dev;
    size_t n;
    int *event; /* set to 1 once done, or NULL */
    int wake;   /* host_wake: an eventfd written once done, else -1 */
} fake_op_t;
static pthread_mutex_t s_smu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_scv = PTHREAD_COND_INITIALIZER;
static fake_op_t *s_head, *s_tail;
static int s_async_d2h, s_async_h2d, s_events_live, s_wakes;
static int f_copy(void *dst, const void *src, size_t n, const void *dev);

static const char *f_describe(void)
{
    return "fake device (test)";
}

static int f_query(const void *p, cl_devattr_t *out)
{
    uintptr_t u = (uintptr_t)p;
    pthread_mutex_lock(&s_mu);
    for (int i = 0; i < s_nalloc; i++)
        if (u >= s_alloc[i].start && u < s_alloc[i].start + s_alloc[i].size) {
            *out = (cl_devattr_t){.start = s_alloc[i].start,
                                  .size = s_alloc[i].size,
                                  .buffer_id = s_alloc[i].id,
                                  .context = (void *)0x1};
            pthread_mutex_unlock(&s_mu);
            return CL_DEVQ_DEVICE;
        }
    pthread_mutex_unlock(&s_mu);
    return CL_DEVQ_HOST;
}

static void *f_host_alloc(size_t n)
{
    __atomic_add_fetch(&s_host_allocs, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void f_host_free(void *p)
{
    free(p);
}

static bool in_arena(const void *p, size_t n)
{
    return (const char *)p >= s_arena && (const char *)p + n <= s_arena + ARENA;
}

/* Copies with the arena opened for the copy only. */
static int f_copy(void *dst, const void *src, size_t n, const void *dev)
{
    if (!in_arena(dev, n))
        return -1;
    pthread_mutex_lock(&s_mu);
    mprotect(s_arena, ARENA, PROT_READ | PROT_WRITE);
    memcpy(dst, src, n);
    mprotect(s_arena, ARENA, PROT_NONE);
    pthread_mutex_unlock(&s_mu);
    return 0;
}

/* Waits until the stream has done every queued copy. */
static void stream_drain(void)
{
    pthread_mutex_lock(&s_smu);
    while (s_head != NULL)
        pthread_cond_wait(&s_scv, &s_smu);
    pthread_mutex_unlock(&s_smu);
}

/* The device thread: one queued copy every FAKE_COPY_US, in order. */
static void *stream_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&s_smu);
    for (;;) {
        while (s_head == NULL)
            pthread_cond_wait(&s_scv, &s_smu);
        pthread_mutex_unlock(&s_smu);
        nanosleep(&(struct timespec){0, FAKE_COPY_US * 1000L}, NULL);
        pthread_mutex_lock(&s_smu);
        fake_op_t *op = s_head;
        pthread_mutex_unlock(&s_smu);
        int rc = op->n > 0 ? f_copy(op->dst, op->src, op->n, op->dev) : 0;
        CHECK(rc == 0);
        if (op->wake >= 0) {
            uint64_t one = 1;
            CHECK(write(op->wake, &one, sizeof one) == sizeof one);
            __atomic_add_fetch(&s_wakes, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_lock(&s_smu);
        if (op->event != NULL)
            __atomic_store_n(op->event, 1, __ATOMIC_RELEASE);
        s_head = op->next;
        if (s_head == NULL)
            s_tail = NULL;
        free(op);
        pthread_cond_broadcast(&s_scv);
    }
    return NULL;
}

static void stream_start(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, stream_main, NULL) == 0);
    pthread_detach(t);
}

static void stream_push(fake_op_t *op)
{
    pthread_mutex_lock(&s_smu);
    if (s_tail != NULL)
        s_tail->next = op;
    else
        s_head = op;
    s_tail = op;
    pthread_cond_broadcast(&s_scv);
    pthread_mutex_unlock(&s_smu);
}

static int f_host_wake(void *ctx, int fd)
{
    (void)ctx;
    fake_op_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return -1;
    op->wake = fd;
    stream_push(op);
    return 0;
}

static int f_copy_async(void *ctx, void *host, void *dev, size_t n, int to_host, void **event)
{
    (void)ctx;
    if (in_arena(host, 1) || !in_arena(dev, n))
        return -1;
    fake_op_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return -1;
    op->wake = -1;
    if (to_host) {
        memset(host, 0xff, n); /* poison until the copy is done */
        op->dst = host, op->src = dev;
        __atomic_add_fetch(&s_async_d2h, 1, __ATOMIC_RELAXED);
    } else {
        op->dst = dev, op->src = host;
        __atomic_add_fetch(&s_async_h2d, 1, __ATOMIC_RELAXED);
    }
    op->dev = dev;
    op->n = n;
    if (event != NULL) {
        op->event = calloc(1, sizeof *op->event);
        *event = op->event;
        __atomic_add_fetch(&s_events_live, 1, __ATOMIC_RELAXED);
    }
    stream_push(op);
    return 0;
}

static int f_event_done(void *ctx, void *event)
{
    (void)ctx;
    return __atomic_load_n((int *)event, __ATOMIC_ACQUIRE);
}

static void f_event_free(void *ctx, void *event)
{
    (void)ctx;
    CHECK(f_event_done(ctx, event) == 1); /* the library frees events once completed */
    __atomic_sub_fetch(&s_events_live, 1, __ATOMIC_RELAXED);
    free(event);
}

static int f_stream_sync(void *ctx)
{
    (void)ctx;
    stream_drain();
    return 0;
}

static int f_d2h(void *ctx, void *host, const void *dev, size_t n)
{
    (void)ctx;
    stream_drain(); /* the copies of one stream run in order */
    if (in_arena(host, 1))
        return -1;
    __atomic_add_fetch(&s_d2h, 1, __ATOMIC_RELAXED);
    return f_copy(host, dev, n, dev);
}

static int f_h2d(void *ctx, void *dev, const void *host, size_t n)
{
    (void)ctx;
    stream_drain();
    if (in_arena(host, 1))
        return -1;
    __atomic_add_fetch(&s_h2d, 1, __ATOMIC_RELAXED);
    return f_copy(dev, host, n, dev);
}

static int f_copy_any(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    const void *dev = in_arena(dst, n) ? dst : src;
    return f_copy(dst, src, n, dev);
}

static int f_sync(void *ctx)
{
    (void)ctx;
    __atomic_add_fetch(&s_syncs, 1, __ATOMIC_RELAXED);
    return 0;
}

static const char *f_error(void)
{
    return "fake device error";
}

static const cl_devops_t s_fake = {
    .abi = CL_DEVOPS_ABI,
    .size = sizeof(cl_devops_t),
    .describe = f_describe,
    .query = f_query,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .d2h = f_d2h,
    .h2d = f_h2d,
    .copy = f_copy_any,
    .ctx_sync = f_sync,
    .last_error = f_error,
    .copy_async = f_copy_async,
    .event_done = f_event_done,
    .event_free = f_event_free,
    .stream_sync = f_stream_sync,
    .host_wake = f_host_wake,
};
static cl_devops_t s_fake_timer; /* s_fake without host_wake: the engine's timer only */

/* A "device" allocation of n bytes holding init (or zeros). */
static void *dev_new(const void *init, size_t n)
{
    pthread_mutex_lock(&s_mu);
    size_t off = (s_used + 4095) & ~(size_t)4095;
    if (off + n > ARENA || s_nalloc == FAKE_MAX) {
        pthread_mutex_unlock(&s_mu);
        return NULL;
    }
    s_used = off + n;
    s_alloc[s_nalloc].start = (uintptr_t)(s_arena + off);
    s_alloc[s_nalloc].size = n;
    s_alloc[s_nalloc].id = s_next_id++;
    s_nalloc++;
    mprotect(s_arena, ARENA, PROT_READ | PROT_WRITE);
    if (init != NULL)
        memcpy(s_arena + off, init, n);
    else
        memset(s_arena + off, 0, n);
    mprotect(s_arena, ARENA, PROT_NONE);
    pthread_mutex_unlock(&s_mu);
    return s_arena + off;
}

/* Reads n bytes of a device buffer. */
static void dev_get(void *dst, const void *dev, size_t n)
{
    CHECK(f_copy(dst, dev, n, dev) == 0);
}

static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};

static void test_collectives(collab_comm_t *w)
{
    double x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = i * 0.5 - 3;
    double *dx = dev_new(x, sizeof x), *dy = dev_new(NULL, sizeof y);
    int syncs = s_syncs;
    CHECK(collab_allreduce(w, dx, dy, 1000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(s_syncs > syncs); /* the device was synchronised before the input was read */
    dev_get(y, dy, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* Mixed: host input, device output, and the reverse. */
    memset(y, 0, sizeof y);
    double *dz = dev_new(NULL, sizeof y);
    CHECK(collab_allreduce(w, x, dz, 1000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    dev_get(y, dz, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    memset(y, 0, sizeof y);
    CHECK(collab_allreduce(w, dz, y, 1000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* In place. */
    CHECK(collab_allreduce(w, NULL, dz, 1000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    dev_get(y, dz, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* Nonblocking: the result is in the device buffer once wait returns. */
    double *dw = dev_new(NULL, sizeof y);
    collab_request_t *req = NULL;
    CHECK(collab_allreduce(w, dx, dw, 1000, COLLAB_DOUBLE, &SUM, &req) == COLLAB_OK);
    CHECK(collab_wait(&req, NULL) == COLLAB_OK && req == NULL);
    dev_get(y, dw, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* A freed nonblocking request still delivers its result. */
    double *dv = dev_new(NULL, sizeof y);
    CHECK(collab_allreduce(w, dx, dv, 1000, COLLAB_DOUBLE, &SUM, &req) == COLLAB_OK);
    CHECK(collab_request_free(&req) == COLLAB_OK);
    dev_get(y, dv, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* Broadcast, allgatherv, alltoall, reduce_scatter_block with device
       buffers. */
    char msg[64] = "device broadcast", got[64];
    char *dm = dev_new(msg, sizeof msg);
    CHECK(collab_bcast(w, dm, sizeof msg, 0, NULL) == COLLAB_OK);
    dev_get(got, dm, sizeof got);
    CHECK(strcmp(got, msg) == 0);
    size_t counts[1] = {sizeof msg}, displs[1] = {0};
    char *dg = dev_new(NULL, sizeof msg);
    CHECK(collab_allgatherv(w, dm, sizeof msg, dg, counts, displs, NULL) == COLLAB_OK);
    dev_get(got, dg, sizeof got);
    CHECK(strcmp(got, msg) == 0);
    char *da = dev_new(NULL, sizeof msg);
    CHECK(collab_alltoall(w, dm, da, sizeof msg, NULL) == COLLAB_OK);
    dev_get(got, da, sizeof got);
    CHECK(strcmp(got, msg) == 0);
    double *dr = dev_new(NULL, sizeof y);
    CHECK(collab_reduce_scatter_block(w, dx, dr, 1000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    dev_get(y, dr, sizeof y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* A buffer running past its device allocation is refused, not read. */
    CHECK(collab_allreduce(w, dx, dy, 2000, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_ARG);
}

static void test_p2p(collab_comm_t *w)
{
    int v[256], got[256];
    for (int i = 0; i < 256; i++)
        v[i] = i * 7;
    int *ds = dev_new(v, sizeof v), *dr = dev_new(NULL, sizeof v);
    collab_request_t *rr = NULL;
    CHECK(collab_recv(w, dr, sizeof v, 0, 5, NULL, &rr) == COLLAB_OK);
    CHECK(collab_send(w, ds, sizeof v, 0, 5, NULL) == COLLAB_OK);
    collab_status_info_t st;
    CHECK(collab_wait(&rr, &st) == COLLAB_OK && st.bytes == sizeof v);
    dev_get(got, dr, sizeof got);
    CHECK(memcmp(v, got, sizeof v) == 0);
    /* Blocking receive into device memory, shorter message. */
    int *dr2 = dev_new(NULL, sizeof v);
    CHECK(collab_send(w, v, 16, 0, 6, NULL) == COLLAB_OK);
    CHECK(collab_recv(w, dr2, sizeof v, 0, 6, &st, NULL) == COLLAB_OK && st.bytes == 16);
    dev_get(got, dr2, sizeof got);
    CHECK(memcmp(v, got, 16) == 0 && got[4] == 0);
    /* Matched receive into device memory. */
    int *dr3 = dev_new(NULL, sizeof v);
    CHECK(collab_send(w, ds, sizeof v, 0, 7, NULL) == COLLAB_OK);
    int flag = 0;
    collab_message_t *m = NULL;
    CHECK(collab_probe(w, 0, 7, 1, &flag, &st, &m) == COLLAB_OK && flag == 1);
    CHECK(collab_mrecv(&m, dr3, sizeof v, &st) == COLLAB_OK);
    dev_get(got, dr3, sizeof got);
    CHECK(memcmp(v, got, sizeof v) == 0);
}

/* The state registry with a device entry: read, hash and write go through
   the device (synchronised first), never touch the memory directly. */
static void test_registry(void)
{
    float v[4096], got[4096];
    for (int i = 0; i < 4096; i++)
        v[i] = (float)i * 0.25f;
    float *dv = dev_new(v, sizeof v);
    float *hv = malloc(sizeof v);
    memcpy(hv, v, sizeof v);
    cl_statereg_t *reg = cl_statereg_new();
    CHECK(reg != NULL);
    CHECK(cl_statereg_add(reg, 0, dv, sizeof v) == COLLAB_OK);
    CHECK(cl_statereg_add(reg, 1, hv, sizeof v) == COLLAB_OK);
    int syncs = s_syncs;
    CHECK(cl_statereg_read(reg, 0, 100, 400, got) == COLLAB_OK);
    CHECK(s_syncs > syncs);
    CHECK(memcmp(got, (char *)v + 100, 400) == 0);
    /* Same contents, same hash, whichever memory holds them. */
    uint8_t h0[CL_STATEREG_HASH_BYTES], h1[CL_STATEREG_HASH_BYTES];
    CHECK(cl_statereg_hash(reg, 0, h0) == COLLAB_OK);
    CHECK(cl_statereg_hash(reg, 1, h1) == COLLAB_OK);
    CHECK(memcmp(h0, h1, sizeof h0) == 0);
    /* A straggler's refresh writes the device buffer. */
    float w[16];
    for (int i = 0; i < 16; i++)
        w[i] = -1.0f - (float)i;
    CHECK(cl_statereg_write(reg, 0, 64, w, sizeof w) == COLLAB_OK);
    dev_get(got, dv, sizeof v);
    CHECK(memcmp((char *)got + 64, w, sizeof w) == 0 && got[0] == 0.0f);
    cl_statereg_destroy(&reg);
    free(hv);
}

/* ---------------------------------------------------------------------- */
/* `mixed`: three real processes over loopback; ranks 0 and 2 pass device
   buffers, rank 1 host buffers (a group may mix GPU and CPU peers). */

#define MIXED_N 3
#define MIXED_COUNT 5000
#define BIG_COUNT 300000 /* 2.4 MB: the butterfly, about 12 chunks each way */

/* `mixed verify`: COLLAB_VERIFY on, under which the all-reduce is not
   stage-aware: it starts once the whole input is in host memory and its
   output goes back whole; the fake cannot wake the engine here, which
   looks at the events on its timer. */
static bool s_verify;
/* `mixed whole`: COLLAB_CUDA_PIPELINE=0, whole-buffer staging (no queued
   copy), the same bits. */
static bool s_whole;

/* The staging pipeline over the butterfly: every form of a large
   all-reduce with device buffers gives the host path's bits (the host
   path runs first, with the same inputs, as reference), while the fake's
   copies are slower than loopback. */
static void mixed_big(collab_comm_t *w, int me, bool device)
{
    static double x[BIG_COUNT], ref[BIG_COUNT], y[BIG_COUNT];
    for (int i = 0; i < BIG_COUNT; i++) /* rounding makes the order of the sums count */
        x[i] = (double)(me + 1) / 3.0 * (i % 977) + 1e-7 * i;
    CHECK(collab_allreduce(w, x, ref, BIG_COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(ref[1] == ref[1] && ref[BIG_COUNT - 1] == ref[BIG_COUNT - 1]); /* no NaN */
    int d2h = s_async_d2h, h2d = s_async_h2d;
    /* Device in, device out (host buffers at the host peer). */
    double *dx = device ? dev_new(x, sizeof x) : x, *dy = device ? dev_new(NULL, sizeof y) : y;
    memset(y, 0, sizeof y);
    CHECK(collab_allreduce(w, dx, dy, BIG_COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    if (device) {
        dev_get(y, dy, sizeof y);
        /* Chunk by chunk, both ways: one queued copy per chunk; or one
           copy each way for a collective that is not stage-aware. */
        if (s_whole)
            CHECK(s_async_d2h == d2h && s_async_h2d == h2d);
        else if (s_verify)
            CHECK(s_async_d2h - d2h == 1 && s_async_h2d - h2d == 1);
        else
            CHECK(s_async_d2h - d2h >= 8 && s_async_h2d - h2d >= 8 && s_wakes > 0);
    }
    CHECK(memcmp(y, ref, sizeof y) == 0);
    /* In place. */
    double *dz = device ? dev_new(x, sizeof x) : y;
    if (!device)
        memcpy(y, x, sizeof y);
    CHECK(collab_allreduce(w, NULL, dz, BIG_COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    if (device)
        dev_get(y, dz, sizeof y);
    CHECK(memcmp(y, ref, sizeof y) == 0);
    /* Nonblocking, the result in the device buffer once wait returns. */
    collab_request_t *req = NULL;
    double *dv = device ? dev_new(NULL, sizeof y) : y;
    memset(y, 0, sizeof y);
    CHECK(collab_allreduce(w, dx, dv, BIG_COUNT, COLLAB_DOUBLE, &SUM, &req) == COLLAB_OK);
    CHECK(collab_wait(&req, NULL) == COLLAB_OK);
    if (device)
        dev_get(y, dv, sizeof y);
    CHECK(memcmp(y, ref, sizeof y) == 0);
    /* Mixed within one call: device input and host output at rank 0,
       host input and device output at rank 2. */
    memset(y, 0, sizeof y);
    const double *in = me == 2 ? x : dx;
    double *out = me == 0 ? y : dv;
    CHECK(collab_allreduce(w, in, out, BIG_COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    if (me == 2)
        dev_get(y, dv, sizeof y);
    CHECK(memcmp(y, ref, sizeof y) == 0);
    CHECK(s_events_live == 0); /* every event freed */
}

static int mixed_peer(int me, const char *dir, char (*addrs)[256], const int *ports)
{
    char v[4096];
    snprintf(v, sizeof v, "%s/id%d", dir, me);
    setenv("COLLAB_IDENTITY", v, 1);
    snprintf(v, sizeof v, "/ip4/127.0.0.1/tcp/%d", ports[me]);
    setenv("COLLAB_LISTEN", v, 1);
    snprintf(v, sizeof v, "%d", me);
    setenv("COLLAB_RANK", v, 1);
    snprintf(v, sizeof v, "%d", MIXED_N);
    setenv("COLLAB_WORLD_SIZE", v, 1);
    snprintf(v, sizeof v, "cl_stage_mixed-%d", (int)getppid());
    setenv("COLLAB_RUN_ID", v, 1);
    setenv("COLLAB_MATCHMAKING_TIME", "5", 1);
    setenv("COLLAB_TIMEOUT", "3", 1);
    setenv("COLLAB_CUDA", "0", 1);
    if (s_verify)
        setenv("COLLAB_VERIFY", "1", 1);
    if (s_whole)
        setenv("COLLAB_CUDA_PIPELINE", "0", 1);
    if (me > 0) {
        v[0] = '\0';
        for (int j = 0; j < MIXED_N; j++)
            if (j != me) {
                strncat(v, addrs[j], sizeof v - strlen(v) - 2);
                strcat(v, " ");
            }
        setenv("COLLAB_INITIAL_PEERS", v, 1);
    }
    bool device = me != 1;
    stream_start();
    s_fake_timer = s_fake;
    s_fake_timer.host_wake = NULL;
    if (device)
        cl_device_use_ops(s_verify ? &s_fake_timer : &s_fake);
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    /* Start-up broadcast of "parameters" from the host peer. */
    static double p[MIXED_COUNT], x[MIXED_COUNT], y[MIXED_COUNT];
    for (int i = 0; i < MIXED_COUNT; i++)
        p[i] = me == 1 ? i * 0.5 : -1.0;
    double *pp = device ? dev_new(p, sizeof p) : p;
    CHECK(collab_bcast(w, pp, sizeof p, 1, NULL) == COLLAB_OK);
    if (device)
        dev_get(p, pp, sizeof p);
    CHECK(p[10] == 5.0 && p[MIXED_COUNT - 1] == (MIXED_COUNT - 1) * 0.5);
    /* All-reduces with distinct contributions, all present: exact sums. */
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < MIXED_COUNT; i++)
            x[i] = (double)(me + 1) * (i % 100) + step;
        double *xs = device ? dev_new(x, sizeof x) : x, *ys = device ? dev_new(NULL, sizeof y) : y;
        CHECK(collab_allreduce(w, xs, ys, MIXED_COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        if (device)
            dev_get(y, ys, sizeof y);
        int bad = 0;
        for (int i = 0; i < MIXED_COUNT; i++)
            bad += y[i] != 6.0 * (i % 100) + 3.0 * step;
        CHECK(bad == 0);
    }
    mixed_big(w, me, device);
    /* Gather everyone's rank into device or host memory. */
    int mine = 100 + me, all[MIXED_N] = {0};
    size_t counts[MIXED_N], displs[MIXED_N];
    for (int r = 0; r < MIXED_N; r++)
        counts[r] = sizeof(int), displs[r] = r * sizeof(int);
    int *ms = device ? dev_new(&mine, sizeof mine) : &mine;
    int *as = device ? dev_new(NULL, sizeof all) : all;
    CHECK(collab_allgatherv(w, ms, sizeof mine, as, counts, displs, NULL) == COLLAB_OK);
    if (device)
        dev_get(all, as, sizeof all);
    CHECK(all[0] == 100 && all[1] == 101 && all[2] == 102);
    CHECK(collab_finalize() == COLLAB_OK);
    return s_failures == 0 ? 0 : 1;
}

static int test_mixed(void)
{
    char dir[256], addrs[MIXED_N][256];
    int ports[MIXED_N];
    test_peers_prepare("stage", MIXED_N, dir, sizeof dir, addrs, ports);
    pid_t pid[MIXED_N];
    for (int i = 0; i < MIXED_N; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            alarm(60); /* a hung peer fails the test instead of hanging it */
            _exit(mixed_peer(i, dir, addrs, ports));
        }
    }
    int failed = 0;
    for (int i = 0; i < MIXED_N; i++) {
        int st = 0;
        waitpid(pid[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "mixed: peer %d ended with status %d\n", i, st);
            failed = 1;
        }
    }
    for (int i = 0; i < MIXED_N; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/id%d", dir, i);
        unlink(path);
    }
    rmdir(dir);
    if (!failed)
        printf("cl_stage_test mixed: all checks passed\n");
    return failed;
}

/* collab_memcpy in every direction, overlapping device ranges too (the
   faces' own copies: reduce_scatter's block, scans, Sendrecv_replace). */
static void test_memcpy(void)
{
    char h[256], g[256];
    for (int i = 0; i < 256; i++)
        h[i] = (char)i;
    char *d1 = dev_new(NULL, sizeof h), *d2 = dev_new(NULL, sizeof h);
    CHECK(collab_memcpy(d1, h, sizeof h) == COLLAB_OK); /* host to device */
    CHECK(collab_memcpy(d2, d1, sizeof h) == COLLAB_OK); /* device to device */
    memset(g, 0, sizeof g);
    CHECK(collab_memcpy(g, d2, sizeof g) == COLLAB_OK); /* device to host */
    CHECK(memcmp(g, h, sizeof h) == 0);
    CHECK(collab_memcpy(d2, d2 + 16, 200) == COLLAB_OK); /* overlapping, in one buffer */
    dev_get(g, d2, sizeof g);
    CHECK(memcmp(g, h + 16, 200) == 0);
    CHECK(collab_memcpy(g, h, 0) == COLLAB_OK);
    CHECK(collab_memcpy(NULL, h, 1) == COLLAB_ERR_ARG);
    CHECK(collab_memcpy(g, d1, 4096) == COLLAB_ERR_ARG); /* past the device allocation */
    memmove(g, h, sizeof h);
    CHECK(collab_memcpy(g + 1, g, 100) == COLLAB_OK && g[1] == 0 && g[100] == 99);
}

int main(int argc, char **argv)
{
    s_arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s_arena == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "mixed") == 0) {
        s_verify = argc > 2 && strcmp(argv[2], "verify") == 0;
        s_whole = argc > 2 && strcmp(argv[2], "whole") == 0;
        return test_mixed();
    }
    stream_start();
    cl_device_use_ops(&s_fake);
    setenv("COLLAB_WORLD_SIZE", "1", 1);
    setenv("COLLAB_TIMEOUT", "2", 1);
    setenv("COLLAB_MATCHMAKING_TIME", "0.05", 1);
    setenv("COLLAB_LISTEN", "/ip4/127.0.0.1/tcp/0", 1);
    setenv("COLLAB_RUN_ID", "cl_stage_test", 1);
    setenv("COLLAB_CUDA", "0", 1); /* the fake is installed already */
    int rc = collab_init(NULL);
    CHECK(rc == COLLAB_OK);
    if (rc != COLLAB_OK)
        return 1;
    CHECK(collab_device_support() == 1); /* MPIX_Query_cuda_support */
    collab_comm_t *w = collab_comm_world();
    test_collectives(w);
    test_p2p(w);
    test_registry();
    test_memcpy();
    /* The pool: a handful of pinned buffers served every call. */
    printf("pinned allocations: %d, device-to-host copies: %d, host-to-device copies: %d\n",
           s_host_allocs, s_d2h, s_h2d);
    CHECK(s_host_allocs <= 4);
    CHECK(collab_finalize() == COLLAB_OK);
    if (s_failures == 0)
        printf("cl_stage_test: all checks passed\n");
    return s_failures == 0 ? 0 : 1;
}
