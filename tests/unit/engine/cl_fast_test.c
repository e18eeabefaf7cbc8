/*  cl_fast_test.c - selftest of the same-host fast path's protocol
    (src/engine/cl_fast.c), two members as two threads of one process on
    two mappings of one memfd, as two processes map a link's segment.

    Checks: thousands of all-reduces and barriers with the right results
    and consecutive sequence numbers in the reports; no grant while a
    collective is submitted or the other member never attached; a member
    whose grant is revoked while it waits takes the engine path and so
    does the other (exactly one outcome per sequence); a member that
    goes to the engine path releases the other's wait; nonsense written
    over the whole area makes calls fail over to the engine path (or
    complete), never crash or hang.  Big all-reduces (in chunks through
    the rings): sizes from just over the small limit to 3 MiB, odd
    counts, in place, float/double/int32 SUM, MIN, MAX, PROD with NaNs of
    different payloads and signed zeros, every result bit for bit the
    fold of both inputs in rank order (cl_reduce_fold, the engine path's
    kernels and order); a big call whose partner never comes, or whose
    grant is revoked mid-transfer, returns "not taken" on both members.
*/
#define _GNU_SOURCE
#include "coll/cl_coll.h"
#include "coll/cl_reduce.h"
#include "engine/cl_fast.h"
#include "engine/cl_shm.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cl_fast_fixture.h"
#include "selftest.h"

#define COMM 77u
static const collab_op_t SUMOP = {COLLAB_OP_SUM, NULL, NULL, 1};
static int s_fd = -1;
static const _Atomic int s_none = 0;

static void *map_area(void)
{
    void *p = mmap(NULL, CL_SHM_FAST_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s_fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

static const uint8_t PEER[32] = {1};

typedef struct {
    cl_fast_t *f;
    int me, iters, taken, wrong;
    uint64_t next; /* the sequence the next report starts at */
    int gaps;
} member_t;

/* Takes the reports as the engine would: consecutive sequences. */
static void take(member_t *m)
{
    static _Thread_local cl_fast_report_t rep[CL_FAST_REPORTS];
    size_t n = cl_fast_take(m->f, rep, CL_FAST_REPORTS);
    for (size_t i = 0; i < n; i++) {
        m->gaps += rep[i].first != m->next;
        m->next = rep[i].first + rep[i].n;
    }
}

static void *loop(void *arg)
{
    member_t *m = arg;
    for (int it = 0; it < m->iters; it++) {
        double x[4] = {m->me + 1.0, it, -it, 0.5 * m->me}, y[4];
        int rc = cl_fast_allreduce(m->f, x, y, 4, COLLAB_DOUBLE, &SUMOP);
        if (rc == 1) {
            m->taken++;
            if (y[0] != 3.0 || y[1] != 2.0 * it || y[2] != -2.0 * it || y[3] != 0.5)
                m->wrong++;
        }
        if (it % 7 == 0 && cl_fast_barrier(m->f) == 1)
            m->taken++;
        if (it % 64 == 0)
            take(m);
    }
    take(m);
    return NULL;
}

/* Two members on a fresh area (a new link's segment is zeroed). */
static void pair_new(cl_fast_t **a, cl_fast_t **b)
{
    if (s_fd >= 0)
        close(s_fd);
    s_fd = memfd_create("cl_fast_test", MFD_CLOEXEC);
    CHECK(s_fd >= 0 && ftruncate(s_fd, (off_t)CL_SHM_FAST_BYTES) == 0);
    *a = cl_fast_new();
    *b = cl_fast_new();
    CHECK(*a != NULL && *b != NULL);
    CHECK(cl_fast_attach(*a, map_area(), COMM, 0, 1, PEER));
    CHECK(!cl_fast_granted(*a));
    /* The other member has not attached: no grant yet. */
    CHECK(!cl_fast_grant(*a, 0, &s_none));
    CHECK(cl_fast_attach(*b, map_area(), COMM, 1, 1, PEER));
}

static void test_run(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    _Atomic int pending = 1;
    CHECK(!cl_fast_grant(a, 0, &pending)); /* a collective is submitted */
    CHECK(cl_fast_grant(a, 0, &s_none) && cl_fast_grant(b, 0, &s_none));
    member_t ma = {a, 0, 5000, 0, 0, 0, 0}, mb = {b, 1, 5000, 0, 0, 0, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, loop, &ma);
    pthread_create(&tb, NULL, loop, &mb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    int want = 5000 + (5000 + 6) / 7;
    CHECK(ma.taken == want && mb.taken == want);
    CHECK(ma.wrong == 0 && mb.wrong == 0);
    CHECK(cl_fast_completed(a) == (uint64_t)want && cl_fast_next_seq(a) == (uint64_t)want);
    /* The reports: consecutive sequences from 0. */
    CHECK(ma.gaps == 0 && mb.gaps == 0);
    CHECK(ma.next == (uint64_t)want && mb.next == (uint64_t)want);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
    CHECK(a == NULL);
}

static void *revoke_later(void *arg)
{
    usleep(100000);
    cl_fast_revoke(arg);
    return NULL;
}

/* A waits alone; its grant is revoked: not taken.  B then arrives at the
   same sequence and finds it aborted: not taken either. */
static void test_revoke(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    CHECK(cl_fast_grant(a, 10, &s_none) && cl_fast_grant(b, 10, &s_none));
    pthread_t t;
    pthread_create(&t, NULL, revoke_later, a);
    double x = 1, y = 0, t0 = now_s();
    CHECK(cl_fast_allreduce(a, &x, &y, 1, COLLAB_DOUBLE, &SUMOP) == 0);
    CHECK(now_s() - t0 < 0.4); /* woken by the revocation */
    pthread_join(t, NULL);
    CHECK(!cl_fast_granted(a));
    CHECK(cl_fast_allreduce(b, &x, &y, 1, COLLAB_DOUBLE, &SUMOP) == 0);
    CHECK(!cl_fast_granted(b));
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

static void *to_engine_later(void *arg)
{
    usleep(100000);
    cl_fast_before_engine(arg);
    return NULL;
}

/* A waits; B goes to the engine path instead: A is released at once. */
static void test_release(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    CHECK(cl_fast_grant(a, 3, &s_none) && cl_fast_grant(b, 3, &s_none));
    pthread_t t;
    pthread_create(&t, NULL, to_engine_later, b);
    double t0 = now_s();
    CHECK(cl_fast_barrier(a) == 0);
    CHECK(now_s() - t0 < 0.4);
    pthread_join(t, NULL);
    CHECK(!cl_fast_granted(b));
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

/* Nonsense over the whole area, again and again: every call returns (0 or
   1) within the wait limit, nothing crashes. */
static void test_nonsense(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    uint8_t *raw = map_area();
    CHECK(raw != NULL);
    unsigned seed = 12345;
    for (int round = 0; round < 8 && raw != NULL; round++) {
        for (size_t k = 0; k < CL_SHM_FAST_BYTES; k++)
            raw[k] = (uint8_t)(rand_r(&seed) >> 7);
        CHECK(cl_fast_grant(a, (uint64_t)rand_r(&seed), &s_none) || true);
        double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
        double t0 = now_s();
        int rc = cl_fast_allreduce(a, x, y, 8, COLLAB_DOUBLE, &SUMOP);
        CHECK(rc == 0 || rc == 1);
        rc = cl_fast_barrier(a);
        CHECK(rc == 0 || rc == 1);
        if (round % 3 == 0) { /* a big one: chunks, progress words, rings */
            static double bx[20000], by[20000];
            rc = cl_fast_allreduce(a, bx, by, 20000, COLLAB_DOUBLE, &SUMOP);
            CHECK(rc == 0 || rc == 1);
        }
        CHECK(now_s() - t0 < 2.0);
    }
    if (raw != NULL)
        munmap(raw, CL_SHM_FAST_BYTES);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

/* --- big all-reduces ------------------------------------------------ */

#define BIG_MAX (3u << 20) /* bytes of the largest big call here */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Member me's input of call `it`: values where the operand order shows
   (NaNs of different payloads, +0 and -0, equal values). */
static void big_input(int me, int it, collab_dtype_t t, uint8_t *buf, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        uint64_t h = mix(((uint64_t)me << 50) ^ ((uint64_t)it << 32) ^ k);
        double v = ldexp((double)(h % 2001) - 1000.0, (int)((h >> 12) % 41) - 20);
        switch ((h >> 20) % 8) {
        case 0: /* a NaN whose payload names the member */
            v = me == 0 ? nan("1") : nan("2");
            break;
        case 1:
            v = me == 0 ? 0.0 : -0.0;
            break;
        case 2:
            v = me == 0 ? -0.0 : 0.0;
            break;
        default:
            break;
        }
        if (t == COLLAB_DOUBLE)
            memcpy(buf + 8 * k, &v, 8);
        else if (t == COLLAB_FLOAT) {
            float f = (float)v;
            memcpy(buf + 4 * k, &f, 4);
        } else {
            int32_t i = (int32_t)(h >> 3);
            memcpy(buf + 4 * k, &i, 4);
        }
    }
}

typedef struct {
    cl_fast_t *f;
    int me, iters, taken, wrong;
} big_member_t;

static const collab_op_t BIG_OPS[4] = {{COLLAB_OP_SUM, NULL, NULL, 1},
                                       {COLLAB_OP_MIN, NULL, NULL, 1},
                                       {COLLAB_OP_MAX, NULL, NULL, 1},
                                       {COLLAB_OP_PROD, NULL, NULL, 1}};
static const collab_dtype_t BIG_TYPES[3] = {COLLAB_DOUBLE, COLLAB_FLOAT, COLLAB_INT32};

/* Call `it`'s arguments. */
static void big_call(int it, collab_dtype_t *t, const collab_op_t **op, size_t *count, bool *in_place)
{
    static const size_t bytes[5] = {8200, 65536 * 3 + 12, 1u << 20, 333333 * 4, BIG_MAX};
    *t = BIG_TYPES[it % 3];
    *op = &BIG_OPS[(it / 3) % 4];
    *count = bytes[it % 5] / collab_dtype_extent(*t);
    *in_place = it % 4 == 3;
}

static void *big_loop(void *arg)
{
    big_member_t *m = arg;
    uint8_t *x = malloc(BIG_MAX), *y = malloc(BIG_MAX), *o = malloc(BIG_MAX), *w = malloc(BIG_MAX);
    for (int it = 0; it < m->iters && x != NULL && y != NULL && o != NULL && w != NULL; it++) {
        collab_dtype_t t;
        const collab_op_t *op;
        size_t count;
        bool in_place;
        big_call(it, &t, &op, &count, &in_place);
        big_input(m->me, it, t, x, count);
        int rc;
        if (in_place) {
            memcpy(y, x, count * collab_dtype_extent(t));
            rc = cl_fast_allreduce(m->f, NULL, y, count, t, op);
        } else {
            rc = cl_fast_allreduce(m->f, x, y, count, t, op);
        }
        if (rc != 1)
            continue;
        m->taken++;
        /* What the engine path computes: both inputs folded in rank order. */
        big_input(1 - m->me, it, t, o, count);
        const void *in[2] = {m->me == 0 ? x : o, m->me == 0 ? o : x};
        CHECK(cl_reduce_fold(op, t, w, in, 2, count) == 0);
        m->wrong += memcmp(w, y, count * collab_dtype_extent(t)) != 0;
    }
    free(x);
    free(y);
    free(o);
    free(w);
    return NULL;
}

/* Both members of a fresh pair run fn for iters calls, all on the fast
   path, with no wrong result; returns the pair (caller destroys). */
static void pair_loops(void *(*fn)(void *), int iters, cl_fast_t **a, cl_fast_t **b)
{
    pair_new(a, b);
    CHECK(cl_fast_grant(*a, 0, &s_none) && cl_fast_grant(*b, 0, &s_none));
    big_member_t ma = {*a, 0, iters, 0, 0}, mb = {*b, 1, iters, 0, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, fn, &ma);
    pthread_create(&tb, NULL, fn, &mb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(ma.taken == iters && mb.taken == iters);
    CHECK(ma.wrong == 0 && mb.wrong == 0);
    CHECK(cl_fast_next_seq(*a) == (uint64_t)iters && cl_fast_next_seq(*b) == (uint64_t)iters);
}

static void test_big(void)
{
    cl_fast_t *a, *b;
    pair_loops(big_loop, 120, &a, &b);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

typedef struct {
    cl_fast_t *f;
    int rc;
    double took;
} big_one_t;

/* A page of the bytes big_one's and rooted_one's inputs are made of. */
static const uint8_t ONES[4096] = {[0 ... 4095] = 1};

static void *big_one(void *arg)
{
    big_one_t *o = arg;
    size_t count = 8u << 20; /* 64 MiB of doubles: many chunks */
    double *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
    if (x != NULL)
        memset(x, 1, count * sizeof *x); /* pages of ONES, what the revoker looks for */
    double t0 = now_s();
    o->rc = x != NULL && y != NULL ? cl_fast_allreduce(o->f, x, y, count, COLLAB_DOUBLE, &SUMOP)
                                   : -1;
    o->took = now_s() - t0;
    free(x);
    free(y);
    return NULL;
}

/* A big call whose partner never comes gives up; the partner, coming
   late, takes the engine path too.  A grant revoked mid-transfer: both
   members take the engine path. */
static void test_big_abort(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    CHECK(cl_fast_grant(a, 5, &s_none) && cl_fast_grant(b, 5, &s_none));
    big_one_t oa = {a, 9, 0}, ob = {b, 9, 0};
    big_one(&oa);
    CHECK(oa.rc == 0 && oa.took < 3.0 && !cl_fast_granted(a));
    big_one(&ob);
    CHECK(ob.rc == 0 && ob.took < 0.4);
    /* Sequence 6, both there; b's grant revoked mid-transfer. */
    CHECK(cl_fast_grant(a, 6, &s_none) && cl_fast_grant(b, 6, &s_none));
    pthread_t ta, tb;
    revoker_t rv;
    pthread_create(&ta, NULL, big_one, &oa);
    pthread_create(&tb, NULL, big_one, &ob);
    revoker_start(&rv, b, map_area(), CL_SHM_FAST_BYTES, ONES);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    revoker_join(&rv);
    CHECK(oa.rc == ob.rc);
    CHECK(oa.rc == 0 && oa.took < 2.0 && ob.took < 2.0);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

/* --- reductions to a root and broadcasts ---------------------------- */

/* Call `it` of the rooted loop: a reduction or a broadcast, small or big,
   from either root; reductions in place at the root now and then. */
typedef struct {
    bool bcast, in_place;
    int root;
    collab_dtype_t t;
    const collab_op_t *op;
    size_t count;
} rooted_t;

static rooted_t rooted_call(int it)
{
    static const size_t bytes[6] = {24, 8192, 8200, 65536 * 5 + 4, 1u << 20, BIG_MAX};
    rooted_t r = {it % 2 == 1, it % 6 == 4, (it / 2) % 2, BIG_TYPES[it % 3], &BIG_OPS[(it / 3) % 4],
                  0};
    if (r.bcast)
        r.t = COLLAB_INT32; /* a broadcast's bytes: int32 elements (the sizes are multiples of 4) */
    r.count = bytes[(it / 4) % 6] / collab_dtype_extent(r.t);
    return r;
}

static void *rooted_loop(void *arg)
{
    big_member_t *m = arg;
    uint8_t *x = malloc(BIG_MAX), *y = malloc(BIG_MAX), *o = malloc(BIG_MAX), *w = malloc(BIG_MAX);
    for (int it = 0; it < m->iters && x != NULL && y != NULL && o != NULL && w != NULL; it++) {
        rooted_t r = rooted_call(it);
        const collab_dtype_t t = r.t;
        const size_t bytes = r.count * collab_dtype_extent(t);
        big_input(m->me, it, t, x, r.count); /* this member's input (or bytes) */
        memset(y, 0xa5, bytes);
        int rc;
        if (r.bcast) {
            memcpy(y, x, bytes);
            rc = cl_fast_bcast(m->f, y, bytes, r.root);
        } else if (r.in_place && m->me == r.root) {
            memcpy(y, x, bytes);
            rc = cl_fast_reduce(m->f, NULL, y, r.count, t, r.op, r.root);
        } else {
            rc = cl_fast_reduce(m->f, x, m->me == r.root ? y : NULL, r.count, t, r.op, r.root);
        }
        if (rc != 1) {
            m->wrong++; /* every call here completes on the fast path */
            continue;
        }
        m->taken++;
        big_input(1 - m->me, it, t, o, r.count);
        if (r.bcast) { /* everyone holds the root's bytes */
            m->wrong += memcmp(y, r.root == m->me ? x : o, bytes) != 0;
        } else if (m->me == r.root) { /* the engine path's fold, rank order */
            const void *in[2] = {m->me == 0 ? x : o, m->me == 0 ? o : x};
            CHECK(cl_reduce_fold(r.op, t, w, in, 2, r.count) == 0);
            m->wrong += memcmp(w, y, bytes) != 0;
        } else { /* the other member's receive buffer untouched */
            m->wrong += !untouched(y, bytes, 0xa5);
        }
    }
    free(x);
    free(y);
    free(o);
    free(w);
    return NULL;
}

static void test_rooted(void)
{
    cl_fast_t *a, *b;
    pair_loops(rooted_loop, 96, &a, &b);
    /* The reports name the kind and the root. */
    cl_fast_report_t rep[CL_FAST_REPORTS];
    size_t n = cl_fast_take(a, rep, CL_FAST_REPORTS), bad = 0;
    for (size_t i = 0; i < n; i++) {
        rooted_t r = rooted_call((int)rep[i].first);
        bad += rep[i].n != 1 || rep[i].root != r.root ||
               rep[i].kind != (r.bcast ? CL_COLL_BCAST : CL_COLL_REDUCE);
    }
    CHECK(n == 96 && bad == 0);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

typedef struct {
    cl_fast_t *f;
    int kind, root, rc, me;
    size_t bytes;
    uint8_t fill;   /* what buf holds: a broadcast root's data, else 0x5a */
    bool intact;    /* the receive buffer holds what it held before */
    double took;
    uint8_t *x, *y; /* filled before the call, so that a revocation lands mid-transfer */
} rooted_one_t;

static bool rooted_fill(rooted_one_t *o)
{
    o->x = malloc(o->bytes);
    o->y = malloc(o->bytes);
    if (o->x == NULL || o->y == NULL)
        return false;
    o->fill = o->kind == CL_COLL_BCAST && o->root == o->me ? 1 : 0x5a;
    memset(o->x, 1, o->bytes);
    memset(o->y, o->fill, o->bytes);
    return true;
}

static void *rooted_one(void *arg)
{
    rooted_one_t *o = arg;
    uint8_t *x = o->x, *y = o->y;
    double t0 = now_s();
    if (o->kind == CL_COLL_BCAST)
        o->rc = cl_fast_bcast(o->f, y, o->bytes, o->root);
    else if (o->kind == CL_COLL_REDUCE)
        o->rc = cl_fast_reduce(o->f, x, y, o->bytes / 4, COLLAB_FLOAT, &SUMOP, o->root);
    else
        o->rc = cl_fast_allreduce(o->f, x, y, o->bytes / 4, COLLAB_FLOAT, &SUMOP);
    o->took = now_s() - t0;
    o->intact = true;
    for (size_t k = 0; k < o->bytes; k++)
        o->intact &= y[k] == o->fill;
    free(x);
    free(y);
    o->x = o->y = NULL;
    return NULL;
}

/* Both members call at sequence q; returns both results. */
static void rooted_pair(cl_fast_t *a, cl_fast_t *b, uint64_t q, rooted_one_t *oa, rooted_one_t *ob,
                        bool revoke)
{
    oa->me = 0;
    ob->me = 1;
    CHECK(rooted_fill(oa) && rooted_fill(ob));
    CHECK(cl_fast_grant(a, q, &s_none) && cl_fast_grant(b, q, &s_none));
    oa->f = a;
    ob->f = b;
    pthread_t ta, tb;
    revoker_t rv;
    pthread_create(&ta, NULL, rooted_one, oa);
    pthread_create(&tb, NULL, rooted_one, ob);
    if (revoke)
        revoker_start(&rv, a, map_area(), CL_SHM_FAST_BYTES, ONES);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (revoke)
        revoker_join(&rv);
}

/* Calls that differ (roots, kinds) take the engine path on both members,
   with no receive buffer changed; so does a broadcast whose root never
   comes or whose grant is revoked mid-transfer. */
static void test_rooted_abort(void)
{
    cl_fast_t *a, *b;
    pair_new(&a, &b);
    const size_t big = 1u << 20, small = 4096;
    struct {
        int ka, ra, kb, rb;
        size_t bytes;
    } cases[] = {
        {CL_COLL_BCAST, 0, CL_COLL_BCAST, 1, big},         {CL_COLL_BCAST, 0, CL_COLL_BCAST, 1, small},
        {CL_COLL_REDUCE, 0, CL_COLL_REDUCE, 1, big},       {CL_COLL_REDUCE, 1, CL_COLL_REDUCE, 0, small},
        {CL_COLL_REDUCE, 0, CL_COLL_ALLREDUCE, -1, big},   {CL_COLL_BCAST, 1, CL_COLL_REDUCE, 1, big},
        {CL_COLL_ALLREDUCE, -1, CL_COLL_REDUCE, 1, small}, {CL_COLL_BCAST, 0, CL_COLL_ALLREDUCE, -1, big},
    };
    uint64_t q = 10;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, q++) {
        rooted_one_t oa = {.kind = cases[i].ka, .root = cases[i].ra, .bytes = cases[i].bytes};
        rooted_one_t ob = {.kind = cases[i].kb, .root = cases[i].rb, .bytes = cases[i].bytes};
        rooted_pair(a, b, q, &oa, &ob, false);
        CHECK(oa.rc == 0 && ob.rc == 0);
        CHECK(oa.intact && ob.intact);
        CHECK(oa.took < 2.0 && ob.took < 2.0);
    }
    /* The root never comes: the other gives up, its buffer intact. */
    CHECK(cl_fast_grant(b, q, &s_none));
    rooted_one_t ob = {.f = b, .kind = CL_COLL_BCAST, .root = 0, .me = 1, .bytes = big};
    CHECK(rooted_fill(&ob));
    rooted_one(&ob);
    CHECK(ob.rc == 0 && ob.intact && ob.took < 3.0);
    /* A 64 MiB broadcast whose root's grant is revoked mid-transfer. */
    q++;
    rooted_one_t oa = {.kind = CL_COLL_BCAST, .root = 0, .bytes = 64u << 20};
    ob = (rooted_one_t){.kind = CL_COLL_BCAST, .root = 0, .bytes = 64u << 20};
    rooted_pair(a, b, q, &oa, &ob, true);
    CHECK(oa.rc == 0 && ob.rc == 0 && oa.intact && ob.intact);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

int main(void)
{
    test_big();
    test_big_abort();
    test_rooted();
    test_rooted_abort();
    test_run();
    test_revoke();
    test_release();
    test_nonsense();
    close(s_fd);
    if (s_failures == 0)
        printf("cl_fast_test: all checks passed\n");
    return s_failures != 0;
}
