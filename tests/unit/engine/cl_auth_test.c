/*  cl_auth_test.c - selftest of the authority (cl_engine_authority.c, the
    gate of docs/security.md §3, and its round after a pause,
    cl_engine_auth_probe.c, §4) on a fake context: real membership
    records, wire structures and a real timer set; the clock, "am I a
    member", "do I coordinate", the elastic layer's answers, the ban, the
    delivery of kept messages, PROBE and JOIN are the test's (no sockets,
    no engine).

    The receiver is rank 0 of a view {0, 1, 2} with a monitor, a former
    member (rank 3, removed) and a stranger.  Each case hands the gate one
    message from one of them and checks the table: taken, dropped, or
    dropped with its sender banned.  The one ban rule: a ban only for
    content that breaks a bound every honest peer keeps, never for the
    sender's role (a JOIN_REPLY, BYE_ACK, REPORT or P2P_CTL from a
    stranger is dropped, not banned).  A former member may ask to join
    again like anyone (JOIN), and is banned for a weight no honest peer
    declares like anyone.

    A second receiver, rank 2 of public members {0, 1, 2, 3}, does not
    coordinate: its coordinator's view is taken, another member's is not,
    and the views and admissions of the member that would coordinate next
    are kept until the coordinator fails here.

    The round after a pause runs on its timer in the real cl_timer set,
    driven here as the loop would (run_until): armed where the round
    starts, at each re-probe, the round's deadline and the end of the
    rejoin window, and disarmed when nothing is due.  The context's
    decided is counted: called once each time the question "did the
    swarm go on without this peer" goes from open to decided.
*/
#include "engine/cl_engine_auth.h"

#include "engine/cl_elmsg.h"
#include "util/cl_addr.h"
#include "util/cl_selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the fake context ------------------------------------------------- */

static double s_now = 100.0;
static bool s_coordinates = true; /* the receiver's answer to "do I coordinate" */
static int s_bans;
/* Messages the gate handed back to the engine (kept successor messages
   replayed), and the type of the last one. */
static int s_replayed;
static uint8_t s_replay_type;
/* Views answered by outbidding them (a smaller group's). */
static int s_outbids;
/* The elastic layer's answers: key is a joiner an ADMIT named; a copy
   is expected for the monitor key. */
static const uint8_t *s_entrant;
static const uint8_t *s_copy_for;
/* PROBEs and JOINs the gate sends after a pause (to members of the
   receiver's view, so one byte of the key tells which). */
static int s_probes;
static uint8_t s_joined[8];
static int s_njoined;

/* One receiver, the fake engine: the context's argument, struct
   cl_engine, which the component sees only as an incomplete type
   (docs/architecture.md): its configuration, records, timer set and
   authority. */
typedef struct cl_engine {
    cl_config_t cfg;
    uint8_t key[32];
    cl_member_t *mb;
    cl_timer_t *timers;
    eng_auth_t *auth;
    bool member; /* holds a rank in its own view */
} fake_t;

static double ctx_now(fake_t *f)
{
    (void)f;
    return s_now;
}

static bool ctx_member(fake_t *f)
{
    return f->member;
}

static bool ctx_coordinates(fake_t *f)
{
    (void)f;
    return s_coordinates;
}

static bool ctx_entrant(fake_t *f, const uint8_t key[32])
{
    (void)f;
    return s_entrant != NULL && memcmp(s_entrant, key, 32) == 0;
}

static bool ctx_copy_expected(fake_t *f, const uint8_t key[32])
{
    (void)f;
    return s_copy_for != NULL && memcmp(s_copy_for, key, 32) == 0;
}

static void ctx_outbid(fake_t *f, const cl_wire_view_t *v)
{
    (void)f, (void)v;
    s_outbids++;
}

static void ctx_deliver(fake_t *f, const uint8_t key[32], const cl_wire_msg_t *m)
{
    (void)f, (void)key;
    s_replayed++;
    s_replay_type = m->hdr.type;
}

static void ctx_ban(fake_t *f, const uint8_t key[32], double seconds)
{
    (void)f, (void)key;
    CL_CHECK(seconds == 60);
    s_bans++;
}

static void ctx_probe(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
    s_probes++;
}

/* A JOIN goes out as the engine sends it (eng_send_join), noted by the
   gate. */
static void ctx_rejoin(fake_t *f, const uint8_t key[32])
{
    if (s_njoined < 8)
        s_joined[s_njoined++] = key[0];
    eng_auth_note_join_sent(f->auth, key);
}

static void ctx_answered(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
}

static int s_gave_up; /* the status the authority stopped the engine with */
static int s_decided; /* times the question "did the swarm go on" was decided */

static void ctx_decided(fake_t *f)
{
    CL_CHECK(!eng_auth_went_on(f->auth)); /* told once it is decided, not before */
    s_decided++;
}

static void ctx_give_up(fake_t *f, int status)
{
    (void)f;
    s_gave_up = status;
}

static const char *ctx_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}

/* Sets up n for the records mb (owned from now on) of the peer key: a
   member, COLLAB_TIMEOUT 5 s, its authority created. */
static void node_init(fake_t *n, const uint8_t key[32], cl_member_t *mb)
{
    memset(n, 0, sizeof *n);
    memcpy(n->key, key, 32);
    n->cfg.timeout = 5;
    n->member = true;
    n->mb = mb;
    n->timers = cl_timer_new(8);
    CL_CHECK(n->timers != NULL);
    eng_auth_ctx_t ctx = {.arg = n,
                          .cfg = &n->cfg,
                          .timers = n->timers,
                          .mb = n->mb,
                          .now = ctx_now,
                          .member = ctx_member,
                          .coordinates = ctx_coordinates,
                          .entrant = ctx_entrant,
                          .copy_expected = ctx_copy_expected,
                          .outbid = ctx_outbid,
                          .deliver = ctx_deliver,
                          .ban = ctx_ban,
                          .probe = ctx_probe,
                          .rejoin = ctx_rejoin,
                          .answered = ctx_answered,
                          .give_up = ctx_give_up,
                          .decided = ctx_decided,
                          .desc = ctx_desc};
    memcpy(ctx.self_key, key, 32);
    n->auth = eng_auth_new(&ctx);
    CL_CHECK(n->auth != NULL);
}

/* Destroys n's authority (its timer goes with it), then the rest. */
static void node_fini(fake_t *n)
{
    eng_auth_destroy(&n->auth);
    CL_CHECK(n->auth == NULL);
    CL_CHECK(cl_timer_next(n->timers) == INFINITY);
    cl_member_destroy(&n->mb);
    cl_timer_destroy(&n->timers);
}

/* --- the receiver ----------------------------------------------------- */

enum { ME, M1, M2, MON, FORMER, STRANGER, NKEYS };
static uint8_t s_key[NKEYS][32];
static fake_t s_n;

static void setup(void)
{
    for (int i = 0; i < NKEYS; i++) {
        memset(s_key[i], 0, 32);
        s_key[i][0] = (uint8_t)(0x10 + i);
        s_key[i][9] = 0x77;
    }
    cl_member_t *mb = cl_member_new(s_key[ME]);
    CL_CHECK(mb != NULL);
    cl_settings_t st = {8, false, 0, 8, 0, 1, 16, false};
    CL_CHECK(cl_member_found(mb, 0, "", true, 1.0, &st) == COLLAB_OK);
    cl_member_delta_t d;
    CL_CHECK(cl_member_admit(mb, s_key[M1], 1, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(mb, s_key[M2], 2, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit(mb, s_key[FORMER], 3, "", true, 1.0, 1.0, &d) == COLLAB_OK);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_remove(mb, (const uint8_t(*)[32])s_key[FORMER], 1, 2.0, &d) == 1);
    cl_member_delta_clear(&d);
    CL_CHECK(cl_member_admit_monitor(mb, s_key[MON], "/ip4/127.0.0.1/tcp/9", false, 3.0, &d) ==
             COLLAB_OK);
    cl_member_delta_clear(&d);
    for (int i = M1; i <= M2; i++)
        cl_member_find(mb, s_key[i])->state = CL_PEER_ALIVE;
    node_init(&s_n, s_key[ME], mb);
}

/* The loop's turns up to t: each at the set's earliest deadline, whose
   timers run then; the clock ends at t. */
static void run_until(double t)
{
    for (double next = cl_timer_next(s_n.timers); next <= t; next = cl_timer_next(s_n.timers)) {
        s_now = next;
        cl_timer_run(s_n.timers, s_now);
    }
    s_now = t;
}

/* Hands m from key k to the gate: 1 taken, 0 dropped, 2 dropped and the
   sender banned. */
static int gate(int k, cl_wire_msg_t *m)
{
    int bans = s_bans;
    const cl_peer_t *p = cl_member_find(s_n.mb, s_key[k]);
    bool taken = eng_auth_message(s_n.auth, p, s_key[k], m);
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
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int all[3] = {ME, M1, M2}, alone[1] = {M2}, but_me[2] = {M1, M2};
    cl_wire_msg_t m;
    int bans = s_bans;

    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(eng_auth_probing(s_n.auth));
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
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY); /* nothing more is due */
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* the round is over */
    CL_CHECK(s_bans == bans);

    /* Rejoining: a view without the receiver from a member of its last
       view is refused; one that lists it is taken. */
    s_n.member = false;
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0);
    m = view(own + 2, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 1);
    s_n.member = true;

    /* No majority by the deadline (max(10 s, 4 × COLLAB_TIMEOUT)): the
       member that claimed a newer view is sent a JOIN; its view counts
       only while it lists the receiver. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(!eng_auth_went_on(s_n.auth)); /* nobody answered yet */
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth)); /* a refused newer view: the question is open */
    s_njoined = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    CL_CHECK(eng_auth_probing(s_n.auth) && eng_auth_went_on(s_n.auth));
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    int with_me[2] = {ME, M2};
    m = view(own + 3, with_me, 2, ents);
    s_gave_up = 0;
    s_decided = 0;
    CL_CHECK(gate(M2, &m) == 1); /* taken back by a member of the swarm that went on */
    CL_CHECK(!eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1); /* the pause is told at once */
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(s_bans == bans && s_gave_up == 0);

    /* Nobody takes it back within the window: the engine is stopped
       (the context's give_up), not left to train on alone.  A view
       listing it from a member whose answer was not refused (its own
       fragment) does not end the window. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 4, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* the JOIN */
    CL_CHECK(eng_auth_went_on(s_n.auth));
    s_gave_up = 0;
    s_decided = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == COLLAB_ERR_PROC_FAILED);
    CL_CHECK(!eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1);
    s_gave_up = 0;

    /* "Newer" means newer than the view held when the round began: the
       receiver's own epoch may move on meanwhile (it removes members it
       no longer hears from), past the view a member answered with. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 5, all, 3, ents);
    cl_member_delta_t delta;
    memset(&delta, 0, sizeof delta);
    CL_CHECK(cl_member_apply_view(s_n.mb, &m.u.view, s_now, &delta) == 1);
    cl_member_delta_clear(&delta);
    s_njoined = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    s_now = 100.0;
}

/* Only a view without this peer says the swarm went on without it (soak
   seed 2, round 28: member 1's newer view, after member 2 died, still
   listed the receiver, and the receiver stopped with an error while
   member 3 waited for it).  A probed member's newer view that lists the
   receiver is refused (no majority) but leaves the question closed: at
   the round's deadline it is sent a JOIN, and the window ends without
   stopping the engine.  One that omits it opens the question, and a
   window that ends without a member taking it back stops the engine. */
static void test_went_on(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int with_me[2] = {ME, M1}, without_me[1] = {M2};
    cl_wire_msg_t m;

    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, with_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0); /* not its coordinator, no majority: not counted */
    CL_CHECK(eng_auth_probing(s_n.auth));
    CL_CHECK(!eng_auth_went_on(s_n.auth)); /* it still lists this peer */
    s_njoined = 0;
    s_gave_up = 0;
    s_decided = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* no majority: the JOIN */
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M1][0]);
    CL_CHECK(eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* the window ends unanswered */
    CL_CHECK(!eng_auth_probing(s_n.auth) && s_gave_up == 0);
    CL_CHECK(s_decided == 0); /* nothing was ever open */

    /* The other member answers with a view without this peer: the swarm
       went on without it. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, with_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(!eng_auth_went_on(s_n.auth));
    m = view(own + 2, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 0);
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == 0 && eng_auth_went_on(s_n.auth));
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == COLLAB_ERR_PROC_FAILED);
    CL_CHECK(!eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1);

    /* Decided by a majority: two of the three answer with one view. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 3, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth) && s_decided == 1);
    int all[3] = {ME, M1, M2};
    m = view(own + 3, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(s_decided == 1);
    CL_CHECK(gate(M2, &m) == 1);
    CL_CHECK(!eng_auth_went_on(s_n.auth) && s_decided == 2);
    /* A membership that begins again decides an open question too. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 4, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    eng_auth_member(s_n.auth);
    CL_CHECK(s_decided == 3);
    s_gave_up = 0;
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
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int alone[1] = {M2};
    cl_wire_msg_t m;
    double timeout = s_n.cfg.timeout;
    s_n.cfg.timeout = 2.6;
    double t0 = s_now, window = s_n.cfg.timeout * 4;
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + 1.0); /* where the round starts */
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0); /* M2 claims a newer view */
    int probes = s_probes;
    s_njoined = 0;
    run_until(t0 + 1.0);
    CL_CHECK(s_probes == probes + 2);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + 2.0); /* the next re-probe */
    run_until(t0 + 10.0);
    CL_CHECK(s_probes == probes + 20 && s_njoined == 0);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + window); /* the deadline, before t0 + 11 */
    run_until(t0 + window);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    CL_CHECK(eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == (t0 + window) + window); /* the rejoin window's end */
    run_until((t0 + window) + window);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    CL_CHECK(s_probes == probes + 20 && s_njoined == 1);

    /* Removed meanwhile: the round's timer ends it, without a probe. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    s_n.member = false;
    run_until(s_now + 1.0);
    CL_CHECK(!eng_auth_probing(s_n.auth) && s_probes == probes + 20);
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    s_n.member = true;

    /* A membership that begins again ends a round or a rejoin window of
       the former one. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    eng_auth_member(s_n.auth);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    s_njoined = 0;
    run_until(s_now + window);
    CL_CHECK(s_njoined == 1 && eng_auth_probing(s_n.auth));
    eng_auth_member(s_n.auth);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    s_n.cfg.timeout = timeout;
    s_now = 100.0;
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
    test_pause();
    test_went_on();
    test_probe_timer();
    node_fini(&s_n);
    test_coordinator();
    test_null();
    return cl_selftest_end("cl_auth_test");
}
