/*  nccl_face_test.c - the NCCL face on a machine without a GPU.

    Linked with the face's objects and the core, with a fake device in
    place of the plugin (cl_device_use_ops): "device" buffers are host
    memory, events complete at once, and a fake stream keeps the flag and
    ticket that the face asks it to wait for, so that fake_sync() waits as
    cudaStreamSynchronize would.  The program calls the NCCL API through
    nccl.h, as a trainer does.

    nccl_face_test args   one process: argument checks, errors, config,
                          out-of-scope calls, a one-rank swarm
    nccl_face_test coll   under collab-run -n N: every collective, groups
                          of sends and receives, split and a second init,
                          results checked on every rank
    nccl_face_test absent under collab-run -n 4 --chaos kill:2@line:2:ready
                          (a real SIGKILL): with everyone, then without
                          rank 2: ncclSum is size x the mean of the present
                          ranks (the MPI_SUM rule), ncclAvg their mean; a
                          send to the absent rank and a receive from it
                          are skipped outside strict mode, and the
                          communicator reports no asynchronous error
    nccl_face_test follow | follow-control
                          under collab-run -n 3 with rank 2 killed and a
                          joiner started (check_follow.sh): a DDP-like
                          trainer broadcasts a bucket of its parameters,
                          copies it into them with cudaMemcpyAsync (the
                          face follows those copies) and fills the bucket
                          with other data; every peer ends with the same
                          parameters, the joiner's included.  The control
                          copies with memcpy, which the face cannot see:
                          the joiner must then end with other parameters
    nccl_face_test standby
                          the same trainer under collab-run -n 3 with a
                          second process for rank 2 started while the
                          first runs, after rank 1 left at step 20
                          (check_follow.sh): its ncclCommInitRank waits
                          as a standby for rank 2, not taking the free
                          rank 1; the first SIGKILLs itself at step 60,
                          and the second then takes rank 2 and ends with
                          the same parameters as rank 0
    nccl_face_test mpi-first | nccl-first
                          one core for two faces: the other face's hold
                          (collab_init or collab_retain, as MPI_Init does)
                          keeps the peer in the swarm after the last NCCL
                          communicator goes, and the reverse
*/
#include <nccl.h>

#include "mpi_collab.h"
#include "util/cl_device.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int s_failures = 0;
static int s_rank = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL: rank %d: %s:%d: %s\n", s_rank, __FILE__, __LINE__, #cond);      \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------------- */
/* The fake device. */

typedef struct {
    uint32_t *flag;
    uint32_t value;
    int waits; /* stream_wait_flag calls */
} fake_stream_t;

static int f_events;
static int f_ctx_syncs; /* whole-context synchronisations: must stay 0 */

/* "Device memory": an arena that query() reports as device memory, so
   that the core stages it as it would on a GPU. */
static char s_arena[1 << 20] __attribute__((aligned(64)));
static size_t s_arena_used;

static const char *f_describe(void)
{
    return "fake device";
}
static int f_query(const void *p, cl_devattr_t *out)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)s_arena;
    if (a < lo || a >= lo + sizeof s_arena)
        return CL_DEVQ_HOST;
    out->start = lo;
    out->size = sizeof s_arena;
    out->buffer_id = 1;
    out->context = (void *)s_arena;
    out->device = 0;
    out->managed = 0;
    return CL_DEVQ_DEVICE;
}
static int f_copy(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    memmove(dst, src, n);
    return 0;
}
static int f_ctx_sync(void *ctx)
{
    (void)ctx;
    __atomic_add_fetch(&f_ctx_syncs, 1, __ATOMIC_RELAXED);
    return 0;
}
static void *f_host_alloc(size_t n)
{
    return malloc(n);
}
static void f_host_free(void *p)
{
    free(p);
}
static const char *f_last_error(void)
{
    return "fake error";
}
static int f_event_record(void *stream, void **ctx, void **ev)
{
    (void)stream;
    *ctx = NULL;
    *ev = malloc(1);
    __atomic_add_fetch(&f_events, 1, __ATOMIC_RELAXED);
    return *ev != NULL ? 0 : -1;
}
static int f_event_wait(void *ctx, void *ev)
{
    (void)ctx;
    free(ev);
    __atomic_sub_fetch(&f_events, 1, __ATOMIC_RELAXED);
    return 0;
}
static int f_flag_alloc(uint32_t **flag)
{
    *flag = calloc(16, sizeof **flag);
    return *flag != NULL ? 0 : -1;
}
static void f_flag_free(uint32_t *flag)
{
    free(flag);
}
static int f_stream_wait_flag(void *stream, uint32_t *flag, uint32_t value)
{
    fake_stream_t *s = stream;
    if (s == NULL)
        return -1; /* the legacy stream has no memory operations here */
    s->flag = flag;
    s->value = value;
    s->waits++;
    return 0;
}
static int f_current_device(void)
{
    return 0;
}
static int f_dev_alloc(void **p, size_t n)
{
    size_t at = __atomic_fetch_add(&s_arena_used, (n + 63) & ~(size_t)63, __ATOMIC_RELAXED);
    if (at + n > sizeof s_arena)
        return -1;
    *p = s_arena + at;
    return 0;
}
static int f_dev_free(void *p)
{
    (void)p; /* the arena is never reused */
    return 0;
}

static const cl_devops_t s_fake = {
    .abi = CL_DEVOPS_ABI,
    .size = sizeof(cl_devops_t),
    .describe = f_describe,
    .query = f_query,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .last_error = f_last_error,
    .d2h = f_copy,
    .h2d = f_copy,
    .copy = f_copy,
    .ctx_sync = f_ctx_sync,
    .event_record = f_event_record,
    .event_wait = f_event_wait,
    .flag_alloc = f_flag_alloc,
    .flag_free = f_flag_free,
    .stream_wait_flag = f_stream_wait_flag,
    .current_device = f_current_device,
    .dev_alloc = f_dev_alloc,
    .dev_free = f_dev_free,
};

/* cudaStreamSynchronize of the fake: waits (deadline 60 s) for the ticket
   the face asked the stream to wait for. */
static int fake_sync(fake_stream_t *s)
{
    if (s->flag == NULL)
        return 0;
    struct timespec d = {0, 200 * 1000};
    for (int i = 0; i < 300000; i++) {
        uint32_t v = __atomic_load_n(s->flag, __ATOMIC_ACQUIRE);
        if ((int32_t)(v - s->value) >= 0)
            return 0;
        nanosleep(&d, NULL);
    }
    fprintf(stderr, "FAIL: rank %d: stream never released (ticket %u)\n", s_rank, s->value);
    s_failures++;
    return -1;
}

#define STREAM(s) ((cudaStream_t)(void *)(s))

/* bfloat16 bits of f (f exactly representable). */
static uint16_t bf16_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return (uint16_t)(b >> 16);
}

/* ---------------------------------------------------------------------- */
/* One process: arguments. */

static int test_args(void)
{
    int v = 0;
    CHECK(ncclGetVersion(NULL) == ncclInvalidArgument);
    CHECK(ncclGetVersion(&v) == ncclSuccess && v == NCCL_VERSION_CODE);
    CHECK(ncclGetUniqueId(NULL) == ncclInvalidArgument);
    for (int r = 0; r < ncclNumResults; r++)
        CHECK(ncclGetErrorString((ncclResult_t)r) != NULL);
    CHECK(strstr(ncclGetErrorString((ncclResult_t)99), "unknown") != NULL);

    ncclUniqueId id, zero;
    memset(&zero, 0, sizeof zero);
    CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    ncclComm_t comm = NULL;
    CHECK(ncclCommInitRank(NULL, 1, id, 0) == ncclInvalidArgument);
    CHECK(ncclCommInitRank(&comm, 0, id, 0) == ncclInvalidArgument);
    CHECK(ncclCommInitRank(&comm, 1, id, 1) == ncclInvalidArgument);
    CHECK(ncclCommInitRank(&comm, 1, id, -1) == ncclInvalidArgument);
    CHECK(ncclCommInitRank(&comm, 1, zero, 0) == ncclInvalidArgument);
    CHECK(strstr(ncclGetLastError(NULL), "unique id") != NULL);
    ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
    bad.magic = 0;
    CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &bad) == ncclInvalidArgument);
    /* COLLAB_WORLD_SIZE=1 from the test's environment: 2 ranks disagree. */
    CHECK(ncclCommInitRank(&comm, 2, id, 0) == ncclInvalidUsage);
    CHECK(comm == NULL);

    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg) == ncclSuccess);
    if (comm == NULL)
        return 1;
    int n = -1, r = -1, dev = -1;
    CHECK(ncclCommCount(comm, &n) == ncclSuccess && n == 1);
    CHECK(ncclCommUserRank(comm, &r) == ncclSuccess && r == 0);
    CHECK(ncclCommCuDevice(comm, &dev) == ncclSuccess && dev == 0);
    CHECK(ncclCommCount(comm, NULL) == ncclInvalidArgument);
    CHECK(ncclCommCount(NULL, &n) == ncclInvalidArgument);

    /* Handles that are not communicators are never read. */
    char garbage[64];
    memset(garbage, 0xa5, sizeof garbage);
    ncclComm_t fake = (ncclComm_t)(void *)garbage;
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
    fake_stream_t st = {0};
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, ncclSum, fake, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, ncclSum, NULL, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclCommDestroy(fake) == ncclInvalidArgument);
    CHECK(ncclCommGetAsyncError(fake, &(ncclResult_t){0}) == ncclInvalidArgument);
    /* Datatypes, operators, buffers, roots, peers. */
    CHECK(ncclAllReduce(a, b, 8, (ncclDataType_t)99, ncclSum, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, 8, (ncclDataType_t)-1, ncclSum, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, (ncclRedOp_t)42, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, (ncclRedOp_t)-3, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, 4, ncclFloat8e4m3, ncclSum, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(strstr(ncclGetLastError(comm), "ncclFloat8e4m3") != NULL);
    CHECK(ncclAllReduce(NULL, b, 8, ncclFloat, ncclSum, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclAllReduce(a, NULL, 8, ncclFloat, ncclSum, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclAllReduce(a, b, SIZE_MAX / 2, ncclFloat, ncclSum, comm, STREAM(&st)) ==
          ncclInvalidArgument);
    CHECK(ncclBroadcast(a, b, 8, ncclFloat, 1, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclBcast(NULL, 8, ncclFloat, 0, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclReduce(a, b, 8, ncclFloat, ncclSum, -1, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclSend(a, 8, ncclFloat, 1, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclRecv(NULL, 8, ncclFloat, 0, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclGather(a, NULL, 8, ncclFloat, 0, comm, STREAM(&st)) == ncclInvalidArgument);
    CHECK(ncclGroupEnd() == ncclInvalidUsage);
    CHECK(ncclRedOpDestroy((ncclRedOp_t)7, comm) == ncclInvalidArgument);
    CHECK(ncclRedOpCreatePreMulSum(NULL, a, ncclFloat, ncclScalarHostImmediate, comm) ==
          ncclInvalidArgument);
    CHECK(ncclMemFree(NULL) == ncclSuccess);
    CHECK(ncclCommSplit(comm, -5, 0, &(ncclComm_t){0}, NULL) == ncclInvalidArgument);

    /* Outside the scope: ncclInvalidUsage and a log line, nothing else. */
    CHECK(ncclCommShrink(comm, NULL, 0, &(ncclComm_t){0}, NULL, 0) == ncclInvalidUsage);
    CHECK(ncclCommInitAll(&comm, 1, NULL) == ncclInvalidUsage);
    CHECK(ncclGroupSimulateEnd(NULL) == ncclInvalidUsage);
    CHECK(strstr(ncclGetLastError(NULL), "ncclGroupSimulateEnd") != NULL);

    /* A one-rank swarm runs the collectives. */
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, ncclAvg, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    CHECK(memcmp(a, b, sizeof a) == 0);
    ncclRedOp_t pm;
    float two = 2.0f;
    CHECK(ncclRedOpCreatePreMulSum(&pm, &two, ncclFloat, ncclScalarHostImmediate, comm) ==
          ncclSuccess);
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, pm, comm, STREAM(&st)) == ncclSuccess);
    CHECK(ncclAllReduce(a, b, 8, ncclInt32, pm, comm, STREAM(&st)) == ncclInvalidArgument);
    fake_sync(&st);
    CHECK(b[7] == 16.0f && b[0] == 2.0f);
    CHECK(ncclRedOpDestroy(pm, comm) == ncclSuccess);
    CHECK(ncclAllReduce(a, b, 8, ncclFloat, pm, comm, STREAM(&st)) == ncclInvalidArgument);
    /* COLLAB_NCCL_ASYNC=1: stream-ordered, no host wait; by default each
       call returned once complete and no stream was made to wait. */
    bool async = getenv("COLLAB_NCCL_ASYNC") != NULL && strcmp(getenv("COLLAB_NCCL_ASYNC"), "1") == 0;
    CHECK(st.waits == (async ? 2 : 0));
    ncclResult_t aerr = ncclInternalError;
    CHECK(ncclCommGetAsyncError(comm, &aerr) == ncclSuccess && aerr == ncclSuccess);
    void *dm = NULL;
    CHECK(ncclMemAlloc(&dm, 256) == ncclSuccess && dm != NULL);
    CHECK(ncclMemFree(dm) == ncclSuccess);
    /* Abort with operations queued: they run or are dropped, the handle
       is refused afterwards, and the streams are released. */
    ncclComm_t c2 = NULL;
    fake_stream_t st2 = {0};
    CHECK(ncclCommSplit(comm, 0, 0, &c2, NULL) == ncclSuccess && c2 != NULL);
    if (c2 != NULL) {
        for (int i = 0; i < 3; i++)
            CHECK(ncclAllReduce(a, b, 8, ncclFloat, ncclSum, c2, STREAM(&st2)) == ncclSuccess);
        CHECK(ncclCommAbort(c2) == ncclSuccess);
        CHECK(ncclAllReduce(a, b, 8, ncclFloat, ncclSum, c2, STREAM(&st2)) == ncclInvalidArgument);
        CHECK(ncclCommAbort(c2) == ncclInvalidArgument);
        CHECK(st2.waits == (async ? 3 : 0) && fake_sync(&st2) == 0);
    }
    CHECK(ncclCommFinalize(comm) == ncclSuccess);
    CHECK(ncclCommDestroy(comm) == ncclSuccess);
    CHECK(ncclCommDestroy(comm) == ncclInvalidArgument); /* no longer a communicator */
    CHECK(__atomic_load_n(&f_events, __ATOMIC_RELAXED) == 0);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* N processes: every collective. */

static ncclComm_t init_comm(int n, int rank)
{
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    CHECK(ncclCommInitRank(&comm, n, id, rank) == ncclSuccess);
    return comm;
}

static void test_coll_on(ncclComm_t comm, int n, int me, fake_stream_t *st)
{
    enum { K = 1000 };
    static float a[K], b[K * 16];
    static int32_t ia[K], ib[K * 16];
    for (int i = 0; i < K; i++) {
        a[i] = (float)(me + 1) * 0.5f + (float)i;
        ia[i] = (me + 1) * (i + 1);
    }
    /* Sum, average, max; in place. */
    CHECK(ncclAllReduce(a, b, K, ncclFloat, ncclSum, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    float want = 0;
    for (int r = 0; r < n; r++)
        want += (float)(r + 1) * 0.5f + 10.0f;
    CHECK(b[10] == want);
    CHECK(ncclAllReduce(ia, ib, K, ncclInt32, ncclMax, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(ib[4] == n * 5);
    CHECK(ncclAllReduce(ia, ib, K, ncclInt32, ncclAvg, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(ib[0] == (n * (n + 1) / 2) / n);
    memcpy(b, a, sizeof a);
    CHECK(ncclAllReduce(b, b, K, ncclFloat, ncclMin, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(b[3] == 0.5f + 3.0f);
    /* Device buffers (the fake's arena): staged by the core, never a
       whole-context synchronisation (the program's stream waits on us). */
    float *da = NULL, *db = NULL;
    CHECK(ncclMemAlloc((void **)&da, 64 * sizeof(float)) == ncclSuccess);
    CHECK(ncclMemAlloc((void **)&db, 64 * sizeof(float)) == ncclSuccess);
    if (da != NULL && db != NULL) {
        for (int i = 0; i < 64; i++)
            da[i] = (float)(me + 1) * (float)i;
        CHECK(ncclAllReduce(da, db, 64, ncclFloat, ncclSum, comm, STREAM(st)) == ncclSuccess);
        CHECK(ncclAllReduce(db, db, 64, ncclFloat, ncclAvg, comm, STREAM(st)) == ncclSuccess);
        fake_sync(st);
        CHECK(db[5] == 5.0f * (float)(n * (n + 1) / 2)); /* the mean of equal sums */
        CHECK(ncclBroadcast(da, db, 64, ncclFloat, 0, comm, STREAM(st)) == ncclSuccess);
        fake_sync(st);
        CHECK(db[63] == 63.0f);
    }
    CHECK(__atomic_load_n(&f_ctx_syncs, __ATOMIC_RELAXED) == 0);
    /* bfloat16, reduced as float: (r + 1) / 2 + i is exact. */
    uint16_t h[8], hr[8];
    for (int i = 0; i < 8; i++)
        h[i] = bf16_of((float)(me + 1) * 0.5f + (float)i);
    CHECK(ncclAllReduce(h, hr, 8, ncclBfloat16, ncclSum, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(hr[3] == bf16_of((float)n * (float)(n + 1) / 4.0f + 3.0f * (float)n));
    CHECK(ncclAllReduce(h, hr, 8, ncclBfloat16, ncclAvg, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(hr[2] == bf16_of((float)(n + 1) / 4.0f + 2.0f));
    CHECK(ncclAllReduce(h, hr, 8, ncclBfloat16, ncclMax, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(hr[7] == bf16_of((float)n * 0.5f + 7.0f));
    /* Broadcast from the last rank, reduce to rank 0. */
    for (int i = 0; i < K; i++)
        b[i] = me == n - 1 ? (float)i * 3.0f : -1.0f;
    CHECK(ncclBcast(b, K, ncclFloat, n - 1, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(b[K - 1] == (float)(K - 1) * 3.0f);
    CHECK(ncclReduce(ia, ib, K, ncclInt32, ncclSum, 0, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    if (me == 0)
        CHECK(ib[1] == 2 * n * (n + 1) / 2);
    /* All-gather, in place too. */
    CHECK(ncclAllGather(ia, ib, 4, ncclInt32, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    for (int r = 0; r < n; r++)
        CHECK(ib[r * 4 + 3] == (r + 1) * 4);
    memset(ib, 0, sizeof(int32_t) * 4 * (size_t)n);
    memcpy(ib + me * 4, ia, 4 * sizeof(int32_t));
    CHECK(ncclAllGather(ib + me * 4, ib, 4, ncclInt32, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    for (int r = 0; r < n; r++)
        CHECK(ib[r * 4] == r + 1);
    /* Reduce-scatter, out of place and in place. */
    for (int i = 0; i < 3 * n; i++)
        ib[i] = i + me;
    CHECK(ncclReduceScatter(ib, ia, 3, ncclInt32, ncclSum, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(ia[1] == n * (me * 3 + 1) + n * (n - 1) / 2);
    for (int i = 0; i < 3 * n; i++)
        ib[i] = i + me;
    CHECK(ncclReduceScatter(ib, ib + me * 3, 3, ncclInt32, ncclSum, comm, STREAM(st)) ==
          ncclSuccess);
    fake_sync(st);
    CHECK(ib[me * 3 + 2] == n * (me * 3 + 2) + n * (n - 1) / 2);
    /* A ring of sends and receives in one group. */
    int32_t out[16], in[16];
    for (int i = 0; i < 16; i++)
        out[i] = me * 100 + i;
    CHECK(ncclGroupStart() == ncclSuccess);
    CHECK(ncclSend(out, 16, ncclInt32, (me + 1) % n, comm, STREAM(st)) == ncclSuccess);
    CHECK(ncclRecv(in, 16, ncclInt32, (me + n - 1) % n, comm, STREAM(st)) == ncclSuccess);
    CHECK(ncclGroupEnd() == ncclSuccess);
    fake_sync(st);
    CHECK(in[5] == ((me + n - 1) % n) * 100 + 5);
    /* Zero-count sends and receives (all-to-all blocks of nothing) are
       no error. */
    CHECK(ncclGroupStart() == ncclSuccess);
    CHECK(ncclSend(out, 0, ncclInt32, (me + 1) % n, comm, STREAM(st)) == ncclSuccess);
    CHECK(ncclRecv(in, 0, ncclInt32, (me + n - 1) % n, comm, STREAM(st)) == ncclSuccess);
    CHECK(ncclGroupEnd() == ncclSuccess);
    fake_sync(st);
    /* Gather, scatter, all-to-all. */
    CHECK(ncclGather(out, ib, 2, ncclInt32, 0, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    if (me == 0)
        for (int r = 0; r < n; r++)
            CHECK(ib[r * 2 + 1] == r * 100 + 1);
    for (int i = 0; i < 2 * n; i++)
        ib[i] = 1000 + i;
    CHECK(ncclScatter(ib, ia, 2, ncclInt32, 0, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    CHECK(ia[1] == 1000 + me * 2 + 1);
    for (int i = 0; i < n; i++)
        ib[i] = me * 10 + i;
    CHECK(ncclAlltoAll(ib, ia, 1, ncclInt32, comm, STREAM(st)) == ncclSuccess);
    fake_sync(st);
    for (int r = 0; r < n; r++)
        CHECK(ia[r] == r * 10 + me);
    ncclResult_t aerr = ncclInternalError;
    CHECK(ncclCommGetAsyncError(comm, &aerr) == ncclSuccess && aerr == ncclSuccess);
}

static int test_coll(void)
{
    const char *ws = getenv("COLLAB_WORLD_SIZE"), *rk = getenv("COLLAB_RANK");
    if (ws == NULL || rk == NULL) {
        fprintf(stderr, "nccl_face_test coll: run under collab-run\n");
        return 2;
    }
    int n = atoi(ws), me = atoi(rk);
    s_rank = me;
    fake_stream_t st = {0}, st2 = {0};
    ncclComm_t world = init_comm(n, me);
    if (world == NULL)
        return 1;
    test_coll_on(world, n, me, &st);
    /* A second init over the whole world duplicates it. */
    ncclComm_t again = init_comm(n, me);
    if (again != NULL) {
        CHECK(again != world);
        test_coll_on(again, n, me, &st2);
    }
    /* Split: even and odd ranks, reversed order. */
    ncclComm_t half = NULL;
    CHECK(ncclCommSplit(world, me % 2, -me, &half, NULL) == ncclSuccess);
    if (half != NULL) {
        int hn = 0, hr = -1;
        CHECK(ncclCommCount(half, &hn) == ncclSuccess && hn == (n + 1 - me % 2) / 2);
        CHECK(ncclCommUserRank(half, &hr) == ncclSuccess && hr == hn - 1 - me / 2);
        int32_t x = me, y = -1;
        CHECK(ncclAllReduce(&x, &y, 1, ncclInt32, ncclMax, half, STREAM(&st2)) == ncclSuccess);
        fake_sync(&st2);
        CHECK(y == (me % 2 == 0 ? (n - 1) / 2 * 2 : n / 2 * 2 - 1));
        CHECK(ncclCommDestroy(half) == ncclSuccess);
    }
    ncclComm_t none = (ncclComm_t)(void *)&st;
    CHECK(ncclCommSplit(world, me == 0 ? NCCL_SPLIT_NOCOLOR : 1, 0, &none, NULL) == ncclSuccess);
    if (me == 0)
        CHECK(none == NULL);
    else if (none != NULL)
        CHECK(ncclCommDestroy(none) == ncclSuccess);
    if (again != NULL)
        CHECK(ncclCommDestroy(again) == ncclSuccess);
    CHECK(ncclCommDestroy(world) == ncclSuccess);
    return 0;
}

/* The world communicator of a peer that collab-run started (its
   COLLAB_WORLD_SIZE and COLLAB_RANK); NULL, with *n and *me set, when the
   variables are missing or the init failed. */
static ncclComm_t comm_from_env(int *n, int *me)
{
    const char *ws = getenv("COLLAB_WORLD_SIZE"), *rk = getenv("COLLAB_RANK");
    *n = ws != NULL ? atoi(ws) : 0;
    *me = rk != NULL ? atoi(rk) : -1;
    if (ws == NULL || rk == NULL)
        return NULL;
    s_rank = *me;
    return init_comm(*n, *me);
}

static int test_absent(void)
{
    int n, me;
    fake_stream_t st = {0};
    ncclComm_t comm = comm_from_env(&n, &me);
    if (comm == NULL || n != 4)
        return 1;
    double x[3] = {me + 1.0, 2.0 * (me + 1), -1.0}, y[3];
    CHECK(ncclAllReduce(x, y, 3, ncclDouble, ncclSum, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    CHECK(y[0] == 10.0 && y[1] == 20.0 && y[2] == -4.0);
    if (me == 2) {
        printf("nccl_face_test absent: rank 2 ready\n");
        fflush(stdout);
        for (;;)
            pause(); /* the SIGKILL comes */
    }
    /* Present: 1, 2, 4 (ranks 0, 1, 3): mean 7/3, sum 4 x 7/3. */
    CHECK(ncclAllReduce(x, y, 3, ncclDouble, ncclSum, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    /* The core computes size x sum / present (summation order: the
       swarm's), so the values are compared to 1e-12. */
    if (fabs(y[0] - 28.0 / 3.0) > 1e-12 || y[2] != -4.0)
        fprintf(stderr, "rank %d: sum %.17g %.17g %.17g\n", me, y[0], y[1], y[2]);
    CHECK(fabs(y[0] - 28.0 / 3.0) < 1e-12 && y[2] == -4.0);
    CHECK(ncclAllReduce(x, y, 3, ncclDouble, ncclAvg, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    CHECK(fabs(y[0] - 7.0 / 3.0) < 1e-12 && fabs(y[1] - 14.0 / 3.0) < 1e-12);
    int32_t out[4] = {1, 2, 3, 4}, in[4] = {-7, -7, -7, -7};
    if (me == 0) {
        CHECK(ncclGroupStart() == ncclSuccess);
        CHECK(ncclSend(out, 4, ncclInt32, 2, comm, STREAM(&st)) == ncclSuccess);
        CHECK(ncclRecv(in, 4, ncclInt32, 2, comm, STREAM(&st)) == ncclSuccess);
        CHECK(ncclGroupEnd() == ncclSuccess);
        fake_sync(&st);
        CHECK(in[0] == -7 && in[3] == -7);
    }
    ncclResult_t aerr = ncclInternalError;
    CHECK(ncclCommGetAsyncError(comm, &aerr) == ncclSuccess && aerr == ncclSuccess);
    CHECK(ncclAllReduce(x, y, 1, ncclDouble, ncclMax, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    CHECK(y[0] == 4.0);
    CHECK(ncclCommDestroy(comm) == ncclSuccess);
    return 0;
}

static int test_holds(bool mpi_first)
{
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    float a[4] = {1, 2, 3, 4}, b[4];
    fake_stream_t st = {0};
    collab_init_args_t args = {.requested_thread_level = 3, .abi_name = "mpich"};
    CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    if (mpi_first) {
        CHECK(collab_init(&args) == COLLAB_OK);
        CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
        if (comm == NULL)
            return 1;
        CHECK(ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, STREAM(&st)) == ncclSuccess);
        fake_sync(&st);
        CHECK(ncclCommDestroy(comm) == ncclSuccess);
        CHECK(!collab_finalized()); /* MPI still holds the core */
        CHECK(collab_finalize() == COLLAB_OK);
        CHECK(collab_finalized());
    } else {
        CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
        if (comm == NULL)
            return 1;
        CHECK(collab_retain() == COLLAB_OK); /* MPI_Init after NCCL */
        CHECK(collab_world_rank() == 0 && collab_world_size() == 1);
        CHECK(collab_finalize() == COLLAB_OK); /* MPI_Finalize */
        CHECK(!collab_finalized());
        CHECK(ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, STREAM(&st)) == ncclSuccess);
        fake_sync(&st);
        CHECK(memcmp(a, b, sizeof a) == 0);
        CHECK(ncclCommDestroy(comm) == ncclSuccess);
        CHECK(collab_finalized());
        CHECK(collab_retain() == COLLAB_ERR_NOT_INIT);
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* A DDP-like start-up: the joiner must get the swarm's parameters. */

extern int cudart_fake_calls;

/* Whether this process is the first of rank me in this collab-run run
   (a marker beside its key file, created exclusively). */
static bool first_of_rank(int me)
{
    const char *id = getenv("COLLAB_IDENTITY");
    const char *slash = id != NULL ? strrchr(id, '/') : NULL;
    if (slash == NULL)
        return false;
    char path[4200];
    snprintf(path, sizeof path, "%.*s/nccl-face-rank%d", (int)(slash - id), id, me);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

static int test_follow(bool control, bool standby)
{
    int n, me;
    fake_stream_t st = {0};
    ncclComm_t comm = comm_from_env(&n, &me);
    if (comm == NULL)
        return 1;
    /* The process of rank 2 that came first dies at step 60; a second one
       (started meanwhile, its init waiting as a standby) takes over. */
    bool dies = standby && me == 2 && first_of_rank(me);
    enum { NP = 3 };
    const size_t len[NP] = {100, 37, 1000};
    size_t total = 0;
    float *p[NP] = {NULL}, *bucket = NULL, *grad = NULL;
    int64_t *step = NULL;
    for (int i = 0; i < NP; i++) {
        if (f_dev_alloc((void **)&p[i], len[i] * sizeof(float)) != 0)
            return 1;
        for (size_t k = 0; k < len[i]; k++) /* every process its own initial values */
            p[i][k] = (float)((getpid() % 997) * 0.001 + i + k * 1e-3);
        total += len[i];
    }
    if (f_dev_alloc((void **)&bucket, total * sizeof(float)) != 0 ||
        f_dev_alloc((void **)&grad, total * sizeof(float)) != 0 ||
        f_dev_alloc((void **)&step, sizeof *step) != 0)
        return 1;
    for (size_t i = 0, off = 0; i < NP; off += len[i], i++) /* flatten (a kernel in torch) */
        memcpy(bucket + off, p[i], len[i] * sizeof(float));
    float *mine = malloc(total * sizeof(float));
    if (mine == NULL)
        return 1;
    memcpy(mine, bucket, total * sizeof(float));
    CHECK(ncclBroadcast(bucket, bucket, total, ncclFloat, 0, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    bool kept = memcmp(mine, bucket, total * sizeof(float)) == 0; /* its own values */
    free(mine);
    int calls = cudart_fake_calls;
    for (size_t i = 0, off = 0; i < NP; off += len[i], i++) {
        if (control)
            memcpy(p[i], bucket + off, len[i] * sizeof(float));
        else
            CHECK(cudaMemcpyAsync(p[i], bucket + off, len[i] * sizeof(float),
                                  cudaMemcpyDeviceToDevice, STREAM(&st)) == cudaSuccess);
    }
    CHECK(cudart_fake_calls == calls + (control ? 0 : NP)); /* the real call ran */
    for (size_t k = 0; k < total; k++) /* the bucket's memory serves other tensors now */
        bucket[k] = -(float)(me + 1) * (float)k;
    *step = 0;
    CHECK(ncclBroadcast(step, step, 1, ncclInt64, 0, comm, STREAM(&st)) == ncclSuccess);
    fake_sync(&st);
    int64_t first = *step;
    /* A joiner is served the swarm's parameters, or (control: the bucket's
       memory was reused, nobody serves it) keeps exactly its own. */
    if (first > 0)
        CHECK(kept == control);
    printf("rank %d starts at step %lld\n", me, (long long)first);
    fflush(stdout);
    for (int64_t s = first; s < 400; s++) {
        for (size_t i = 0, off = 0; i < NP; off += len[i], i++)
            for (size_t k = 0; k < len[i]; k++)
                grad[off + k] = sinf(p[i][k] + (float)s * 0.01f + (float)me);
        CHECK(ncclAllReduce(grad, grad, total, ncclFloat, ncclSum, comm, STREAM(&st)) ==
              ncclSuccess);
        fake_sync(&st);
        for (size_t i = 0, off = 0; i < NP; off += len[i], i++)
            for (size_t k = 0; k < len[i]; k++)
                p[i][k] -= 0.01f * grad[off + k];
        *step = s + 1;
        if (s % 10 == 0) {
            printf("step %lld rank %d\n", (long long)s, me);
            fflush(stdout);
        }
        if (standby && me == 1 && s == 20) {
            /* Rank 1 frees: a peer that did not require its rank would
               take this one instead of waiting for rank 2. */
            printf("rank %d leaves at step 20\n", me);
            fflush(stdout);
            CHECK(ncclCommDestroy(comm) == ncclSuccess);
            return 0;
        }
        if (dies && s == 60) {
            printf("rank %d (the first process) SIGKILLs itself at step 60\n", me);
            fflush(stdout);
            raise(SIGKILL);
        }
        usleep(10000);
    }
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the parameters' bytes */
    for (int i = 0; i < NP; i++)
        for (size_t b = 0; b < len[i] * sizeof(float); b++)
            h = (h ^ ((const unsigned char *)p[i])[b]) * 1099511628211ull;
    printf("PARAMS rank %d start %lld hash %016llx\n", me, (long long)first, (unsigned long long)h);
    fflush(stdout);
    CHECK(ncclCommDestroy(comm) == ncclSuccess);
    return 0;
}

int main(int argc, char **argv)
{
    cl_device_use_ops(&s_fake);
    const char *mode = argc > 1 ? argv[1] : "args";
    int rc = strcmp(mode, "coll") == 0         ? test_coll()
             : strcmp(mode, "absent") == 0     ? test_absent()
             : strcmp(mode, "follow") == 0     ? test_follow(false, false)
             : strcmp(mode, "follow-control") == 0 ? test_follow(true, false)
             : strcmp(mode, "standby") == 0    ? test_follow(false, true)
             : strcmp(mode, "mpi-first") == 0  ? test_holds(true)
             : strcmp(mode, "nccl-first") == 0 ? test_holds(false)
                                               : test_args();
    if (rc != 0 || s_failures != 0) {
        fprintf(stderr, "nccl_face_test %s: rank %d: %d failure(s)\n", mode, s_rank, s_failures);
        return 1;
    }
    printf("nccl_face_test %s: rank %d ok\n", mode, s_rank);
    return 0;
}
