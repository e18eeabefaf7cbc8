/*  cl_auth_test.c - selftest of the authority's gate (cl_engine_authority.c,
    docs/security.md §3) on the fake context of auth_fixture.h; its round
    after a pause has its own, cl_auth_probe_test.c.

    The receiver is rank 0 of a view {0, 1, 2} with a monitor, a former
    member (rank 3, removed) and a stranger.  Each case hands the gate one
    message from one of them and checks the table: taken, dropped, or
    dropped with its sender banned.  The one ban rule: a ban only for
    content that breaks a bound every honest peer keeps, never for the
    sender's role (a JOIN_REPLY, BYE_ACK, REPORT or P2P_CTL from a
    stranger is dropped, not banned).  A former member may ask to join
    again like anyone (JOIN), and is banned for a weight no honest peer
    declares like anyone.  A ban lasts COLLAB_BAN_TIME (the fake
    configuration's, 60 s or another value).

    A second receiver, rank 2 of public members {0, 1, 2, 3}, does not
    coordinate: its coordinator's view is taken, another member's is not,
    and the views and admissions of the member that would coordinate next
    are kept until the coordinator fails here.
*/
#include "auth_fixture.h"

static void test_table(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_msg_t m;

    /* JOIN: anyone; a weight above 1e9 is content no honest peer sends. */
    m = msg(CL_MSG_JOIN);
    m.u.join.weight = 1.0;
    CL_CHECK(gate(STRANGER, &m) == 1);
    m.u.join.weight = 1e308;
    CL_CHECK(gate(STRANGER, &m) == 2);

    /* JOIN_REPLY: only from a peer asked; a stranger's is dropped, not
       banned (a late answer to an earlier incarnation looks the same). */
    s_n.member = false;
    m = msg(CL_MSG_JOIN_REPLY);
    CL_CHECK(gate(STRANGER, &m) == 0);
    eng_auth_note_join_sent(s_n.auth, s_key[STRANGER]);
    CL_CHECK(gate(STRANGER, &m) == 1);
    s_n.member = true;

    /* HEARTBEAT: members; a stranger to the coordinator; an epoch more
       than 2^20 ahead is banned from anyone. */
    m = msg(CL_MSG_HEARTBEAT);
    m.u.heartbeat.epoch = own;
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 1); /* answered with a view */
    s_coordinates = false;
    CL_CHECK(gate(STRANGER, &m) == 0);
    s_coordinates = true;
    m.u.heartbeat.epoch = own + ((uint64_t)1 << 21);
    CL_CHECK(gate(M1, &m) == 2);
    CL_CHECK(gate(STRANGER, &m) == 2);

    /* UPDATE and SUSPECT: to the coordinator, from members (SUSPECT also
       from a monitor); strangers dropped; a weight above 1e9 banned. */
    m = msg(CL_MSG_UPDATE);
    m.u.update.weight = 2.0;
    CL_CHECK(gate(M2, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    CL_CHECK(gate(MON, &m) == 0);
    m.u.update.weight = 1e10;
    CL_CHECK(gate(M2, &m) == 2);
    m = msg(CL_MSG_SUSPECT);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    s_coordinates = false;
    CL_CHECK(gate(M1, &m) == 0);
    s_coordinates = true;

    /* Answers and control of a role the sender lacks: dropped, never
       banned. */
    m = msg(CL_MSG_BYE_ACK);
    CL_CHECK(gate(FORMER, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_P2P_CTL);
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_REPORT);
    CL_CHECK(gate(M1, &m) == 0); /* this peer is no monitor */
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_GOODBYE);
    CL_CHECK(gate(MON, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = msg(CL_MSG_ELASTIC);
    m.hdr.sub = CL_EL_ADMIT;
    CL_CHECK(gate(STRANGER, &m) == 0);
    CL_CHECK(gate(M2, &m) == 0); /* not the admitter */
    m.hdr.sub = CL_EL_PROBE;
    CL_CHECK(gate(FORMER, &m) == 1);
    CL_CHECK(gate(STRANGER, &m) == 0);

    /* VIEW.  From a member that is not the coordinator: dropped.  Not
       listing its sender: dropped (a role question).  An epoch jump or an
       address that is not its member's own: banned, from anyone. */
    cl_wire_member_t ents[4];
    int ks[3] = {ME, M1, M2};
    m = view(own + 1, ks, 3, ents);
    CL_CHECK(gate(M1, &m) == 0);
    int others[2] = {ME, M1};
    m = view(own + 1, others, 2, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(gate(STRANGER, &m) == 0);
    m = view(own + ((uint64_t)1 << 21), ks, 3, ents);
    CL_CHECK(gate(M1, &m) == 2);
    m = view(own + 1, ks, 3, ents);
    ents[1].flags = 0;
    ents[1].address = "/ip4/127.0.0.1/tcp/9/p2p/12D3KooWAddressOfSomebodyElse";
    CL_CHECK(gate(M1, &m) == 2);

    /* A type the engine does not take. */
    m = msg(99);
    CL_CHECK(gate(M1, &m) == 2);
}

/* A public entry of a view at key k's own address (a multiaddr naming
   its key), in buf. */
static void public_entry(cl_wire_member_t *x, int k, char *buf, size_t len)
{
    cl_addr_t ad;
    memset(&ad, 0, sizeof ad);
    ad.family = CL_ADDR_IP4;
    snprintf(ad.host, sizeof ad.host, "127.0.0.1");
    ad.port = (uint16_t)(9000 + k);
    ad.has_key = true;
    memcpy(ad.key, s_key[k], 32);
    CL_CHECK(cl_addr_format(&ad, buf, len) == 0);
    x->flags = 0;
    x->address = buf;
}

/* The roles the context answers for: a former member asks to join like
   anyone; heartbeats of members whether or not the receiver
   coordinates, of a non-member only to the coordinator; state requests
   of the joiners an ADMIT named and of a monitor a copy is expected for;
   a stranger's view taken only when it extends the receiver's (docs/
   security.md §4, rule 3); a smaller group's view outbid by the
   coordinator. */
static void test_roles(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    int bans = s_bans;
    cl_wire_msg_t m;

    /* JOIN from a former member: taken (the coordinator decides, §3),
       banned only for a weight no honest peer declares. */
    m = msg(CL_MSG_JOIN);
    m.u.join.weight = 1.0;
    CL_CHECK(gate(FORMER, &m) == 1);
    s_coordinates = false;
    CL_CHECK(gate(FORMER, &m) == 1); /* non-coordinators answer REDIRECT */
    s_n.member = false;
    CL_CHECK(gate(FORMER, &m) == 1); /* and non-members NOT_MEMBER */
    s_n.member = true;
    s_coordinates = true;
    CL_CHECK(s_bans == bans);
    m.u.join.weight = 2e9;
    CL_CHECK(gate(FORMER, &m) == 2);
    bans = s_bans;

    /* HEARTBEAT: a member's, also when the receiver does not coordinate;
       a former member's only to the coordinator, and only while the
       receiver is a member. */
    m = msg(CL_MSG_HEARTBEAT);
    m.u.heartbeat.epoch = own;
    s_coordinates = false;
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(M2, &m) == 1);
    CL_CHECK(gate(FORMER, &m) == 0);
    s_coordinates = true;
    CL_CHECK(gate(FORMER, &m) == 1);
    s_n.member = false;
    CL_CHECK(gate(FORMER, &m) == 0);
    CL_CHECK(gate(STRANGER, &m) == 0);
    s_n.member = true;

    /* FETCH and DROP: a member an ADMIT named; QUERY and FETCH: a monitor
       a copy is expected for. */
    m = msg(CL_MSG_ELASTIC);
    m.hdr.sub = CL_EL_FETCH;
    CL_CHECK(gate(M1, &m) == 0);
    s_entrant = s_key[M1];
    CL_CHECK(gate(M1, &m) == 1);
    CL_CHECK(gate(M2, &m) == 0);
    m.hdr.sub = CL_EL_DROP;
    CL_CHECK(gate(M1, &m) == 1);
    s_entrant = NULL;
    CL_CHECK(gate(M1, &m) == 0);
    m.hdr.sub = CL_EL_QUERY;
    CL_CHECK(gate(MON, &m) == 0);
    s_copy_for = s_key[MON];
    CL_CHECK(gate(MON, &m) == 1);
    m.hdr.sub = CL_EL_FETCH;
    CL_CHECK(gate(MON, &m) == 1);
    m.hdr.sub = CL_EL_DROP;
    CL_CHECK(gate(MON, &m) == 0); /* a monitor never makes anyone forget */
    s_copy_for = NULL;

    /* A stranger's view.  Listing the receiver's members at their ranks
       and itself at a rank nobody live holds (the former member's), as
       its only public member: it extends the receiver's view and is
       taken.  Renumbering a member, or leaving one out: dropped, not
       banned. */
    cl_wire_member_t ents[4];
    char buf[CL_ADDR_TEXT_MAX];
    int ks[4] = {ME, M1, M2, STRANGER};
    m = view(own + 1, ks, 4, ents);
    ents[3].rank = 3;
    public_entry(&ents[3], STRANGER, buf, sizeof buf);
    CL_CHECK(gate(STRANGER, &m) == 1);
    ents[2].rank = 4; /* M2 renumbered */
    CL_CHECK(gate(STRANGER, &m) == 0);
    ents[2].rank = 2;
    int but_m2[3] = {ME, M1, STRANGER};
    m = view(own + 1, but_m2, 3, ents);
    ents[2].rank = 3;
    public_entry(&ents[2], STRANGER, buf, sizeof buf);
    CL_CHECK(gate(STRANGER, &m) == 0);
    CL_CHECK(s_bans == bans);

    /* A smaller group's view, from a member that coordinates it and does
       not list the receiver: the coordinator outbids it; another member
       only drops it. */
    int smaller[2] = {M1, M2};
    m = view(own + 1, smaller, 2, ents);
    ents[0].rank = 1;
    ents[1].rank = 2;
    public_entry(&ents[0], M1, buf, sizeof buf);
    int outbids = s_outbids;
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(s_outbids == outbids + 1);
    s_coordinates = false;
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(s_outbids == outbids + 1);
    s_coordinates = true;
    CL_CHECK(s_bans == bans);
}

/* A receiver that does not coordinate: rank 2 of public members
   {0, 1, 2, 3}, rank 0 coordinates, rank 1 would next.  Its
   coordinator's view is taken, another member's is not.

   The coordinator's successor (docs/security.md §4): a view of rank 1
   that arrives before the receiver sees rank 0 fail is refused and not
   kept; an ADMIT of rank 1 is kept (no ban) and passes the gate once
   rank 0 is suspected here; one of rank 3, not the successor, is not
   kept; kept messages are forgotten after 4 × COLLAB_TIMEOUT. */
static void test_coordinator(void)
{
    enum { R0, R1, R2, R3, N };
    uint8_t k[N][32];
    char addr[N][96];
    for (int i = 0; i < N; i++) {
        memset(k[i], 0, 32);
        k[i][0] = (uint8_t)(0x40 + i);
        snprintf(addr[i], sizeof addr[i], "/ip4/127.0.0.1/tcp/%d", 1000 + i);
    }
    cl_member_t *mb = cl_member_new(k[R2]);
    CL_CHECK(mb != NULL);
    cl_settings_t st = {8, false, 0, 8, 0, 1, 16, false};
    CL_CHECK(cl_member_found(mb, 2, addr[R2], false, 1.0, &st) == COLLAB_OK);
    cl_member_delta_t d;
    for (int i = 0; i < N; i++) {
        if (i == R2)
            continue;
        CL_CHECK(cl_member_admit(mb, k[i], i, addr[i], false, 1.0, 1.0, &d) == COLLAB_OK);
        cl_member_delta_clear(&d);
        cl_member_find(mb, k[i])->state = CL_PEER_ALIVE;
    }
    fake_t n;
    node_init(&n, k[R2], mb);
    s_coordinates = false;
    CL_CHECK(cl_member_coordinator(n.mb) == cl_member_find(n.mb, k[R0]));
    CL_CHECK(cl_member_successor(n.mb) == cl_member_find(n.mb, k[R1]));

    uint64_t own = cl_member_epoch(n.mb);
    cl_wire_member_t ents[N];
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.version = CL_WIRE_VERSION; /* as the transport decoded it */
    m.hdr.type = CL_MSG_VIEW;
    m.u.view.epoch = own + 7;
    m.u.view.group_epoch = 1;
    m.u.view.settings = (cl_wire_settings_t){.world_size = 8, .target_group = 8, .robust_min = 1};
    for (int i = 0; i < N; i++) {
        ents[i] =
            (cl_wire_member_t){.rank = i, .flags = CL_MEMBER_CLIENT, .weight = 1.0, .address = ""};
        memcpy(ents[i].key, k[i], 32);
    }
    m.u.view.count = N;
    m.u.view.members = ents;

    int bans = s_bans;
    const cl_peer_t *p0 = cl_member_find(n.mb, k[R0]), *p1 = cl_member_find(n.mb, k[R1]),
                    *p3 = cl_member_find(n.mb, k[R3]);
    /* The coordinator's view is taken; a member's that is not the
       coordinator's is dropped, not banned. */
    CL_CHECK(eng_auth_message(n.auth, p0, k[R0], &m));
    CL_CHECK(!eng_auth_message(n.auth, p3, k[R3], &m));
    CL_CHECK(s_bans == bans);

    /* A view of the successor is dropped, not kept. */
    CL_CHECK(!eng_auth_message(n.auth, p1, k[R1], &m));
    cl_member_find(n.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(n.auth);
    CL_CHECK(s_replayed == 0);
    cl_member_find(n.mb, k[R0])->state = CL_PEER_ALIVE;

    /* An ADMIT of the successor: kept, and handed back once rank 0 is
       suspected here; not kept from rank 3, which is not the successor. */
    memset(&m, 0, sizeof m);
    m.hdr.version = CL_WIRE_VERSION;
    m.hdr.type = CL_MSG_ELASTIC;
    m.hdr.sub = CL_EL_ADMIT;
    static const uint8_t admit_body[5] = {1, 2, 3, 4, 5};
    m.payload = admit_body;
    m.payload_len = 5;
    CL_CHECK(!eng_auth_message(n.auth, p1, k[R1], &m)); /* refused for now */
    CL_CHECK(!eng_auth_message(n.auth, p3, k[R3], &m)); /* not the successor: dropped */
    CL_CHECK(s_bans == bans);
    eng_auth_successor_check(n.auth);
    CL_CHECK(s_replayed == 0); /* rank 0 still coordinates here */
    cl_member_find(n.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(n.auth);
    CL_CHECK(s_replayed == 1 && s_replay_type == CL_MSG_ELASTIC);
    eng_auth_successor_check(n.auth);
    CL_CHECK(s_replayed == 1); /* once */

    /* Kept for at most 4 × COLLAB_TIMEOUT. */
    cl_member_find(n.mb, k[R0])->state = CL_PEER_ALIVE;
    CL_CHECK(!eng_auth_message(n.auth, p1, k[R1], &m));
    s_now += 4 * n.cfg.timeout + 1;
    eng_auth_successor_check(n.auth); /* forgotten */
    cl_member_find(n.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(n.auth);
    CL_CHECK(s_replayed == 1);
    CL_CHECK(s_bans == bans);

    /* Kept messages go with the component. */
    cl_member_find(n.mb, k[R0])->state = CL_PEER_ALIVE;
    CL_CHECK(!eng_auth_message(n.auth, p1, k[R1], &m));
    s_coordinates = true;
    s_now = 100.0;
    node_fini(&n);
}

/* A ban lasts COLLAB_BAN_TIME: 60 s by default, and what the
   configuration says otherwise. */
static void test_ban_time(void)
{
    cl_wire_msg_t m = msg(CL_MSG_JOIN);
    m.u.join.weight = 1e308;
    s_ban_seconds = 0;
    CL_CHECK(gate(STRANGER, &m) == 2);
    CL_CHECK(s_ban_seconds == 60.0);
    s_n.cfg.ban_time = 7.5;
    CL_CHECK(gate(M1, &m) == 2);
    CL_CHECK(s_ban_seconds == 7.5);
    s_n.cfg.ban_time = 60;
}

/* Without a component every message passes and nothing is remembered
   (the engine before its init). */
static void test_null(void)
{
    cl_wire_msg_t m = msg(99);
    CL_CHECK(eng_auth_message(NULL, NULL, s_key[STRANGER], &m));
    eng_auth_note_join_sent(NULL, s_key[STRANGER]);
    eng_auth_probe_start(NULL);
    eng_auth_note_probe_sent(NULL, s_key[M1]);
    eng_auth_member(NULL);
    CL_CHECK(!eng_auth_probing(NULL));
    eng_auth_successor_check(NULL);
    CL_CHECK(eng_auth_straggler_vote(NULL, s_key[M1], s_key[M2], 3));
    CL_CHECK(eng_auth_member_ahead(NULL, true, 1.0));
    eng_auth_destroy(NULL);
}

int main(void)
{
    setup();
    test_table();
    test_roles();
    test_ban_time();
    node_fini(&s_n);
    test_coordinator();
    test_null();
    return cl_selftest_end("cl_auth_test");
}
