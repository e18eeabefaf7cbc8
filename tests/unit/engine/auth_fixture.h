/*  auth_fixture.h - the fake context of the authority's selftests
    (cl_auth_test: the gate; cl_auth_probe_test: the round after a
    pause): real membership records, wire structures and a real timer
    set; the clock, "am I a member", "do I coordinate", the elastic
    layer's answers, the ban, the delivery of kept messages, PROBE and
    JOIN are the test's (no sockets, no engine).  One test each. */
#ifndef AUTH_FIXTURE_H_INCLUDED
#define AUTH_FIXTURE_H_INCLUDED

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
static double s_ban_seconds; /* the duration of the last ban */
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
static int s_joins; /* every JOIN sent, not reset by the tests */

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

static inline double ctx_now(fake_t *f)
{
    (void)f;
    return s_now;
}

static inline bool ctx_member(fake_t *f)
{
    return f->member;
}

static inline bool ctx_coordinates(fake_t *f)
{
    (void)f;
    return s_coordinates;
}

static inline bool ctx_entrant(fake_t *f, const uint8_t key[32])
{
    (void)f;
    return s_entrant != NULL && memcmp(s_entrant, key, 32) == 0;
}

static inline bool ctx_copy_expected(fake_t *f, const uint8_t key[32])
{
    (void)f;
    return s_copy_for != NULL && memcmp(s_copy_for, key, 32) == 0;
}

static inline void ctx_outbid(fake_t *f, const cl_wire_view_t *v)
{
    (void)f, (void)v;
    s_outbids++;
}

static inline void ctx_deliver(fake_t *f, const uint8_t key[32], const cl_wire_msg_t *m)
{
    (void)f, (void)key;
    s_replayed++;
    s_replay_type = m->hdr.type;
}

static inline void ctx_ban(fake_t *f, const uint8_t key[32], double seconds)
{
    (void)f, (void)key;
    s_ban_seconds = seconds;
    s_bans++;
}

static inline void ctx_probe(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
    s_probes++;
}

/* A JOIN goes out as the engine sends it (eng_send_join), noted by the
   gate. */
static inline void ctx_rejoin(fake_t *f, const uint8_t key[32])
{
    if (s_njoined < 8)
        s_joined[s_njoined++] = key[0];
    s_joins++;
    eng_auth_note_join_sent(f->auth, key);
}

static inline void ctx_answered(fake_t *f, const uint8_t key[32])
{
    (void)f, (void)key;
}

static int s_gave_up; /* the status the authority stopped the engine with */
static int s_decided; /* times the question "did the swarm go on" was decided */

static inline void ctx_decided(fake_t *f)
{
    CL_CHECK(!eng_auth_went_on(f->auth)); /* told once it is decided, not before */
    s_decided++;
}

static int s_self_out; /* times this peer asked to be taken out of the group */

static inline void ctx_self_out(fake_t *f)
{
    (void)f;
    s_self_out++;
}

static inline void ctx_give_up(fake_t *f, int status)
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
   member, COLLAB_TIMEOUT 5 s, COLLAB_BAN_TIME 60 s, its authority
   created. */
static inline void node_init(fake_t *n, const uint8_t key[32], cl_member_t *mb)
{
    memset(n, 0, sizeof *n);
    memcpy(n->key, key, 32);
    n->cfg.timeout = 5;
    n->cfg.ban_time = 60;
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
                          .self_out = ctx_self_out,
                          .desc = ctx_desc};
    memcpy(ctx.self_key, key, 32);
    n->auth = eng_auth_new(&ctx);
    CL_CHECK(n->auth != NULL);
}

/* Destroys n's authority (its timer goes with it), then the rest. */
static inline void node_fini(fake_t *n)
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

static inline void setup(void)
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
static inline void run_until(double t)
{
    for (double next = cl_timer_next(s_n.timers); next <= t; next = cl_timer_next(s_n.timers)) {
        s_now = next;
        cl_timer_run(s_n.timers, s_now);
    }
    s_now = t;
}

/* Hands m from key k to the gate: 1 taken, 0 dropped, 2 dropped and the
   sender banned. */
static inline int gate(int k, cl_wire_msg_t *m)
{
    int bans = s_bans;
    const cl_peer_t *p = cl_member_find(s_n.mb, s_key[k]);
    bool taken = eng_auth_message(s_n.auth, p, s_key[k], m);
    if (s_bans != bans) /* for as long as the configuration says */
        CL_CHECK(s_ban_seconds == s_n.cfg.ban_time);
    return taken ? (s_bans == bans ? 1 : -1) : (s_bans == bans ? 0 : 2);
}

static inline cl_wire_msg_t msg(int type)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = (uint8_t)type;
    return m;
}

/* A view of epoch `epoch` listing keys ks (all client entries: no
   address), or with entry `bad_addr` public at another key's address. */
static inline cl_wire_msg_t view(uint64_t epoch, const int *ks, int n, cl_wire_member_t *ents)
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

#endif
