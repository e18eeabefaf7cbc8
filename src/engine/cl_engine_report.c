/*  cl_engine_report.c - what a peer tells the swarm's monitors.

    Every member that holds a rank sends a REPORT (docs/wire.md) to each
    monitor of its view every COLLAB_REPORT_INTERVAL seconds: its totals of
    steps, collectives, bytes, time in collectives and waiting for late
    members, failures and joins seen, the bandwidth it measured from each
    member, and the named values the program reported (collab_report, or
    COLLAB_REPORT_LOSS for unchanged programs).  The engine thread sends it
    from its timer, never inside a collective, so reporting costs the
    program nothing on its critical path: the counters are a few additions
    per completed collective.

    On a monitor (cl_config_t.monitor) the same file hands what arrives to
    the hooks that collab-monitor gave cl_engine_start_hooks: reports from
    ranked members, and the joins, failures and views the engine sees.
    Hooks run on the engine thread.

    A component (cl_engine_report.h): it sees the engine through its
    context only; the engine's adapters are in cl_engine_fanout.c.
*/
#include "engine/cl_engine_report.h"
#include "engine/cl_comm.h"

#include "util/cl_log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eng_report {
    eng_report_ctx_t ctx;
    /* Written by the program's threads (collab_report); guarded by mu. */
    pthread_mutex_t mu;
    cl_wire_value_t values[CL_WIRE_REPORT_VALUES];
    uint8_t nvalues;
    /* Engine thread only. */
    int timer;        /* in ctx.timers: next_send, or soon after a view */
    double next_send; /* 0: not scheduled yet */
    uint64_t bytes_sent, bytes_recv;
    double coll_seconds, wait_seconds;
    double late_since; /* when a member was first found late in the running
                          collective (0: none) */
    uint32_t group_size;
    uint32_t failures, joins;
    uint64_t scalar_run; /* one-element float SUM all-reduces since another
                            collective (COLLAB_REPORT_LOSS) */
    /* What reporting costs this peer, measured with COLLAB_LOG=debug only
       (bench/monitor_overhead.sh reads the line eng_report_destroy logs). */
    bool timed;
    uint64_t sent, counted;
    double send_seconds, count_seconds;
};

static void on_timer(void *arg, double now);
static double report(eng_report_t *r, double now);

eng_report_t *eng_report_new(const eng_report_ctx_t *ctx)
{
    eng_report_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->ctx = *ctx;
    pthread_mutex_init(&r->mu, NULL);
    r->timed = cl_log_enabled(CL_LOG_DEBUG);
    r->timer = cl_timer_add(r->ctx.timers, on_timer, r);
    if (r->timer < 0) {
        eng_report_destroy(&r);
        return NULL;
    }
    return r;
}

void eng_report_destroy(eng_report_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    struct eng_report *r = *self_p;
    if (r->timer >= 0)
        cl_timer_remove(r->ctx.timers, r->timer);
    if (r->timed && r->sent + r->counted > 0)
        cl_debug("reporting cost: %llu reports sent in %.1f us, accounting of %llu collectives "
                 "in %.1f us",
                 (unsigned long long)r->sent, r->send_seconds * 1e6, (unsigned long long)r->counted,
                 r->count_seconds * 1e6);
    pthread_mutex_destroy(&r->mu);
    free(r);
    *self_p = NULL;
}

/* Sets (or adds) a named value; the oldest name gives way when the table
   is full, so a program that reports many names keeps its latest ones. */
static void set_value(struct eng_report *r, const char *name, double value)
{
    pthread_mutex_lock(&r->mu);
    uint8_t i;
    for (i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i].name, name) == 0)
            break;
    if (i == r->nvalues) {
        if (r->nvalues == CL_WIRE_REPORT_VALUES) {
            memmove(&r->values[0], &r->values[1],
                    (CL_WIRE_REPORT_VALUES - 1) * sizeof r->values[0]);
            i = CL_WIRE_REPORT_VALUES - 1;
        } else {
            r->nvalues++;
        }
        snprintf(r->values[i].name, sizeof r->values[i].name, "%s", name);
    }
    r->values[i].value = value;
    pthread_mutex_unlock(&r->mu);
}

int eng_report_set_value(eng_report_t *self, const char *name, double value)
{
    if (self == NULL || name == NULL || !cl_wire_report_name_ok(name) || !isfinite(value))
        return COLLAB_ERR_ARG;
    set_value(self, name, value);
    return COLLAB_OK;
}

/* ---------------------------------------------------------------------- */
/* Counting. */

void eng_report_late_seen(eng_report_t *r, double now)
{
    if (r->late_since <= 0)
        r->late_since = now;
}

void eng_report_peer_event(eng_report_t *r, const cl_peer_t *p, int kind, const char *why)
{
    if (kind == CL_EVENT_JOINED)
        r->joins++;
    else if (kind == CL_EVENT_FAILED)
        r->failures++;
    const cl_engine_hooks_t *h = r->ctx.hooks;
    if (h->on_event != NULL)
        h->on_event(h->arg, kind, p->rank >= 0 ? p->rank : p->prev_rank, p->monitor, p->id,
                    p->address, why);
}

void eng_report_view(eng_report_t *r)
{
    /* This peer's state, its rank or the monitors may have changed: the
       timer looks at once. */
    cl_timer_arm_by(r->ctx.timers, r->timer, r->ctx.now(r->ctx.arg));
    const cl_engine_hooks_t *h = r->ctx.hooks;
    if (h->on_view == NULL)
        return;
    cl_wire_view_t v;
    if (r->ctx.view(r->ctx.arg, &v) != COLLAB_OK)
        return;
    h->on_view(h->arg, &v);
    free(v.members);
}

static void count_coll(eng_report_t *r, uint64_t comm_id, const collab_request_t *req,
                       int ncontrib, const collab_info_t *info, double now);

void eng_report_coll_done(eng_report_t *r, uint64_t comm_id, const collab_request_t *req,
                          int ncontrib, const collab_info_t *info, double now)
{
    if (!r->timed) {
        count_coll(r, comm_id, req, ncontrib, info, now);
        return;
    }
    double t0 = r->ctx.raw_now(r->ctx.arg);
    count_coll(r, comm_id, req, ncontrib, info, now);
    r->count_seconds += r->ctx.raw_now(r->ctx.arg) - t0;
    r->counted++;
}

static void count_coll(eng_report_t *r, uint64_t comm_id, const collab_request_t *req,
                       int ncontrib, const collab_info_t *info, double now)
{
    r->bytes_sent += info->bytes_sent;
    r->bytes_recv += info->bytes_received;
    if (isfinite(info->seconds) && info->seconds > 0)
        r->coll_seconds += info->seconds;
    if (r->late_since > 0) {
        r->wait_seconds += fmax(0.0, now - r->late_since);
        r->late_since = 0;
    }
    if (comm_id == CL_COMM_WORLD_ID && ncontrib > 0)
        r->group_size = (uint32_t)ncontrib;
    /* COLLAB_REPORT_LOSS: the N-th one-element float SUM all-reduce on the
       world communicator after any other collective. */
    const cl_coll_args_t *a = &req->coll;
    bool scalar = comm_id == CL_COMM_WORLD_ID && a->kind == CL_COLL_ALLREDUCE && a->count == 1 &&
                  a->op.kind == COLLAB_OP_SUM &&
                  (a->dtype == COLLAB_FLOAT || a->dtype == COLLAB_DOUBLE);
    if (!scalar) {
        r->scalar_run = 0;
        return;
    }
    r->scalar_run++;
    if (r->ctx.cfg->report_loss <= 0 || r->scalar_run != (uint64_t)r->ctx.cfg->report_loss ||
        a->recvbuf == NULL || ncontrib <= 0)
        return;
    double v;
    if (a->dtype == COLLAB_FLOAT) {
        float f;
        memcpy(&f, a->recvbuf, sizeof f);
        v = f;
    } else {
        memcpy(&v, a->recvbuf, sizeof v);
    }
    v /= ncontrib;
    if (isfinite(v))
        set_value(r, "loss", v);
}

/* ---------------------------------------------------------------------- */
/* Sending and receiving. */

static void fill(eng_report_t *r, cl_wire_report_t *p)
{
    void *a = r->ctx.arg;
    cl_peer_t *me = r->ctx.self(a);
    memset(p, 0, sizeof *p);
    p->rank = me->rank;
    p->flags =
        (uint8_t)((me->client ? CL_REPORT_CLIENT : 0) | (me->in_group ? CL_REPORT_IN_GROUP : 0));
    p->compression = (uint8_t)r->ctx.compression(a);
    p->steps = r->ctx.steps(a);
    p->collectives = r->ctx.progress(a);
    p->weight = me->weight > 0 && isfinite(me->weight) ? me->weight : 1.0;
    p->bytes_sent = r->bytes_sent;
    p->bytes_recv = r->bytes_recv;
    p->group_size = r->group_size;
    p->coll_seconds = r->coll_seconds;
    p->wait_seconds = r->wait_seconds;
    p->failures = r->failures;
    p->joins = r->joins;
    size_t n;
    cl_peer_t *const *list = r->ctx.members(a, &n);
    for (size_t i = 0; i < n && p->nlinks < CL_WIRE_REPORT_LINKS; i++) {
        const cl_peer_t *q = list[i];
        if (q == me || !(q->bandwidth > 0) || !isfinite(q->bandwidth))
            continue;
        p->links[p->nlinks].rank = q->rank;
        p->links[p->nlinks].bandwidth = q->bandwidth;
        p->nlinks++;
    }
    pthread_mutex_lock(&r->mu);
    p->nvalues = r->nvalues;
    memcpy(p->values, r->values, r->nvalues * sizeof r->values[0]);
    pthread_mutex_unlock(&r->mu);
}

/* Sends this peer's report when due; armed again at next_send.  With
   nothing to report (not a ranked member, or no monitor) it waits for
   the next view (eng_report_view). */
static void on_timer(void *arg, double now)
{
    eng_report_t *r = arg;
    double next = report(r, now);
    if (next < INFINITY)
        cl_timer_arm(r->ctx.timers, r->timer, next);
}

static double report(eng_report_t *r, double now)
{
    void *a = r->ctx.arg;
    const cl_config_t *cfg = r->ctx.cfg;
    cl_peer_t *me = r->ctx.self(a);
    if (!r->ctx.is_member(a) || cfg->monitor || me == NULL || me->rank < 0)
        return INFINITY;
    size_t nmon;
    cl_peer_t *const *mons = r->ctx.monitors(a, &nmon);
    if (nmon == 0) {
        r->next_send = 0;
        return INFINITY;
    }
    if (r->next_send <= 0) /* a monitor appeared: report soon */
        r->next_send = now + fmin(1.0, cfg->report_interval);
    if (now < r->next_send)
        return r->next_send;
    r->next_send = now + cfg->report_interval;
    double t0 = r->timed ? r->ctx.raw_now(a) : 0;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_REPORT;
    fill(r, &m.u.report);
    for (size_t i = 0; i < nmon; i++)
        if (mons[i]->state == CL_PEER_ALIVE)
            (void)r->ctx.send(a, mons[i], &m);
    if (r->timed) {
        r->send_seconds += r->ctx.raw_now(a) - t0;
        r->sent++;
    }
    return r->next_send;
}

void eng_report_on_msg(eng_report_t *r, const cl_peer_t *from, const cl_wire_report_t *rep)
{
    /* Only a monitor listens, and only to ranked members of its view. */
    if (!r->ctx.cfg->monitor || !r->ctx.is_member(r->ctx.arg) || from == NULL ||
        from->state == CL_PEER_GONE || from->monitor || from->rank < 0 || rep->rank != from->rank)
        return;
    const cl_engine_hooks_t *h = r->ctx.hooks;
    if (h->on_report != NULL)
        h->on_report(h->arg, from->key, from->id, from->address, from->client, rep);
}
