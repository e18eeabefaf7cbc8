/*  cl_engine_coll_test.c - selftest of the collective streams' timer
    (cl_engine_coll.c) on a fake context (eng_cs_ctx_t): a real timer set
    and a real stream, the running collective, the engine's clock and the
    parts around the streams stubbed here.

    A collective that runs is ticked (cl_coll_on_tick, its deadlines)
    every ENG_COLL_TICK by _coll's timer in the loop's set, even when
    nothing else wakes the loop (no message, no call): each turn the timer
    wakes re-arms it for the next tick while a collective runs, and not
    once none runs.  A collective whose device input is on its way to host
    memory is pumped every ENG_STAGE_POLL the same way.  A peer that is no
    member ticks nothing.
*/
#include "engine/cl_engine_coll_int.h"
#include "engine/cl_engine_timer.h"

#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the stubbed rest of the engine ---------------------------------- */

static double s_now = 100.0;
static int s_ticks;     /* cl_coll_on_tick calls */
static int s_pumps;     /* cl_coll_pump calls */
static bool s_waits;    /* the fake collective waits for its device input */
static int s_fake_coll; /* the running collective: its address only */
static int s_posted;    /* eng_el_on_post calls */
static bool s_again;    /* the last one's again */

int cl_coll_on_tick(cl_coll_t *self)
{
    CHECK(self == (cl_coll_t *)&s_fake_coll);
    s_ticks++;
    return 0;
}

bool cl_coll_done(const cl_coll_t *self)
{
    (void)self;
    return false;
}

bool cl_coll_waits_input(const cl_coll_t *self)
{
    (void)self;
    return s_waits;
}

int cl_coll_pump(cl_coll_t *self)
{
    (void)self;
    s_pumps++;
    return 0;
}

void cl_coll_destroy(cl_coll_t **self_p)
{
    *self_p = NULL;
}

/* Called only for a completed collective, which these never are. */
int cl_coll_status(const cl_coll_t *self)
{
    (void)self;
    return 0;
}
const int *cl_coll_contributors(const cl_coll_t *self, int *n)
{
    (void)self;
    *n = 0;
    return NULL;
}
int cl_coll_on_fail(cl_coll_t *self, int r)
{
    (void)self, (void)r;
    return 0;
}
void cl_coll_traffic(const cl_coll_t *self, uint64_t *sent, uint64_t *received)
{
    (void)self;
    *sent = *received = 0;
}
int cl_coll_release_user_buffers(cl_coll_t *self)
{
    (void)self;
    return 0;
}
bool cl_coll_owes(const cl_coll_t *self)
{
    (void)self;
    return false;
}
double cl_coll_wake_at(const cl_coll_t *self)
{
    (void)self;
    return INFINITY;
}
int cl_coll_recheck(cl_coll_t *self)
{
    (void)self;
    return 0;
}

void cl_request_complete(collab_request_t *req, int status)
{
    (void)req, (void)status;
}
void cl_comm_destroy(collab_comm_t **comm_p)
{
    *comm_p = NULL;
}
int cl_comm_world_of(const collab_comm_t *comm, int r)
{
    (void)comm;
    return r;
}
int cl_comm_rank_of_world(const collab_comm_t *comm, int w)
{
    (void)comm;
    return w;
}

void eng_coll_ctx_free(coll_ctx_t **ctx_p)
{
    *ctx_p = NULL;
}
void eng_coll_try_start(eng_cs_t *cs, stream_t *s)
{
    (void)cs, (void)s;
}
size_t eng_coll_drop_buffered_from(eng_cs_t *cs, stream_t *s, int w)
{
    (void)cs, (void)s, (void)w;
    return 0;
}
void eng_coll_free_buffered(eng_cs_t *cs, stream_t *s)
{
    (void)cs, (void)s;
}
const cl_peer_t *eng_coll_peer_of(coll_ctx_t *ctx, int comm_rank)
{
    (void)ctx, (void)comm_rank;
    return NULL;
}

void eng_fast_drain(eng_cs_t *cs, stream_t *s)
{
    (void)cs, (void)s;
}
void eng_fast_update(eng_cs_t *cs)
{
    (void)cs;
}
void eng_fast_update_stream(eng_cs_t *cs, stream_t *s)
{
    (void)cs, (void)s;
}
void eng_fast_hier_update(eng_cs_t *cs)
{
    (void)cs;
}
void eng_fast_on_post(stream_t *s, uint64_t seq)
{
    (void)s, (void)seq;
}
void eng_fast_release(eng_cs_t *cs, stream_t *s)
{
    (void)cs, (void)s;
}

int eng_leave_status(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    (void)l, (void)w, (void)comm, (void)seq;
    return 0;
}
bool eng_leave_cut(eng_leave_t *l, int w, uint64_t comm, uint64_t seq)
{
    (void)l, (void)w, (void)comm, (void)seq;
    return false;
}
int eng_leave_world_of(eng_leave_t *l, const uint8_t key[32])
{
    (void)l, (void)key;
    return -1;
}
size_t eng_p2p_coll_waiting(const eng_p2p_t *self, int w)
{
    (void)self, (void)w;
    return 0;
}
void eng_p2p_comm_free(eng_p2p_t *self, uint64_t comm)
{
    (void)self, (void)comm;
}
void eng_report_coll_done(eng_report_t *self, uint64_t comm_id, const collab_request_t *req,
                          int ncontrib, const collab_info_t *info, double now)
{
    (void)self, (void)comm_id, (void)req, (void)ncontrib, (void)info, (void)now;
}
/* --------------------------------------------------------------------- */

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md):
   whether this peer is a member, the clock. */
typedef struct cl_engine {
    bool member;
    cl_timer_t *timers;
    cl_config_t cfg;
    eng_cs_t *cs;
} fake_t;

static double fake_now(fake_t *f)
{
    (void)f;
    return s_now;
}

static bool fake_is_member(fake_t *f)
{
    return f->member;
}

static bool fake_no(fake_t *f)
{
    (void)f;
    return false;
}

static bool fake_on_post(fake_t *f, stream_t *s, collab_request_t *req, bool again)
{
    (void)f, (void)s, (void)req;
    s_posted++;
    s_again = again;
    return false;
}

static fake_t *fake_engine(void)
{
    fake_t *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    f->member = true;
    f->cfg.timeout = 2.0;
    f->timers = cl_timer_new(8);
    CHECK(f->timers != NULL);
    eng_cs_ctx_t ctx = {.arg = f,
                        .cfg = &f->cfg,
                        .timers = f->timers,
                        .now = fake_now,
                        .is_member = fake_is_member,
                        .el_in_doubt = fake_no,
                        .el_on_post = fake_on_post};
    f->cs = eng_cs_new(&ctx);
    CHECK(f->cs != NULL);
    CHECK(isinf(cl_timer_next(f->timers))); /* nothing runs yet */
    return f;
}

static void fake_free(fake_t *f)
{
    eng_cs_destroy(&f->cs);
    CHECK(f->cs == NULL);
    CHECK(isinf(cl_timer_next(f->timers))); /* its timer went with it */
    cl_timer_destroy(&f->timers);
    free(f);
}

/* A collective started on a new stream: the start wakes the loop now. */
static stream_t *start_one(fake_t *f)
{
    stream_t *s = eng_cs_stream(f->cs, 7, true);
    CHECK(s != NULL);
    if (s != NULL)
        s->active = (cl_coll_t *)&s_fake_coll;
    eng_coll_wake_by(f->cs, s_now);
    CHECK(fabs(cl_timer_next(f->timers) - s_now) < 1e-9);
    return s;
}

/* A running collective is ticked every ENG_COLL_TICK by the timer alone,
   and no longer once it is gone. */
static void test_tick(void)
{
    fake_t *f = fake_engine();
    s_ticks = 0;
    s_waits = false;
    stream_t *s = start_one(f);
    for (int k = 0; k < 5; k++) {
        double when = cl_timer_next(f->timers);
        CHECK(cl_timer_run(f->timers, when) == 1);
        CHECK(s_ticks == k + 1);
        /* Re-armed for the next tick, however quiet the loop is. */
        CHECK(fabs(cl_timer_next(f->timers) - (when + ENG_COLL_TICK)) < 1e-9);
        CHECK(cl_timer_run(f->timers, when + ENG_COLL_TICK / 2) == 0);
    }
    CHECK(s_ticks == 5);
    /* Nothing runs: the next turn ticks nothing and arms nothing. */
    s->active = NULL;
    CHECK(cl_timer_run(f->timers, cl_timer_next(f->timers)) == 1);
    CHECK(s_ticks == 5);
    CHECK(isinf(cl_timer_next(f->timers)));
    fake_free(f);
}

/* Device input on its way: pumped every ENG_STAGE_POLL in between. */
static void test_stage(void)
{
    fake_t *f = fake_engine();
    s_ticks = s_pumps = 0;
    s_waits = true;
    (void)start_one(f);
    double first = cl_timer_next(f->timers);
    CHECK(cl_timer_run(f->timers, first) == 1);
    CHECK(s_pumps == 1 && s_ticks == 1);
    CHECK(fabs(cl_timer_next(f->timers) - (first + ENG_STAGE_POLL)) < 1e-9);
    CHECK(cl_timer_run(f->timers, first + ENG_STAGE_POLL) == 1);
    CHECK(s_pumps == 2 && s_ticks == 1); /* no tick before ENG_COLL_TICK */
    /* The input is in host memory: back to the tick alone. */
    s_waits = false;
    CHECK(cl_timer_run(f->timers, cl_timer_next(f->timers)) == 1);
    CHECK(s_pumps == 2);
    CHECK(fabs(cl_timer_next(f->timers) - (first + ENG_COLL_TICK)) < 1e-9);
    fake_free(f);
}

/* A peer that is no member (yet, or any more) ticks nothing; becoming
   one looks at once. */
static void test_not_member(void)
{
    fake_t *f = fake_engine();
    s_ticks = 0;
    s_waits = false;
    f->member = false;
    (void)start_one(f);
    CHECK(cl_timer_run(f->timers, s_now) == 1);
    CHECK(s_ticks == 0);
    CHECK(isinf(cl_timer_next(f->timers)));
    f->member = true;
    eng_coll_member(f->cs);
    CHECK(cl_timer_run(f->timers, s_now) == 1);
    CHECK(s_ticks == 1);
    CHECK(!isinf(cl_timer_next(f->timers)));
    fake_free(f);
}

/* A call gets the stream's next sequence; one handed back at a given
   sequence (eng_cs_submit_at) runs under it, is marked for the elastic
   hook as not to be recorded again, and leaves the stream's next local
   sequence as told (UINT64_MAX: as it was); the fast path's advance never
   lowers it. */
static void test_submit_at(void)
{
    fake_t *f = fake_engine();
    collab_comm_t world;
    memset(&world, 0, sizeof world);
    world.id = CL_COMM_WORLD_ID;
    world.kind = CL_COMM_WORLD;
    collab_request_t r[5];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 5; i++) {
        r[i].op = CL_OP_COLL;
        r[i].comm = &world;
    }
    /* No world stream yet: refused, the request untouched. */
    r[0].coll.seq = 77;
    CHECK(eng_cs_submit_at(f->cs, &r[0], 3, 4) == COLLAB_ERR_INTERNAL);
    CHECK(r[0].coll.seq == 77 && s_posted == 0);

    s_posted = 0;
    eng_coll_submit(f->cs, &r[0]);
    eng_coll_submit(f->cs, &r[1]);
    CHECK(r[0].coll.seq == 0 && r[1].coll.seq == 1);
    CHECK(s_posted == 2 && !s_again);
    stream_t *s = eng_cs_stream(f->cs, CL_COMM_WORLD_ID, false);
    CHECK(s != NULL);
    if (s == NULL) {
        fake_free(f);
        return;
    }
    CHECK(s->next_seq == 2);

    CHECK(eng_cs_submit_at(f->cs, &r[2], 10, 12) == COLLAB_OK);
    CHECK(r[2].coll.seq == 10);
    CHECK(r[2].coll.comm_id == CL_COMM_WORLD_ID);
    CHECK(s_posted == 3 && s_again);
    CHECK(s->next_seq == 12);

    CHECK(eng_cs_submit_at(f->cs, &r[3], 5, UINT64_MAX) == COLLAB_OK);
    CHECK(r[3].coll.seq == 5 && s_again);
    CHECK(s->next_seq == 12);

    eng_coll_submit(f->cs, &r[4]);
    CHECK(r[4].coll.seq == 12 && !s_again);
    CHECK(zlist_size(s->queue) == 5);

    eng_coll_skip_to(s, 20);
    CHECK(s->next_seq == 21);
    eng_coll_skip_to(s, 4);
    CHECK(s->next_seq == 21);
    fake_free(f);
}

int main(void)
{
    test_tick();
    test_stage();
    test_not_member();
    test_submit_at();
    printf("cl_engine_coll_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
