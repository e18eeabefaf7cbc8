/*  cl_fast_group_test.c - selftest of the fast path's all-reduce among
    three and four members on one host (src/engine/cl_fast_group.c):
    members as threads of one process on their own mappings of one memfd,
    and as forked processes killed or stopped for real.

    Checks, for k = 3 and 4: no grant before every member attached; many
    all-reduces, reductions to a root and broadcasts (every root in turn;
    the root's result the serial fold, the other members' receive buffers
    untouched, every broadcast the root's bytes) of sizes from 1 element to 3 MiB (odd counts, chunk and
    slice boundaries), float/double/int32, SUM, MIN, MAX, PROD, in place
    or not, inputs that change every call and hold NaNs of different
    payloads and signed zeros: every result bit for bit the serial fold
    of the k inputs in rank order (cl_reduce_fold), the same at every
    member; a member that never comes makes the others return "not
    taken" within the wait limit, and, when it comes late, it finds the
    sequence aborted; a grant revoked mid-transfer (once a member's
    input shows in the area) makes every member return "not taken";
    broadcasts whose members name different roots, or whose root never
    comes, return "not taken" with every receiver's buffer unchanged.
    Barriers (with all-reduces between them): every member takes each one
    and none leaves before the last entered; arrivals spread over more
    than the wait limit, each within it, complete; a barrier against an
    all-reduce or a broadcast of nothing, or whose last member never
    comes, is taken by nobody.  Processes: four members run big all-reduces
    (4 MiB, inputs changing every call) and one is SIGKILLed, or
    SIGSTOPped then continued, amid them: the others return "not taken"
    for that call within a deadline and never a wrong result, and the
    stopped one, continued, never completes the call the others gave up.
*/
#define _GNU_SOURCE
#include "coll/cl_reduce.h"
#include "engine/cl_fast.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cl_fast_fixture.h"
#include "selftest.h"

#define COMM 91u
static const _Atomic int s_none = 0;
static int s_fd = -1;
static size_t s_bytes;
static _Atomic int *s_done; /* processes: calls each member completed (shared) */

static void *map_area(void)
{
    void *p = mmap(NULL, s_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s_fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A fresh zeroed area for k members. */
static void area_new(int k)
{
    if (s_fd >= 0)
        close(s_fd);
    s_bytes = cl_fast_group_bytes(k);
    s_fd = memfd_create("cl_fast_group_test", MFD_CLOEXEC);
    CHECK(s_fd >= 0 && s_bytes > 0 && ftruncate(s_fd, (off_t)s_bytes) == 0);
}

/* k members attached to a fresh area; none granted yet. */
static void group_new(int k, cl_fast_t **f)
{
    area_new(k);
    for (int j = 0; j < k; j++) {
        f[j] = cl_fast_new();
        CHECK(f[j] != NULL);
        CHECK(cl_fast_attach_group(f[j], map_area(), s_bytes, COMM, j, k, 5));
        /* Not every member attached yet: no grant. */
        if (j < k - 1)
            CHECK(!cl_fast_grant(f[j], 0, &s_none));
    }
}

static void group_free(int k, cl_fast_t **f)
{
    for (int j = 0; j < k; j++)
        cl_fast_destroy(&f[j]);
}

/* Member j's input element e at call it: values of every sign and size,
   with NaNs of two payloads and signed zeros here and there. */
static double val(int j, int it, size_t e)
{
    uint64_t h = (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)it * 0xbf58476d1ce4e5b9ull ^
                 (uint64_t)e * 0x94d049bb133111ebull;
    h ^= h >> 31;
    switch (h % 97) {
    case 0:
        return j % 2 == 0 ? -0.0 : 0.0;
    case 1:
        return -0.0;
    case 2:
        return nan("1");
    case 3:
        return -nan("7");
    default:
        return ((double)(h >> 11) / (double)(1ull << 53) - 0.5) * ldexp(1.0, (int)(h % 40) - 20);
    }
}

static void fill(void *buf, collab_dtype_t t, int j, int it, size_t count)
{
    for (size_t e = 0; e < count; e++) {
        double v = val(j, it, e);
        if (t == COLLAB_FLOAT)
            ((float *)buf)[e] = (float)v;
        else if (t == COLLAB_DOUBLE)
            ((double *)buf)[e] = v;
        else
            ((int32_t *)buf)[e] = isnan(v) ? 7 : (int32_t)(v * 1000.0) % 1000;
    }
}

typedef struct {
    collab_dtype_t t;
    collab_op_kind_t op;
    size_t count;
    int inplace;
} tcase_t;

static const collab_dtype_t TYPES[3] = {COLLAB_FLOAT, COLLAB_DOUBLE, COLLAB_INT32};
static const collab_op_kind_t OPS[4] = {COLLAB_OP_SUM, COLLAB_OP_MIN, COLLAB_OP_MAX,
                                        COLLAB_OP_PROD};
/* Element counts: tiny, under k, odd, one chunk of floats +- 1, many. */
static const size_t COUNTS[] = {1, 2, 3, 7, 1001, 65535, 65536, 65537, 196613, 786433};
#define NCOUNTS (sizeof COUNTS / sizeof COUNTS[0])

static tcase_t tcase(int it)
{
    tcase_t c = {TYPES[it % 3], OPS[(it / 3) % 4], COUNTS[(it * 7) % NCOUNTS], (it / 2) % 2};
    if (c.t == COLLAB_DOUBLE && c.count > 400000)
        c.count = c.count / 2 + 1; /* 3 MiB at most */
    return c;
}

typedef struct {
    cl_fast_t *f;
    int me, k, iters, taken, wrong;
    bool rooted; /* reductions to a root and broadcasts, not all-reduces */
} member_t;

/* Call it of member m: an all-reduce, or (rooted) a reduction (even it)
   or a broadcast of the case's bytes from root (it / 2) % k.  Returns
   the call's result (1 done, 0 not taken). */
static int call(member_t *m, int it, const tcase_t *c, const collab_op_t *op, uint8_t *in,
                uint8_t *out)
{
    size_t bytes = c->count * collab_dtype_extent(c->t);
    int root = (it / 2) % m->k;
    bool mine = m->me == root;
    memset(out, 0xa5, bytes);
    if (!m->rooted) {
        if (c->inplace)
            memcpy(out, in, bytes);
        return cl_fast_allreduce(m->f, c->inplace ? NULL : in, out, c->count, c->t, op);
    }
    if (it % 2 == 1) {
        if (mine)
            memcpy(out, in, bytes);
        return cl_fast_bcast(m->f, out, bytes, root);
    }
    if (c->inplace && mine) {
        memcpy(out, in, bytes);
        return cl_fast_reduce(m->f, NULL, out, c->count, c->t, op, root);
    }
    return cl_fast_reduce(m->f, in, mine ? out : NULL, c->count, c->t, op, root);
}

static void *loop(void *arg)
{
    member_t *m = arg;
    size_t cap = 786433 * 8;
    uint8_t *in = malloc(cap), *out = malloc(cap), *want = malloc(cap);
    uint8_t *all[4];
    for (int j = 0; j < m->k; j++)
        all[j] = malloc(cap);
    for (int it = 0; it < m->iters; it++) {
        tcase_t c = tcase(it);
        collab_op_t op = {c.op, NULL, NULL, 1};
        size_t bytes = c.count * collab_dtype_extent(c.t);
        fill(in, c.t, m->me, it, c.count);
        if (call(m, it, &c, &op, in, out) != 1)
            break;
        m->taken++;
        const void *ins[4];
        for (int j = 0; j < m->k; j++) {
            fill(all[j], c.t, j, it, c.count);
            ins[j] = all[j];
        }
        int root = (it / 2) % m->k;
        if (m->rooted && it % 2 == 1) /* a broadcast: the root's bytes everywhere */
            m->wrong += memcmp(out, all[root], bytes) != 0;
        else if (m->rooted && m->me != root) /* a reduction: the others' buffers untouched */
            m->wrong += !untouched(out, bytes, 0xa5);
        else { /* the serial fold of the k inputs in rank order */
            CHECK(cl_reduce_fold(&op, c.t, want, ins, m->k, c.count) == 0);
            m->wrong += memcmp(want, out, bytes) != 0;
        }
    }
    free(in);
    free(out);
    free(want);
    for (int j = 0; j < m->k; j++)
        free(all[j]);
    return NULL;
}

static void test_results(int k, int iters, bool rooted)
{
    cl_fast_t *f[4];
    group_new(k, f);
    _Atomic int pending = 1;
    CHECK(!cl_fast_grant(f[0], 0, &pending)); /* a collective is submitted */
    member_t m[4];
    pthread_t t[4];
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 0, &s_none));
        m[j] = (member_t){f[j], j, k, iters, 0, 0, rooted};
        pthread_create(&t[j], NULL, loop, &m[j]);
    }
    for (int j = 0; j < k; j++) {
        pthread_join(t[j], NULL);
        CHECK(m[j].taken == iters);
        CHECK(m[j].wrong == 0);
        CHECK(cl_fast_next_seq(f[j]) == (uint64_t)iters);
        CHECK(cl_fast_completed(f[j]) == (uint64_t)iters);
    }
    if (m[0].wrong != 0 || m[0].taken != iters)
        fprintf(stderr, "k=%d%s: taken %d wrong %d\n", k, rooted ? " rooted" : "", m[0].taken,
                m[0].wrong);
    group_free(k, f);
}

typedef struct {
    cl_fast_t *f;
    int me;
    size_t count;
    int rc;
    double took;
    int root;    /* a broadcast from root; -1: an all-reduce */
    bool intact; /* a broadcast's receiver: its buffer unchanged */
} one_t;

static void *one(void *arg)
{
    one_t *o = arg;
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    float *x = malloc(o->count * 4), *y = malloc(o->count * 4);
    for (size_t e = 0; e < o->count; e++) {
        x[e] = (float)(o->me + 1);
        y[e] = o->root == o->me ? 1.0f : -1.0f;
    }
    double t0 = now_s();
    o->rc = o->root < 0 ? cl_fast_allreduce(o->f, x, y, o->count, COLLAB_FLOAT, &sum)
                        : cl_fast_bcast(o->f, y, o->count * 4, o->root);
    o->took = now_s() - t0;
    o->intact = true;
    for (size_t e = 0; o->root >= 0 && e < o->count; e++)
        o->intact &= y[e] == (o->root == o->me ? 1.0f : -1.0f);
    free(x);
    free(y);
    return NULL;
}

/* Members that never come, come late, or lose their grant. */
static void test_abort(int k)
{
    cl_fast_t *f[4];
    group_new(k, f);
    one_t o[4];
    pthread_t t[4];
    /* Sequence 3: the last member never comes (yet). */
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 3, &s_none));
        o[j] = (one_t){f[j], j, 1u << 20, -1, 0, -1, false};
    }
    for (int j = 0; j < k - 1; j++)
        pthread_create(&t[j], NULL, one, &o[j]);
    for (int j = 0; j < k - 1; j++) {
        pthread_join(t[j], NULL);
        CHECK(o[j].rc == 0 && o[j].took < 2.0);
        CHECK(!cl_fast_granted(f[j]));
    }
    /* It comes late: the sequence was given up, not taken here either. */
    one(&o[k - 1]);
    CHECK(o[k - 1].rc == 0 && o[k - 1].took < 0.3); /* finds it aborted at once */
    /* Sequence 8, every member there (64 MiB each: many chunks); one's
       grant revoked once member 0's input (floats 1.0) shows in its ring:
       nobody completes. */
    static float page[1024];
    for (int e = 0; e < 1024; e++)
        page[e] = 1.0f;
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 8, &s_none));
        o[j] = (one_t){f[j], j, 16u << 20, -1, 0, -1, false};
        pthread_create(&t[j], NULL, one, &o[j]);
    }
    revoker_t rv;
    revoker_start(&rv, f[1], map_area(), s_bytes, (const uint8_t *)page);
    for (int j = 0; j < k; j++) {
        pthread_join(t[j], NULL);
        CHECK(o[j].rc == 0); /* one outcome for all: not taken */
        CHECK(o[j].took < 3.0);
    }
    revoker_join(&rv);
    /* Sequence 9: broadcasts whose members name different roots, then
       sequence 10: a broadcast whose root never comes.  Nobody completes,
       no receiver's buffer changes. */
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 9, &s_none));
        o[j] = (one_t){f[j], j, 1u << 18, -1, 0, j == 0 ? 1 : 0, false};
        pthread_create(&t[j], NULL, one, &o[j]);
    }
    for (int j = 0; j < k; j++) {
        pthread_join(t[j], NULL);
        CHECK(o[j].rc == 0 && o[j].intact && o[j].took < 3.0);
    }
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 10, &s_none));
        o[j] = (one_t){f[j], j, 1u << 18, -1, 0, 0, false};
        if (j > 0)
            pthread_create(&t[j], NULL, one, &o[j]);
    }
    for (int j = 1; j < k; j++) {
        pthread_join(t[j], NULL);
        CHECK(o[j].rc == 0 && o[j].intact && o[j].took < 3.0);
    }
    group_free(k, f);
}

/* --- processes ------------------------------------------------------ */

#define PCOUNT ((size_t)1 << 20) /* floats: 4 MiB */

/* A forked process: member me of k, attached and granted (it exits 3
   when it cannot attach, 4 when no grant comes within 10 s). */
static cl_fast_t *child_member(int me, int k)
{
    cl_fast_t *f = cl_fast_new();
    if (f == NULL || !cl_fast_attach_group(f, map_area(), s_bytes, COMM, me, k, 5))
        _exit(3);
    double t0 = now_s();
    while (!cl_fast_grant(f, 0, &s_none))
        if (now_s() - t0 > 10 || usleep(1000) != 0)
            _exit(4);
    return f;
}

/* A forked member: runs all-reduces until one is not taken, checking
   each result; writes to fd: calls taken, wrong results, the last rc. */
static void child(int me, int k, int fd)
{
    cl_fast_t *f = child_member(me, k);
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    float *x = malloc(PCOUNT * 4), *y = malloc(PCOUNT * 4);
    int taken = 0, wrong = 0, rc = 1;
    for (int it = 0; rc == 1 && it < 100000; it++) {
        for (size_t e = 0; e < PCOUNT; e++)
            x[e] = (float)((me + 1) * (it + 1)) + (float)(e % 13);
        rc = cl_fast_allreduce(f, x, y, PCOUNT, COLLAB_FLOAT, &sum);
        if (rc != 1)
            break;
        taken++;
        atomic_fetch_add(&s_done[me], 1);
        /* The sum of small integers is exact: (k(k+1)/2)(it+1) + k(e % 13). */
        for (size_t e = 0; e < PCOUNT; e++)
            if (y[e] != (float)(k * (k + 1) / 2 * (it + 1)) + (float)(k * (int)(e % 13))) {
                wrong++;
                break;
            }
    }
    int msg[3] = {taken, wrong, rc};
    if (write(fd, msg, sizeof msg) != sizeof msg)
        _exit(5);
    _exit(0);
}

/* --- barriers ------------------------------------------------------- */

#define BAR_ITERS 40
typedef struct {
    cl_fast_t *f;
    int me, k;
    double enter[BAR_ITERS], leave[BAR_ITERS];
    int taken, wrong;
} bar_t;

/* Member m: BAR_ITERS calls, barriers with an all-reduce every third
   call; at barrier it the member (it % k) comes 2 ms late. */
static void *bar_loop(void *arg)
{
    bar_t *m = arg;
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    for (int it = 0; it < BAR_ITERS; it++) {
        if (it % 3 == 2) {
            int32_t x[5] = {m->me, 1, 2, 3, it}, y[5];
            if (cl_fast_allreduce(m->f, x, y, 5, COLLAB_INT32, &sum) != 1)
                break;
            m->wrong += y[0] != m->k * (m->k - 1) / 2 || y[1] != m->k || y[4] != m->k * it;
        } else {
            if (it % m->k == m->me)
                usleep(2000);
            m->enter[it] = now_s();
            if (cl_fast_barrier(m->f) != 1)
                break;
            m->leave[it] = now_s();
        }
        m->taken++;
    }
    return NULL;
}

typedef struct {
    cl_fast_t *f;
    int kind; /* 0 barrier, 1 all-reduce of no elements, 2 broadcast of no bytes,
                 -1 none: the member does not call (rc stays -1) */
    double delay;
    int rc;
    double took;
} bar_one_t;

static void *bar_one(void *arg)
{
    bar_one_t *o = arg;
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    int32_t x = 1, y = 0;
    if (o->delay > 0)
        usleep((useconds_t)(o->delay * 1e6));
    double t0 = now_s();
    o->rc = o->kind == 0   ? cl_fast_barrier(o->f)
            : o->kind == 1 ? cl_fast_allreduce(o->f, &x, &y, 0, COLLAB_INT32, &sum)
                           : cl_fast_bcast(o->f, &y, 0, 0);
    o->took = now_s() - t0;
    return NULL;
}

/* Runs one call per member (kinds and delays given; kind -1: none) at
   sequence q. */
static void bar_round(int k, cl_fast_t **f, uint64_t q, const int *kind, const double *delay,
                      bar_one_t *o)
{
    pthread_t t[CL_FAST_GROUP_MAX];
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], q, &s_none));
        o[j] = (bar_one_t){f[j], kind[j], delay[j], -1, 0};
        if (kind[j] >= 0)
            pthread_create(&t[j], NULL, bar_one, &o[j]);
    }
    for (int j = 0; j < k; j++)
        if (kind[j] >= 0)
            pthread_join(t[j], NULL);
}

/* Barriers among k members: every member takes each one on the fast
   path, none leaves before the last entered, and all-reduces between
   them keep their results.  Arrivals spread over more than the wait
   limit, each within it, complete (an arrival is progress); a barrier
   against an all-reduce or a broadcast of nothing is taken by nobody;
   a member that never comes makes the others give up within the limit. */
static void test_barrier(int k)
{
    cl_fast_t *f[4];
    group_new(k, f);
    bar_t m[4];
    pthread_t t[4];
    for (int j = 0; j < k; j++) {
        CHECK(cl_fast_grant(f[j], 0, &s_none));
        m[j] = (bar_t){.f = f[j], .me = j, .k = k};
        pthread_create(&t[j], NULL, bar_loop, &m[j]);
    }
    for (int j = 0; j < k; j++)
        pthread_join(t[j], NULL);
    for (int j = 0; j < k; j++) {
        CHECK(m[j].taken == BAR_ITERS && m[j].wrong == 0);
        CHECK(cl_fast_completed(f[j]) == BAR_ITERS);
    }
    int early = 0;
    for (int it = 0; it < BAR_ITERS; it++) {
        if (it % 3 == 2 || m[0].taken < BAR_ITERS)
            continue;
        double last_in = 0;
        for (int j = 0; j < k; j++)
            last_in = m[j].enter[it] > last_in ? m[j].enter[it] : last_in;
        for (int j = 0; j < k; j++)
            early += m[j].leave[it] < last_in;
    }
    CHECK(early == 0);
    uint64_t q = BAR_ITERS;
    bar_one_t o[4];
    /* Members coming 0.2 s apart (0.2 * (k - 1) s from first to last). */
    int bars[4] = {0, 0, 0, 0};
    double spread[4] = {0, 0.2, 0.4, 0.6};
    bar_round(k, f, q++, bars, spread, o);
    for (int j = 0; j < k; j++)
        CHECK(o[j].rc == 1);
    CHECK(o[0].took >= 0.2 * (k - 1) - 0.01);
    /* A barrier against calls of nothing: not taken, by anyone. */
    double now[4] = {0, 0, 0, 0};
    for (int other = 1; other <= 2; other++) {
        int kinds[4] = {0, 0, 0, 0};
        kinds[k - 1] = other;
        bar_round(k, f, q++, kinds, now, o);
        for (int j = 0; j < k; j++)
            CHECK(o[j].rc == 0 && o[j].took < 3.0);
    }
    /* The last member never comes. */
    int absent[4] = {0, 0, 0, 0};
    absent[k - 1] = -1;
    bar_round(k, f, q, absent, now, o);
    for (int j = 0; j < k - 1; j++)
        CHECK(o[j].rc == 0 && o[j].took < 2.0);
    o[k - 1].kind = 0;
    bar_one(&o[k - 1]); /* coming late, it finds the barrier given up */
    CHECK(o[k - 1].rc == 0);
    group_free(k, f);
}

/* Four processes; the last gets sig amid the all-reduces (SIGSTOP: then
   SIGCONT once the others finished). */
static void test_signal(int k, int sig)
{
    area_new(k);
    s_done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s_done != MAP_FAILED);
    int fds[4][2];
    pid_t pid[4];
    for (int j = 0; j < k; j++) {
        CHECK(pipe(fds[j]) == 0);
        pid[j] = fork();
        if (pid[j] == 0) {
            close(fds[j][0]);
            child(j, k, fds[j][1]);
        }
        close(fds[j][1]);
    }
    /* Two calls done, the next ones under way (30 s deadline). */
    double t0 = now_s();
    while (atomic_load(&s_done[0]) < 2 && now_s() - t0 < 30)
        usleep(2000);
    CHECK(atomic_load(&s_done[0]) >= 2);
    t0 = now_s();
    kill(pid[k - 1], sig);
    int taken[4] = {0}, wrong = 0;
    for (int j = 0; j < k - 1; j++) {
        int msg[3] = {0, 0, -1};
        CHECK(read(fds[j][0], msg, sizeof msg) == sizeof msg);
        taken[j] = msg[0];
        wrong += msg[1];
        CHECK(msg[2] == 0); /* the call amid the signal: not taken */
        int st;
        CHECK(waitpid(pid[j], &st, 0) == pid[j] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK(now_s() - t0 < 5.0);
    if (taken[0] == 0 || taken[0] != taken[1])
        fprintf(stderr, "k=%d sig %d: taken %d %d\n", k, sig, taken[0], taken[1]);
    CHECK(taken[0] > 0 && taken[0] == taken[1]); /* the same calls completed everywhere */
    if (sig == SIGSTOP) {
        kill(pid[k - 1], SIGCONT);
        int msg[3] = {0, 0, -1};
        CHECK(read(fds[k - 1][0], msg, sizeof msg) == sizeof msg);
        wrong += msg[1];
        CHECK(msg[2] == 0 && msg[0] == taken[0]); /* it never completes the call given up */
    }
    int st;
    CHECK(waitpid(pid[k - 1], &st, 0) == pid[k - 1]);
    CHECK(wrong == 0);
    for (int j = 0; j < k; j++)
        close(fds[j][0]);
    munmap((void *)s_done, 4096);
}

/* --- measurement ---------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* `cl_fast_group_test bench K BYTES CALLS`: K processes run CALLS
   all-reduces of BYTES of floats (SUM, not in place, inputs changing
   every call) on the protocol alone (no engine, no MPI face); prints the
   median over calls of the slowest member's median latency. */
static int bench(int k, size_t bytes, int calls)
{
    if (k < 3 || k > 4 || bytes < 4 || calls < 1 || calls > 100000)
        return 2;
    area_new(k);
    double *lat = mmap(NULL, sizeof(double) * 4 * (size_t)calls, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (lat == MAP_FAILED)
        return 1;
    pid_t pid[4];
    for (int j = 0; j < k; j++) {
        if ((pid[j] = fork()) != 0)
            continue;
        cl_fast_t *f = child_member(j, k);
        static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
        size_t n = bytes / 4;
        float *x = malloc(n * 4), *y = malloc(n * 4);
        for (size_t e = 0; e < n; e++)
            x[e] = (float)(e % 7);
        for (int it = 0; it < calls; it++) {
            x[0] = (float)it;
            double t = now_s();
            if (cl_fast_allreduce(f, x, y, n, COLLAB_FLOAT, &sum) != 1)
                _exit(5);
            lat[j * calls + it] = now_s() - t;
        }
        _exit(0);
    }
    int bad = 0;
    for (int j = 0; j < k; j++) {
        int st;
        bad |= waitpid(pid[j], &st, 0) != pid[j] || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (bad) {
        fprintf(stderr, "cl_fast_group_test bench: a member failed (a call not taken)\n");
        return 1;
    }
    double worst = 0;
    for (int j = 0; j < k; j++) {
        qsort(lat + j * calls, (size_t)calls, sizeof(double), cmp_d);
        double m = lat[j * calls + calls / 2];
        worst = m > worst ? m : worst;
    }
    printf("fast group bench: k %d bytes %zu calls %d median_us %.1f\n", k, bytes, calls,
           worst * 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "bench") == 0)
        return bench(atoi(argv[2]), (size_t)strtoull(argv[3], NULL, 10), atoi(argv[4]));
    int iters = argc > 1 ? atoi(argv[1]) : 60;
    CHECK(cl_fast_group_bytes(2) == 0 && cl_fast_group_bytes(9) == 0);
    CHECK(cl_fast_group_bytes(4) == ((size_t)5 << 20) + 4096);
    test_results(3, iters, false);
    test_results(4, iters, false);
    test_results(3, iters, true);
    test_results(4, iters, true);
    test_abort(3);
    test_abort(4);
    test_barrier(3);
    test_barrier(4);
    test_signal(4, SIGKILL);
    test_signal(4, SIGSTOP);
    test_signal(3, SIGKILL);
    if (s_fd >= 0)
        close(s_fd);
    if (s_failures == 0)
        printf("cl_fast_group_test: all checks passed\n");
    return s_failures != 0;
}
