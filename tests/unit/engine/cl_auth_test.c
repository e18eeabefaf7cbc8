/*  cl_auth_test.c - selftest of the authority gate (cl_engine_authority.c,
    docs/security.md §3, and its round after a pause,
    cl_engine_auth_probe.c) on a fake engine: real membership records and
    wire structures, the engine's other parts stubbed here (the clock,
    "do I coordinate", elastic state) and the transport's ban recorded
    (linked with --wrap=cl_transport_ban).

    The receiver is rank 0 of a view {0, 1, 2} with a monitor, a former
    member (rank 3, removed) and a stranger.  Each case hands the gate one
    message from one of them and checks the table: taken, dropped, or
    dropped with its sender banned.  The one ban rule: a ban only for
    content that breaks a bound every honest peer keeps, never for the
    sender's role (a JOIN_REPLY, BYE_ACK, REPORT or P2P_CTL from a
    stranger is dropped, not banned).

    The round after a pause runs on its timer in a real cl_timer set,
    driven here as the loop would (run_until): armed where the round
    starts, at each re-probe, the round's deadline and the end of the
    rejoin window, and disarmed when nothing is due.
*/
#include "engine/cl_engine_int.h"

#include "engine/cl_elmsg.h"
#include "engine/cl_engine_elastic.h"
#include "util/cl_selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

static bool s_coordinates = true;
static int s_bans;
static double s_now = 100.0;
/* Messages the gate handed back to the engine (kept successor messages
   replayed), and the type of the last one. */
static int s_replayed;
static uint8_t s_replay_type;

double eng_now(void)
{
    return s_now;
}

void eng_on_message(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    (void)e, (void)key;
    s_replayed++;
    s_replay_type = m->hdr.type;
}

bool eng_self_coordinates(struct cl_engine *e)
{
    (void)e;
    return s_coordinates;
}

const char *eng_peer_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}

bool eng_donor_expects(const el_donor_t *d, uint64_t s, const uint8_t key[32])
{
    (void)d, (void)s, (void)key;
    return false;
}

void eng_outbid_view(struct cl_engine *e, const cl_wire_view_t *v)
{
    (void)e, (void)v;
}

bool eng_el_is_entrant(struct cl_engine *e, const uint8_t key[32])
{
    (void)e, (void)key;
    return false;
}

/* PROBEs and JOINs the gate sends after a pause (to members of the
   receiver's view, so one byte of the key tells which). */
static int s_probes;
static uint8_t s_joined[8];
static int s_njoined;

void eng_el_probe(struct cl_engine *e, const uint8_t key[32])
{
    (void)e, (void)key;
    s_probes++;
}

void eng_send_join(struct cl_engine *e, const uint8_t key[32])
{
    if (s_njoined < 8)
        s_joined[s_njoined++] = key[0];
    eng_auth_note_join_sent(e, key);
}
void eng_send_join_relinked(struct cl_engine *e, const uint8_t key[32])
{
    eng_send_join(e, key);
}

void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds);
void __wrap_cl_transport_ban(cl_transport_t *tp, const uint8_t key[32], double seconds)
{
    (void)tp, (void)key, (void)seconds;
    s_bans++;
}

/* --- the receiver ----------------------------------------------------- */

enum { ME, M1, M2, MON, FORMER, STRANGER, NKEYS };
static uint8_t s_key[NKEYS][32];
static struct cl_engine s_e;

static void setup(void)
{
    for (int i = 0; i < NKEYS; i++) {
        memset(s_key[i], 0, 32);
        s_key[i][0] = (uint8_t)(0x10 + i);
        s_key[i][9] = 0x77;
    }
    memset(&s_e, 0, sizeof s_e);
    s_e.timers = cl_timer_new(8);
    CL_CHECK(s_e.timers != NULL);
    memcpy(s_e.self_key, s_key[ME], 32);
    s_e.cfg.timeout = 5;
    s_e.state = ENG_MEMBER;
    s_e.mb = cl_member_new(s_key[ME]);
    CL_CHECK(s_e.mb != NULL);
    cl_settings_t st = {8, false, 0, 8, 0, 1, 16, false};
    CL_CHECK(cl_member_found(s_e.mb, 0, "", true, 1.0, &st) == COLLAB_OK);
    cl_member_delta_t d;
    CL_CHECK(cl_member_admit(s_e.mb, s_key[M1], 1, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(s_e.mb, s_key[M2], 2, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(s_e.mb, s_key[FORMER], 3, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_remove(s_e.mb, (const uint8_t(*)[32])s_key[FORMER], 1, 2.0, &d) == 1);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit_monitor(s_e.mb, s_key[MON], "/ip4/127.0.0.1/tcp/9", false, 3.0, &d) ==
             COLLAB_OK);
    cl_member_delta_clear(&d);
    for (int i = M1; i <= M2; i++)
        cl_member_find(s_e.mb, s_key[i])->state = CL_PEER_ALIVE;
    CL_CHECK(eng_auth_init(&s_e) == COLLAB_OK);
}

/* The loop's turns up to t: each at the set's earliest deadline, whose
   timers run then; the clock ends at t. */
static void run_until(double t)
{
    for (double next = cl_timer_next(s_e.timers); next <= t; next = cl_timer_next(s_e.timers)) {
        s_now = next;
        cl_timer_run(s_e.timers, s_now);
    }
    s_now = t;
}

/* Hands m from key k to the gate: 1 taken, 0 dropped, 2 dropped and the
   sender banned. */
static int gate(int k, cl_wire_msg_t *m)
{
    int bans = s_bans;
    const cl_peer_t *p = cl_member_find(s_e.mb, s_key[k]);
    bool taken = eng_auth_message(&s_e, p, s_key[k], m);
    return taken ? (s_bans == bans ? 1 : -1) : (s_bans == bans ? 0 : 2);
}

static cl_wire_msg_t msg(int type)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = (uint8_t)type;
    return m;
}

/* A view of epoch `epoch` listing keys ks (all client entries: no
   address), or with entry `bad_addr` public at another key's address. */
static cl_wire_msg_t view(uint64_t epoch, const int *ks, int n, cl_wire_member_t *ents)
{
    cl_wire_msg_t m = msg(CL_MSG_VIEW);
    m.u.view.epoch = epoch;
    m.u.view.group_epoch = 1;
    m.u.view.settings = (cl_wire_settings_t){.world_size = 8, .target_group = 8, .robust_min = 1};
    for (int i = 0; i < n; i++)
        ents[i] =
            (cl_wire_member_t){.rank = i, .flags = CL_MEMBER_CLIENT, .weight = 1.0, .address = ""};
    for (int i = 0; i < n; i++)
        memcpy(ents[i].key, s_key[ks[i]], 32);
    m.u.view.count = (uint32_t)n;
    m.u.view.members = ents;
    return m;
}

static void test_table(void)
{
    uint64_t own = cl_member_epoch(s_e.mb);
    cl_wire_msg_t m;

    /* JOIN: anyone; a weight above 1e9 is content no honest peer sends. */
    m = msg(CL_MSG_JOIN);
    m.u.join.weight = 1.0;
    CL_CHECK(gate(STRANGER, &m) == 1);
    m.u.join.weight = 1e308;
    CL_CHECK(gate(STRANGER, &m) == 2);

    /* JOIN_REPLY: only from a peer asked; a stranger's is dropped, not
       banned (a late answer to an earlier incarnation looks the same). */
    s_e.state = ENG_JOINING;
    m = msg(CL_MSG_JOIN_REPLY);
    CL_CHECK(gate(STRANGER, &m) == 0);
    eng_auth_note_join_sent(&s_e, s_key[STRANGER]);
    CL_CHECK(gate(STRANGER, &m) == 1);
    s_e.state = ENG_MEMBER;

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

/* A peer back from a pause (docs/security.md §4, pauses and removals).
   The receiver, rank 0 of {0, 1, 2}, asked members 1 and 2 (PROBE).  A
   member that is not its coordinator cannot move it alone: member 2's
   forged views, one listing only itself and one listing every member
   but the receiver, are refused, and member 1's answer alone is not
   enough; once both (more than half of the 3 members of the last view)
   answered with one view, that view counts.  Rejoining, a view without
   the receiver from a member it did not ask is refused.  Without a
   majority by the deadline, the members that claimed a newer view are
   sent a JOIN, and a view of theirs that lists the receiver counts. */
static void test_pause(void)
{
    uint64_t own = cl_member_epoch(s_e.mb);
    cl_wire_member_t ents[4];
    int all[3] = {ME, M1, M2}, alone[1] = {M2}, but_me[2] = {M1, M2};
    cl_wire_msg_t m;
    int bans = s_bans;

    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M1]);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    CL_CHECK(eng_auth_probing(&s_e));
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 1, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 1, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 0); /* one of the 3: no majority */
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* still none */
    /* The members are asked again each second. */
    int probes = s_probes;
    run_until(s_now + 1.5);
    CL_CHECK(s_probes == probes + 2);
    m = view(own + 1, all, 3, ents);
    CL_CHECK(gate(M2, &m) == 1); /* two of the 3 answered with it */
    CL_CHECK(!eng_auth_probing(&s_e));
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY); /* nothing more is due */
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* the round is over */
    CL_CHECK(s_bans == bans);

    /* Rejoining: a view without the receiver from a member of its last
       view is refused; one that lists it is taken. */
    s_e.state = ENG_JOINING;
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0);
    m = view(own + 2, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 1);
    s_e.state = ENG_MEMBER;

    /* No majority by the deadline (max(10 s, 4 × COLLAB_TIMEOUT)): the
       member that claimed a newer view is sent a JOIN; its view counts
       only while it lists the receiver. */
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M1]);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    s_njoined = 0;
    run_until(s_now + 4 * s_e.cfg.timeout + 1);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    CL_CHECK(eng_auth_probing(&s_e));
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    int with_me[2] = {ME, M2};
    m = view(own + 3, with_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 1);
    run_until(s_now + 4 * s_e.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(&s_e));
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(s_bans == bans);

    /* "Newer" means newer than the view held when the round began: the
       receiver's own epoch may move on meanwhile (it removes members it
       no longer hears from), past the view a member answered with. */
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M1]);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 5, all, 3, ents);
    cl_member_delta_t delta;
    memset(&delta, 0, sizeof delta);
    CL_CHECK(cl_member_apply_view(s_e.mb, &m.u.view, s_now, &delta) == 1);
    cl_member_delta_clear(&delta);
    s_njoined = 0;
    run_until(s_now + 4 * s_e.cfg.timeout + 1);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    run_until(s_now + 4 * s_e.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(&s_e));
    s_now = 100.0;
}

/* The round's timer, at its exact deadlines.  With COLLAB_TIMEOUT 2.6 s
   the round lasts 10.4 s, so its deadline falls between two re-probes:
   the timer is armed at the first re-probe where the round starts, each
   re-probe arms the next one second later, the last before the deadline
   arms the deadline, which sends the JOIN and arms the end of the rejoin
   window; then nothing is due.  A round ends when its timer finds this
   peer no member, and when a membership begins again. */
static void test_probe_timer(void)
{
    uint64_t own = cl_member_epoch(s_e.mb);
    cl_wire_member_t ents[4];
    int alone[1] = {M2};
    cl_wire_msg_t m;
    double timeout = s_e.cfg.timeout;
    s_e.cfg.timeout = 2.6;
    double t0 = s_now, window = s_e.cfg.timeout * 4;
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY);
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M1]);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    CL_CHECK(cl_timer_next(s_e.timers) == t0 + 1.0); /* where the round starts */
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0); /* M2 claims a newer view */
    int probes = s_probes;
    s_njoined = 0;
    run_until(t0 + 1.0);
    CL_CHECK(s_probes == probes + 2);
    CL_CHECK(cl_timer_next(s_e.timers) == t0 + 2.0); /* the next re-probe */
    run_until(t0 + 10.0);
    CL_CHECK(s_probes == probes + 20 && s_njoined == 0);
    CL_CHECK(cl_timer_next(s_e.timers) == t0 + window); /* the deadline, before t0 + 11 */
    run_until(t0 + window);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    CL_CHECK(eng_auth_probing(&s_e));
    CL_CHECK(cl_timer_next(s_e.timers) == (t0 + window) + window); /* the rejoin window's end */
    run_until((t0 + window) + window);
    CL_CHECK(!eng_auth_probing(&s_e));
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY);
    CL_CHECK(s_probes == probes + 20 && s_njoined == 1);

    /* Removed meanwhile: the round's timer ends it, without a probe. */
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M1]);
    s_e.state = ENG_JOINING;
    run_until(s_now + 1.0);
    CL_CHECK(!eng_auth_probing(&s_e) && s_probes == probes + 20);
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY);
    s_e.state = ENG_MEMBER;

    /* A membership that begins again ends a round or a rejoin window of
       the former one. */
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    eng_auth_member(&s_e);
    CL_CHECK(!eng_auth_probing(&s_e));
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY);
    eng_auth_probe_start(&s_e);
    eng_auth_note_probe_sent(&s_e, s_key[M2]);
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    s_njoined = 0;
    run_until(s_now + window);
    CL_CHECK(s_njoined == 1 && eng_auth_probing(&s_e));
    eng_auth_member(&s_e);
    CL_CHECK(!eng_auth_probing(&s_e));
    CL_CHECK(cl_timer_next(s_e.timers) == INFINITY);
    s_e.cfg.timeout = timeout;
    s_now = 100.0;
}

/* The coordinator's successor (docs/security.md §4).  The receiver is
   rank 2 of public members {0, 1, 2, 3}: rank 0 coordinates, rank 1
   would next.  A view of rank 1 that arrives before the receiver sees
   rank 0 fail is refused but kept (no ban), and passes the gate once
   rank 0 is suspected here; a view of rank 3, not the successor, is not
   kept; kept messages are forgotten after 4 × COLLAB_TIMEOUT; an ADMIT
   of the successor is kept too. */
static void test_successor(void)
{
    enum { R0, R1, R2, R3, N };
    uint8_t k[N][32];
    char addr[N][96];
    for (int i = 0; i < N; i++) {
        memset(k[i], 0, 32);
        k[i][0] = (uint8_t)(0x40 + i);
        snprintf(addr[i], sizeof addr[i], "/ip4/127.0.0.1/tcp/%d", 1000 + i);
    }
    struct cl_engine e;
    memset(&e, 0, sizeof e);
    e.timers = cl_timer_new(8);
    CL_CHECK(e.timers != NULL);
    memcpy(e.self_key, k[R2], 32);
    e.cfg.timeout = 5;
    e.state = ENG_MEMBER;
    e.mb = cl_member_new(k[R2]);
    cl_settings_t st = {8, false, 0, 8, 0, 1, 16, false};
    CL_CHECK(cl_member_found(e.mb, 2, addr[R2], false, 1.0, &st) == COLLAB_OK);
    cl_member_delta_t d;
    for (int i = 0; i < N; i++) {
        if (i == R2)
            continue;
        CL_CHECK(cl_member_admit(e.mb, k[i], i, addr[i], false, 1.0, 1.0, &d) == COLLAB_OK);
        cl_member_delta_clear(&d);
        cl_member_find(e.mb, k[i])->state = CL_PEER_ALIVE;
    }
    CL_CHECK(eng_auth_init(&e) == COLLAB_OK);
    s_coordinates = false;
    CL_CHECK(cl_member_coordinator(e.mb) == cl_member_find(e.mb, k[R0]));
    CL_CHECK(cl_member_successor(e.mb) == cl_member_find(e.mb, k[R1]));

    uint64_t own = cl_member_epoch(e.mb);
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
    const cl_peer_t *p1 = cl_member_find(e.mb, k[R1]), *p3 = cl_member_find(e.mb, k[R3]);
    /* A view of the successor is dropped, not kept. */
    CL_CHECK(!eng_auth_message(&e, p1, k[R1], &m));
    cl_member_find(e.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(&e);
    CL_CHECK(s_replayed == 0);
    cl_member_find(e.mb, k[R0])->state = CL_PEER_ALIVE;

    /* An ADMIT of the successor: kept, and handed back once rank 0 is
       suspected here; not kept from rank 3, which is not the successor. */
    memset(&m, 0, sizeof m);
    m.hdr.version = CL_WIRE_VERSION;
    m.hdr.type = CL_MSG_ELASTIC;
    m.hdr.sub = CL_EL_ADMIT;
    static const uint8_t admit_body[5] = {1, 2, 3, 4, 5};
    m.payload = admit_body;
    m.payload_len = 5;
    CL_CHECK(!eng_auth_message(&e, p1, k[R1], &m)); /* refused for now */
    CL_CHECK(!eng_auth_message(&e, p3, k[R3], &m)); /* not the successor: dropped */
    CL_CHECK(s_bans == bans);
    eng_auth_successor_check(&e);
    CL_CHECK(s_replayed == 0); /* rank 0 still coordinates here */
    cl_member_find(e.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(&e);
    CL_CHECK(s_replayed == 1 && s_replay_type == CL_MSG_ELASTIC);
    eng_auth_successor_check(&e);
    CL_CHECK(s_replayed == 1); /* once */

    /* Kept for at most 4 × COLLAB_TIMEOUT. */
    cl_member_find(e.mb, k[R0])->state = CL_PEER_ALIVE;
    CL_CHECK(!eng_auth_message(&e, p1, k[R1], &m));
    s_now += 4 * e.cfg.timeout + 1;
    eng_auth_successor_check(&e); /* forgotten */
    cl_member_find(e.mb, k[R0])->state = CL_PEER_SUSPECT;
    eng_auth_successor_check(&e);
    CL_CHECK(s_replayed == 1);
    CL_CHECK(s_bans == bans);

    s_coordinates = true;
    s_now = 100.0;
    eng_auth_fini(&e);
    cl_member_destroy(&e.mb);
    cl_timer_destroy(&e.timers);
}

int main(void)
{
    setup();
    test_table();
    test_pause();
    test_probe_timer();
    eng_auth_fini(&s_e);
    CL_CHECK(s_e.auth == NULL);
    cl_member_destroy(&s_e.mb);
    cl_timer_destroy(&s_e.timers);
    test_successor();
    return cl_selftest_end("cl_auth_test");
}
