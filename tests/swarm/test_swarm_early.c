/*  test_swarm_early.c - scenarios "early" and "early_comms" of test_swarm:
    with flow control of collective messages (docs/wire.md section 10,
    class EARLY) a program whose members run many collectives ahead of a
    slow one loses nothing, bans nobody, and the slow one's memory stays
    bounded.

    Scenario "early": three peers, COLLAB_MAX_UNEXPECTED_MSGS=100 (each
    sender may hold 100 early messages at rank 0).  Ranks 1 and 2 run
    ROUNDS (1000) reduces of 8 integers to root 0 on the world: their part
    of each only sends, and completes here at once (the messages past the
    grant wait in their own FIFO), so they finish every reduce before rank
    0 calls its first.  Rank 0 sleeps a second, then runs its reduces and
    compares every result exactly.  Without flow control rank 0 would keep
    100 of each sender's messages and drop the rest.  Its resident set
    grows by less than 4 MiB while they wait; its log names no dropped
    collective message and no ban.

    Scenario "early_comms": the cross-communicator case.  Two duplicates
    of the world, A and B.  Ranks 1 and 2 run AHEAD (150) reduces to root
    0 on A, then one on B; rank 0 runs the reduce on B first, then its
    reduces on A.  The message rank 0's B reduce waits for sits behind 150
    A messages in each sender's FIFO, and 100 of those fill rank 0's
    grant: only the overdraft of a stalled running collective (one
    message beyond the bound per round trip, up to twice the window)
    lets it through.  Every result is compared exactly,
    nobody is banned and nothing dropped.
*/
#include "test_swarm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 1000
#define AHEAD 150 /* reduces on A ahead of B: past the window, within twice it */
#define COUNT 8

static const collab_op_t ISUM = {COLLAB_OP_SUM, NULL, NULL, 1};

/* Rank r's input to reduce k. */
static void input(int64_t *v, int r, int k)
{
    for (int j = 0; j < COUNT; j++)
        v[j] = (int64_t)r * 1000003 + (int64_t)k * 17 + j;
}

/* Runs reduce k on c as rank i of n; at root 0 returns 1 when its result
   is not the exact sum. */
static int reduce_one(collab_comm_t *c, int i, int n, int k)
{
    int64_t in[COUNT], out[COUNT], want[COUNT];
    input(in, i, k);
    memset(out, 0, sizeof out);
    if (collab_reduce(c, in, out, COUNT, COLLAB_INT64, &ISUM, 0, NULL) != COLLAB_OK)
        return 1;
    if (i != 0)
        return 0;
    memset(want, 0, sizeof want);
    for (int r = 0; r < n; r++) {
        int64_t x[COUNT];
        input(x, r, k);
        for (int j = 0; j < COUNT; j++)
            want[j] += x[j];
    }
    return memcmp(out, want, sizeof want) != 0;
}

/* Checks that rank 0's log names no drop of a collective message and no
   ban (and shows the lines that do).  (Other drops are no concern here:
   under load a VIEW of a peer that is not yet this one's coordinator may
   be dropped while the swarm forms.) */
static void clean_log(const char *log)
{
    test_clean_log(log, "collective message");
}

int child_early(int i, int n)
{
    setenv("COLLAB_MAX_UNEXPECTED_MSGS", "100", 1);
    char log[512];
    collab_comm_t *w = test_join(i, "earlylog", log, sizeof log);
    if (w == NULL)
        return 2;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    long before = test_self_rss_kib();
    int wrong = 0;
    if (i > 0) {
        double t0 = now_s();
        for (int k = 0; k < ROUNDS; k++)
            wrong += reduce_one(w, i, n, k);
        fprintf(stderr, "[test] rank %d: %d reduces done here in %.2f s\n", i, ROUNDS,
                now_s() - t0);
        CHECK(wrong == 0);
    } else {
        usleep(1000 * 1000);
        long queued = test_self_rss_kib();
        for (int k = 0; k < ROUNDS; k++)
            wrong += reduce_one(w, i, n, k);
        fprintf(stderr,
                "[test] rank 0: %d reduces, %d wrong; RSS %ld KiB before, %ld KiB while the "
                "others ran ahead (+%ld KiB)\n",
                ROUNDS, wrong, before, queued, queued - before);
        CHECK(wrong == 0);
#if !defined(__SANITIZE_ADDRESS__) /* ASan's quarantine and shadow memory */
        CHECK(before > 0 && queued - before < 4 * 1024);
#endif
    }
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    if (i == 0)
        clean_log(log);
    unlink(log);
    return 0;
}

int child_early_comms(int i, int n)
{
    setenv("COLLAB_MAX_UNEXPECTED_MSGS", "100", 1);
    char log[512];
    collab_comm_t *w = test_join(i, "earlylog", log, sizeof log);
    if (w == NULL)
        return 2;
    collab_comm_t *a = NULL, *b = NULL;
    CHECK(collab_comm_dup(w, &a) == COLLAB_OK && a != NULL);
    CHECK(collab_comm_dup(w, &b) == COLLAB_OK && b != NULL);
    if (a == NULL || b == NULL)
        return 1;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    int wrong = 0;
    double t0 = now_s();
    if (i > 0) {
        for (int k = 0; k < AHEAD; k++)
            wrong += reduce_one(a, i, n, k);
        wrong += reduce_one(b, i, n, AHEAD);
    } else {
        wrong += reduce_one(b, i, n, AHEAD);
        fprintf(stderr, "[test] rank 0: the reduce on B done after %.2f s\n", now_s() - t0);
        for (int k = 0; k < AHEAD; k++)
            wrong += reduce_one(a, i, n, k);
    }
    fprintf(stderr, "[test] rank %d: %d reduces on A and one on B in %.2f s, %d wrong\n", i,
            AHEAD, now_s() - t0, wrong);
    CHECK(wrong == 0);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    CHECK(collab_comm_free(&a) == COLLAB_OK);
    CHECK(collab_comm_free(&b) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    if (i == 0)
        clean_log(log);
    unlink(log);
    return 0;
}
