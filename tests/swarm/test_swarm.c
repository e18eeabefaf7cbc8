/*  test_swarm.c - multi-process swarm tests over loopback.

    Usage: test_swarm <scenario>.  The parent prepares what collab-run
    would (an identity file and a fixed loopback port per peer, peer 0
    without COLLAB_INITIAL_PEERS, the others listing every other peer),
    forks one process per peer, each calling collab_init with its
    environment, and waits for them under a deadline, killing them for
    real (SIGKILL) when it passes.  A child exits 0 when every check it
    made passed.

    Scenarios:
      basic       4 peers: every collective, nonblocking calls, p2p ring
                  and ANY_SOURCE, split/dup, a butterfly-sized allreduce
      kill        3 peers; rank 2 is SIGKILLed between collectives: the
                  others finish with 2 peers, agree bitwise, and receives
                  from rank 2 fail with COLLAB_ERR_PROC_FAILED
      kill0       the same with rank 0, the coordinator
      stop        rank 1 stops (SIGSTOP): found silent after COLLAB_TIMEOUT
      goodbye     rank 2 finalizes early: the others go on without waiting
      restart     rank 2 dies and is started again with the same identity file
                  and no COLLAB_RANK: it gets rank 2 back and talks to rank 0;
                  each of its processes sends ranks 0 and 1 300 messages
                  each (more than the initial credit), all received in
                  order
      client      rank 2 in client mode (binds nothing): collectives and p2p
      strict      COLLAB_STRICT=1; rank 2 dies: the others' next collective
                  fails with COLLAB_ERR_PROC_FAILED instead of hanging
      errors      joiners with a conflicting COLLAB_WORLD_SIZE,
                  COLLAB_TARGET_GROUP or COLLAB_AGGREGATION (CONFIG, the
                  error names both values)
                  and with the wrong COLLAB_SWARM_KEY (NETWORK) are refused
      passphrase  COLLAB_SWARM_PASSPHRASE: two peers with the same one
                  form a swarm and find it gone from their environment; a
                  third with another passphrase is refused (NETWORK).  The
                  founder sets COLLAB_AGGREGATION=centered_clip and the
                  joiner adopts it: a NaN contribution is left out at both
      unreachable initial peers that never answer: NETWORK after 30 s
                  (errors, passphrase, unreachable: test_swarm_join.c)
      standby     a peer that finds every rank held waits as a standby and
                  gives up with NETWORK once the swarm ends
      groups      5 peers, COLLAB_TARGET_GROUP=2 set by the founder and
                  peer 1 only (the others adopt the swarm's value): world
                  all-reduces run in groups of at most 2 that change every
                  collective; peers of one group agree bitwise, every pair
                  meets, the values x <- allreduce(x) / size converge to
                  the global mean with the sum kept; other collectives keep
                  the whole group
      sigterm     COLLAB_LEAVE_ON=SIGTERM: a peer that gets SIGTERM leaves
                  gracefully, then its program's own handler runs
      leave       collab_leave(): the same from the program; later calls
                  fail with COLLAB_ERR_LEFT
      group_wait  COLLAB_STRICT=1 and rank 2 never starts: the others'
                  first collective waits for the group and fails with
                  COLLAB_ERR_TIMEOUT once the wait's limit passed (the
                  deadline _coll arms in the loop's set: nothing else
                  wakes it)
      strict_leave  COLLAB_STRICT=1: a collective that needs a rank that
                  finalized fails with COLLAB_ERR_PROC_FAILED
      bandwidth   4 peers, one declaring a slower link: parts sized by the
                  figures (each member's traffic), exact sums; a member
                  killed mid all-reduce: the survivors agree bitwise
      bandwidth_v6  the same with rank 2 at wire version 6: equal parts
      bandwidth_claims  absurd figures (4 Tbit/s, 1 kbit/s): parts bounded
      weight      3 peers; every rank changes its weight mid-loop: no
                  error, every result a weighted sum, the new weights in
                  effect after a barrier
      fast_bits, fast_kill, fast_stop  2 peers of one host: small
                  collectives on the calling thread (test_swarm_fast.c)
      fast_big_kill, fast_big_stop  the same with 2 MiB all-reduces (the
                  big fast path), the signal landing mid-transfer
      fast_group3_kill, fast_group4_kill, fast_group4_stop  3 or 4 peers of
                  one host: 4 MiB all-reduces on the group fast path, the
                  last rank killed or stopped amid them (test_swarm_fastgroup.c)
      fast_group_rooted  4 peers of one host: reductions to a root,
                  broadcasts (every root in turn) and barriers on the
                  group fast path
      engine_stop  fast_stop on the engine path (COLLAB_SHM_FAST=0): a
                  member continued after SIGSTOP agrees with the other on
                  every sequence either completed in a group
      unexpected  3 peers; ranks 1 and 2 send rank 0 10008 messages each
                  before it posts a receive: every one arrives intact and
                  rank 0's memory stays bounded (test_swarm_unexpected.c)
      flow        3 peers, bounds of 100 messages and 1 MiB per sender;
                  ranks 1 and 2 send rank 0 ten times that ahead of its
                  receives, then a synchronous send: all arrive intact and
                  in order, and rank 0 holds only its grants
                  (test_swarm_flow.c)
      flow_v5     the same with rank 2 at wire version 5: its links keep
                  the behaviour of before (test_swarm_flow.c)
      flow_net    flow over CurveZMQ (COLLAB_SHM=0) instead of the rings
      shm_p2p, shm_p2p_kill  2 peers of one host: point-to-point messages
                  through the rings, whole and in order; a sender killed
                  amid them (test_swarm_shm_p2p.c)
      early       3 peers, bounds of 100 messages per sender; ranks 1 and
                  2 run 1000 reduces to root 0 before rank 0 calls its
                  first: every result exact, nothing dropped, nobody
                  banned, rank 0's memory bounded (test_swarm_early.c)
      early_comms the same across two communicators: rank 0's reduce on B
                  waits for a message behind 150 on A (test_swarm_early.c)
*/
#include "test_swarm.h"
#include "mpi_collab.h"
#include "test_peers.h"
#include "util/cl_identity.h"
#include "util/cl_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Scenarios (run in the children). */

static int child_basic(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] rank %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    CHECK(collab_comm_rank(w) == i && collab_comm_size(w) == n);

    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    collab_info_t info;
    CHECK(collab_last_info(&info) == COLLAB_OK && info.group_size == n && info.nranks == n);

    /* A butterfly-sized allreduce (above the one-round threshold). */
    size_t cnt = 300000;
    float *big = malloc(cnt * sizeof(float)), *res = malloc(cnt * sizeof(float));
    for (size_t k = 0; k < cnt; k++)
        big[k] = (float)(i + 1 + (int)(k % 7));
    CHECK(collab_allreduce(w, big, res, cnt, COLLAB_FLOAT, &SUM, NULL) == COLLAB_OK);
    bool ok = true;
    for (size_t k = 0; k < cnt && ok; k++)
        ok = res[k] == (float)(n * (n + 1) / 2 + n * (int)(k % 7));
    CHECK(ok);
    /* In place, int, MAX. */
    int iv[2] = {i, -i};
    CHECK(collab_allreduce(w, NULL, iv, 2, COLLAB_INT32, &MAX, NULL) == COLLAB_OK);
    CHECK(iv[0] == n - 1 && iv[1] == 0);

    /* Bcast from rank 2 (100 KB). */
    size_t bl = 100000;
    unsigned char *b = malloc(bl);
    for (size_t k = 0; k < bl; k++)
        b[k] = i == 2 ? (unsigned char)(k * 31) : 0;
    CHECK(collab_bcast(w, b, bl, 2, NULL) == COLLAB_OK);
    ok = true;
    for (size_t k = 0; k < bl && ok; k++)
        ok = b[k] == (unsigned char)(k * 31);
    CHECK(ok);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);

    /* Gather family. */
    size_t counts[MAXP], displs[MAXP];
    int all[MAXP];
    for (int r = 0; r < n; r++) {
        counts[r] = sizeof(int);
        displs[r] = (size_t)r * sizeof(int);
    }
    int mine = 100 + i;
    CHECK(collab_allgatherv(w, &mine, sizeof mine, all, counts, displs, NULL) == COLLAB_OK);
    for (int r = 0; r < n; r++)
        CHECK(all[r] == 100 + r);
    memset(all, 0, sizeof all);
    CHECK(collab_gatherv(w, &mine, sizeof mine, all, counts, displs, 1, NULL) == COLLAB_OK);
    if (i == 1)
        for (int r = 0; r < n; r++)
            CHECK(all[r] == 100 + r);
    int sc[MAXP], got = -1;
    for (int r = 0; r < n; r++)
        sc[r] = 200 + r;
    CHECK(collab_scatterv(w, sc, counts, displs, &got, sizeof got, 3, NULL) == COLLAB_OK);
    CHECK(got == 200 + i);
    int a2a_in[MAXP], a2a_out[MAXP];
    for (int r = 0; r < n; r++)
        a2a_in[r] = i * 10 + r;
    CHECK(collab_alltoall(w, a2a_in, a2a_out, sizeof(int), NULL) == COLLAB_OK);
    for (int r = 0; r < n; r++)
        CHECK(a2a_out[r] == r * 10 + i);
    double red_in = i + 1, red = 0;
    CHECK(collab_reduce(w, &red_in, &red, 1, COLLAB_DOUBLE, &SUM, 0, NULL) == COLLAB_OK);
    if (i == 0)
        CHECK(red == n * (n + 1) / 2.0);
    double rs_in[MAXP], rs_out = 0;
    for (int r = 0; r < n; r++)
        rs_in[r] = r + i;
    CHECK(collab_reduce_scatter_block(w, rs_in, &rs_out, 1, COLLAB_DOUBLE, &SUM, NULL) ==
          COLLAB_OK);
    CHECK(rs_out == n * i + n * (n - 1) / 2.0);

    /* Nonblocking: two outstanding. */
    collab_request_t *q1 = NULL, *q2 = NULL;
    double nx = 1, ny = 0;
    CHECK(collab_allreduce(w, &nx, &ny, 1, COLLAB_DOUBLE, &SUM, &q1) == COLLAB_OK);
    CHECK(collab_barrier(w, &q2) == COLLAB_OK);
    CHECK(collab_wait(&q2, NULL) == COLLAB_OK);
    CHECK(collab_wait(&q1, NULL) == COLLAB_OK && ny == n);

    /* Point-to-point: a ring, then everyone to rank 0 with ANY_SOURCE. */
    int token = i * 1000, in = -1;
    collab_status_info_t st;
    collab_request_t *rr = NULL;
    CHECK(collab_recv(w, &in, sizeof in, (i + n - 1) % n, 7, NULL, &rr) == COLLAB_OK);
    CHECK(collab_send(w, &token, sizeof token, (i + 1) % n, 7, NULL) == COLLAB_OK);
    CHECK(collab_wait(&rr, &st) == COLLAB_OK);
    CHECK(in == ((i + n - 1) % n) * 1000 && st.source == (i + n - 1) % n && st.tag == 7);
    if (i != 0) {
        CHECK(collab_send(w, &i, sizeof i, 0, 40 + i, NULL) == COLLAB_OK);
    } else {
        int seen = 0;
        for (int k = 1; k < n; k++) {
            int who = -1;
            CHECK(collab_recv(w, &who, sizeof who, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, &st, NULL) ==
                  COLLAB_OK);
            CHECK(who == st.source && st.tag == 40 + who);
            seen |= 1 << who;
        }
        CHECK(seen == ((1 << n) - 2));
    }
    /* Mprobe from a peer. */
    if (i == 1) {
        double pv = 3.25;
        CHECK(collab_send(w, &pv, sizeof pv, 2, 99, NULL) == COLLAB_OK);
    } else if (i == 2) {
        int flag = 0;
        collab_message_t *m = NULL;
        CHECK(collab_probe(w, 1, 99, 1, &flag, &st, &m) == COLLAB_OK && flag == 1);
        double pv = 0;
        CHECK(st.bytes == sizeof pv);
        CHECK(collab_mrecv(&m, &pv, sizeof pv, &st) == COLLAB_OK && pv == 3.25);
    }

    /* Split by parity, reversed key order; dup. */
    collab_comm_t *sp = NULL, *d = NULL;
    CHECK(collab_comm_split(w, i % 2, -i, &sp) == COLLAB_OK && sp != NULL);
    int members = (n + 1 - i % 2) / 2;
    CHECK(collab_comm_size(sp) == members);
    double sx = i + 1, sy = 0, expect = 0;
    for (int r = i % 2; r < n; r += 2)
        expect += r + 1;
    CHECK(collab_allreduce(sp, &sx, &sy, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(sy == expect);
    /* Highest world rank of the colour is rank 0 (key -i). */
    int top = -1;
    for (int r = i % 2; r < n; r += 2)
        top = r;
    CHECK(collab_comm_world_rank_of(sp, 0) == top);
    CHECK(collab_comm_dup(w, &d) == COLLAB_OK);
    CHECK(collab_allreduce(d, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    CHECK(collab_comm_free(&sp) == COLLAB_OK);
    CHECK(collab_comm_free(&d) == COLLAB_OK);

    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    free(big);
    free(res);
    free(b);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Survivors run allreduces until the group has shrunk, then check the
   swarm rule and that they agree bitwise. */
static void survive(collab_comm_t *w, int i, int n, int victim)
{
    double t0 = now_s();
    double y = 0;
    collab_info_t info = {0};
    int iters = 0;
    do {
        double x = i + 1;
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&info) == COLLAB_OK);
        iters++;
    } while (info.group_size == n && now_s() - t0 < 30 && iters < 100000);
    CHECK(info.group_size == n - 1);
    double sum = 0;
    for (int r = 0; r < n; r++)
        if (r != victim)
            sum += r + 1;
    CHECK(y == n * sum / (n - 1)); /* absent rank counted as the mean */
    double hi = 0, lo = 0;
    CHECK(collab_allreduce(w, &y, &hi, 1, COLLAB_DOUBLE, &MAX, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(w, &y, &lo, 1, COLLAB_DOUBLE, &MIN, NULL) == COLLAB_OK);
    CHECK(hi == lo && hi == y);
    /* The dead rank: sends and receives fail instead of hanging. */
    int v = 0;
    CHECK(collab_recv(w, &v, sizeof v, victim, 0, NULL, NULL) == COLLAB_ERR_PROC_FAILED);
    CHECK(collab_send(w, &v, sizeof v, victim, 0, NULL) == COLLAB_ERR_PROC_FAILED);
    fprintf(stderr, "[test] rank %d: went on without rank %d after %.2f s (%d allreduces)\n", i,
            victim, now_s() - t0, iters);
}

static int s_victim = 2;

static int child_kill(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == s_victim)
        raise(SIGKILL);
    survive(w, i, n, s_victim);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_stop(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double t0 = now_s();
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == s_victim)
        raise(SIGSTOP);
    survive(w, i, n, s_victim);
    /* Silence is only noticed after COLLAB_TIMEOUT (2 s); the others may
       still have been in the barrier when the victim stopped. */
    CHECK(now_s() - t0 >= 1.5);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_goodbye(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    if (i == s_victim) {
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    double t0 = now_s();
    survive(w, i, n, s_victim);
    /* A goodbye is acted on at once: no COLLAB_TIMEOUT (5 s here) wait. */
    CHECK(now_s() - t0 < 3.0);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_client(int i, int n)
{
    if (i == 2) {
        setenv("COLLAB_CLIENT_MODE", "1", 1);
        unsetenv("COLLAB_LISTEN");
    }
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[test] rank %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    CHECK(collab_comm_rank(w) == i);
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    size_t cnt = 100000;
    double *big = malloc(cnt * sizeof(double)), *res = malloc(cnt * sizeof(double));
    for (size_t k = 0; k < cnt; k++)
        big[k] = (double)(i * 3 + (int)(k % 5));
    CHECK(collab_allreduce(w, big, res, cnt, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    bool ok = true;
    for (size_t k = 0; k < cnt && ok; k++)
        ok = res[k] == (double)(3 * n * (n - 1) / 2 + n * (int)(k % 5));
    CHECK(ok);
    char msg[32] = "";
    if (i == 2)
        snprintf(msg, sizeof msg, "from the client");
    CHECK(collab_bcast(w, msg, sizeof msg, 2, NULL) == COLLAB_OK);
    CHECK(strcmp(msg, "from the client") == 0);
    /* p2p both ways between the client and a public peer. */
    int v = 0;
    collab_status_info_t st;
    if (i == 0) {
        int out = 77;
        CHECK(collab_send(w, &out, sizeof out, 2, 1, NULL) == COLLAB_OK);
        CHECK(collab_recv(w, &v, sizeof v, 2, 2, &st, NULL) == COLLAB_OK && v == 78);
    } else if (i == 2) {
        CHECK(collab_recv(w, &v, sizeof v, 0, 1, &st, NULL) == COLLAB_OK && v == 77);
        v++;
        CHECK(collab_send(w, &v, sizeof v, 0, 2, NULL) == COLLAB_OK);
    }
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    free(big);
    free(res);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_strict(int i, int n)
{
    setenv("COLLAB_STRICT", "1", 1);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(y == n * (n + 1) / 2.0);
    /* The victim may die while the others are still in the barrier: that
       barrier then fails already. */
    rc = collab_barrier(w, NULL);
    if (i == s_victim)
        raise(SIGKILL);
    CHECK(rc == COLLAB_OK || rc == COLLAB_ERR_PROC_FAILED);
    double t0 = now_s();
    while (rc == COLLAB_OK && now_s() - t0 < 30)
        rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
    CHECK(rc == COLLAB_ERR_PROC_FAILED);
    /* And it stays failed: the world is no longer whole. */
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_ERR_PROC_FAILED);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

static int child_group_wait(int i, int n)
{
    (void)n;
    if (i == 2)
        return 0; /* never comes: the group of all 3 ranks cannot form */
    setenv("COLLAB_STRICT", "1", 1);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0, t0 = now_s();
    rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
    double waited = now_s() - t0;
    CHECK(rc == COLLAB_ERR_TIMEOUT);
    /* eng_group_wait_limit(5) = 30 s, plus COLLAB_MATCHMAKING_TIME (5 s)
       before the group forms. */
    CHECK(waited > 30 && waited < 50);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

#define RESTART_MSGS 300 /* each process of rank 2 sends rank 0 */

static int child_restart(int i, int n)
{
    (void)n;
    bool again = getenv("TEST_SWARM_AGAIN") != NULL;
    if (again)
        unsetenv("COLLAB_RANK");
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    CHECK(collab_comm_rank(w) == i);
    if (again) {
        /* The identity's old rank is given back; the group has moved on
           (admission of joiners is not the engine's first milestone), but
           point-to-point works. */
        int v = 1234;
        CHECK(collab_send(w, &v, sizeof v, 0, 5, NULL) == COLLAB_OK);
        /* More than the initial credit (docs/wire.md section 10): rank 0
           counted the first process's messages, and this one's must not
           wait for a credit that never comes. */
        for (int t = 0; t < RESTART_MSGS; t++)
            for (int to = 0; to < 2; to++)
                CHECK(collab_send(w, &t, sizeof t, to, 200, NULL) == COLLAB_OK);
        CHECK(collab_recv(w, &v, sizeof v, 0, 6, NULL, NULL) == COLLAB_OK && v == 4321);
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == 2) {
        for (int t = 0; t < RESTART_MSGS; t++)
            for (int to = 0; to < 2; to++)
                CHECK(collab_send(w, &t, sizeof t, to, 100, NULL) == COLLAB_OK);
        int v = 0;
        for (int from = 0; from < 2; from++) /* all taken */
            CHECK(collab_recv(w, &v, sizeof v, from, 7, NULL, NULL) == COLLAB_OK);
        raise(SIGKILL);
    }
    if (i == 1) {
        /* Not the coordinator: it learns of the restart from views. */
        int v = 0;
        for (int t = 0; t < RESTART_MSGS; t++)
            CHECK(collab_recv(w, &v, sizeof v, 2, 100, NULL, NULL) == COLLAB_OK && v == t);
        CHECK(collab_send(w, &v, sizeof v, 2, 7, NULL) == COLLAB_OK);
        /* From any source until the new process of rank 2 is a member
           (a receive from an absent rank fails at once). */
        collab_status_info_t st;
        for (int t = 0; t < RESTART_MSGS; t++) {
            v = -1;
            memset(&st, 0, sizeof st);
            int rc = collab_recv(w, &v, sizeof v, t == 0 ? COLLAB_ANY_SOURCE : 2, 200, &st, NULL);
            if (rc != COLLAB_OK || v != t || st.source != 2)
                fprintf(stderr, "[test] rank 1: receive %d: status %d, value %d, source %d\n", t,
                        rc, v, st.source);
            CHECK(rc == COLLAB_OK && v == t && st.source == 2);
        }
    }
    if (i == 0) {
        int v = 0;
        collab_status_info_t st;
        for (int t = 0; t < RESTART_MSGS; t++)
            CHECK(collab_recv(w, &v, sizeof v, 2, 100, NULL, NULL) == COLLAB_OK && v == t);
        CHECK(collab_send(w, &v, sizeof v, 2, 7, NULL) == COLLAB_OK);
        CHECK(collab_recv(w, &v, sizeof v, COLLAB_ANY_SOURCE, 5, &st, NULL) == COLLAB_OK);
        CHECK(v == 1234 && st.source == 2);
        for (int t = 0; t < RESTART_MSGS; t++)
            CHECK(collab_recv(w, &v, sizeof v, 2, 200, NULL, NULL) == COLLAB_OK && v == t);
        v = 4321;
        CHECK(collab_send(w, &v, sizeof v, 2, 6, NULL) == COLLAB_OK);
    }
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Peers 0 and 1 hold the 2 ranks of the world; peer 2 (started a moment
   later, without rank or world size) waits as a standby.  Peers 0 and 1
   train a little and leave; the standby must then give up with
   COLLAB_ERR_NETWORK within max(30 s, 4 x COLLAB_TIMEOUT) plus slack,
   saying why, instead of waiting for ever. */
static int child_standby(int i, int n)
{
    (void)n;
    if (i < 2) {
        setenv("COLLAB_WORLD_SIZE", "2", 1);
        if (collab_init(NULL) != COLLAB_OK)
            return 2;
        /* The same number of all-reduces on both (about 4 s): the
           standby asks meanwhile. */
        for (int step = 0; step < 80; step++) {
            double x = 1.0 + i, y = 0.0;
            CHECK(collab_allreduce(collab_comm_world(), &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) ==
                  COLLAB_OK);
            CHECK(y == 3.0);
            usleep(50 * 1000);
        }
        CHECK(collab_finalize() == COLLAB_OK);
        return 0;
    }
    char log[512];
    snprintf(log, sizeof log, "%s/log%d", s_dir, i);
    unlink(log);
    setenv("COLLAB_LOG_FILE", log, 1);
    unsetenv("COLLAB_WORLD_SIZE");
    unsetenv("COLLAB_RANK");
    usleep(1500 * 1000);
    double t0 = now_s();
    CHECK(collab_init(NULL) == COLLAB_ERR_NETWORK);
    double el = now_s() - t0;
    CHECK(el < 50.0);
    CHECK(!collab_initialized());
    const char *want[] = {"waiting as a standby",
                          "the swarm this peer waited for as a standby has not answered"};
    CHECK(file_has(log, want, 2));
    unlink(log);
    return 0;
}

/* The restarted rank 2 of scenario restart. */
static void env_again(int k)
{
    (void)k;
    setenv("TEST_SWARM_AGAIN", "1", 1);
}

/* The scenarios that run() runs as they are: n peers of fn under a
   deadline; `victim` (-1: none) is the rank the scenario harms, and may
   die of a signal when `killed`; `timeout` overrides COLLAB_TIMEOUT. */
typedef struct {
    const char *name;
    int n;
    child_fn fn;
    double deadline;
    int victim;
    bool killed;
    const char *timeout;
} scenario_t;

static const scenario_t s_scenarios[] = {
    {"basic", 4, child_basic, 90, -1, false, NULL},
    {"kill", 3, child_kill, 90, 2, true, NULL},
    {"kill0", 3, child_kill, 90, 0, true, NULL},
    {"stop", 3, child_stop, 90, 1, true, NULL},
    {"goodbye", 3, child_goodbye, 90, 2, false, "5"},
    {"client", 3, child_client, 90, -1, false, NULL},
    {"strict", 3, child_strict, 90, 2, true, NULL},
    {"standby", 3, child_standby, 90, -1, false, NULL},
    {"groups", 5, child_groups, 120, -1, false, NULL},
    {"strict_leave", 3, child_strict_leave, 90, -1, false, "5"},
    {"group_wait", 3, child_group_wait, 90, 2, false, "5"},
    {"weight", 3, child_weight, 90, -1, false, NULL},
    {"bandwidth", 4, child_bandwidth, 90, 1, true, NULL},
    {"bandwidth_v6", 4, child_bandwidth_v6, 90, -1, false, NULL},
    {"bandwidth_claims", 4, child_bandwidth_claims, 90, -1, false, NULL},
    {"adaptive", 4, child_adaptive, 90, -1, false, NULL},
    {"monitor", 4, child_monitor, 90, -1, false, NULL},
    {"monitor_fast", 3, child_monitor_fast, 90, -1, false, NULL},
    {"shm_kill", 3, child_shm_kill, 90, 2, true, NULL},
    {"shm_p2p", 2, child_shm_p2p, 90, -1, false, "10"},
    {"shm_p2p_kill", 2, child_shm_p2p_kill, 90, 1, true, NULL},
    {"fast_bits", 2, child_fast_bits, 120, -1, false, NULL},
    {"fast_kill", 2, child_fast_kill, 90, 1, true, NULL},
    {"fast_stop", 2, child_fast_stop, 90, 1, false, NULL},
    {"engine_stop", 2, child_engine_stop, 90, 1, false, NULL},
    {"fast_big_kill", 2, child_fast_big_kill, 90, 1, true, NULL},
    {"fast_big_stop", 2, child_fast_big_stop, 90, 1, false, NULL},
    {"fast_group3_kill", 3, child_fast_group_kill, 120, 2, true, NULL},
    {"fast_group4_kill", 4, child_fast_group_kill, 120, 3, true, NULL},
    {"fast_group4_stop", 4, child_fast_group_stop, 120, 3, false, NULL},
    {"fast_group_rooted", 4, child_fast_group_rooted, 120, -1, false, NULL},
    {"unexpected", 3, child_unexpected, 90, -1, false, NULL},
    {"streams", 3, child_streams, 90, 2, true, "2"},
    {"flow", 3, child_flow, 90, -1, false, NULL},
    {"flow_v5", 3, child_flow_v5, 90, -1, false, NULL},
    {"flow_net", 3, child_flow_net, 90, -1, false, NULL},
    {"early", 3, child_early, 90, -1, false, NULL},
    {"early_comms", 3, child_early_comms, 90, -1, false, NULL},
};

/* The harness's ports (test_peers_prepare): distinct within a test, and
   outside the kernel's ephemeral range, where an outbound connection (or
   a peer dialling a port before its owner listens, connecting to itself)
   could take one first.  Before, two peers of one test were once given
   the same port (swarm_fast_group3_kill in CI), and every port came from
   that range. */
static int check_ports(void)
{
    int lo, hi, bad = 0;
    cl_port_ephemeral(NULL, &lo, &hi);
    for (int round = 0; round < 200 && bad == 0; round++) {
        prepare(MAXP);
        for (int i = 0; i < MAXP; i++) {
            if (s_port[i] >= lo && s_port[i] <= hi) {
                fprintf(stderr, "[test] port %d is in the ephemeral range %d-%d\n", s_port[i], lo,
                        hi);
                bad++;
            }
            for (int j = 0; j < i; j++)
                if (s_port[j] == s_port[i]) {
                    fprintf(stderr, "[test] peers %d and %d both got port %d\n", j, i, s_port[i]);
                    bad++;
                }
        }
        cleanup_dir(MAXP);
    }
    return bad == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "basic";
    int rc;
    const scenario_t *t = NULL;
    for (size_t k = 0; k < sizeof s_scenarios / sizeof s_scenarios[0] && t == NULL; k++)
        if (strcmp(sc, s_scenarios[k].name) == 0)
            t = &s_scenarios[k];
    if (t != NULL) {
        if (t->timeout != NULL)
            setenv("COLLAB_TIMEOUT", t->timeout, 1);
        s_victim = t->victim;
        prepare(t->n);
        rc = run(t->n, t->fn, sc, t->deadline, t->victim >= 0 && t->killed ? 1u << t->victim : 0);
        cleanup_dir(t->n);
    } else if (strcmp(sc, "restart") == 0) {
        prepare(3);
        pid_t p[4];
        for (int i = 0; i < 3; i++)
            p[i] = fork_child(i, 3, sc, child_restart, NULL);
        int st[4];
        waitpid(p[2], &st[2], 0); /* the first rank 2 kills itself */
        p[3] = fork_child(2, 3, sc, child_restart, env_again);
        waitpid(p[0], &st[0], 0);
        waitpid(p[1], &st[1], 0);
        waitpid(p[3], &st[3], 0);
        st[2] = 0; /* killed itself, as it should */
        rc = failed(st, 4, "process");
        cleanup_dir(3);
    } else if (strcmp(sc, "errors") == 0) {
        rc = scenario_errors(sc);
    } else if (strcmp(sc, "passphrase") == 0) {
        rc = scenario_passphrase(sc);
    } else if (strcmp(sc, "unreachable") == 0) {
        rc = scenario_unreachable(sc);
    } else if (strcmp(sc, "sigterm") == 0 || strcmp(sc, "leave") == 0) {
        bool sig = strcmp(sc, "sigterm") == 0;
        setenv("COLLAB_TIMEOUT", "5", 1);
        prepare(3);
        unlink(leave_marker_path());
        rc = run(3, sig ? child_sigterm_leave : child_call_leave, sc, 90, 0);
        if (sig && access(leave_marker_path(), F_OK) != 0) {
            fprintf(stderr, "[test] the program's own SIGTERM handler did not run\n");
            rc = 1;
        }
        unlink(leave_marker_path());
        cleanup_dir(3);
    } else if (strcmp(sc, "ports") == 0) {
        rc = check_ports();
    } else {
        fprintf(stderr,
                "usage: test_swarm basic|kill|kill0|stop|goodbye|client|strict|errors|"
                "unreachable|standby|groups|weight|sigterm|leave|strict_leave|group_wait|monitor|"
                "monitor_fast|"
                "shm_kill|shm_p2p|shm_p2p_kill|fast_bits|fast_kill|fast_stop|engine_stop|fast_big_"
                "kill|fast_big_stop|\n"
                "fast_group3_kill|fast_group4_kill|fast_group4_stop|fast_group_rooted|\n"
                "unexpected|flow|flow_v5|flow_net|early|"
                "early_comms|bandwidth|bandwidth_v6|bandwidth_claims|adaptive|ports\n");
        return 2;
    }
    fprintf(stderr, "[test] %s: %s\n", sc, rc == 0 ? "passed" : "FAILED");
    return rc;
}
