/*  cl_engine_admitter_test.c - selftest of the admitter
    (cl_engine_admitter.c), the member side of admission into the world
    group.

    Drives it through a fake context, without sockets or a clock: real
    peer records (cl_member) of A (rank 0, the coordinator), B (rank 1)
    and C (rank 2, joined after the group formed, so outside it), a real
    world stream (cl_stream) with one start-up broadcast and steps of two
    collectives, and a record of every elastic message sent, every
    admission remembered and every view change committed.  Checks that a
    request is queued only by the peer that admits and only for a ranked
    peer outside the group; that the admission waits for a step boundary
    and is then sent (ADMIT to B and C: the sequence, the start-up prefix
    and its signatures, the generation, C as joiner) before the view that
    puts C into the group is committed, and reported once its collective
    completes; that with several groups it takes effect one step and
    EL_ADMIT_AHEAD collectives later and is served from this peer's copy;
    that nobody is admitted while a start-up result is missing; and that
    the timer, in a real cl_timer set, expires a request nobody repeats
    and then stays disarmed.
*/
#include "engine/cl_engine_admitter.h"

#include "coll/cl_coll.h"
#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_fixture.h"
#include "selftest.h"

#define MAXSENT 16
#define SIG_BCAST 0xB0B0B0B0u

static uint8_t K[3][32]; /* A, B, C */

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md,
   "Typed contexts"). */
typedef struct cl_engine {
    cl_config_t cfg;
    uint8_t self[32];
    cl_member_t *mb;
    cl_stream_t *stream;
    cl_startup_t *startup;
    cl_statereg_t *reg;
    uint8_t kinds[CL_STREAM_HISTORY];
    cl_timer_t *timers;
    double now;
    bool may;   /* may_admit */
    bool split; /* several groups */
    el_sent_t sent[MAXSENT];
    int nsent;
    int remembered;
    uint64_t remembered_s;
    int commits;
    int commit_sent; /* messages sent before the first commit */
    int alone;
    uint64_t alone_s;
    int boundaries, idles;
} fake_t;

EL_FAKE_ENGINE_NOW_AND_SEND(fake_t)

static bool f_may(fake_t *f)
{
    return f->may;
}

static bool f_split(fake_t *f, const cl_el_joiner_t *js, uint32_t nj)
{
    (void)js;
    (void)nj;
    return f->split;
}

static void f_remember(fake_t *f, const cl_elmsg_t *admit)
{
    f->remembered++;
    f->remembered_s = admit->s;
}

static void f_commit(fake_t *f, cl_member_delta_t *d)
{
    if (f->commits++ == 0)
        f->commit_sent = f->nsent;
    cl_member_delta_clear(d);
}

static void f_alone(fake_t *f, uint64_t s, const cl_el_joiner_t *js, uint32_t nj)
{
    CHECK(nj == 1 && memcmp(js[0].key, K[2], 32) == 0);
    f->alone++;
    f->alone_s = s;
}

static void f_boundary(fake_t *f, uint64_t seq, uint64_t idx)
{
    (void)seq;
    (void)idx;
    f->boundaries++;
}

static void f_idle(fake_t *f, uint64_t seq, uint64_t step)
{
    (void)seq;
    (void)step;
    f->idles++;
}

/* Records n collectives of the program: a start-up broadcast, then steps
   of two (X, Y). */
static void post_stream(fake_t *f, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t idx =
            cl_stream_record(f->stream, i == 0 ? SIG_BCAST : (i % 2 ? 0x11u : 0x22u), NULL, NULL);
        CHECK(idx == (uint64_t)i);
        f->kinds[idx] = (uint8_t)((i == 0 ? CL_COLL_BCAST : CL_COLL_ALLREDUCE) + 1);
    }
}

/* A at rank 0, B at 1 in the formed group, C at 2 outside it, as seen by
   `self` (0 or 1); the program posted 12 collectives (boundaries at odd
   indices from 1). */
static void fake_init(fake_t *f, int self)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 1.0;
    f->cfg.world_size = 3;
    memcpy(f->self, K[self], 32);
    f->now = 100.0;
    f->may = true;
    f->timers = cl_timer_new(4);
    f->stream = cl_stream_new("the world communicator", 2);
    f->startup = cl_startup_new(0);
    f->reg = cl_statereg_new();
    CHECK(f->timers != NULL && f->stream != NULL && f->startup != NULL && f->reg != NULL);
    f->mb = el_member_of_three(K, self, f->now);
    CHECK(f->mb != NULL);
    post_stream(f, 12);
    CHECK(cl_stream_prefix(f->stream) == 1);
    CHECK(cl_stream_is_boundary(f->stream, 5) && !cl_stream_is_boundary(f->stream, 6));
}

static el_admitter_t *adm_new(fake_t *f)
{
    eng_admitter_ctx_t ctx = {.arg = f,
                              .cfg = &f->cfg,
                              .self_key = f->self,
                              .mb = f->mb,
                              .stream = f->stream,
                              .startup = f->startup,
                              .reg = f->reg,
                              .kinds = f->kinds,
                              .timers = f->timers,
                              .now = f_now,
                              .send = f_send,
                              .may_admit = f_may,
                              .split = f_split,
                              .remember = f_remember,
                              .commit = f_commit,
                              .serve_alone = f_alone,
                              .boundary = f_boundary,
                              .idle = f_idle};
    el_admitter_t *a = eng_admitter_new(&ctx);
    CHECK(a != NULL);
    /* The view's ranked members, as the elastic hooks feed them. */
    cl_adm_member_t m[3];
    for (int i = 0; i < 3; i++) {
        const cl_peer_t *p = cl_member_find(f->mb, K[i]);
        CHECK(p != NULL);
        memcpy(m[i].key, K[i], 32);
        m[i].rank = p->rank;
        m[i].in_group = p->in_group;
    }
    CHECK(eng_admitter_view(a, m, 3) == 0);
    return a;
}

static void fake_fini(fake_t *f, el_admitter_t **a)
{
    eng_admitter_destroy(a);
    CHECK(*a == NULL);
    el_world_free(&f->timers, &f->mb, &f->stream, &f->startup, &f->reg);
}

static cl_elmsg_t admit_req(bool readmit)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_ADMIT_REQ;
    m.readmit = readmit ? 1 : 0;
    return m;
}

/* The coordinator queues C's request and, at the next step boundary,
   sends the ADMIT to B and C before it commits the view that puts C into
   the group; the admission is reported when its collective completes. */
static void test_admits_at_boundary(void)
{
    fake_t f;
    fake_init(&f, 0);
    el_admitter_t *a = adm_new(&f);
    CHECK(cl_member_find(f.mb, K[2])->in_group == false);
    cl_elmsg_t rq = admit_req(false);
    /* B, in the group, is not queued. */
    eng_admitter_on_request(a, cl_member_find(f.mb, K[1]), &rq);
    CHECK(eng_admitter_pending(a) == 0);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    CHECK(eng_admitter_pending(a) == 1);
    CHECK(!isinf(cl_timer_next(f.timers))); /* the request can expire */
    /* Not a step boundary: nothing happens. */
    eng_admitter_on_post(a, 6, 6);
    CHECK(f.nsent == 0 && f.commits == 0 && f.boundaries == 0);
    /* A boundary: the admission, at once (one group). */
    eng_admitter_on_post(a, 7, 7);
    CHECK(f.boundaries == 1 && f.idles == 0);
    CHECK(f.remembered == 1 && f.remembered_s == 7);
    CHECK(f.commits == 1);
    CHECK(f.nsent == 2 && f.commit_sent == 2); /* the ADMITs went first */
    int to_b = 0, to_c = 0;
    for (int i = 0; i < f.nsent; i++) {
        const cl_elmsg_t *m = &f.sent[i].m;
        CHECK(m->type == CL_EL_ADMIT);
        CHECK(m->s == 7 && m->prefix == 1 && m->nsigs == 1 && m->njoiners == 1);
        CHECK(m->w0_end == 9); /* one step of two collectives */
        CHECK(m->gen > 0);
        to_b += memcmp(f.sent[i].to, K[1], 32) == 0;
        to_c += memcmp(f.sent[i].to, K[2], 32) == 0;
    }
    CHECK(to_b == 1 && to_c == 1);
    CHECK(cl_member_find(f.mb, K[2])->in_group); /* the view installed here */
    CHECK(cl_member_epoch(f.mb) == f.sent[0].m.gen);
    CHECK(eng_admitter_pending(a) == 0);
    CHECK(f.alone == 0);
    /* Reported once collective 7 completes; an earlier one does not. */
    CHECK(eng_admitter_reporting(a));
    eng_admitter_on_done(a, 6, 3);
    CHECK(eng_admitter_reporting(a));
    eng_admitter_on_done(a, 7, 3);
    CHECK(!eng_admitter_reporting(a));
    /* The next boundary with nobody waiting: the audit's turn. */
    eng_admitter_on_post(a, 9, 9);
    CHECK(f.idles == 1 && f.commits == 1);
    fake_fini(&f, &a);
}

/* A member that does not admit queues nothing; a peer that may not
   admit now (evicted, syncing) admits nobody. */
static void test_only_the_admitter(void)
{
    fake_t f;
    fake_init(&f, 1); /* B: A coordinates */
    el_admitter_t *a = adm_new(&f);
    CHECK(cl_member_admitter(f.mb) == cl_member_find(f.mb, K[0]));
    cl_elmsg_t rq = admit_req(false);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    CHECK(eng_admitter_pending(a) == 0);
    eng_admitter_on_post(a, 7, 7);
    CHECK(f.nsent == 0 && f.boundaries == 0);
    fake_fini(&f, &a);

    fake_init(&f, 0);
    a = adm_new(&f);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    f.may = false;
    eng_admitter_on_post(a, 7, 7);
    CHECK(f.nsent == 0 && f.commits == 0 && eng_admitter_pending(a) == 1);
    f.may = true;
    eng_admitter_on_post(a, 9, 9);
    CHECK(f.commits == 1);
    fake_fini(&f, &a);
}

/* Several groups: the admission takes effect at the first boundary one
   step and EL_ADMIT_AHEAD collectives on, and this peer serves it alone;
   the next one waits until it took effect. */
static void test_split_ahead(void)
{
    fake_t f;
    fake_init(&f, 0);
    f.split = true;
    el_admitter_t *a = adm_new(&f);
    cl_elmsg_t rq = admit_req(true);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    eng_admitter_on_post(a, 5, 5);
    CHECK(f.commits == 1 && f.nsent == 2);
    CHECK(f.sent[0].m.s == 5 + EL_ADMIT_AHEAD);
    CHECK(f.alone == 1 && f.alone_s == 5 + EL_ADMIT_AHEAD);
    CHECK(eng_admitter_reporting(a));
    fake_fini(&f, &a);
}

/* A start-up result this peer does not keep: nobody is admitted. */
static void test_startup_missing(void)
{
    fake_t f;
    fake_init(&f, 0);
    f.kinds[0] = CL_COLL_ALLREDUCE + 1; /* a result that should be kept */
    el_admitter_t *a = adm_new(&f);
    cl_elmsg_t rq = admit_req(false);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    eng_admitter_on_post(a, 7, 7);
    CHECK(f.nsent == 0 && f.commits == 0 && eng_admitter_pending(a) == 1);
    uint8_t one = 1;
    CHECK(cl_startup_put(f.startup, 0, SIG_BCAST, &one, 1) == 0);
    eng_admitter_on_post(a, 9, 9);
    CHECK(f.commits == 1 && f.nsent == 2);
    fake_fini(&f, &a);
}

/* A request nobody repeats expires from the timer; one repeated stays. */
static void test_request_expires(void)
{
    fake_t f;
    fake_init(&f, 0);
    el_admitter_t *a = adm_new(&f);
    cl_elmsg_t rq = admit_req(false);
    eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
    double t0 = f.now;
    CHECK(cl_timer_next(f.timers) <= t0 + ENG_ADMIT_REQ_EXPIRE);
    /* Repeated every second for a while: still queued. */
    for (int i = 1; i <= 8; i++) {
        f.now = t0 + i;
        (void)cl_timer_run(f.timers, f.now);
        eng_admitter_on_request(a, cl_member_find(f.mb, K[2]), &rq);
        CHECK(eng_admitter_pending(a) == 1);
    }
    /* Then silent: gone within ENG_ADMIT_REQ_EXPIRE and a period. */
    double last = f.now;
    while (f.now < last + ENG_ADMIT_REQ_EXPIRE + 2 * ENG_ADMIT_REQ_EVERY &&
           eng_admitter_pending(a) > 0) {
        f.now = cl_timer_next(f.timers);
        CHECK(!isinf(f.now));
        (void)cl_timer_run(f.timers, f.now);
    }
    CHECK(eng_admitter_pending(a) == 0);
    CHECK(f.now >= last + ENG_ADMIT_REQ_EXPIRE);
    CHECK(isinf(cl_timer_next(f.timers))); /* nothing queued: disarmed */
    fake_fini(&f, &a);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        memset(K[i], 0xA0 + i, 32);
    test_admits_at_boundary();
    test_only_the_admitter();
    test_split_ahead();
    test_startup_missing();
    test_request_expires();
    printf("cl_engine_admitter_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
