/*  cl_engine_report_test.c - selftest of the reports' component
    (cl_engine_report.c) on a fake context and a real timer set.

    A member sends nothing without a monitor or while not a member; once a
    view brings a monitor it reports within a second, then every
    COLLAB_REPORT_INTERVAL, to every live monitor, with its totals (bytes,
    time, waiting for late members, group size, joins and failures), its
    links' bandwidth, steps and collectives from the engine, and the named
    values (bad names and values refused, the oldest name giving way).
    COLLAB_REPORT_LOSS takes the N-th scalar sum after another collective.
    A monitor hands a ranked member's REPORT to its hook and nobody
    else's; peer events and views reach the hooks.
*/
#include "engine/cl_comm.h"
#include "engine/cl_engine_report.h"
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    cl_engine_hooks_t hooks;
    double now;
    bool member;
    cl_peer_t peers[4]; /* 0: this peer (rank 0), 1: rank 1, 2: a monitor, 3: another */
    cl_peer_t *list[2], *mons[2];
    size_t nmons;
    uint64_t steps, progress;
    /* What was sent, and to whom. */
    int nsent;
    const cl_peer_t *last_to;
    cl_wire_report_t last;
    /* What the hooks got. */
    int reports, events, views, last_kind, last_rank;
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}
static bool f_is_member(fake_t *f)
{
    return f->member;
}
static cl_peer_t *f_self(fake_t *f)
{
    return &f->peers[0];
}
static cl_peer_t *const *f_members(fake_t *f, size_t *n)
{
    *n = 2;
    return f->list;
}
static cl_peer_t *const *f_monitors(fake_t *f, size_t *n)
{
    *n = f->nmons;
    return f->mons;
}
static int f_compression(fake_t *f)
{
    (void)f;
    return 1;
}
static int f_view(fake_t *f, cl_wire_view_t *out)
{
    (void)f;
    memset(out, 0, sizeof *out);
    out->epoch = 7;
    return COLLAB_OK;
}
static uint64_t f_steps(fake_t *f)
{
    return f->steps;
}
static uint64_t f_progress(fake_t *f)
{
    return f->progress;
}
static int f_send(fake_t *f, cl_peer_t *p, cl_wire_msg_t *m)
{
    CHECK(m->hdr.type == CL_MSG_REPORT);
    f->nsent++;
    f->last_to = p;
    f->last = m->u.report;
    return 0;
}
static void h_report(void *arg, const uint8_t key[32], const char *id, const char *address,
                     bool client, const cl_wire_report_t *r)
{
    (void)key, (void)id, (void)address, (void)client, (void)r;
    ((fake_t *)arg)->reports++;
}
static void h_event(void *arg, int kind, int rank, bool monitor, const char *id,
                    const char *address, const char *why)
{
    (void)monitor, (void)id, (void)address, (void)why;
    fake_t *f = arg;
    f->events++;
    f->last_kind = kind;
    f->last_rank = rank;
}
static void h_view(void *arg, const cl_wire_view_t *v)
{
    CHECK(v->epoch == 7);
    ((fake_t *)arg)->views++;
}

static eng_report_t *setup(fake_t *f, bool monitor, bool hooks)
{
    memset(f, 0, sizeof *f);
    f->cfg.report_interval = 5.0;
    f->cfg.monitor = monitor;
    f->timers = cl_timer_new(4);
    f->now = 100.0;
    f->member = true;
    for (int i = 0; i < 4; i++) {
        f->peers[i].rank = i < 2 ? i : -1;
        f->peers[i].prev_rank = -1;
        f->peers[i].state = CL_PEER_ALIVE;
        snprintf(f->peers[i].id, sizeof f->peers[i].id, "peer%d", i);
    }
    f->peers[2].monitor = f->peers[3].monitor = true;
    f->peers[1].bandwidth = 12.5e6;
    f->peers[0].weight = 2.0;
    f->peers[0].in_group = true;
    f->list[0] = &f->peers[0];
    f->list[1] = &f->peers[1];
    f->mons[0] = &f->peers[2];
    f->mons[1] = &f->peers[3];
    if (hooks)
        f->hooks = (cl_engine_hooks_t){
            .arg = f, .on_report = h_report, .on_event = h_event, .on_view = h_view};
    eng_report_ctx_t ctx = {.arg = f,
                            .cfg = &f->cfg,
                            .timers = f->timers,
                            .hooks = &f->hooks,
                            .now = f_now,
                            .raw_now = f_now,
                            .is_member = f_is_member,
                            .self = f_self,
                            .members = f_members,
                            .monitors = f_monitors,
                            .compression = f_compression,
                            .view = f_view,
                            .steps = f_steps,
                            .progress = f_progress,
                            .send = f_send};
    eng_report_t *r = eng_report_new(&ctx);
    CHECK(r != NULL);
    return r;
}

static void teardown(fake_t *f, eng_report_t **r)
{
    eng_report_destroy(r);
    CHECK(*r == NULL);
    eng_report_destroy(r);
    cl_timer_destroy(&f->timers);
}

static void run_until(fake_t *f, double t)
{
    while (cl_timer_next(f->timers) <= t) {
        f->now = cl_timer_next(f->timers);
        cl_timer_run(f->timers, f->now);
    }
    f->now = t;
}

/* A collective of comm_id: kind, count, type, result at buf. */
static void coll(eng_report_t *r, fake_t *f, uint64_t comm, cl_coll_kind_t kind, size_t count,
                 collab_dtype_t type, void *buf, int ncontrib)
{
    collab_request_t req;
    memset(&req, 0, sizeof req);
    req.coll.kind = kind;
    req.coll.count = count;
    req.coll.dtype = type;
    req.coll.op.kind = COLLAB_OP_SUM;
    req.coll.recvbuf = buf;
    collab_info_t info = {.bytes_sent = 100, .bytes_received = 300, .seconds = 0.25};
    eng_report_coll_done(r, comm, &req, ncontrib, &info, f->now);
}

static double value_of(const cl_wire_report_t *p, const char *name)
{
    for (int i = 0; i < p->nvalues; i++)
        if (strcmp(p->values[i].name, name) == 0)
            return p->values[i].value;
    return NAN;
}

static void test_member(void)
{
    fake_t f;
    eng_report_t *r = setup(&f, false, false);
    /* No monitor: the view's look finds nothing to do. */
    eng_report_view(r);
    run_until(&f, 200.0);
    CHECK(f.nsent == 0);
    /* A monitor appears (a view): a report within a second, then every
       interval, to each live monitor. */
    f.nmons = 2;
    f.peers[3].state = CL_PEER_SUSPECT;
    f.steps = 3;
    f.progress = 42;
    eng_report_late_seen(r, 200.0);
    eng_report_late_seen(r, 200.5); /* the first sighting counts */
    f.now = 201.0;
    coll(r, &f, CL_COMM_WORLD_ID, CL_COLL_ALLREDUCE, 1000, COLLAB_FLOAT, NULL, 3);
    cl_peer_t joined = f.peers[1], failed = f.peers[1];
    eng_report_peer_event(r, &joined, CL_EVENT_JOINED, "joined");
    eng_report_peer_event(r, &failed, CL_EVENT_FAILED, "died");
    eng_report_peer_event(r, &failed, CL_EVENT_LEFT, "left");
    CHECK(eng_report_set_value(r, "acc", 0.5) == 0);
    eng_report_view(r);
    run_until(&f, 201.5);
    CHECK(f.nsent == 0);
    run_until(&f, 202.0);
    CHECK(f.nsent == 1 && f.last_to == &f.peers[2]);
    CHECK(f.last.rank == 0 && f.last.steps == 3 && f.last.collectives == 42);
    CHECK(f.last.bytes_sent == 100 && f.last.bytes_recv == 300 && f.last.group_size == 3);
    CHECK(fabs(f.last.coll_seconds - 0.25) < 1e-12 && fabs(f.last.wait_seconds - 1.0) < 1e-12);
    CHECK(f.last.joins == 1 && f.last.failures == 1 && f.last.weight == 2.0);
    CHECK(f.last.compression == 1 && (f.last.flags & CL_REPORT_IN_GROUP));
    CHECK(f.last.nlinks == 1 && f.last.links[0].rank == 1 && f.last.links[0].bandwidth == 12.5e6);
    CHECK(value_of(&f.last, "acc") == 0.5);
    run_until(&f, 206.9);
    CHECK(f.nsent == 1);
    run_until(&f, 207.0);
    CHECK(f.nsent == 2);
    /* Not a member any more: silent until a view says otherwise. */
    f.member = false;
    run_until(&f, 230.0);
    CHECK(f.nsent == 2);
    f.member = true;
    eng_report_view(r);
    run_until(&f, 230.0);
    CHECK(f.nsent == 3);
    teardown(&f, &r);
}

static void test_values(void)
{
    fake_t f;
    eng_report_t *r = setup(&f, false, false);
    CHECK(eng_report_set_value(r, "", 1.0) == COLLAB_ERR_ARG);
    CHECK(eng_report_set_value(r, "bad name", 1.0) == COLLAB_ERR_ARG);
    CHECK(eng_report_set_value(r, "x", NAN) == COLLAB_ERR_ARG);
    CHECK(eng_report_set_value(r, "x", INFINITY) == COLLAB_ERR_ARG);
    CHECK(eng_report_set_value(r, NULL, 1.0) == COLLAB_ERR_ARG);
    CHECK(eng_report_set_value(NULL, "x", 1.0) == COLLAB_ERR_ARG);
    char name[16];
    for (int i = 0; i < CL_WIRE_REPORT_VALUES + 2; i++) {
        snprintf(name, sizeof name, "v%d", i);
        CHECK(eng_report_set_value(r, name, i) == 0);
    }
    CHECK(eng_report_set_value(r, "v5", -5.0) == 0); /* updated in place */
    /* COLLAB_REPORT_LOSS=2: the second scalar float sum after another
       collective, divided by the contributors. */
    f.cfg.report_loss = 2;
    float a = 6.0f, b = 9.0f;
    coll(r, &f, CL_COMM_WORLD_ID, CL_COLL_ALLREDUCE, 1, COLLAB_FLOAT, &a, 3);
    coll(r, &f, CL_COMM_WORLD_ID, CL_COLL_ALLREDUCE, 1, COLLAB_FLOAT, &b, 3);
    coll(r, &f, CL_COMM_WORLD_ID, CL_COLL_BARRIER, 0, COLLAB_FLOAT, NULL, 3);
    coll(r, &f, CL_COMM_WORLD_ID, CL_COLL_ALLREDUCE, 1, COLLAB_FLOAT, &a, 3);
    coll(r, &f, 77, CL_COLL_ALLREDUCE, 1, COLLAB_FLOAT, &a, 3); /* not the world */
    f.nmons = 1;
    eng_report_view(r);
    run_until(&f, 101.0);
    CHECK(f.nsent == 1);
    CHECK(f.last.nvalues == CL_WIRE_REPORT_VALUES);
    /* v0 and v1 gave way to v16 and v17, v2 to "loss". */
    CHECK(isnan(value_of(&f.last, "v0")) && isnan(value_of(&f.last, "v2")));
    CHECK(value_of(&f.last, "v3") == 3.0 && value_of(&f.last, "v5") == -5.0);
    CHECK(value_of(&f.last, "v17") == 17.0);
    CHECK(value_of(&f.last, "loss") == 3.0);
    teardown(&f, &r);
}

static void test_monitor(void)
{
    fake_t f;
    eng_report_t *r = setup(&f, true, true);
    cl_wire_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.rank = 1;
    eng_report_on_msg(r, &f.peers[1], &rep);
    CHECK(f.reports == 1);
    rep.rank = 0; /* a rank it does not hold */
    eng_report_on_msg(r, &f.peers[1], &rep);
    rep.rank = -1;
    eng_report_on_msg(r, &f.peers[2], &rep); /* a monitor */
    eng_report_on_msg(r, NULL, &rep);
    f.peers[1].state = CL_PEER_GONE;
    rep.rank = 1;
    eng_report_on_msg(r, &f.peers[1], &rep);
    f.peers[1].state = CL_PEER_ALIVE;
    f.member = false;
    eng_report_on_msg(r, &f.peers[1], &rep);
    CHECK(f.reports == 1);
    f.member = true;
    /* A monitor never reports, but its hooks see events and views. */
    f.nmons = 2;
    eng_report_view(r);
    run_until(&f, 120.0);
    CHECK(f.nsent == 0 && f.views == 1);
    cl_peer_t gone = f.peers[1];
    gone.rank = -1;
    gone.prev_rank = 1;
    eng_report_peer_event(r, &gone, CL_EVENT_FAILED, "died");
    CHECK(f.events == 1 && f.last_kind == CL_EVENT_FAILED && f.last_rank == 1);
    teardown(&f, &r);
}

int main(void)
{
    test_member();
    test_values();
    test_monitor();
    printf("cl_engine_report_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
