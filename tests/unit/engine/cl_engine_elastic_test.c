/*  cl_engine_elastic_test.c - selftest of the elastic layer's logic
    (cl_engine_elastic.c) on a fake context (eng_el_ctx_t): no sockets, no
    engine, no stream of the engine (the world stream is a handle whose
    running collective the test declares).

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
    (eng_elastic_hand_on); whether a coordinator may adopt an admission
    it got after its own views went past it (eng_elastic_adoptable);
    a peer that completed the admission's sequence under an older
    generation asking once to be taken out (eng_elastic_check_admissions);
    a PROBE answered with this peer's view only while it is a member, a
    malformed message banned for COLLAB_BAN_TIME, nothing handled once it left
    (eng_elastic_on_message); a view change (eng_elastic_view_changed,
    with a real admitter, admittee and donor on stubs) that voids an
    admission whose admitter left before the group got its view (its
    generation barred, the one before allowed again, the joiner
    forgotten, the running collective restarted under the one before,
    the ADMIT not handed on), one that takes this peer out of the formed
    group (evicted: its collective finishes alone) and one that takes it
    back; a member never in the group whose queued world collectives a
    view hands to the admittee as a joiner's (adopt_queued), in order and
    none completed twice (cl_request_complete is wrapped at link time).
*/
#include "engine/cl_engine_elastic_int.h"

#include "mpi_collab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_engine_fake.h"
#include "el_fixture.h"
#include "selftest.h"

/* Completions of requests (cl_request_complete, wrapped at link time):
   test_adopt checks that none completes twice. */
#define MAXDONE 16
static collab_request_t *s_done[MAXDONE];
static int s_ndone;
void __real_cl_request_complete(collab_request_t *req, int status);
void __wrap_cl_request_complete(collab_request_t *req, int status)
{
    for (int i = 0; i < s_ndone; i++)
        CHECK(s_done[i] != req); /* completed once */
    if (s_ndone < MAXDONE)
        s_done[s_ndone++] = req;
    __real_cl_request_complete(req, status);
}

/* The standing's one writer: each field the admittee names, and only it. */
static void test_stand(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    el->st = (el_standing_t){.phase = EL_IN, .posted = 7};
    eng_elastic_stand(el, EL_ST_PHASE, EL_SYNCING);
    CHECK(el->st.phase == EL_SYNCING && el->st.posted == 7 && !el->st.mapped);
    eng_elastic_stand(el, EL_ST_WAS_IN_GROUP, 1);
    CHECK(el->st.was_in_group && !el->st.evicted && !el->st.readmit);
    eng_elastic_stand(el, EL_ST_EVICTED, 1);
    CHECK(el->st.evicted && !el->st.readmit && !el->st.mapped);
    eng_elastic_stand(el, EL_ST_READMIT, 1);
    CHECK(el->st.readmit && !el->st.mapped);
    eng_elastic_stand(el, EL_ST_MAPPED, 1);
    CHECK(el->st.mapped && el->st.map_local == 0 && el->st.map_seq == 0);
    eng_elastic_stand(el, EL_ST_MAP_LOCAL, 3);
    CHECK(el->st.map_local == 3 && el->st.map_seq == 0);
    eng_elastic_stand(el, EL_ST_MAP_SEQ, 40);
    CHECK(el->st.map_local == 3 && el->st.map_seq == 40);
    eng_elastic_stand(el, EL_ST_EVICTED, 0);
    eng_elastic_stand(el, EL_ST_WAS_IN_GROUP, 0);
    CHECK(!el->st.evicted && !el->st.was_in_group && el->st.readmit);
    eng_elastic_stand(el, (el_st_field_t)99, 5); /* unknown: nothing */
    CHECK(el->st.phase == EL_SYNCING && el->st.posted == 7 && !el->st.was_in_group &&
          !el->st.evicted && el->st.readmit && el->st.mapped && el->st.map_local == 3 &&
          el->st.map_seq == 40);
    fake_fini(&f, &el);
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
    CHECK(cl_member_admitter(f.mb) == cl_member_self(f.mb));
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
    f.cfg.ban_time = 20.0; /* COLLAB_BAN_TIME=20 */
    eng_elastic_on_message(el, c, K[2], &bad);
    CHECK(f.bans == 2 && f.ban_seconds == 20.0 && f.replies == 1);
    f.state = ENG_LEFT;
    eng_elastic_on_message(el, c, K[2], &bad);
    eng_elastic_on_message(el, c, K[2], &w);
    CHECK(f.bans == 2 && f.replies == 1);
    free(body);
    fake_fini(&f, &el);
}

/* A view change: an admission whose admitter left before the group got
   its view is voided (its generation barred from s on, the one before
   allowed again, its joiner forgotten, the running collective restarted
   under the one before, the ADMIT not handed on); a view that leaves
   this member out of the formed group evicts it (its running collective
   finishes alone); one that takes it back ends that. */
static void test_views(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1);
    components_new(&f, el);
    uint64_t g0 = cl_member_group_epoch(f.mb), g = cl_member_epoch(f.mb) + 1;
    f.known[f.nknown++] = g0;
    f.known[f.nknown++] = g;
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    eng_elastic_view_changed(el); /* nothing lost: A lives */
    CHECK(el->st.was_in_group && !el->st.evicted);
    f.running = true; /* B runs 10 under the admitting generation */
    f.run_seq = 10;
    f.run_gen = g;
    /* A fails before B got the admitting view: B's view (epoch g + 1)
       has A gone and C still outside the group. */
    cl_member_raise_epoch(f.mb, g);
    cl_member_delta_t d;
    CHECK(cl_member_remove(f.mb, (const uint8_t(*)[32])K[0], 1, 102.0, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(cl_member_epoch(f.mb) > g && eng_elastic_is_entrant(el, K[2]));
    eng_elastic_view_changed(el);
    CHECK(!eng_elastic_is_entrant(el, K[2])); /* forgotten */
    double w = 1.0;
    CHECK(eng_elastic_takes_part(el, 2, 10, &w));
    CHECK(!eng_elastic_gen_ok(el, 10, g) && eng_elastic_gen_ok(el, 10, g0));
    CHECK(f.restarts == 1 && f.restart_gen == g0);
    CHECK(f.nsent == 0);          /* a lost admission is not handed on */
    eng_elastic_view_changed(el); /* once */
    CHECK(f.restarts == 1);
    /* B taken out of the formed group: evicted, 10 finishes alone. */
    CHECK(cl_member_ungroup(f.mb, (const uint8_t(*)[32])K[1], 1, &d) == 1);
    cl_member_delta_clear(&d);
    eng_elastic_view_changed(el);
    CHECK(el->st.evicted && el->st.readmit && el->st.phase == EL_WAITING);
    CHECK(f.restarts == 2 && f.restart_gen == 0);
    CHECK(eng_elastic_choose_gen(el) == 0);
    /* A view that regroups everyone takes it back, nothing to resync. */
    cl_wire_view_t v;
    CHECK(cl_member_view(f.mb, &v) == 0);
    for (uint32_t i = 0; i < v.count; i++)
        if (v.members[i].rank >= 0)
            v.members[i].flags |= CL_MEMBER_IN_GROUP;
    v.epoch++;
    v.group_epoch = v.epoch;
    CHECK(cl_member_apply_view(f.mb, &v, 103.0, &d) == 1);
    cl_member_delta_clear(&d);
    free(v.members);
    f.running = false;
    eng_elastic_view_changed(el);
    CHECK(!el->st.evicted && el->st.phase == EL_IN && !el->st.readmit);
    components_free(&f, el);
    fake_fini(&f, &el);
}

/* Whether a coordinator whose views went past an admission may adopt it
   (eng_elastic_adoptable): only from the peer that admits as this peer
   computes it, only with its ADMIT of that generation held here and not
   voided, and, when this peer is the one admitted, only while its own
   admission of that generation stands. */
static void test_adoptable(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 1); /* B; A admits */
    uint64_t g = cl_member_epoch(f.mb) + 1;
    CHECK(!eng_elastic_adoptable(el, K[0], g)); /* no ADMIT held */
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_of(10, g, &j, false, 0);
    eng_elastic_remember(el, &m, K[0]);
    CHECK(eng_elastic_adoptable(el, K[0], g));
    CHECK(!eng_elastic_adoptable(el, K[0], g + 1)); /* another generation */
    CHECK(!eng_elastic_adoptable(el, K[2], g));     /* C does not admit */
    CHECK(!eng_elastic_adoptable(el, K[1], g));     /* nor this peer's own */
    for (int i = 0; i < EL_BARRIERS; i++)
        if (el->barriers[i].gen == g)
            el->barriers[i].void_until = g + 1; /* voided */
    CHECK(!eng_elastic_adoptable(el, K[0], g));
    fake_fini(&f, &el);

    el = fake_init(&f, 2); /* C, the joiner: no admission of its own stands */
    components_new(&f, el);
    eng_elastic_remember(el, &m, K[0]);
    CHECK(eng_elastic_is_entrant(el, K[2]));
    CHECK(!eng_admittee_pending(el->admittee));
    CHECK(!eng_elastic_adoptable(el, K[0], g));
    components_free(&f, el);
    fake_fini(&f, &el);

    /* C waits as a joiner (its first world collective parked by a view)
       and takes the ADMIT: while its own admission stands it adopts it.
       An ADMIT that names C at a later generation is not its own (C's
       entrant record moves to it): not adopted while C's admission of g
       stands, nor once that is undone. */
    el = fake_init(&f, 2);
    components_new(&f, el);
    f.queue = zlist_new();
    CHECK(f.queue != NULL);
    collab_request_t *r = cl_request_new(CL_OP_COLL);
    CHECK(r != NULL);
    (void)cl_stream_record(el->stream, 1, NULL, NULL);
    CHECK(zlist_append(f.queue, r) == 0);
    eng_elastic_view_changed(el);
    CHECK(el->st.phase == EL_WAITING && eng_admittee_busy(el->admittee));
    eng_elastic_remember(el, &m, K[0]);
    CHECK(!eng_elastic_adoptable(el, K[0], g)); /* not admitted yet */
    eng_admittee_on_admit(el->admittee, cl_member_find(f.mb, K[0]), &m);
    CHECK(eng_admittee_pending(el->admittee) && eng_admittee_gen(el->admittee) == g);
    CHECK(eng_elastic_adoptable(el, K[0], g));
    cl_el_joiner_t j2;
    cl_elmsg_t m2 = admit_of(11, g + 1, &j2, false, 0);
    eng_elastic_remember(el, &m2, K[0]);
    CHECK(!eng_elastic_adoptable(el, K[0], g + 1));
    eng_admittee_undo(el->admittee, "test");
    CHECK(!eng_admittee_pending(el->admittee));
    CHECK(!eng_elastic_adoptable(el, K[0], g + 1));
    components_free(&f, el);
    cl_request_destroy(&r);
    zlist_destroy(&f.queue);
    fake_fini(&f, &el);
}

/* A member never in the group (C: admitted after the group formed,
   outside it) whose world collectives, posted before the group formed,
   still wait in the queue: a view hands them to the admittee as a
   joiner's (parked, the admission asked for); more queued at a later
   view follow them; none is completed twice, then or when the
   admission is torn down. */
static void test_adopt(void)
{
    fake_t f;
    struct eng_elastic *el = fake_init(&f, 2);
    components_new(&f, el);
    f.queue = zlist_new();
    CHECK(f.queue != NULL);
    collab_request_t *r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = cl_request_new(CL_OP_COLL);
        CHECK(r[i] != NULL);
        (void)cl_stream_record(el->stream, 1, NULL, NULL);
    }
    s_ndone = 0;
    CHECK(zlist_append(f.queue, r[0]) == 0);
    eng_elastic_view_changed(el);
    CHECK(zlist_size(f.queue) == 0 && eng_admittee_busy(el->admittee));
    CHECK(el->st.phase == EL_WAITING && !el->st.was_in_group && s_ndone == 0);
    /* Three more queued: handed on at the next view, in order. */
    for (int i = 1; i < 4; i++)
        CHECK(zlist_append(f.queue, r[i]) == 0);
    eng_elastic_view_changed(el);
    CHECK(zlist_size(f.queue) == 0 && s_ndone == 0 && eng_admittee_busy(el->admittee));
    components_free(&f, el);
    CHECK(s_ndone <= 4); /* the wrap checked that none completed twice */
    for (int i = 0; i < 4; i++)
        cl_request_destroy(&r[i]);
    zlist_destroy(&f.queue);
    fake_fini(&f, &el);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        memset(K[i], 0xA0 + i, 32);
    test_stand();
    test_entrants();
    test_generations();
    test_hand_on();
    test_adoptable();
    test_ran_ahead();
    test_messages();
    test_views();
    test_adopt();
    printf("cl_engine_elastic_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
