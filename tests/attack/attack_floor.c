/*  attack_floor.c - the coordinator's wire floor at a JOIN
    (eng_settings_wire_floor in cl_engine_join.c, docs/security.md §6).
    A scenario of the attack program (attack.c).

      wirefloor   peer 0 founds a swarm that signs (COLLAB_VERIFY=1);
                  peers 1 and 2 take the setting from it when they join.
                  Before peer 0 starts, the attacker completes a handshake
                  with peer 1 at wire version 8: peer 1 has no floor yet,
                  and the link stays at 8 after it adopts the settings
                  (only later handshakes need 9).  Peer 0 is then killed,
                  so that peer 1 coordinates, and the attacker sends it a
                  JOIN over that old link.  Must be: peer 1 refuses it
                  ("it speaks wire version 8 with this peer"), and no view
                  lists the attacker.  With the check at the JOIN removed
                  the JOIN is taken (the handshake's floor never saw
                  that link).
*/
#include "attack.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int floor_peer(int i, int n)
{
    (void)n;
    if (i == 0)
        setenv("COLLAB_VERIFY", "1", 1);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    double x = 1, y = 0;
    CHECK(collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    rendezvous();
    double t0 = now_s();
    while (harness_read_int("stop", 0) == 0 && now_s() - t0 < 60) {
        (void)collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_wirefloor(void)
{
    const int n = 3;
    prepare("wirefloor", n);
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    /* Peer 1 first: it waits for its initial peer, listening. */
    spawn(1, n, 1u, floor_peer);
    s_attacker_max_version = 8;
    attacker_t a;
    if (!attacker_new(&a, true)) {
        s_setup_failed = true;
        return 0;
    }
    bool up = false;
    for (double t0 = now_s(); !up && now_s() - t0 < 20;)
        up = attacker_reach(&a, 1);
    uint8_t k1[32];
    peer_key(1, k1);
    int v = cl_transport_link_version(a.tp, k1);
    fprintf(stderr, "[attack] the attacker's link to peer 1: %s, wire version %d\n",
            up ? "up" : "NOT up", v);
    if (!up || v != 8) {
        fprintf(stderr, "[attack] no version-8 link made before the settings; proves nothing\n");
        s_setup_failed = true;
    }
    spawn(0, n, 0u, floor_peer);
    spawn(2, n, 1u, floor_peer);
    CHECK(wait_ready(n, 60));
    go(n);
    attacker_pump(&a, 1);
    harness_kill(0); /* peer 1 coordinates once it suspects peer 0 */
    attacker_pump(&a, 8);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN;
    m.u.join.rank = -1;
    m.u.join.weight = 1.0;
    m.u.join.flags = CL_JOIN_CLIENT;
    m.u.join.incarnation = 0x5eed5eedu;
    m.u.join.settings.world_size = n; /* not flagged: compared with nothing */
    m.u.join.settings.target_group = n;
    CHECK(cl_transport_send(a.tp, k1, &m) == 0);
    attacker_pump(&a, 4);
    int v_after = cl_transport_link_version(a.tp, k1);
    harness_write_int("stop", 1);
    int bad = reap(0x6u, 30);
    int refused = harness_log_lines(log, "refusing peer", "wire version 8");
    fprintf(stderr,
            "[attack] JOIN sent over the version-%d link; lines of peer 1 refusing it: %d; "
            "attacker in a view: %s\n",
            v_after, refused, a.epoch > 0 ? "got views" : "no view");
    CHECK(refused >= 1);
    CHECK(a.epoch == 0); /* admitted, it would get views */
    attacker_destroy(&a);
    return bad;
}
