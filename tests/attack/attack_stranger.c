/*  attack_stranger.c - strangers against real swarms: a non-member with a
    transport of its own (harness.h) sends well-formed messages that only
    the authority rules can stop.  Scenarios of the attack program
    (attack.c):
      view        a non-member sends rank 2 a VIEW with epoch 2^62 that lists
                  only the attacker (client mode, rank 0) and rank 2.  Old:
                  rank 2 dropped the others and followed the attacker.  Now:
                  all three go on together, agreeing bitwise.
      heartbeat   a non-member sends ranks 1 and 2 HEARTBEATs with epoch
                  2^64-65, then rank 0 (the coordinator) is killed.  Old:
                  the new coordinator's epoch wrapped to 0 and the swarm
                  livelocked.  Now: ranks 1 and 2 go on within the deadline.
      join_reply  a joiner waits for its only initial peer; a stranger sends
                  it JOIN_REPLY CONFLICT.  Old: collab_init failed with
                  COLLAB_ERR_CONFIG.  Now: ignored; the joiner joins once
                  its initial peer is up.
*/
#include "attack.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

int sc_view(void)
{
    prepare("view", 3);
    s_alive_after = 0x7u;
    for (int i = 0; i < 3; i++)
        spawn(i, 3, i == 0 ? 0u : 0x7u & ~(1u << i), harness_peer_main);
    CHECK(wait_ready(3, 60));
    attacker_t a;
    if (!attacker_new(&a, true) || !attacker_reach(&a, 2)) {
        fprintf(stderr, "[attack] could not reach rank 2\n");
        s_setup_failed = true;
        return 1;
    }
    /* The view of the issue: the attacker as client-mode rank 0, the
       victim as rank 1, both in the group, epoch 2^62. */
    cl_wire_member_t mem[2];
    memset(mem, 0, sizeof mem);
    memcpy(mem[0].key, cl_identity_public_key(a.id), 32);
    mem[0].rank = 0;
    mem[0].flags = CL_MEMBER_CLIENT | CL_MEMBER_IN_GROUP;
    mem[0].weight = 1;
    mem[0].address = "";
    peer_key(2, mem[1].key);
    mem[1].rank = 1;
    mem[1].flags = CL_MEMBER_IN_GROUP;
    mem[1].weight = 1;
    mem[1].address = s_addr[2];
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    m.hdr.epoch = (uint64_t)1 << 62;
    m.u.view.epoch = (uint64_t)1 << 62;
    m.u.view.group_epoch = (uint64_t)1 << 62;
    m.u.view.settings.world_size = 3;
    m.u.view.settings.target_group = 64;
    m.u.view.settings.robust_min = 1;
    m.u.view.settings.max_weight_ratio = 16;
    m.u.view.flags = CL_VIEW_GROUP_CLOSED;
    m.u.view.count = 2;
    m.u.view.members = mem;
    CHECK(cl_transport_send(a.tp, mem[1].key, &m) == 0);
    fprintf(stderr, "[attack] sent rank 2 a VIEW with epoch 2^62 listing the attacker\n");
    attacker_pump(&a, 1.5);
    go(3);
    int bad = reap(0x7u, 60);
    attacker_destroy(&a);
    return bad;
}

int sc_heartbeat(void)
{
    prepare("heartbeat", 3);
    s_alive_after = 0x6u;
    for (int i = 0; i < 3; i++)
        spawn(i, 3, i == 0 ? 0u : 0x7u & ~(1u << i), harness_peer_main);
    CHECK(wait_ready(3, 60));
    attacker_t a;
    if (!attacker_new(&a, true) || !attacker_reach(&a, 1) || !attacker_reach(&a, 2)) {
        fprintf(stderr, "[attack] could not reach ranks 1 and 2\n");
        s_setup_failed = true;
        return 1;
    }
    for (int i = 1; i <= 2; i++) {
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_HEARTBEAT;
        m.hdr.epoch = UINT64_MAX - 64;
        m.u.heartbeat.epoch = UINT64_MAX - 64;
        uint8_t key[32];
        peer_key(i, key);
        CHECK(cl_transport_send(a.tp, key, &m) == 0);
    }
    fprintf(stderr, "[attack] sent ranks 1 and 2 HEARTBEATs with epoch 2^64-65\n");
    attacker_pump(&a, 1.0);
    harness_kill(0);
    fprintf(stderr, "[attack] killed rank 0, the coordinator\n");
    go(3);
    int bad = reap(0x6u, 60);
    attacker_destroy(&a);
    return bad;
}

int sc_join_reply(void)
{
    prepare("join_reply", 2);
    s_alive_after = 0x3u;
    /* Peer 1 joins through peer 0, which is not running yet. */
    spawn(1, 2, 0x1u, harness_peer_main);
    attacker_t a;
    if (!attacker_new(&a, true) || !attacker_reach(&a, 1)) {
        fprintf(stderr, "[attack] could not reach the joiner\n");
        s_setup_failed = true;
        return 1;
    }
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_JOIN_REPLY;
    m.u.join_reply.status = CL_JOIN_CONFLICT;
    m.u.join_reply.settings.world_size = 99;
    m.u.join_reply.settings.target_group = 64;
    uint8_t key[32];
    peer_key(1, key);
    CHECK(cl_transport_send(a.tp, key, &m) == 0);
    fprintf(stderr, "[attack] sent the joiner a JOIN_REPLY CONFLICT it never asked for\n");
    attacker_pump(&a, 1.5);
    spawn(0, 2, 0u, harness_peer_main);
    CHECK(wait_ready(2, 60));
    go(2);
    int bad = reap(0x3u, 60);
    attacker_destroy(&a);
    return bad;
}
