/*  cl_admission_test.c - selftest of the coordinator's admission queue.

    Rank allocation (COLLAB_RANK, the rank a key held last, the rank a
    peer says it held, the lowest free), standbys promoted as ranks free,
    re-admission of ungrouped members, reservations lost to a conflicting
    view, expiry and cancellation, batches produced only at step
    boundaries of a real cl_stream (with a limit per batch), requeueing,
    validation of views, the queue bound, and a randomized run that checks
    the invariants after every operation.
*/
#include "elastic/cl_admission.h"
#include "mpi_collab.h"
#include "util/cl_selftest.h"

#include "el_testlog.h"

#include <stdlib.h>

static void key_of(int i, uint8_t key[32])
{
    memset(key, 0, 32);
    key[0] = (uint8_t)(0x40 + i);
    key[9] = (uint8_t)(i >> 8);
    key[31] = (uint8_t)(0x5a ^ i);
}

static cl_adm_member_t mem(int i, int rank, bool in_group)
{
    cl_adm_member_t m;
    key_of(i, m.key);
    m.rank = rank;
    m.in_group = in_group;
    return m;
}

/* Asks for peer i; returns the state and puts the rank in *rank. */
static int ask(cl_admission_t *a, int i, int preferred, int prev, bool readmit, double now,
               int *rank)
{
    uint8_t k[32];
    key_of(i, k);
    return cl_admission_request(a, k, preferred, prev, readmit, now, rank);
}

static cl_adm_state_t state_of(cl_admission_t *a, int i, int *rank)
{
    uint8_t k[32];
    key_of(i, k);
    return cl_admission_state(a, k, rank);
}

static bool key_is(const uint8_t key[32], int i)
{
    uint8_t k[32];
    key_of(i, k);
    return memcmp(k, key, 32) == 0;
}

enum { A, B, C, D, E, F, G };

static void test_basic(void)
{
    cl_admission_t *a = cl_admission_new(4);
    CL_CHECK(a != NULL);
    cl_adm_member_t v[4] = {mem(B, 1, true), mem(A, 0, true)};
    CL_CHECK(cl_admission_set_view(a, v, 2) == 0);
    int r = -5;
    CL_CHECK(ask(a, C, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(ask(a, D, 1, -1, false, 0, &r) == CL_ADM_PENDING && r == 3); /* 1 is held */
    CL_CHECK(ask(a, E, -1, -1, false, 0, &r) == CL_ADM_STANDBY && r == -1);
    CL_CHECK(ask(a, C, -1, -1, false, 1, &r) == CL_ADM_PENDING && r == 2); /* repeated */
    CL_CHECK(ask(a, A, -1, -1, false, 1, &r) == CL_ADM_MEMBER && r == 0);
    CL_CHECK(cl_admission_pending(a) == 2 && cl_admission_standby(a) == 1);
    CL_CHECK(state_of(a, A, &r) == CL_ADM_MEMBER && r == 0);
    CL_CHECK(state_of(a, G, &r) == CL_ADM_NONE && r == -1);
    CL_CHECK(state_of(a, E, NULL) == CL_ADM_STANDBY);

    cl_adm_batch_t b;
    CL_CHECK(cl_admission_take(a, 10, 2, 0, &b) == 1);
    CL_CHECK(b.s == 10 && b.prefix == 2 && b.njoiners == 2 && b.nmembers == 4);
    CL_CHECK(key_is(b.joiners[0].key, C) && b.joiners[0].rank == 2 && !b.joiners[0].readmit);
    CL_CHECK(key_is(b.joiners[1].key, D) && b.joiners[1].rank == 3);
    bool order_ok = true;
    for (size_t i = 0; i < b.nmembers; i++)
        order_ok = order_ok && b.members[i].rank == (int)i && b.members[i].in_group;
    CL_CHECK(order_ok && key_is(b.members[0].key, A) && key_is(b.members[3].key, D));
    CL_CHECK(state_of(a, C, &r) == CL_ADM_IN_FLIGHT && r == 2);
    CL_CHECK(ask(a, C, -1, -1, false, 2, &r) == CL_ADM_IN_FLIGHT && r == 2);
    CL_CHECK(cl_admission_pending(a) == 0);
    cl_adm_batch_t none;
    CL_CHECK(cl_admission_take(a, 11, 2, 0, &none) == 0 && none.joiners == NULL);

    /* The engine installs the view: the joiners are members. */
    CL_CHECK(cl_admission_set_view(a, b.members, b.nmembers) == 0);
    cl_adm_batch_clear(&b);
    CL_CHECK(b.joiners == NULL && b.nmembers == 0);
    cl_adm_batch_clear(NULL);
    CL_CHECK(state_of(a, C, &r) == CL_ADM_MEMBER && r == 2);
    CL_CHECK(state_of(a, E, &r) == CL_ADM_STANDBY);

    /* B fails: the standby gets rank 1. */
    v[0] = mem(A, 0, true);
    v[1] = mem(C, 2, true);
    v[2] = mem(D, 3, true);
    CL_CHECK(cl_admission_set_view(a, v, 3) == 0);
    CL_CHECK(state_of(a, E, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(state_of(a, B, &r) == CL_ADM_NONE);
    CL_CHECK(cl_admission_standby(a) == 0 && cl_admission_pending(a) == 1);
    cl_admission_destroy(&a);
    CL_CHECK(a == NULL);
    cl_admission_destroy(&a);
    cl_admission_destroy(NULL);
}

static void test_rank_choice(void)
{
    /* The rank a key held last wins over the lowest free. */
    cl_admission_t *a = cl_admission_new(4);
    cl_adm_member_t v[4] = {mem(A, 0, true), mem(B, 1, true), mem(C, 2, true), mem(D, 3, true)};
    CL_CHECK(cl_admission_set_view(a, v, 4) == 0);
    cl_adm_member_t w[2] = {mem(A, 0, true), mem(D, 3, true)}; /* B and C left */
    CL_CHECK(cl_admission_set_view(a, w, 2) == 0);
    int r;
    CL_CHECK(ask(a, C, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(ask(a, B, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 1);
    cl_admission_destroy(&a);

    a = cl_admission_new(4);
    CL_CHECK(cl_admission_set_view(a, v, 4) == 0);
    CL_CHECK(cl_admission_set_view(a, w, 2) == 0);
    /* COLLAB_RANK beats history. */
    CL_CHECK(ask(a, C, 1, -1, false, 0, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, E, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(ask(a, F, -1, -1, false, 0, &r) == CL_ADM_STANDBY);
    CL_CHECK(ask(a, G, 4, -1, false, 0, &r) == COLLAB_ERR_RANK);
    CL_CHECK(ask(a, G, -2, -1, false, 0, &r) == COLLAB_ERR_RANK);
    CL_CHECK(state_of(a, G, NULL) == CL_ADM_NONE);
    cl_admission_destroy(&a);

    /* The most recent rank of a key counts. */
    a = cl_admission_new(8);
    cl_adm_member_t k1 = mem(E, 1, true), k5 = mem(E, 5, true);
    CL_CHECK(cl_admission_set_view(a, &k1, 1) == 0);
    CL_CHECK(cl_admission_set_view(a, NULL, 0) == 0);
    CL_CHECK(cl_admission_set_view(a, &k5, 1) == 0);
    CL_CHECK(cl_admission_set_view(a, NULL, 0) == 0);
    CL_CHECK(ask(a, E, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 5);
    cl_admission_destroy(&a);

    /* A successor coordinator without history trusts the peer's hint. */
    a = cl_admission_new(4);
    CL_CHECK(cl_admission_set_view(a, w, 2) == 0);
    CL_CHECK(ask(a, C, -1, 2, false, 0, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(ask(a, B, -1, 99, false, 0, &r) == CL_ADM_PENDING && r == 1); /* hint ignored */
    cl_admission_destroy(&a);
}

static void test_readmit(void)
{
    cl_admission_t *a = cl_admission_new(3);
    cl_adm_member_t v[3] = {mem(A, 0, true), mem(B, 1, false), mem(C, 2, true)};
    CL_CHECK(cl_admission_set_view(a, v, 3) == 0);
    int r;
    CL_CHECK(ask(a, B, -1, -1, true, 0, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, C, -1, -1, true, 0, &r) == CL_ADM_MEMBER && r == 2);
    CL_CHECK(ask(a, D, -1, -1, false, 0, &r) == CL_ADM_STANDBY);
    cl_adm_batch_t b;
    CL_CHECK(cl_admission_take(a, CL_STREAM_NONE, 0, 0, &b) == 1);
    CL_CHECK(b.s == CL_STREAM_NONE && b.njoiners == 1 && b.joiners[0].readmit);
    CL_CHECK(b.nmembers == 3 && b.members[1].in_group && key_is(b.members[1].key, B));
    CL_CHECK(cl_admission_set_view(a, b.members, b.nmembers) == 0);
    CL_CHECK(state_of(a, B, &r) == CL_ADM_MEMBER && r == 1);
    cl_adm_batch_clear(&b);

    /* B leaves the view: its rank frees and the standby takes it. */
    cl_adm_member_t w[2] = {mem(A, 0, true), mem(C, 2, true)};
    CL_CHECK(cl_admission_set_view(a, w, 2) == 0);
    CL_CHECK(state_of(a, D, &r) == CL_ADM_PENDING && r == 1);
    cl_admission_destroy(&a);

    /* Without a standby, a straggler removed from the view gets its rank
       back through history, and a JOIN repeated as a re-admission becomes
       one. */
    a = cl_admission_new(3);
    CL_CHECK(cl_admission_set_view(a, v, 3) == 0);
    CL_CHECK(cl_admission_set_view(a, w, 2) == 0);
    CL_CHECK(ask(a, B, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, B, -1, -1, true, 1, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(cl_admission_take(a, 5, 0, 0, &b) == 1 && b.joiners[0].readmit);
    CL_CHECK(b.nmembers == 3 && key_is(b.members[1].key, B));
    cl_adm_batch_clear(&b);
    cl_admission_destroy(&a);
}

static void test_conflicts(void)
{
    cl_admission_t *a = cl_admission_new(4);
    cl_adm_member_t v[4] = {mem(A, 0, true)};
    CL_CHECK(cl_admission_set_view(a, v, 1) == 0);
    int r;
    CL_CHECK(ask(a, C, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, D, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 2);
    /* A view made elsewhere gives rank 1 to someone else. */
    v[1] = mem(G, 1, true);
    CL_CHECK(cl_admission_set_view(a, v, 2) == 0);
    CL_CHECK(state_of(a, C, &r) == CL_ADM_PENDING && r == 3);
    CL_CHECK(state_of(a, D, &r) == CL_ADM_PENDING && r == 2);
    /* In flight, then its rank is taken: back to pending elsewhere, or
       standby when nothing is left. */
    cl_adm_batch_t b;
    CL_CHECK(cl_admission_take(a, 3, 0, 1, &b) == 1 && b.njoiners == 1);
    CL_CHECK(key_is(b.joiners[0].key, C) && state_of(a, C, NULL) == CL_ADM_IN_FLIGHT);
    CL_CHECK(b.joiners[0].rank == 3 && b.nmembers == 3);
    v[2] = mem(F, 3, true);
    CL_CHECK(cl_admission_set_view(a, v, 3) == 0);
    CL_CHECK(state_of(a, C, &r) == CL_ADM_STANDBY && r == -1);
    CL_CHECK(state_of(a, D, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(cl_admission_requeue(a, &b) == 0); /* C is no longer in flight */
    cl_adm_batch_clear(&b);
    cl_admission_destroy(&a);
}

static void test_expire_cancel(void)
{
    cl_admission_t *a = cl_admission_new(2);
    cl_adm_member_t v[1] = {mem(A, 0, true)};
    CL_CHECK(cl_admission_set_view(a, v, 1) == 0);
    int r;
    CL_CHECK(ask(a, C, -1, -1, false, 0.0, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, D, -1, -1, false, 0.0, &r) == CL_ADM_STANDBY);
    CL_CHECK(ask(a, E, -1, -1, false, 5.0, &r) == CL_ADM_STANDBY);
    CL_CHECK(cl_admission_expire(a, 6.0, 7.0) == 0);
    CL_CHECK(cl_admission_expire(a, 10.0, 7.0) == 2);
    CL_CHECK(state_of(a, C, NULL) == CL_ADM_NONE && state_of(a, D, NULL) == CL_ADM_NONE);
    CL_CHECK(state_of(a, E, &r) == CL_ADM_PENDING && r == 1);
    CL_CHECK(ask(a, F, -1, -1, false, 10.0, &r) == CL_ADM_STANDBY);
    uint8_t k[32];
    key_of(E, k);
    CL_CHECK(cl_admission_cancel(a, k) == 0);
    CL_CHECK(cl_admission_cancel(a, k) == COLLAB_ERR_ARG);
    CL_CHECK(state_of(a, F, &r) == CL_ADM_PENDING && r == 1);
    /* Peers in flight do not expire. */
    cl_adm_batch_t b;
    CL_CHECK(cl_admission_take(a, 1, 0, 0, &b) == 1);
    CL_CHECK(cl_admission_expire(a, 1000.0, 1.0) == 0);
    CL_CHECK(cl_admission_requeue(a, &b) == 1);
    CL_CHECK(cl_admission_expire(a, 1000.0, 1.0) == 1);
    cl_adm_batch_clear(&b);
    cl_admission_destroy(&a);
}

/* Batches come only at step boundaries of the coordinator's stream. */
static void test_poll(void)
{
    el_log_start(CL_LOG_WARN);
    cl_stream_t *st = cl_stream_new("world", 0);
    cl_admission_t *a = cl_admission_new(4);
    cl_adm_member_t v[1] = {mem(A, 0, true)};
    CL_CHECK(cl_admission_set_view(a, v, 1) == 0);
    int r;
    CL_CHECK(ask(a, C, -1, -1, false, 0, &r) == CL_ADM_PENDING);
    CL_CHECK(ask(a, D, -1, -1, false, 0, &r) == CL_ADM_PENDING);
    cl_adm_batch_t b;
    /* Start-up bcast, then steps of two allreduces. */
    static char params[8], g1[8], g2[8];
    uint64_t idx = cl_stream_record(st, 1, params, NULL);
    CL_CHECK(cl_admission_poll(a, st, idx, 0, &b) == 0); /* learning */
    int batches = 0;
    uint64_t at[2] = {0, 0};
    for (int step = 0; step < 10; step++) {
        for (int l = 0; l < 2; l++) {
            idx = cl_stream_record(st, 2, l ? g2 : g1, l ? g2 : g1);
            int rc = cl_admission_poll(a, st, idx, 1, &b);
            CL_CHECK(rc == 0 || rc == 1);
            if (rc == 1) {
                CL_CHECK(l == 0 && b.prefix == 1 && b.s == idx && b.njoiners == 1);
                if (batches < 2)
                    at[batches] = idx;
                batches++;
                CL_CHECK(cl_admission_set_view(a, b.members, b.nmembers) == 0);
                cl_adm_batch_clear(&b);
            } else {
                CL_CHECK(b.joiners == NULL && b.members == NULL);
            }
        }
    }
    /* Locked after 1 + 8 collectives: boundaries 9, 11, ... */
    CL_CHECK(batches == 2 && at[0] == 9 && at[1] == 11);
    CL_CHECK(state_of(a, C, &r) == CL_ADM_MEMBER && r == 1);
    CL_CHECK(state_of(a, D, &r) == CL_ADM_MEMBER && r == 2);
    CL_CHECK(cl_admission_poll(a, st, 13, 0, &b) == 0); /* nobody waits */
    CL_CHECK(cl_admission_poll(NULL, st, 13, 0, &b) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_poll(a, NULL, 13, 0, &b) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_poll(a, st, 13, 0, NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_take(NULL, 0, 0, 0, &b) == COLLAB_ERR_ARG);
    cl_stream_destroy(&st);
    cl_admission_destroy(&a);
    char *log = el_log_take();
    CL_CHECK(log[0] == '\0');
    free(log);
}

static void test_validation(void)
{
    CL_CHECK(cl_admission_new(0) == NULL);
    CL_CHECK(cl_admission_new(CL_ADMISSION_MAX_WORLD + 1) == NULL);
    cl_admission_t *a = cl_admission_new(4);
    cl_adm_member_t ok[2] = {mem(A, 0, true), mem(B, 1, true)};
    CL_CHECK(cl_admission_set_view(a, ok, 2) == 0);
    int r;
    CL_CHECK(ask(a, C, -1, -1, false, 0, &r) == CL_ADM_PENDING && r == 2);
    cl_adm_member_t dup_rank[2] = {mem(A, 0, true), mem(B, 0, true)};
    cl_adm_member_t dup_key[2] = {mem(A, 0, true), mem(A, 3, true)};
    cl_adm_member_t out[1] = {mem(D, 4, true)};
    cl_adm_member_t neg[1] = {mem(D, -1, true)};
    cl_adm_member_t many[5] = {mem(A, 0, true), mem(B, 1, true), mem(C, 2, true), mem(D, 3, true),
                               mem(E, 3, true)};
    CL_CHECK(cl_admission_set_view(a, dup_rank, 2) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(a, dup_key, 2) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(a, out, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(a, neg, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(a, many, 5) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(a, NULL, 1) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_set_view(NULL, ok, 1) == COLLAB_ERR_ARG);
    /* Nothing changed. */
    CL_CHECK(state_of(a, A, &r) == CL_ADM_MEMBER && r == 0);
    CL_CHECK(state_of(a, B, &r) == CL_ADM_MEMBER && r == 1);
    CL_CHECK(state_of(a, C, &r) == CL_ADM_PENDING && r == 2);
    CL_CHECK(cl_admission_request(a, NULL, -1, -1, false, 0, &r) == COLLAB_ERR_ARG);
    uint8_t k[32];
    key_of(D, k);
    CL_CHECK(cl_admission_request(a, k, -1, -1, false, 0, NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_cancel(a, NULL) == COLLAB_ERR_ARG);
    CL_CHECK(cl_admission_state(NULL, k, &r) == CL_ADM_NONE && r == -1);
    CL_CHECK_STREQ(cl_adm_state_name(CL_ADM_STANDBY), "standby");
    CL_CHECK_STREQ(cl_adm_state_name((cl_adm_state_t)42), "invalid");
    cl_admission_destroy(&a);

    /* The queue is bounded. */
    a = cl_admission_new(4096);
    int fails = 0;
    for (int i = 0; i < CL_ADMISSION_MAX_QUEUE + 3; i++)
        fails += ask(a, 100 + i, -1, -1, false, 0, &r) < 0;
    CL_CHECK(fails == 3 && cl_admission_pending(a) == CL_ADMISSION_MAX_QUEUE);
    cl_admission_destroy(&a);
}

/* Random operations; after each, no rank is given twice, standbys exist
   only when no rank is free, and queued peers are never in the group. */
#define NKEYS 24
#define WORLD 8

typedef struct {
    cl_adm_member_t v[WORLD];
    size_t n;
} model_t;

static int check_invariants(cl_admission_t *a, const model_t *m)
{
    int bad = 0;
    int owner[WORLD];
    for (int r = 0; r < WORLD; r++)
        owner[r] = -1;
    for (size_t i = 0; i < m->n; i++)
        for (int k = 0; k < NKEYS; k++)
            if (key_is(m->v[i].key, k))
                owner[m->v[i].rank] = k;
    int standby = 0;
    for (int k = 0; k < NKEYS; k++) {
        int r;
        cl_adm_state_t st = state_of(a, k, &r);
        bool in_group = false, member = false;
        int mrank = -1;
        for (size_t i = 0; i < m->n; i++)
            if (key_is(m->v[i].key, k)) {
                member = true;
                in_group = m->v[i].in_group;
                mrank = m->v[i].rank;
            }
        if (in_group != (st == CL_ADM_MEMBER))
            bad++;
        if (st == CL_ADM_STANDBY) {
            standby++;
            bad += r != -1;
        }
        if (st == CL_ADM_PENDING || st == CL_ADM_IN_FLIGHT) {
            if (r < 0 || r >= WORLD)
                bad++;
            else if (member && !in_group)
                bad += r != mrank;
            else if (owner[r] != -1 && owner[r] != k)
                bad++;
            else
                owner[r] = k;
        }
    }
    int free_ranks = 0;
    for (int r = 0; r < WORLD; r++)
        free_ranks += owner[r] == -1;
    if (standby > 0 && free_ranks > 0)
        bad++;
    return bad;
}

static void test_random(void)
{
    srand(777);
    cl_admission_t *a = cl_admission_new(WORLD);
    model_t m = {.n = 0};
    int bad = 0;
    double now = 0;
    for (int it = 0; it < 6000; it++) {
        now += 0.1;
        int op = rand() % 10, k = rand() % NKEYS, r;
        if (op <= 3) {
            int rc = ask(a, k, rand() % 3 == 0 ? rand() % WORLD : -1, rand() % 10 - 1,
                         rand() % 4 == 0, now, &r);
            bad += rc < 0;
        } else if (op == 4) {
            uint8_t key[32];
            key_of(k, key);
            (void)cl_admission_cancel(a, key);
        } else if (op == 5) {
            (void)cl_admission_expire(a, now, 3.0);
        } else if (op == 6 || op == 7) {
            cl_adm_batch_t b;
            int rc = cl_admission_take(a, (uint64_t)it, 0, (size_t)(rand() % 3), &b);
            bad += rc < 0;
            if (rc == 1) {
                if (rand() % 4 == 0) {
                    bad += cl_admission_requeue(a, &b) != b.njoiners;
                } else {
                    bad += b.nmembers > WORLD;
                    m.n = b.nmembers;
                    memcpy(m.v, b.members, b.nmembers * sizeof *m.v);
                    bad += cl_admission_set_view(a, m.v, m.n) != 0;
                }
            }
            cl_adm_batch_clear(&b);
        } else if (op == 8 && m.n > 0) {
            size_t i = (size_t)rand() % m.n; /* a member fails */
            m.v[i] = m.v[--m.n];
            bad += cl_admission_set_view(a, m.v, m.n) != 0;
        } else if (op == 9 && m.n > 0) {
            m.v[(size_t)rand() % m.n].in_group = false; /* a straggler is ungrouped */
            bad += cl_admission_set_view(a, m.v, m.n) != 0;
        }
        bad += check_invariants(a, &m);
    }
    CL_CHECK(bad == 0);
    cl_admission_destroy(&a);
}

int main(void)
{
    test_basic();
    test_rank_choice();
    test_readmit();
    test_conflicts();
    test_expire_cancel();
    test_poll();
    test_validation();
    test_random();
    el_log_cleanup();
    return cl_selftest_end("cl_admission_test");
}
