/*  cl_engine_elastic_test.c - selftest of the elastic layer's logic
    (cl_engine_elastic.c) on a fake context (eng_el_ctx_t): no sockets, no
    engine, no stream of the engine (the context has no world stream).

    Real peer records (cl_member) of A (rank 0, the coordinator and the
    admitter), B (rank 1; this peer) and C (rank 2, joined after the group
    formed, outside it), the group generations the test declares known,
    and a record of what went out (sends, replies, bans, requests to be
    taken out of the group).  Checks what every member remembers of an
    ADMIT: its entrants (eng_elastic_is_entrant), that a joiner takes part
    only from the admission's sequence and a re-admitted straggler weighs
    0 until w0_end (eng_elastic_takes_part); the generation rule
    (eng_elastic_gen_ok: older generations barred from s on once the
    admitting view is known here) and the routing of a message of another
    generation (eng_elastic_route: restart, keep, notify); the successor
    that admits after the admitter failed handing the ADMIT on to the
    members, once, and not while the admitter lives or admits
    (eng_elastic_hand_on);
    a peer that completed the admission's sequence under an older
    generation asking once to be taken out (eng_elastic_check_admissions);
    a PROBE answered with this peer's view only while it is a member, a
    malformed message banned for 60 s, nothing handled once it left
    (eng_elastic_on_message).
*/
#include "engine/cl_engine_elastic_int.h"

#include "mpi_collab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 16

static uint8_t K[3][32]; /* A, B, C */

typedef struct {
    cl_config_t cfg;
    uint8_t self[32];
    cl_member_t *mb;
    eng_state_t state;
    int rank;
    uint64_t known[4]; /* generations recorded here (listing A, B, C) */
    int nknown;
    int ranks[3];
    group_gen_t gen;
    el_sent_t sent[MAXSENT]; /* decoded, no pointers kept */
    int nsent;
    int replies;
    uint8_t reply_type;
    uint64_t reply_epoch;
    int bans;
    double ban_seconds;
    int self_outs;
} fake_t;

static eng_state_t f_state(void *arg)
{
    return ((fake_t *)arg)->state;
}

static int f_rank(void *arg)
{
    return ((fake_t *)arg)->rank;
}

static int f_send(void *arg, const uint8_t key[32], cl_wire_msg_t *m)
{
    fake_t *f = arg;
    cl_elmsg_t em;
    CHECK(m->hdr.type == CL_MSG_ELASTIC);
    if (cl_elmsg_decode(m->hdr.sub, m->payload, m->payload_len, &em) != COLLAB_OK)
        return COLLAB_ERR_ARG;
    int rc = el_sent_push(f->sent, &f->nsent, MAXSENT, key, &em);
    cl_elmsg_clear(&em);
    return rc;
}

static int f_reply(void *arg, const uint8_t key[32], cl_wire_msg_t *m)
{
    fake_t *f = arg;
    (void)key;
    f->replies++;
    f->reply_type = m->hdr.type;
    f->reply_epoch = m->hdr.epoch;
    return COLLAB_OK;
}

static void f_ban(void *arg, const uint8_t key[32], double seconds)
{
    fake_t *f = arg;
    (void)key;
    f->bans++;
    f->ban_seconds = seconds;
}

static void f_self_out(void *arg)
{
    ((fake_t *)arg)->self_outs++;
}

static const group_gen_t *f_gen(void *arg, uint64_t gen)
{
    fake_t *f = arg;
    for (int i = 0; i < f->nknown; i++)
        if (f->known[i] == gen) {
            f->gen.gen = gen;
            return &f->gen;
        }
    return NULL;
}

static bool f_in_gen(void *arg, uint64_t gen)
{
    return f_gen(arg, gen) != NULL;
}

/* No world stream here: the tests below never need one. */
static struct stream *f_world(void *arg)
{
    (void)arg;
    return NULL;
}

static struct eng_elastic *fake_init(fake_t *f, int self)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 1.0;
    memcpy(f->self, K[self], 32);
    f->state = ENG_MEMBER;
    f->rank = self;
    f->mb = el_member_of_three(K, self, 100.0);
    CHECK(f->mb != NULL);
    for (int i = 0; i < 3; i++)
        f->ranks[i] = i;
    f->gen.n = 3;
    f->gen.world = f->ranks;
    eng_el_ctx_t ctx = {.arg = f,
                        .cfg = &f->cfg,
                        .self_key = f->self,
                        .mb = f->mb,
                        .state = f_state,
                        .rank = f_rank,
                        .send = f_send,
                        .reply = f_reply,
                        .ban = f_ban,
                        .self_out = f_self_out,
                        .gen = f_gen,
                        .in_gen = f_in_gen,
                        .world = f_world};
    struct eng_elastic *el = eng_elastic_new(&ctx);
    CHECK(el != NULL);
    return el;
}

static void fake_fini(fake_t *f, struct eng_elastic **el)
{
    eng_elastic_destroy(el);
    CHECK(*el == NULL);
    eng_elastic_destroy(el); /* NULL is fine */
    cl_member_destroy(&f->mb);
}

/* An ADMIT at sequence s under generation gen with one joiner (C), a
   re-admitted straggler weighing 0 until w0_end when `readmit`. */
static cl_elmsg_t admit_of(uint64_t s, uint64_t gen, cl_el_joiner_t *j, bool readmit,
                           uint64_t w0_end)
{
    memset(j, 0, sizeof *j);
    memcpy(j->key, K[2], 32);
    j->rank = 2;
    j->flags = readmit ? CL_EL_JOINER_READMIT : 0;
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_ADMIT;
    m.s = s;
    m.gen = gen;
    m.w0_end = readmit ? w0_end : s; /* as an admitter sends it */
    m.joiners = j;
    m.njoiners = 1;
    return m;
}

/* Entrants and the weight of a re-admitted straggler. */
static void test_entrants(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    uint64_t g = cl_member_group_epoch(f.mb) + 1;
    CHECK(!eng_elastic_is_entrant(el, K[2]));
    double w = 1.0;
    CHECK(eng_elastic_takes_part(el, 2, 3, &w) && w == 1.0); /* nothing known of rank 2 */
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    CHECK(eng_elastic_is_entrant(el, K[2]));
    CHECK(!eng_elastic_is_entrant(el, K[1]));
    CHECK(!eng_elastic_takes_part(el, 2, 9, &w)); /* before its first sequence */
    CHECK(eng_elastic_takes_part(el, 2, 10, &w) && w == 1.0);
    CHECK(eng_elastic_takes_part(el, 1, 9, &w) && w == 1.0); /* a veteran */
    /* Re-admitted as a straggler at 20: weight 0 in [20, 22). */
    m = admit_of(20, g + 1, &j, true, 22);
    eng_elastic_remember(el, &m, K[0]);
    CHECK(!eng_elastic_takes_part(el, 2, 19, &w));
    w = 1.0;
    CHECK(eng_elastic_takes_part(el, 2, 21, &w) && w == 0.0);
    w = 1.0;
    CHECK(eng_elastic_takes_part(el, 2, 22, &w) && w == 1.0);
    fake_fini(&f, &el);
}

/* The generation rule around an admission, and the routing it implies. */
static void test_generations(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    uint64_t cur = cl_member_group_epoch(f.mb), g = cl_member_epoch(f.mb) + 1;
    CHECK(g > cur);
    f.known[f.nknown++] = cur;
    CHECK(eng_elastic_gen_ok(el, 10, cur));
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    /* Its view is not known here yet: nobody here can run under it. */
    CHECK(eng_elastic_gen_ok(el, 10, cur));
    CHECK(eng_elastic_route(el, 10, cur, g) == ENG_EL_ROUTE_KEEP);
    f.known[f.nknown++] = g;
    CHECK(!eng_elastic_gen_ok(el, 10, cur)); /* barred from s on */
    CHECK(!eng_elastic_gen_ok(el, 11, cur));
    CHECK(eng_elastic_gen_ok(el, 9, cur)); /* before s */
    CHECK(eng_elastic_gen_ok(el, 10, g));
    CHECK(eng_elastic_gen_ok(el, 10, 0)); /* alone */
    /* A member of g heard while running s under cur: restart under g. */
    CHECK(eng_elastic_route(el, 10, cur, g) == ENG_EL_ROUTE_RESTART);
    CHECK(eng_elastic_route(el, 9, cur, g) == ENG_EL_ROUTE_DEFAULT);
    /* Not listed in g: the engine's rule. */
    f.gen.n = 1;
    CHECK(eng_elastic_route(el, 10, cur, g) == ENG_EL_ROUTE_DEFAULT);
    f.gen.n = 3;
    /* A message of the barred generation for s: tell its sender ours. */
    CHECK(eng_elastic_route(el, 10, g, cur) == ENG_EL_ROUTE_NOTIFY);
    CHECK(eng_elastic_route(el, 9, g, cur) == ENG_EL_ROUTE_DEFAULT);
    CHECK(eng_elastic_route(el, 10, 0, cur) == ENG_EL_ROUTE_DEFAULT);
    /* Evicted: its step finishes alone. */
    CHECK(eng_elastic_choose_gen(el) == ENG_EL_DEFAULT);
    el->st.evicted = true;
    CHECK(eng_elastic_choose_gen(el) == 0);
    fake_fini(&f, &el);
}

/* B's records once the admitting view put C into the group; with A then
   removed when `a_gone`. */
static void admitting_view(fake_t *f, bool a_gone)
{
    cl_wire_view_t v;
    CHECK(cl_member_view(f->mb, &v) == 0);
    for (uint32_t i = 0; i < v.count; i++)
        if (memcmp(v.members[i].key, K[2], 32) == 0)
            v.members[i].flags |= CL_MEMBER_IN_GROUP;
    v.epoch++;
    v.group_epoch = v.epoch;
    cl_member_delta_t d;
    CHECK(cl_member_apply_view(f->mb, &v, 101.0, &d) == 1);
    cl_member_delta_clear(&d);
    free(v.members);
    if (a_gone) {
        CHECK(cl_member_remove(f->mb, (const uint8_t(*)[32])K[0], 1, 102.0, &d) == 1);
        cl_member_delta_clear(&d);
    }
}

/* The successor that admits now hands a dead admitter's ADMIT on. */
static void test_hand_on(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    uint64_t g = cl_member_epoch(f.mb) + 1;
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    admitting_view(&f, false);
    eng_elastic_hand_on(el); /* A admits: it sent the ADMIT to everyone */
    CHECK(f.nsent == 0);
    cl_member_delta_t d;
    CHECK(cl_member_ungroup(f.mb, (const uint8_t(*)[32])K[0], 1, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(eng_admitter_pick(f.mb, f.self) == cl_member_self(f.mb));
    eng_elastic_hand_on(el); /* B admits, but A lives: it sent the ADMIT to everyone */
    CHECK(f.nsent == 0);
    admitting_view(&f, true);
    f.state = ENG_JOINING;
    eng_elastic_hand_on(el); /* no member */
    CHECK(f.nsent == 0);
    f.state = ENG_MEMBER;
    eng_elastic_hand_on(el);
    CHECK(f.nsent == 1); /* to C: not to itself, not to A */
    CHECK(f.nsent >= 1 && memcmp(f.sent[0].to, K[2], 32) == 0 && f.sent[0].m.type == CL_EL_ADMIT &&
          f.sent[0].m.s == 10 && f.sent[0].m.gen == g);
    eng_elastic_hand_on(el); /* once */
    CHECK(f.nsent == 1);
    fake_fini(&f, &el);
}

/* A peer that completed the admission's sequence under an older
   generation asks to be taken out, once. */
static void test_ran_ahead(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    uint64_t cur = cl_member_group_epoch(f.mb), g = cl_member_epoch(f.mb) + 1;
    /* Collectives 0 .. 10 completed here, 10 under cur. */
    el->done_seq = 11;
    el->done_ring[10 % EL_DONE_RING].seq = 10;
    el->done_ring[10 % EL_DONE_RING].gen = cur;
    eng_elastic_check_admissions(el);
    CHECK(f.self_outs == 0); /* no admission known */
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(12, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    eng_elastic_check_admissions(el);
    CHECK(f.self_outs == 0); /* 12 not completed */
    m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    f.state = ENG_JOINING;
    eng_elastic_check_admissions(el);
    CHECK(f.self_outs == 0); /* no member */
    f.state = ENG_MEMBER;
    eng_elastic_check_admissions(el);
    CHECK(f.self_outs == 1);
    eng_elastic_check_admissions(el);
    CHECK(f.self_outs == 1); /* once */
    fake_fini(&f, &el);
}

/* A PROBE, a malformed message, and a peer that left. */
static void test_messages(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    cl_peer_t *c = cl_member_find(f.mb, K[2]);
    CHECK(c != NULL);
    cl_elmsg_t probe;
    memset(&probe, 0, sizeof probe);
    probe.type = CL_EL_PROBE;
    uint8_t *body = NULL;
    size_t blen = 0;
    CHECK(cl_elmsg_encode(&probe, &body, &blen) == COLLAB_OK);
    cl_wire_msg_t w;
    memset(&w, 0, sizeof w);
    w.hdr.type = CL_MSG_ELASTIC;
    w.hdr.sub = CL_EL_PROBE;
    w.payload = body;
    w.payload_len = blen;
    eng_elastic_on_message(el, c, K[2], &w);
    CHECK(f.replies == 1 && f.reply_type == CL_MSG_VIEW && f.reply_epoch == cl_member_epoch(f.mb));
    f.state = ENG_JOINING;
    eng_elastic_on_message(el, c, K[2], &w);
    CHECK(f.replies == 1); /* no view to give */
    f.state = ENG_MEMBER;
    uint8_t junk[3] = {0xff, 0xff, 0xff};
    cl_wire_msg_t bad = w;
    bad.hdr.sub = CL_EL_ADMIT;
    bad.payload = junk;
    bad.payload_len = sizeof junk;
    eng_elastic_on_message(el, c, K[2], &bad);
    CHECK(f.bans == 1 && f.ban_seconds == 60.0 && f.replies == 1);
    f.state = ENG_LEFT;
    eng_elastic_on_message(el, c, K[2], &bad);
    eng_elastic_on_message(el, c, K[2], &w);
    CHECK(f.bans == 1 && f.replies == 1);
    free(body);
    fake_fini(&f, &el);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        memset(K[i], 0xA0 + i, 32);
    test_entrants();
    test_generations();
    test_hand_on();
    test_ran_ahead();
    test_messages();
    printf("cl_engine_elastic_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
