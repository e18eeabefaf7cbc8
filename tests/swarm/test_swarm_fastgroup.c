/*  test_swarm_fastgroup.c - scenarios "fast_group3_kill",
    "fast_group4_kill", "fast_group4_stop" (and "fast_group_rooted", with
    barriers, at the end) of test_swarm: big
    all-reduces of three or four peers of one host on the group fast path
    (src/engine/cl_fast_group.c, docs/collectives.md §5b), the last rank
    SIGKILLed, or SIGSTOPped, once 40 calls ran on the fast path here,
    so that the signal lands amid a transfer.  The stopped rank's helper
    process continues it once rank 0 left a marker: 10 calls completed
    without it, over 1.5 s at least (30 s bound on each wait, past which
    the test fails); rank 0 then calls for 3 s more at least, so that the
    victim, continued, finds the others still calling.

    Every rank runs 4 MiB double SUMs for 8 s (16 s with SIGSTOP), its
    input changing every call (rank and iteration in every element).
    While the whole group is present and in step, each result must equal,
    bit for bit, the sum of the n inputs of that iteration (small
    integers: exact in any order), so a stale or partial result is
    caught; after that, every element must be n/m times the sum over some
    m present ranks (DESIGN §2), within rounding.  No call may take more
    than 15 s.  Each rank records (sequence, result hash, fast, group
    size) per call; rank 0 checks that every sequence one rank completed
    on the fast path was completed on the fast path by every rank that
    completed it, with the same bits, and that any sequence two ranks
    completed in a group of the same size has the same bits at both.
*/
#include "test_swarm.h"

#include "engine/cl_comm.h"
#include "engine/cl_fast.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NG ((size_t)1 << 19) /* doubles per all-reduce: 4 MiB */

typedef struct {
    uint64_t seq, h;
    int fast, group;
} grec_t;

static collab_comm_t *s_world;
static atomic_int s_sig, s_harmed;

static void *harm(void *arg)
{
    (void)arg;
    for (int k = 0; k < 30000 && test_fast_done(s_world) < 40; k++)
        usleep(1000);
    atomic_store(&s_harmed, 1);
    raise(atomic_load(&s_sig));
    return NULL;
}

/* Rank 0's marker for the stopped victim's helper (test_cont_on_mark). */
#define ALONE_MARK_NAME "group_alone"
#define ALONE_MARK 10
#define ALONE_MARK_S 1.5
#define ALONE_WAIT_S 30.0

static double gin(int r, int it, size_t k)
{
    return (double)((r + 1) * 1000 + it % 997) + (double)(k % 11);
}

static uint64_t hmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 31);
}

static void cross(int i, int n, int sig, grec_t *rec, size_t nrec)
{
    char path[600];
    snprintf(path, sizeof path, "%s/grpseq.%d", s_dir, i);
    if (i != 0) {
        test_write_records(path, rec, sizeof *rec, nrec);
        return;
    }
    size_t fast_seen = 0, differ = 0;
    for (int r = 1; r < (sig == SIGKILL ? n - 1 : n); r++) { /* the killed rank writes nothing */
        snprintf(path, sizeof path, "%s/grpseq.%d", s_dir, r);
        size_t m;
        grec_t *o = test_read_records(path, sizeof *o, &m);
        if (o == NULL)
            continue;
        /* Sequences only grow at each rank: merge. */
        size_t a = 0, b = 0;
        while (a < nrec && b < m) {
            if (rec[a].seq < o[b].seq) {
                a++;
            } else if (rec[a].seq > o[b].seq) {
                b++;
            } else {
                bool bad = false;
                if (rec[a].fast || o[b].fast) {
                    fast_seen++;
                    bad = !rec[a].fast || !o[b].fast || rec[a].h != o[b].h;
                } else if (rec[a].group == o[b].group && rec[a].group > 1) {
                    bad = rec[a].h != o[b].h;
                }
                if (bad && differ++ < 5)
                    fprintf(stderr, "[test] sequence %llu: fast %d group %d here, %d %d at rank %d\n",
                            (unsigned long long)rec[a].seq, rec[a].fast, rec[a].group, o[b].fast,
                            o[b].group, r);
                a++;
                b++;
            }
        }
        free(o);
    }
    fprintf(stderr, "[test] %zu sequence pairs on the fast path, %zu differ\n", fast_seen, differ);
    CHECK(fast_seen > 20 && differ == 0);
}

static int group_loop(int i, int n, int sig)
{
    setenv("COLLAB_SHM", "auto", 1);
    setenv("COLLAB_SHM_GROUP", "1", 1); /* the group path (the default), whatever the caller set */
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    s_world = collab_comm_world();
    CHECK(collab_barrier(s_world, NULL) == COLLAB_OK);
    const int victim = n - 1;
    pid_t helper = -1;
    pthread_t t;
    if (i == victim) {
        if (sig == SIGSTOP) /* the harm comes within 30 s */
            helper = test_fork_cont_on_mark(ALONE_MARK_NAME, 60, ALONE_WAIT_S);
        atomic_store(&s_sig, sig);
        CHECK(pthread_create(&t, NULL, harm, NULL) == 0);
    }
    double *x = malloc(NG * sizeof *x), *y = malloc(NG * sizeof *y);
    size_t nrec = 0, caprec = 1 << 14;
    grec_t *rec = malloc(caprec * sizeof *rec);
    CHECK(x != NULL && y != NULL && rec != NULL);
    double t0 = now_s(), slowest = 0;
    int it = 0, exact = 0, inexact = 0;
    bool in_step = true;
    test_count_mark_t alone_mark = {
        .name = ALONE_MARK_NAME, .need = ALONE_MARK, .min_s = ALONE_MARK_S};
    const bool mark_alone = i == 0 && sig == SIGSTOP;
    const double dur = sig == SIGSTOP ? 16.0 : 8.0;
    while (now_s() - t0 < dur ||
           (mark_alone && (alone_mark.marked ? now_s() < alone_mark.at + 3
                                             : now_s() - t0 < dur + ALONE_WAIT_S))) {
        for (size_t k = 0; k < NG; k++)
            x[k] = gin(i, it, k);
        bool before = atomic_load(&s_harmed) == 0;
        uint64_t f0 = test_fast_done(s_world);
        double c0 = now_s();
        CHECK(collab_allreduce(s_world, x, y, NG, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        double dt = now_s() - c0;
        slowest = dt > slowest ? dt : slowest;
        int was_fast = test_fast_done(s_world) != f0;
        collab_info_t info;
        CHECK(collab_last_info(&info) == COLLAB_OK);
        if (info.group_size != n || (i == victim && !before))
            in_step = false;
        uint64_t h = 0;
        int bad = 0;
        for (size_t k = 0; k < NG; k++) {
            double want = 0;
            for (int r = 0; r < n; r++)
                want += gin(r, it, k);
            if (in_step) {
                bad += memcmp(&y[k], &want, sizeof want) != 0;
            } else {
                /* n/m times the sum over m present ranks: within the
                   range of all such sums. */
                double lo = (double)n * gin(0, 0, 0) * 0.5, hi = want * (double)n;
                bad += !(y[k] >= lo && y[k] <= hi);
            }
            uint64_t b;
            memcpy(&b, &y[k], 8);
            h = hmix(h ^ b);
        }
        if (bad != 0 && bad < 10000)
            fprintf(stderr, "[test] rank %d: call %d (seq %llu, fast %d, group %d): %d bad\n", i,
                    it, (unsigned long long)info.sequence, was_fast, info.group_size, bad);
        CHECK(bad == 0);
        if (mark_alone) /* tell the victim's helper once the others went on without it */
            test_count_mark(&alone_mark, bad == 0 && info.group_size < n);
        exact += in_step;
        inexact += !in_step;
        if (nrec == caprec) {
            grec_t *r2 = realloc(rec, 2 * caprec * sizeof *rec);
            CHECK(r2 != NULL);
            if (r2 != NULL)
                rec = r2, caprec *= 2;
        }
        if (nrec < caprec)
            rec[nrec++] = (grec_t){info.sequence, h, was_fast, info.group_size};
        it++;
    }
    fprintf(stderr,
            "[test] rank %d: %d all-reduces (%d checked exactly), %llu on the fast path, "
            "slowest %.2f s\n",
            i, it, exact, (unsigned long long)test_fast_done(s_world), slowest);
    CHECK(test_fast_done(s_world) >= 40 || i == victim);
    CHECK(slowest < 15.0);
    if (i == 0)
        CHECK(inexact > 0); /* it went on without the victim */
    test_reap_cont_helper(helper); /* fails when the stop or the marker did not come */
    CHECK(collab_finalize() == COLLAB_OK);
    cross(i, n, sig, rec, nrec);
    free(rec);
    free(x);
    free(y);
    return 0;
}

int child_fast_group_kill(int i, int n)
{
    return group_loop(i, n, SIGKILL);
}

int child_fast_group_stop(int i, int n)
{
    return group_loop(i, n, SIGSTOP);
}

/* fast_group_rooted: reductions to a root and broadcasts of n peers of
   one host on a duplicate of the world (its group fast path starts at
   once), every root in turn, 24 B to 2.4 MiB, double and int32, SUM and
   MAX.  The inputs are small integers, exact in any order, so that every
   result is known here whichever path ran it: the root's reduction is
   the fold of all n inputs, the other ranks' receive buffers are
   untouched, every broadcast is the root's bytes.  A barrier follows
   every third call.  Most calls, and most barriers, must take the group
   fast path (a barrier on the engine path would end the grant). */
static double rin(int r, int it, size_t k)
{
    return (double)((r + 1) * (int)(k % 7) + it % 11 - 5);
}

int child_fast_group_rooted(int i, int n)
{
    setenv("COLLAB_SHM", "auto", 1);
    setenv("COLLAB_SHM_GROUP", "1", 1);
    if (collab_init(NULL) != COLLAB_OK)
        return 2;
    collab_comm_t *d = NULL;
    CHECK(collab_comm_dup(collab_comm_world(), &d) == COLLAB_OK && d != NULL);
    static const size_t counts[4] = {3, 1000, 70001, 300000};
    static const collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    static const collab_op_t max = {COLLAB_OP_MAX, NULL, NULL, 1};
    double *x = malloc(300000 * 8), *y = malloc(300000 * 8);
    CHECK(x != NULL && y != NULL);
    const int iters = 120;
    int fast = 0, bad = 0, barriers = 0, fast_barriers = 0;
    for (int it = 0; it < iters && x != NULL && y != NULL; it++) {
        bool reduce = it % 2 == 0, dbl = (it / 8) % 2 == 0;
        int root = (it / 2) % n;
        const collab_op_t *op = (it / 16) % 2 == 0 ? &sum : &max;
        size_t c = counts[(it / 2) % 4], bytes = c * (dbl ? 8 : 4);
        for (size_t k = 0; k < c; k++) {
            if (dbl)
                x[k] = rin(i, it, k);
            else
                ((int32_t *)x)[k] = (int32_t)rin(i, it, k);
        }
        memset(y, 0xa5, bytes);
        uint64_t f0 = test_fast_done(d);
        if (reduce) {
            CHECK(collab_reduce(d, x, i == root ? y : NULL, c, dbl ? COLLAB_DOUBLE : COLLAB_INT32,
                                op, root, NULL) == COLLAB_OK);
        } else {
            if (i == root)
                memcpy(y, x, bytes);
            CHECK(collab_bcast(d, y, bytes, root, NULL) == COLLAB_OK);
        }
        fast += test_fast_done(d) != f0;
        if (it % 3 == 0) { /* a barrier between every third pair of calls */
            uint64_t b0 = test_fast_done(d);
            CHECK(collab_barrier(d, NULL) == COLLAB_OK);
            barriers++;
            fast_barriers += test_fast_done(d) != b0;
        }
        for (size_t k = 0; k < c; k++) {
            double want = rin(root, it, k), got;
            if (reduce && i != root) {
                bad += ((uint8_t *)y)[k] != 0xa5;
                continue;
            }
            for (int r = 0; reduce && r < n; r++) {
                double v = rin(r, it, k);
                want = r == 0 ? v : op == &sum ? want + v : (v > want ? v : want);
            }
            got = dbl ? y[k] : (double)((int32_t *)y)[k];
            bad += got != want;
        }
    }
    fprintf(stderr,
            "[test] rank %d: %d of %d reductions to a root and broadcasts and %d of %d barriers "
            "on the group fast path, %d wrong elements\n",
            i, fast, iters, fast_barriers, barriers, bad);
    CHECK(bad == 0 && fast >= iters / 2 && fast_barriers >= barriers / 2);
    free(x);
    free(y);
    CHECK(collab_comm_free(&d) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}
