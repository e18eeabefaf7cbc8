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
    complete), never crash or hang.
*/
#define _GNU_SOURCE
#include "engine/cl_fast.h"
#include "engine/cl_shm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
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
        CHECK(now_s() - t0 < 2.0);
    }
    if (raw != NULL)
        munmap(raw, CL_SHM_FAST_BYTES);
    cl_fast_destroy(&a);
    cl_fast_destroy(&b);
}

int main(void)
{
    test_run();
    test_revoke();
    test_release();
    test_nonsense();
    close(s_fd);
    if (s_failures == 0)
        printf("cl_fast_test: all checks passed\n");
    return s_failures != 0;
}
