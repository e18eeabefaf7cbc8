/*  cl_fast_agree_test.c - selftest of a group's one grant (cl_fast_agree,
    cl_fast_agree_post, docs/collectives.md §5b): four members, each a
    cl_fast_t on its own mapping of one memfd, driven by fake engines (a
    next sequence, willing or not) and application threads.

    Checks: no decision while a member is unwilling or not attached;
    comm rank 0 decides one past every sequence any member numbered; a
    member is granted at exactly that sequence, never before or after;
    every member's grant runs the same sequences and the results are the
    sum; a member that leaves (goes to the engine path with its grant,
    numbers the agreed sequence without engaging, is unwilling at it, or
    passed it) makes every other member's call of that sequence return
    "not taken" at once (far under the wait limit), and all fall back at
    the same sequence; no new decision until every member left the last;
    then a new one past all their sequences.
*/
#define _GNU_SOURCE
#include "engine/cl_fast.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cl_fast_fixture.h"
#include "selftest.h"

#define K 4
#define COMM 77u
#define DEC_OFF 704 /* the decision word in the area (docs/wire.md §9) */
#define FAST_S 0.35 /* "at once": under the wait limit (0.5 s), with room for a loaded machine */

static const _Atomic int s_none = 0;
static int s_fd = -1;
static size_t s_bytes;
static void *s_view; /* the test's own mapping, to read the decision */

typedef struct {
    cl_fast_t *f;
    uint64_t next; /* the fake engine's next sequence */
} eng_t;

static void group_new(eng_t *m)
{
    if (s_fd >= 0) {
        munmap(s_view, s_bytes);
        close(s_fd);
    }
    s_bytes = cl_fast_group_bytes(K);
    s_fd = memfd_create("cl_fast_agree_test", MFD_CLOEXEC);
    CHECK(s_fd >= 0 && ftruncate(s_fd, (off_t)s_bytes) == 0);
    s_view = mmap(NULL, s_bytes, PROT_READ, MAP_SHARED, s_fd, 0);
    CHECK(s_view != MAP_FAILED);
    for (int j = 0; j < K; j++) {
        m[j].f = cl_fast_new();
        void *a = mmap(NULL, s_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s_fd, 0);
        CHECK(m[j].f != NULL && a != MAP_FAILED);
        CHECK(cl_fast_attach_group(m[j].f, a, s_bytes, COMM, j, K, 9));
        m[j].next = 0;
    }
}

static void group_free(eng_t *m)
{
    for (int j = 0; j < K; j++)
        cl_fast_destroy(&m[j].f);
}

/* The decision: its epoch and first sequence. */
static uint64_t dec_epoch(void)
{
    return atomic_load((_Atomic uint64_t *)((char *)s_view + DEC_OFF)) & ((1u << 24) - 1);
}
static uint64_t dec_from(void)
{
    return atomic_load((_Atomic uint64_t *)((char *)s_view + DEC_OFF)) >> 24;
}

/* One turn of member j's engine, willing and idle. */
static int turn(eng_t *m, int j, bool willing)
{
    return cl_fast_agree(m[j].f, m[j].next, willing, true, &s_none);
}

/* Member j's engine numbers its next sequence for the engine path. */
static bool post(eng_t *m, int j)
{
    return cl_fast_agree_post(m[j].f, m[j].next++);
}

typedef struct {
    eng_t *e;
    int me, rc;
    float y;
    double took;
} call_t;

static void *call(void *arg)
{
    call_t *c = arg;
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    float x[3] = {(float)(c->me + 1), 1, 2}, y[3] = {0, 0, 0};
    double t0 = now_s();
    c->rc = cl_fast_allreduce(c->e->f, x, y, 3, COLLAB_FLOAT, &sum);
    c->took = now_s() - t0;
    c->y = y[0];
    if (c->rc == 1)
        c->e->next++; /* the engine takes the report */
    return NULL;
}

/* Members in mask call one all-reduce each, at once; returns how many
   completed it; *slow: the longest call. */
static int calls(eng_t *m, unsigned mask, double *slow)
{
    pthread_t t[K];
    call_t c[K];
    for (int j = 0; j < K; j++)
        if (mask & (1u << j)) {
            c[j] = (call_t){&m[j], j, -1, 0, 0};
            pthread_create(&t[j], NULL, call, &c[j]);
        }
    int done = 0;
    *slow = 0;
    for (int j = 0; j < K; j++)
        if (mask & (1u << j)) {
            pthread_join(t[j], NULL);
            done += c[j].rc == 1;
            if (c[j].rc == 1)
                CHECK(c[j].y == 10.0f); /* 1 + 2 + 3 + 4 */
            *slow = c[j].took > *slow ? c[j].took : *slow;
        }
    return done;
}

/* Every member at next (10, say), all willing: rank 0 decides next + 1;
   each runs next on the engine path, then is granted at next + 1. */
static void engage_all(eng_t *m)
{
    uint64_t e0 = dec_epoch();
    for (int j = K - 1; j > 0; j--)
        CHECK(turn(m, j, true) == CL_FAST_AGREE_NONE);
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_WAIT);
    CHECK(dec_epoch() == e0 + 1);
    uint64_t n = dec_from();
    for (int j = 0; j < K; j++) {
        while (m[j].next < n) {
            CHECK(turn(m, j, true) == CL_FAST_AGREE_WAIT);
            CHECK(!cl_fast_granted(m[j].f)); /* never before n */
            CHECK(!post(m, j));
        }
        CHECK(turn(m, j, true) == CL_FAST_AGREE_ENGAGED);
        CHECK(cl_fast_granted(m[j].f) && cl_fast_next_seq(m[j].f) == n);
        CHECK(turn(m, j, true) == CL_FAST_AGREE_NONE); /* once per decision */
    }
}

/* No decision while one is unwilling; then one past every sequence. */
static void test_decide(void)
{
    eng_t m[K];
    group_new(m);
    uint64_t at[K] = {10, 12, 10, 11};
    for (int j = 0; j < K; j++)
        m[j].next = at[j];
    CHECK(turn(m, 1, true) == CL_FAST_AGREE_NONE);
    CHECK(turn(m, 2, true) == CL_FAST_AGREE_NONE);
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_NONE); /* member 3 not heard yet */
    CHECK(turn(m, 3, false) == CL_FAST_AGREE_NONE);
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_NONE); /* member 3 unwilling */
    CHECK(dec_epoch() == 0);
    CHECK(turn(m, 3, true) == CL_FAST_AGREE_NONE);
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_WAIT);
    CHECK(dec_epoch() == 1 && dec_from() == 13);
    /* Member 1 at 12 waits for 13; at 13 it is granted from 13. */
    CHECK(turn(m, 1, true) == CL_FAST_AGREE_WAIT && !cl_fast_granted(m[1].f));
    CHECK(!post(m, 1));
    CHECK(cl_fast_agree(m[1].f, 13, true, false, &s_none) == CL_FAST_AGREE_WAIT); /* busy */
    CHECK(turn(m, 1, true) == CL_FAST_AGREE_ENGAGED && cl_fast_next_seq(m[1].f) == 13);
    group_free(m);
}

/* Engaged together: results; then a member goes to the engine path with
   its grant: every call of that sequence falls back at once, all leave,
   and the next decision comes only once all left. */
static void test_fall_back_as_one(void)
{
    eng_t m[K];
    group_new(m);
    for (int j = 0; j < K; j++)
        m[j].next = 10;
    engage_all(m);
    double slow;
    for (int i = 0; i < 50; i++)
        CHECK(calls(m, 0xf, &slow) == K);
    uint64_t q = m[0].next;
    for (int j = 1; j < K; j++)
        CHECK(m[j].next == q && cl_fast_next_seq(m[j].f) == q);
    /* Member 3's next call is a broadcast: to the engine with its grant. */
    cl_fast_before_engine(m[3].f);
    CHECK(calls(m, 0x7, &slow) == 0);
    CHECK(slow < FAST_S);
    CHECK(post(m, 3)); /* its engine numbers q: leaves */
    for (int j = 0; j < 3; j++)
        CHECK(!cl_fast_granted(m[j].f));
    /* No new decision until every member left. */
    uint64_t e = dec_epoch();
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_NONE && dec_epoch() == e);
    CHECK(post(m, 1) && post(m, 2));
    CHECK(turn(m, 0, true) == CL_FAST_AGREE_NONE && dec_epoch() == e);
    CHECK(post(m, 0));
    for (int j = 0; j < K; j++)
        CHECK(m[j].next == q + 1);
    engage_all(m);
    CHECK(dec_from() == q + 2);
    CHECK(calls(m, 0xf, &slow) == K);
    group_free(m);
}

/* A member that numbers the agreed sequence for the engine path before
   its engine engaged, one unwilling at it, and one whose sequence passed
   it: the others, granted, fall back at once at that sequence. */
static void test_missed(int how)
{
    eng_t m[K];
    group_new(m);
    for (int j = 0; j < K; j++)
        m[j].next = 20;
    for (int j = K - 1; j >= 0; j--)
        (void)turn(m, j, true);
    uint64_t n = dec_from();
    CHECK(n == 21);
    for (int j = 0; j < K; j++) {
        CHECK(!post(m, j));
        if (j < 3)
            CHECK(turn(m, j, true) == CL_FAST_AGREE_ENGAGED);
    }
    if (how == 0) {
        CHECK(post(m, 3)); /* its program called first */
    } else if (how == 1) {
        CHECK(turn(m, 3, false) == CL_FAST_AGREE_WAIT && !cl_fast_granted(m[3].f));
        CHECK(post(m, 3));
    } else {
        m[3].next = n + 2; /* its engine passed n */
        CHECK(turn(m, 3, true) == CL_FAST_AGREE_LEFT);
    }
    double slow;
    CHECK(calls(m, 0x7, &slow) == 0);
    CHECK(slow < FAST_S);
    group_free(m);
}

int main(void)
{
    test_decide();
    test_fall_back_as_one();
    for (int how = 0; how < 3; how++)
        test_missed(how);
    if (s_fd >= 0) {
        munmap(s_view, s_bytes);
        close(s_fd);
    }
    if (s_failures == 0)
        printf("cl_fast_agree_test: all checks passed\n");
    return s_failures != 0;
}
