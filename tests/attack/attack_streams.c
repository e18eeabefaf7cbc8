/*  attack_streams.c - the engine's bounds on messages it keeps for later
    (docs/security-bounds.md §5): a hostile member that stays alive against the
    streams of communicators nobody creates, and a stranger against the
    held queue.  Scenarios of the attack program (attack.c).

      streams     3 members, COLLAB_MAX_STREAMS=8 and
                  COLLAB_MAX_STREAMS_PER_PEER=8 on every peer.  Once armed,
                  peer 2 sends each other peer one collective message for
                  each of 8 communicators nobody creates, filling their
                  tables, and stays alive and honest otherwise.  After 12 s
                  (longer than 4 x COLLAB_TIMEOUT), peer 0 duplicates the
                  world (a local call) and runs an all-reduce on the
                  duplicate at once, peer 2 too; peer 1 creates its
                  duplicate 10 s later still (an honest program that
                  creates a communicator late).  Old: peer 1's table was
                  full for good, so the early messages of peers 0 and 2
                  for the new communicator were dropped (named with
                  COLLAB_MAX_STREAMS) and its all-reduce on it never got
                  them.  Now: the hostile streams leave the table after 4 x
                  COLLAB_TIMEOUT with their messages, nothing of the honest
                  peers is dropped, and the three all-reduces on the
                  duplicate are right.
      held        a stranger sends rank 0 100 collective messages at
                  COLLAB_MAX_HELD_MSGS=10 (see sc_held).
*/
#include "attack.h"
#include "coll/cl_coll_impl.h"
#include "engine/cl_comm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define ORPHANS 8

static void *s_done[MAXP]; /* DEALERs the hostile messages went out on */

static void orphan_after(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t len)
{
    (void)body;
    (void)len;
    if (!atomic_load(&s_armed))
        return; /* then with the first message to each peer (a heartbeat at the latest) */
    int k;
    for (k = 0; k < MAXP && s_done[k] != NULL && s_done[k] != sock; k++)
        ;
    if (k == MAXP || s_done[k] == sock)
        return;
    s_done[k] = sock;
    static const uint8_t payload[64];
    for (int c = 0; c < ORPHANS; c++) {
        cl_wire_hdr_t ch;
        memset(&ch, 0, sizeof ch);
        ch.type = CL_MSG_COLL;
        ch.sub = CL_MSG_DATA;
        ch.run = h->run;
        ch.epoch = h->epoch;
        ch.comm = 0x0bad0000u + (uint64_t)c;
        ch.seq = 0;
        harness_inject(sock, ch, payload, sizeof payload);
    }
}

static const harness_wrap_t s_orphan_wrap = {NULL, NULL, orphan_after, NULL, NULL};

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int streams_peer(int i, int n)
{
    (void)n;
    if (i == 2)
        harness_wrap(&s_orphan_wrap);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    double x = i + 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    rendezvous();
    /* The hostile messages go out with the next message to each peer. */
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == 6);
    nap(12);
    if (i == 1)
        nap(10); /* creates its communicator late */
    collab_comm_t *d = NULL;
    CHECK(collab_comm_dup(w, &d) == COLLAB_OK && d != NULL);
    if (d == NULL)
        return 1;
    int right = 0;
    for (int k = 0; k < 3; k++) {
        double v = (i + 1) * (k + 1), s = 0;
        rc = collab_allreduce(d, &v, &s, 1, COLLAB_DOUBLE, &SUM, NULL);
        right += rc == COLLAB_OK && s == 6.0 * (k + 1);
        if (rc != COLLAB_OK || s != 6.0 * (k + 1))
            fprintf(stderr, "[attack] peer %d: all-reduce %d on the duplicate: rc %d, %g\n", i, k,
                    rc, s);
    }
    char name[32];
    snprintf(name, sizeof name, "right%d", i);
    harness_write_int(name, right);
    CHECK(collab_comm_free(&d) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_streams(void)
{
    const int n = 3;
    setenv("COLLAB_MAX_STREAMS", "8", 1);
    setenv("COLLAB_MAX_STREAMS_PER_PEER", "8", 1);
    prepare("streams", n);
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    for (int i = 0; i < n; i++)
        spawn(i, n, i == 0 ? 0u : 0x7u & ~(1u << i), streams_peer);
    CHECK(wait_ready(n, 60));
    go(n);
    int bad = reap((1u << n) - 1, 100);
    int forged = harness_read_int("forged", 0);
    int r0 = harness_read_int("right0", -1), r1 = harness_read_int("right1", -1),
        r2 = harness_read_int("right2", -1);
    int refused = harness_log_lines(log, "COLLAB_MAX_STREAMS", NULL);
    fprintf(stderr,
            "[attack] peer 2 opened %d streams at each peer (%s); all-reduces right on the "
            "duplicate: peer 0 %d/3, peer 1 (late) %d/3, peer 2 %d/3; log lines naming "
            "COLLAB_MAX_STREAMS: %d\n",
            ORPHANS, forged > 0 ? "sent" : "NOT sent", r0, r1, r2, refused);
    if (forged == 0) {
        fprintf(stderr, "[attack] no forgery went out; the test proves nothing\n");
        s_setup_failed = true;
    }
    CHECK(r0 == 3 && r1 == 3 && r2 == 3);
    if (r0 != 3 || r1 != 3 || r2 != 3) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "grep -E 'warning|error|dropped' '%s' | head -40 >&2", log);
        if (system(cmd) != 0)
            fprintf(stderr, "[attack] (no warnings in the peers' log)\n");
    }
    return bad;
}

/* ---------------------------------------------------------------------- */
/* held: the held queue's count bound is COLLAB_MAX_HELD_MSGS.  Data from
   a peer that is not a member here waits there for the view that would
   admit it (2 x COLLAB_TIMEOUT); a stranger sends rank 0 100 collective
   messages at COLLAB_MAX_HELD_MSGS=10.  Must be: rank 0 keeps 10, names
   the variable when it drops the rest, and both members' all-reduces
   stay right.  Before, the bound was a constant (16384) nobody could
   set. */

static int held_peer(int i, int n)
{
    (void)i;
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK)
        return 2;
    collab_comm_t *w = collab_comm_world();
    double x = 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == n);
    rendezvous();
    double t0 = now_s();
    while (harness_read_int("stop", 0) == 0 && now_s() - t0 < 60) {
        y = 0;
        CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK && y == n);
        nap(0.05);
    }
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_held(void)
{
    const int n = 2;
    setenv("COLLAB_MAX_HELD_MSGS", "10", 1);
    prepare("held", n);
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    spawn(0, n, 0u, held_peer);
    spawn(1, n, 1u, held_peer);
    CHECK(wait_ready(n, 60));
    go(n);
    attacker_t a;
    if (!attacker_new(&a, true) || !attacker_reach(&a, 0)) {
        s_setup_failed = true;
        return 0;
    }
    uint8_t k0[32];
    peer_key(0, k0);
    static uint8_t payload[64];
    int sent = 0;
    for (int k = 0; k < 100; k++) {
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_COLL;
        m.hdr.sub = CL_MSG_DATA;
        m.hdr.comm = CL_COMM_WORLD_ID;
        m.hdr.seq = 1000000 + (uint64_t)k;
        m.payload = payload;
        m.payload_len = sizeof payload;
        sent += cl_transport_send(a.tp, k0, &m) == 0;
    }
    attacker_pump(&a, 2);
    harness_write_int("stop", 1);
    int bad = reap((1u << n) - 1, 30);
    int named = harness_log_lines(log, "wait for views already", "COLLAB_MAX_HELD_MSGS=10");
    fprintf(stderr,
            "[attack] a stranger sent rank 0 %d collective messages; lines naming "
            "COLLAB_MAX_HELD_MSGS=10: %d\n",
            sent, named);
    if (sent == 0)
        s_setup_failed = true;
    CHECK(named >= 1 && named <= 8); /* 90 drops: at powers of 2 */
    attacker_destroy(&a);
    return bad;
}
