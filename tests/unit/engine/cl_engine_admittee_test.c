/*  cl_engine_admittee_test.c - selftest of the admittee
    (cl_engine_admittee.c), this peer's own admission into the world
    group as a joiner or a straggler.

    Drives it through a fake context, without sockets or a clock: real
    peer records (cl_member) of A (rank 0, the coordinator and admitter),
    B (rank 1) and this peer C (rank 2, joined after the group formed), a
    real world stream (cl_stream: one start-up broadcast, steps of two),
    real requests (cl_request), and a fake engine that records what is
    sent, submitted, renumbered and pulled.  The pull of the state is
    started through the context and finished by the test (an empty pull:
    a start-up broadcast keeps the program's own value).  Checks that a
    joiner parks its collectives, asks the admitter every second from its
    timer and, admitted, maps its numbering onto the group's, answers its
    start-up collective and hands the next one back under the group's
    sequence; that it gives up after eng_admit_wait_limit; that an
    admission whose view never came is undone (numbering restored, the
    pull stopped, asking again), and one undone after its state was
    agreed on but before any of it reached the program waits as a joiner
    again (not as a straggler); that a program whose start-up collectives
    differ leaves the swarm; that a straggler holds its collective at a
    step boundary, is re-admitted and resubmits it; that a straggler
    with nobody left goes on alone; and that one whose group's members all
    left while others were out of it too waits while one may live, then,
    when it coordinates, forms the group again and goes on (else waits
    for its coordinator to); and that a straggler put back into the
    group by a view releases its held collective once.  The timer lives in a real cl_timer
    set, disarmed when nothing is due.
*/
#include "engine/cl_engine_admittee.h"

#include "coll/cl_coll.h"
#include "engine/cl_engine_sync.h"
#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 32
#define MAXSUB 8

static uint8_t K[3][32]; /* A, B, C */

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md,
   "Typed contexts"). */
typedef struct cl_engine {
    cl_config_t cfg;
    uint8_t self[32];
    cl_member_t *mb;
    el_standing_t st;
    cl_stream_t *stream;
    cl_statereg_t *reg;
    cl_startup_t *startup;
    cl_timer_t *timers;
    double now;
    bool member;
    bool want_pending; /* the pull's bytes for a start-up item are on the way */
    el_sent_t sent[MAXSENT];
    int nsent;
    int seen;
    collab_request_t *sub[MAXSUB]; /* handed back to the engine */
    uint64_t sub_seq[MAXSUB], sub_next[MAXSUB];
    int nsub;
    uint64_t started, next_seq; /* the world stream as renumbered */
    int syncs, sync_stops, leaves, leave_status;
    uint64_t sync_s;
    int nstand;       /* changes of st asked (stand) */
    bool coordinates; /* this peer coordinates: regroup puts it back in */
    int regroups;     /* regroup asked */
    int self_outs;    /* self_out asked */
} fake_t;

EL_FAKE_ENGINE_NOW_AND_SEND(fake_t)

static bool f_member(fake_t *f)
{
    return f->member;
}

static const cl_peer_t *f_admitter(fake_t *f)
{
    return cl_member_find(f->mb, K[0]);
}

static bool f_regroup(fake_t *f)
{
    f->regroups++;
    if (!f->coordinates)
        return false;
    cl_member_delta_t d;
    int rc = cl_member_regroup_self(f->mb, &d);
    cl_member_delta_clear(&d);
    return rc == 1;
}

static void f_self_out(fake_t *f)
{
    f->self_outs++;
}

static void f_seen(fake_t *f, const cl_elmsg_t *m, const uint8_t *admitter)
{
    (void)m;
    CHECK(admitter == NULL || memcmp(admitter, K[0], 32) == 0);
    f->seen++;
}

static int f_submit(fake_t *f, collab_request_t *req, uint64_t seq, uint64_t next)
{
    if (f->nsub == MAXSUB)
        return COLLAB_ERR_INTERNAL;
    f->sub[f->nsub] = req;
    f->sub_seq[f->nsub] = seq;
    f->sub_next[f->nsub] = next;
    f->nsub++;
    if (next != UINT64_MAX)
        f->next_seq = next;
    return COLLAB_OK;
}

static void f_renumber(fake_t *f, uint64_t started, uint64_t next)
{
    if (f->started < started)
        f->started = started;
    if (next != UINT64_MAX)
        f->next_seq = next;
}

static size_t f_take_back(fake_t *f, collab_request_t **taken, size_t max)
{
    size_t n = 0;
    while (f->nsub > 0 && n < max)
        taken[n++] = f->sub[--f->nsub];
    return n;
}

static const el_sync_t *f_sync(fake_t *f)
{
    (void)f;
    return NULL; /* an empty pull: nothing fetched */
}

static bool f_sync_start(fake_t *f, uint64_t s, const cl_elmsg_t *admit, const uint8_t *admitter)
{
    (void)admit;
    (void)admitter;
    f->syncs++;
    f->sync_s = s;
    return true;
}

static bool f_sync_start_one(fake_t *f, uint64_t s, const uint8_t key[32])
{
    (void)key;
    return f_sync_start(f, s, NULL, NULL);
}

static int f_sync_want(fake_t *f, int what, uint64_t index, uint64_t size)
{
    (void)what;
    (void)index;
    (void)size;
    return f->want_pending ? ENG_SYNC_PENDING : ENG_SYNC_NONE;
}

static void f_sync_check(fake_t *f)
{
    (void)f;
}

static void f_sync_stop(fake_t *f)
{
    f->sync_stops++;
}

static bool f_take_resume(fake_t *f, eng_ckpt_resume_t *r)
{
    (void)f;
    (void)r;
    return false;
}

static void f_resuming(fake_t *f)
{
    (void)f;
}

static void f_leave(fake_t *f, int status)
{
    f->leaves++;
    f->leave_status = status;
}

static uint32_t f_signature(const collab_request_t *req)
{
    return 0x5000u + (uint32_t)req->coll.count;
}

static bool f_result_span(const collab_request_t *req, int comm_size, void **ptr, size_t *len)
{
    (void)req;
    (void)comm_size;
    (void)ptr;
    (void)len;
    return false;
}

static const char *f_kind_name(cl_coll_kind_t kind)
{
    (void)kind;
    return "collective";
}

/* The elastic layer's part (eng_elastic_stand): the standing is written
   here only. */
static void f_stand(fake_t *x, el_st_field_t f, uint64_t v)
{
    x->nstand++;
    switch (f) {
    case EL_ST_PHASE:
        x->st.phase = (el_phase_t)v;
        break;
    case EL_ST_WAS_IN_GROUP:
        x->st.was_in_group = v != 0;
        break;
    case EL_ST_EVICTED:
        x->st.evicted = v != 0;
        break;
    case EL_ST_READMIT:
        x->st.readmit = v != 0;
        break;
    case EL_ST_MAPPED:
        x->st.mapped = v != 0;
        break;
    case EL_ST_MAP_LOCAL:
        x->st.map_local = v;
        break;
    case EL_ST_MAP_SEQ:
        x->st.map_seq = v;
        break;
    }
}

/* A at rank 0 and B at 1 in the formed group, this peer C at 2 outside
   it; its program posted nothing yet. */
static void fake_init(fake_t *f)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 1.0;
    memcpy(f->self, K[2], 32);
    f->now = 100.0;
    f->member = true;
    f->timers = cl_timer_new(4);
    f->stream = cl_stream_new("the world communicator", 2);
    f->startup = cl_startup_new(0);
    f->reg = cl_statereg_new();
    CHECK(f->timers != NULL && f->stream != NULL && f->startup != NULL && f->reg != NULL);
    f->mb = el_member_of_three(K, 2, f->now);
    CHECK(f->mb != NULL);
}

static el_admittee_t *adm_new(fake_t *f)
{
    eng_admittee_ctx_t ctx = {.arg = f,
                              .cfg = &f->cfg,
                              .self_key = f->self,
                              .mb = f->mb,
                              .st = &f->st,
                              .stream = f->stream,
                              .reg = f->reg,
                              .startup = f->startup,
                              .timers = f->timers,
                              .now = f_now,
                              .send = f_send,
                              .member = f_member,
                              .admitter = f_admitter,
                              .regroup = f_regroup,
                              .self_out = f_self_out,
                              .seen = f_seen,
                              .submit = f_submit,
                              .renumber = f_renumber,
                              .take_back = f_take_back,
                              .sync = f_sync,
                              .sync_start = f_sync_start,
                              .sync_start_one = f_sync_start_one,
                              .sync_check = f_sync_check,
                              .sync_want = f_sync_want,
                              .sync_stop = f_sync_stop,
                              .take_resume = f_take_resume,
                              .resuming = f_resuming,
                              .leave = f_leave,
                              .signature = f_signature,
                              .result_span = f_result_span,
                              .kind_name = f_kind_name,
                              .stand = f_stand};
    el_admittee_t *a = eng_admittee_new(&ctx);
    CHECK(a != NULL);
    return a;
}

static void fake_fini(fake_t *f, el_admittee_t **a)
{
    eng_admittee_destroy(a);
    CHECK(*a == NULL);
    el_world_free(&f->timers, &f->mb, &f->stream, &f->startup, &f->reg);
}

/* The loop's turn at f->now: the timers that are due run. */
static void tick(fake_t *f)
{
    (void)cl_timer_run(f->timers, f->now);
}

static int count_req(const fake_t *f, bool readmit)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        if (f->sent[i].m.type == CL_EL_ADMIT_REQ && memcmp(f->sent[i].to, K[0], 32) == 0 &&
            (f->sent[i].m.readmit != 0) == readmit)
            n++;
    return n;
}

/* The program posts a world collective (count bytes): recorded in the
   stream, counted as the elastic hooks do, then offered to the admittee.
   Returns the request; *taken says whether the admittee kept it. */
static collab_request_t *post(fake_t *f, el_admittee_t *a, size_t count, uint32_t sig, bool *taken)
{
    collab_request_t *r = cl_request_new(CL_OP_COLL);
    CHECK(r != NULL);
    static uint8_t buf[64];
    r->coll.kind = CL_COLL_BCAST;
    r->coll.count = count;
    r->coll.recvbuf = buf;
    uint64_t idx = cl_stream_record(f->stream, sig, NULL, NULL);
    f->st.posted++;
    r->coll.seq =
        f->st.mapped && idx >= f->st.map_local ? f->st.map_seq + (idx - f->st.map_local) : idx;
    *taken = eng_admittee_take(a, r, idx);
    return r;
}

static cl_elmsg_t admit_msg(uint64_t s, uint64_t prefix, uint64_t gen, uint32_t *sigs,
                            cl_el_joiner_t *j, bool readmit)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_ADMIT;
    m.s = s;
    m.prefix = prefix;
    m.gen = gen;
    m.w0_end = s + 2;
    m.sigs = sigs;
    m.nsigs = (uint32_t)prefix;
    memset(j, 0, sizeof *j);
    memcpy(j->key, K[2], 32);
    j->rank = 2;
    j->flags = readmit ? CL_EL_JOINER_READMIT : 0;
    m.joiners = j;
    m.njoiners = 1;
    return m;
}

/* Taken out of the group, as eng_el_view_changed does: finishes its
   step alone and asks to be re-admitted. */
static void evict(fake_t *f)
{
    f->st.evicted = true;
    f->st.readmit = true;
    f->st.phase = EL_WAITING;
}

/* A joiner parks, asks every second, is admitted, answers its start-up
   broadcast and runs its next collective as the group's s. */
static void test_joiner_admitted(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    collab_request_t *r0 = post(&f, a, 4, 0xB0, &taken);
    CHECK(taken && f.st.phase == EL_WAITING && !f.st.readmit);
    CHECK(cl_timer_next(f.timers) == f.now);
    tick(&f);
    CHECK(count_req(&f, false) == 1);
    f.now += 0.5;
    tick(&f);
    CHECK(count_req(&f, false) == 1);
    f.now += 0.5;
    tick(&f);
    CHECK(count_req(&f, false) == 2);
    collab_request_t *r1 = post(&f, a, 8, 0x11, &taken);
    CHECK(taken && !cl_request_done(r1));
    CHECK(eng_admittee_busy(a));
    /* An ADMIT for somebody else is only remembered. */
    uint32_t sigs[1] = {f_signature(r0)};
    cl_el_joiner_t j;
    cl_elmsg_t other = admit_msg(10, 1, cl_member_epoch(f.mb) + 1, sigs, &j, false);
    memset(j.key, 0x55, 32);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &other);
    CHECK(f.seen == 1 && f.st.phase == EL_WAITING && f.syncs == 0);
    /* Its own: mapped onto the group's numbering, the pull starts. */
    cl_elmsg_t m = admit_msg(10, 1, cl_member_epoch(f.mb), sigs, &j, false);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    CHECK(f.seen == 2 && f.st.phase == EL_SYNCING && f.syncs == 1 && f.sync_s == 10);
    CHECK(f.st.mapped && f.st.map_local == 1 && f.st.map_seq == 10);
    CHECK(f.started == 10 && f.next_seq == 11);
    CHECK(eng_admittee_pending(a) && eng_admittee_gen(a) == cl_member_epoch(f.mb));
    eng_admittee_sync_finished(a);
    CHECK(cl_request_done(r0) && r0->status == COLLAB_OK);
    CHECK(f.nsub == 1 && f.sub[0] == r1 && f.sub_seq[0] == 10 && f.sub_next[0] == 11);
    /* Past its start-up: in the group; the admission took effect once
       collective 10 completed. */
    bool t2;
    collab_request_t *r2 = post(&f, a, 8, 0x22, &t2);
    CHECK(!t2 && f.st.phase == EL_IN && r2->coll.seq == 11);
    CHECK(eng_admittee_pending(a));
    eng_admittee_on_done(a, 10, COLLAB_OK);
    CHECK(!eng_admittee_pending(a) && !eng_admittee_busy(a));
    /* Nothing left to wait for: its timer stops. */
    f.now += 5;
    tick(&f);
    CHECK(isinf(cl_timer_next(f.timers)));
    fake_fini(&f, &a);
    cl_request_destroy(&r0);
    cl_request_destroy(&r1);
    cl_request_destroy(&r2);
}

/* Nobody admits it: it gives up after eng_admit_wait_limit. */
static void test_gives_up(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    double t0 = f.now;
    collab_request_t *r0 = post(&f, a, 4, 0xB0, &taken);
    CHECK(taken);
    int turns = 0;
    while (!cl_request_done(r0) && turns++ < 1000) {
        f.now = cl_timer_next(f.timers);
        CHECK(!isinf(f.now));
        tick(&f);
    }
    CHECK(cl_request_done(r0) && r0->status == COLLAB_ERR_TIMEOUT);
    CHECK(f.now >= t0 + eng_admit_wait_limit(f.cfg.timeout));
    CHECK(f.st.phase == EL_IN);
    CHECK(isinf(cl_timer_next(f.timers)));
    fake_fini(&f, &a);
    cl_request_destroy(&r0);
}

/* The view that admits it never comes: undone, asks again, its
   collectives parked as before the ADMIT. */
static void test_lost_admission(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    collab_request_t *r0 = post(&f, a, 4, 0xB0, &taken);
    tick(&f);
    uint32_t sigs[1] = {f_signature(r0)};
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_msg(10, 1, cl_member_epoch(f.mb) + 1, sigs, &j, false);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    CHECK(f.st.phase == EL_SYNCING && f.st.mapped);
    double limit = f.now + eng_exchange_limit(f.cfg.timeout);
    CHECK(cl_timer_next(f.timers) <= limit);
    int before = count_req(&f, false);
    f.now = limit - 0.01;
    tick(&f);
    CHECK(f.st.phase == EL_SYNCING && f.sync_stops == 0);
    f.now = limit;
    while (cl_timer_next(f.timers) <= f.now)
        tick(&f);
    CHECK(f.sync_stops == 1 && !eng_admittee_pending(a));
    CHECK(f.st.phase == EL_WAITING && !f.st.mapped && !f.st.readmit);
    CHECK(count_req(&f, false) == before + 1); /* asks again at once */
    CHECK(!cl_request_done(r0));
    eng_admittee_abort(a, COLLAB_ERR_LEFT);
    CHECK(cl_request_done(r0) && r0->status == COLLAB_ERR_LEFT && f.st.phase == EL_IN);
    fake_fini(&f, &a);
    cl_request_destroy(&r0);
}

/* Its state agreed on but nothing of it delivered yet (the program is
   still blocked in its start-up broadcast, whose bytes are on the way)
   when the admission is undone (the donors went past s without it):
   nothing reached the program, so it waits as a joiner again, asks at
   once, and the broadcast is answered at its next admission.  (Taken for
   a straggler whose program had the group's state, it held nothing,
   asked nobody and waited until the others finished.) */
static void test_undone_before_answers(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    collab_request_t *r0 = post(&f, a, 4, 0xB0, &taken);
    CHECK(taken);
    tick(&f);
    uint32_t sigs[1] = {f_signature(r0)};
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_msg(10, 1, cl_member_epoch(f.mb), sigs, &j, false);
    f.want_pending = true;
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    CHECK(f.st.phase == EL_SYNCING && f.syncs == 1);
    eng_admittee_sync_finished(a); /* agreed; the broadcast's bytes on the way */
    CHECK(!cl_request_done(r0));
    int before = count_req(&f, false);
    eng_admittee_undo(a, "live members did not serve the swarm's state");
    CHECK(!eng_admittee_pending(a) && f.sync_stops == 1);
    CHECK(f.st.phase == EL_WAITING && !f.st.readmit && !f.st.mapped);
    tick(&f);
    CHECK(count_req(&f, false) == before + 1 && count_req(&f, true) == 0);
    CHECK(!cl_request_done(r0));
    /* Admitted again, its bytes in this time: answered. */
    f.want_pending = false;
    m = admit_msg(14, 1, cl_member_epoch(f.mb), sigs, &j, false);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    CHECK(f.st.phase == EL_SYNCING && f.syncs == 2 && f.sync_s == 14);
    eng_admittee_sync_finished(a);
    CHECK(cl_request_done(r0) && r0->status == COLLAB_OK);
    fake_fini(&f, &a);
    cl_request_destroy(&r0);
}

/* A start-up collective that differs from the swarm's: it leaves. */
static void test_foreign(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    collab_request_t *r0 = post(&f, a, 4, 0xB0, &taken);
    uint32_t sigs[1] = {f_signature(r0) + 1};
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_msg(10, 1, cl_member_epoch(f.mb), sigs, &j, false);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    eng_admittee_sync_finished(a);
    CHECK(cl_request_done(r0) && r0->status == COLLAB_ERR_MISMATCH);
    CHECK(eng_admittee_is_foreign(a) && f.leaves == 1 && f.leave_status == COLLAB_ERR_MISMATCH);
    fake_fini(&f, &a);
    cl_request_destroy(&r0);
}

/* A straggler holds its step's first collective, asks to be re-admitted,
   and resubmits it under the group's s once resynced. */
static void test_straggler(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    bool taken;
    collab_request_t *r[12];
    f.st.was_in_group = true;      /* a member of the group until now */
    for (int i = 0; i < 11; i++) { /* start-up and five steps: the stream locks */
        r[i] = post(&f, a, 4 + (size_t)i, i == 0 ? 0xB0 : (i % 2 ? 0x11 : 0x22), &taken);
        CHECK(!taken);
    }
    evict(&f);
    r[11] = post(&f, a, 9, 0x11, &taken); /* index 11: a step boundary */
    CHECK(cl_stream_is_boundary(f.stream, 11));
    CHECK(taken && !cl_request_done(r[11]));
    tick(&f);
    CHECK(count_req(&f, true) == 1);
    uint32_t sigs[1] = {0};
    cl_el_joiner_t j;
    cl_elmsg_t m = admit_msg(20, 1, cl_member_epoch(f.mb), sigs, &j, true);
    eng_admittee_on_admit(a, cl_member_find(f.mb, K[0]), &m);
    CHECK(f.st.phase == EL_SYNCING && f.st.map_local == 11 && f.st.map_seq == 20);
    eng_admittee_sync_finished(a);
    CHECK(f.st.phase == EL_IN && !f.st.evicted && !f.st.readmit);
    CHECK(f.nsub == 1 && f.sub[0] == r[11] && f.sub_seq[0] == 20 && f.sub_next[0] == 21);
    fake_fini(&f, &a);
    for (int i = 0; i < 12; i++)
        cl_request_destroy(&r[i]);
}

/* A member of the group posts its start-up and five steps (r[0..10]), is
   taken out (as eng_el_view_changed does) and posts r[11], a step
   boundary, which the admittee holds. */
static void hold_at_boundary(fake_t *f, el_admittee_t *a, collab_request_t *r[12])
{
    bool taken;
    f->st.was_in_group = true;
    for (int i = 0; i < 11; i++)
        r[i] = post(f, a, 4, i == 0 ? 0xB0 : (i % 2 ? 0x11 : 0x22), &taken);
    evict(f);
    r[11] = post(f, a, 4, 0x11, &taken);
    CHECK(taken);
}

/* A straggler with no other live peer goes on alone. */
static void test_alone(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    collab_request_t *r[12];
    hold_at_boundary(&f, a, r);
    cl_member_find(f.mb, K[0])->state = CL_PEER_SUSPECT;
    cl_member_find(f.mb, K[1])->state = CL_PEER_SUSPECT;
    tick(&f);
    CHECK(f.nsub == 1 && f.sub[0] == r[11] && f.sub_seq[0] == r[11]->coll.seq &&
          f.sub_next[0] == UINT64_MAX);
    CHECK(count_req(&f, true) == 0);
    fake_fini(&f, &a);
    for (int i = 0; i < 12; i++)
        cl_request_destroy(&r[i]);
}

/* A straggler whose group's members all left while another member was
   out of the group too: while a member of the group lives it waits; then
   a peer that does not coordinate waits on (its coordinator forms the
   group again), and the coordinator puts itself back into the group and
   goes on under its own numbering, as a member. */
static void test_regroup(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    collab_request_t *r[12];
    hold_at_boundary(&f, a, r);
    cl_member_find(f.mb, K[1])->in_group = false; /* B is out of the group too */
    tick(&f);                                     /* A is in it and alive */
    CHECK(f.regroups == 0 && f.nsub == 0 && count_req(&f, true) == 1);
    cl_member_find(f.mb, K[0])->state = CL_PEER_SUSPECT; /* suspected: may still live */
    f.now += 1.0;
    tick(&f);
    CHECK(f.regroups == 0 && f.nsub == 0);
    cl_member_delta_t d; /* A left; B lives, outside: nobody is in the group */
    CHECK(cl_member_remove(f.mb, (const uint8_t(*)[32])K[0], 1, f.now, &d) == 1);
    cl_member_delta_clear(&d);
    CHECK(!cl_member_group_closed(f.mb));
    f.now += 1.0;
    tick(&f);
    CHECK(f.regroups == 1 && f.nsub == 0 && f.st.phase == EL_WAITING && f.st.evicted);
    f.coordinates = true;
    f.now += 1.0;
    tick(&f);
    CHECK(f.regroups == 2);
    CHECK(f.nsub == 1 && f.sub[0] == r[11] && f.sub_seq[0] == r[11]->coll.seq &&
          f.sub_next[0] == UINT64_MAX);
    CHECK(f.st.phase == EL_IN && !f.st.evicted && !f.st.readmit);
    CHECK(cl_member_self(f.mb)->in_group && cl_member_group_closed(f.mb));
    CHECK(!cl_member_find(f.mb, K[1])->in_group);
    /* Nothing is armed any more: later turns submit and ask nothing. */
    int sent = f.nsent;
    f.now += 5.0;
    tick(&f);
    CHECK(f.nsub == 1 && f.nsent == sent);
    fake_fini(&f, &a);
    for (int i = 0; i < 12; i++)
        cl_request_destroy(&r[i]);
}

/* A straggler put back into the group by a view (one that regrouped
   everyone): its held collective runs under its own number, once; a
   joiner's parked collectives stay. */
static void test_regrouped(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    collab_request_t *r[12];
    hold_at_boundary(&f, a, r);
    f.st.evicted = false; /* as eng_elastic_view_changed does first */
    f.st.phase = EL_IN;
    eng_admittee_regrouped(a);
    CHECK(!f.st.readmit);
    CHECK(f.nsub == 1 && f.sub[0] == r[11] && f.sub_seq[0] == r[11]->coll.seq &&
          f.sub_next[0] == UINT64_MAX);
    eng_admittee_regrouped(a);
    CHECK(f.nsub == 1);
    fake_fini(&f, &a);
    for (int i = 0; i < 12; i++)
        cl_request_destroy(&r[i]);
    /* A joiner: nothing released. */
    fake_init(&f);
    a = adm_new(&f);
    bool taken;
    f.st.phase = EL_WAITING;
    collab_request_t *j = post(&f, a, 4, 0xB0, &taken);
    CHECK(taken);
    eng_admittee_regrouped(a);
    CHECK(f.nsub == 0 && !cl_request_done(j));
    fake_fini(&f, &a);
    cl_request_destroy(&j);
}

/* A straggler whose program went on alone, put into a group that a view
   formed just now (its members start at the first collective): it stays
   held and asks each second to be taken out, not to be re-admitted; a
   view that leaves it out makes it ask to be re-admitted at once.  Not
   so when the view did not form the group (a regroup), nor for a
   straggler taken out before its first collective. */
static void test_kept_out(void)
{
    fake_t f;
    fake_init(&f);
    el_admittee_t *a = adm_new(&f);
    collab_request_t *r[12];
    hold_at_boundary(&f, a, r);
    CHECK(!eng_admittee_keep_out(a, true, false)); /* the group did not form now */
    CHECK(!eng_admittee_keep_out(a, false, true)); /* not put in */
    CHECK(eng_admittee_keep_out(a, true, true));
    tick(&f);
    CHECK(f.self_outs == 1 && count_req(&f, true) == 0 && f.nsub == 0);
    f.now += 0.5;
    tick(&f);
    CHECK(f.self_outs == 1);
    f.now += 0.5;
    tick(&f);
    CHECK(f.self_outs == 2 && count_req(&f, true) == 0);
    CHECK(eng_admittee_keep_out(a, true, false)); /* a later view: still kept out */
    CHECK(!eng_admittee_keep_out(a, false, false)); /* a view leaves it out */
    tick(&f);                                       /* at once */
    CHECK(f.self_outs == 2 && count_req(&f, true) == 1 && f.nsub == 0);
    CHECK(!cl_request_done(r[11]));
    fake_fini(&f, &a);
    for (int i = 0; i < 12; i++)
        cl_request_destroy(&r[i]);
    /* Taken out before its first collective: it runs with the group
       formed now. */
    fake_init(&f);
    a = adm_new(&f);
    f.st.was_in_group = true;
    evict(&f);
    CHECK(!eng_admittee_keep_out(a, true, true));
    tick(&f);
    CHECK(f.self_outs == 0);
    fake_fini(&f, &a);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        memset(K[i], 0xA0 + i, 32);
    test_joiner_admitted();
    test_gives_up();
    test_lost_admission();
    test_undone_before_answers();
    test_foreign();
    test_straggler();
    test_alone();
    test_regroup();
    test_regrouped();
    test_kept_out();
    printf("cl_engine_admittee_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
