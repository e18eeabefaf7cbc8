/*  attack_checkpoint.c - hostile monitors and members against the
    checkpoints of docs/monitor.md §7.  Scenarios of the attack program
    (attack.c):

    Checkpoints (docs/monitor.md §7), a role with no old code to record
    against:
      checkpoint  the attacker joins the swarm of 3 as a monitor (anyone
                  may, in an open swarm) and heartbeats like one.  It
                  sends rank 1 QUERY and FETCH, and rank 2 a forged CKPT
                  NOTICE naming itself (from a monitor, not the admitter)
                  followed by QUERY and FETCH.  Must be: no state answer
                  (HASHES, DATA, NACK) ever reaches it, since a monitor
                  reads a member's state only for a copy a NOTICE of the
                  admitter named it for.  Control: it then asks the
                  admitter properly (CKPT REQUEST), gets the NOTICE, and
                  its QUERY and FETCH for that collective are answered
                  with the start-up broadcast's bytes, so answers could
                  reach it; the three peers agree throughout.
*/
#include "attack.h"

#include <string.h>
#include <time.h>

/* The checkpoint scenario's peers: a start-up broadcast of 64 bytes of
   42 (state a checkpoint holds), then two-element all-reduces (rank+1,
   and a stop flag rank 0 raises after 10 s past the rendezvous, so all
   run the same number), each checked. */
static int ckpt_peer_main(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    static uint8_t state[64];
    if (i == 0)
        memset(state, 42, sizeof state);
    CHECK(collab_bcast(w, state, sizeof state, 0, NULL) == COLLAB_OK);
    CHECK(state[0] == 42 && state[63] == 42);
    double t0 = 0, want = n * (n + 1) / 2.0;
    int it, bad = 0;
    for (it = 0; it < 100000; it++) {
        if (it == 12) {
            rendezvous();
            t0 = now_s();
        }
        double x[2] = {i + 1, i == 0 && it > 12 && now_s() - t0 > 10 ? 1 : 0}, y[2] = {0, 0};
        rc = collab_allreduce(w, x, y, 2, COLLAB_DOUBLE, &SUM, NULL);
        if (rc != COLLAB_OK || y[0] != want) {
            if (bad++ < 3)
                fprintf(stderr, "[attack] peer %d: all-reduce %d: rc %d, %g (want %g)\n", i, it, rc,
                        y[0], want);
        }
        if (y[1] > 0)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (bad > 0)
        s_failures++;
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong\n", i, it, bad);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Polls for `seconds` as a monitor: heartbeats to the n peers every
   0.3 s; returns early once *until becomes true (when not NULL). */
static void monitor_pump(attacker_t *a, int n, double seconds, const bool *until)
{
    double t0 = now_s(), hb = 0;
    while (now_s() - t0 < seconds && (until == NULL || !*until)) {
        if (now_s() - hb >= 0.3) {
            hb = now_s();
            for (int i = 0; i < n; i++) {
                uint8_t key[32];
                peer_key(i, key);
                cl_wire_msg_t m;
                memset(&m, 0, sizeof m);
                m.hdr.type = CL_MSG_HEARTBEAT;
                m.hdr.epoch = a->epoch;
                m.u.heartbeat.epoch = a->epoch;
                (void)cl_transport_send(a->tp, key, &m);
            }
        }
        attacker_poll(a);
    }
}

int sc_checkpoint(void)
{
    prepare("checkpoint", 3);
    for (int i = 0; i < 3; i++)
        spawn(i, 3, i == 0 ? 0u : 0x7u & ~(1u << i), ckpt_peer_main);
    CHECK(wait_ready(3, 60));
    attacker_t a;
    if (!attacker_new(&a, false) || !attacker_reach(&a, 0) || !attacker_reach(&a, 1) ||
        !attacker_reach(&a, 2)) {
        fprintf(stderr, "[attack] could not reach the peers\n");
        s_setup_failed = true;
        return 1;
    }
    uint8_t k0[32], k1[32], k2[32];
    peer_key(0, k0);
    peer_key(1, k1);
    peer_key(2, k2);
    /* Join as a monitor. */
    cl_wire_msg_t j;
    memset(&j, 0, sizeof j);
    j.hdr.type = CL_MSG_JOIN;
    j.u.join.rank = -1;
    j.u.join.weight = 1;
    j.u.join.flags = CL_JOIN_MONITOR;
    j.u.join.world_size = 3;
    j.u.join.target_group = 64;
    j.u.join.incarnation = 7;
    snprintf(j.u.join.address, sizeof j.u.join.address, "%s", cl_transport_address(a.tp));
    CHECK(cl_transport_send(a.tp, k0, &j) == 0);
    monitor_pump(&a, 3, 15, &a.in_view);
    if (!a.in_view) {
        fprintf(stderr, "[attack] the coordinator did not list the attacker as a monitor\n");
        s_setup_failed = true;
        go(3);
        reap(0x7u, 60);
        attacker_destroy(&a);
        return 1;
    }
    fprintf(stderr, "[attack] listed as a monitor in view %llu\n", (unsigned long long)a.epoch);
    /* Unasked reads, and a forged notice. */
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = 5;
    cl_elmsg_t f;
    memset(&f, 0, sizeof f);
    f.type = CL_EL_FETCH;
    f.s = 5;
    f.what = CL_EL_ITEM_BUFFER;
    f.len = 8;
    CHECK(attacker_send_el(&a, k1, &q) && attacker_send_el(&a, k1, &f));
    cl_elmsg_t n;
    memset(&n, 0, sizeof n);
    n.type = CL_EL_CKPT;
    n.ckpt = CL_EL_CKPT_NOTICE;
    n.s = 1000;
    n.step = 10;
    memcpy(n.key, cl_identity_public_key(a.id), 32);
    q.s = f.s = n.s;
    CHECK(attacker_send_el(&a, k2, &n) && attacker_send_el(&a, k2, &q) &&
          attacker_send_el(&a, k2, &f));
    fprintf(stderr, "[attack] sent QUERY and FETCH to rank 1, a forged NOTICE, QUERY and FETCH "
                    "to rank 2\n");
    go(3);
    monitor_pump(&a, 3, 2.0, NULL);
    int bad = 0;
    if (a.answers > 0) {
        fprintf(stderr, "[attack] the members answered %d unasked state reads\n", a.answers);
        bad++;
    }
    /* Control: asked properly, the admitter's notice lets it read. */
    cl_elmsg_t r;
    memset(&r, 0, sizeof r);
    r.type = CL_EL_CKPT;
    r.ckpt = CL_EL_CKPT_REQUEST;
    r.every = 1;
    bool noticed = false;
    for (int k = 0; k < 4 && a.notice == 0; k++) {
        CHECK(attacker_send_el(&a, k0, &r));
        monitor_pump(&a, 3, 2.0, &noticed);
        noticed = a.notice != 0;
    }
    if (a.notice == 0) {
        fprintf(stderr, "[attack] control: the admitter sent no CKPT NOTICE\n");
        s_setup_failed = true;
    } else {
        q.s = f.s = a.notice;
        f.len = 64;
        int before = a.answers;
        CHECK(attacker_send_el(&a, k1, &q) && attacker_send_el(&a, k1, &f));
        monitor_pump(&a, 3, 3.0, NULL);
        bool got = a.answers >= before + 2 && a.hashes_bufs >= 1 && a.ndata == 64 &&
                   a.data[0] == 42 && a.data[63] == 42;
        fprintf(stderr, "[attack] control: %s\n",
                got ? "the state at the notice's collective was served"
                    : "no state served after a proper request");
        if (!got)
            s_setup_failed = true;
    }
    bad += reap(0x7u, 60);
    attacker_destroy(&a);
    return bad;
}
