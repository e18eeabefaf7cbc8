/*  cl_engine_coll.c - collective streams: one per communicator.

    Each call on a communicator gets the next sequence number.  At most one
    collective per communicator runs at a time (a cl_coll_t from
    src/coll/); later calls wait in order.  Before the world group is
    formed, the first call asks the coordinator to form it (matchmaking)
    and waits.

    The member list of a collective is the world group of one *generation*
    (docs/wire.md section 6) restricted to the communicator, ascending by
    comm rank, with the generation's weights and client flags.  Members of
    that generation that are gone by now are marked failed before the
    start, and the relay rule of docs/collectives.md deals with them like
    with any failure.  Since the member list must be the same on every
    member, the oldest generation in use for a sequence number wins: a
    member that started under a newer one restarts (cl_engine_route.c).
    Restarts need the inputs intact, so an in-place input is copied first.

    Several groups.  A world all-reduce whose member list holds more than
    COLLAB_TARGET_GROUP members runs only with this peer's part of it
    (cl_engine_groups.c, docs/elastic.md §9).

    This file keeps the streams: their queues, completion, the effect of
    membership changes on running collectives and the timer.  The parts
    around it (cl_engine_coll_int.h): cl_engine_coll_start.c starts a
    collective (generation, member list, the cl_coll_t),
    cl_engine_coll_env.c is the environment its algorithm gets,
    cl_engine_gens.c remembers the generations, incoming messages are
    routed in cl_engine_route.c and the same-host fast path is
    cl_engine_fast.c.  Together they are one component, eng_cs_t
    (cl_engine_coll.h): its state, struct eng_cs, is written by these
    files only, and they see the rest of the engine only through the
    context the loop gives eng_cs_new (cs->ctx, built in
    cl_engine_coll_ctx.c), the elastic hooks included.
*/
#include "engine/cl_engine_coll_int.h"
#include "engine/cl_shm.h"

#include "util/cl_log.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *eng_coll_kind_name(cl_coll_kind_t k)
{
    static const char *const names[] = {
        "barrier",    "bcast",   "allreduce", "reduce",  "reduce_scatter_block",
        "allgatherv", "gatherv", "scatterv",  "alltoall"};
    return (unsigned)k < CL_COLL_KIND_COUNT ? names[k] : "collective";
}

/* Completes the requests of a stream (running and queued) with status. */
static void stream_fail(stream_t *s, int status)
{
    if (s->active != NULL) {
        cl_coll_destroy(&s->active);
        eng_coll_ctx_free(&s->active_ctx);
        cl_request_complete(s->active_req, status);
        s->active_req = NULL;
    }
    collab_request_t *r;
    while (s->queue != NULL && (r = zlist_pop(s->queue)) != NULL)
        cl_request_complete(r, status);
}

void eng_coll_fail_all(eng_cs_t *cs, int status)
{
    for (size_t i = 0; i < cs->nstreams; i++)
        stream_fail(cs->streams[i], status);
}

static void stream_free(eng_cs_t *cs, stream_t *s, int status);

stream_t *eng_coll_retired(eng_cs_t *cs, uint64_t id)
{
    for (size_t i = 0; i < cs->nretired; i++)
        if (cs->retired[i]->comm_id == id)
            return cs->retired[i];
    return NULL;
}

void eng_coll_retire_streams(eng_cs_t *cs, double now, double after)
{
    for (size_t i = 0; i < cs->nstreams;) {
        stream_t *s = cs->streams[i];
        if (s->comm != NULL || s->opened_by <= 0 || s->active != NULL || zlist_size(s->queue) > 0 ||
            now - s->opened_at < after) {
            i++;
            continue;
        }
        cs->streams[i] = cs->streams[--cs->nstreams];
        if (s->buf_head == NULL) {
            stream_free(cs, s, COLLAB_ERR_COMM); /* nothing to keep */
            continue;
        }
        if (cs->nretired == cs->capretired) {
            size_t cap = cs->capretired > 0 ? 2 * cs->capretired : 8;
            stream_t **a = realloc(cs->retired, cap * sizeof *a);
            if (a == NULL) {
                cs->streams[cs->nstreams++] = s; /* kept where it was */
                return;
            }
            cs->retired = a;
            cs->capretired = cap;
        }
        cs->retired[cs->nretired++] = s;
    }
}

/* Frees a stream; requests still attached complete with status. */
static void stream_free(eng_cs_t *cs, stream_t *s, int status)
{
    eng_fast_release(cs, s);
    stream_fail(s, status);
    zlist_destroy(&s->queue);
    cl_coll_destroy(&s->retained);
    eng_coll_ctx_free(&s->retained_ctx);
    eng_coll_free_buffered(cs, s);
    free(s);
}

stream_t *eng_cs_stream(eng_cs_t *cs, uint64_t id, bool create)
{
    for (size_t i = 0; i < cs->nstreams; i++)
        if (cs->streams[i]->comm_id == id)
            return cs->streams[i];
    if (!create)
        return NULL;
    if (cs->nstreams == cs->capstreams) {
        size_t cap = cs->capstreams > 0 ? 2 * cs->capstreams : 8;
        stream_t **a = realloc(cs->streams, cap * sizeof *a);
        if (a == NULL)
            return NULL;
        cs->streams = a;
        cs->capstreams = cap;
    }
    /* A retired stream of this communicator comes back with its early
       messages, older than anything that follows (docs/security-bounds.md §5). */
    for (size_t i = 0; i < cs->nretired; i++)
        if (cs->retired[i]->comm_id == id) {
            stream_t *r = cs->retired[i];
            cs->retired[i] = cs->retired[--cs->nretired];
            r->opened_at = cs_now(cs);
            cs->streams[cs->nstreams++] = r;
            return r;
        }
    stream_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->comm_id = id;
    s->queue = zlist_new();
    if (s->queue == NULL) {
        free(s);
        return NULL;
    }
    cs->streams[cs->nstreams++] = s;
    return s;
}

/* The generations' context (cl_engine_gens.h), on the streams' own:
   its argument is the streams (typed: struct eng_cs). */
static int gens_rank(eng_cs_t *cs)
{
    return cs->ctx.rank(cs->ctx.arg);
}

static int gens_world_size(eng_cs_t *cs)
{
    return cs->ctx.world_size(cs->ctx.arg);
}

static bool gens_in_group(eng_cs_t *cs, int w)
{
    return eng_coll_in_group(cs, w);
}

static void on_timer(void *arg, double now);

eng_cs_t *eng_cs_new(const eng_cs_ctx_t *ctx)
{
    eng_cs_t *cs = calloc(1, sizeof *cs);
    if (cs == NULL)
        return NULL;
    cs->ctx = *ctx;
    cs->coll_timer = cl_timer_add(cs->ctx.timers, on_timer, cs);
    eng_gens_ctx_t gctx = {
        .arg = cs, .rank = gens_rank, .world_size = gens_world_size, .in_group = gens_in_group};
    cs->gens = cs->coll_timer >= 0 ? eng_gens_new(&gctx) : NULL;
    if (cs->gens == NULL)
        eng_cs_destroy(&cs);
    return cs;
}

void eng_cs_destroy(eng_cs_t **self_p)
{
    eng_cs_t *cs = *self_p;
    if (cs == NULL)
        return;
    for (size_t i = 0; i < cs->nstreams; i++)
        stream_free(cs, cs->streams[i], COLLAB_ERR_NOT_INIT);
    free(cs->streams);
    cs->streams = NULL;
    cs->nstreams = cs->capstreams = 0;
    for (size_t i = 0; i < cs->nretired; i++)
        stream_free(cs, cs->retired[i], COLLAB_ERR_NOT_INIT);
    free(cs->retired);
    cs->retired = NULL;
    cs->nretired = cs->capretired = 0;
    free(cs->early); /* after the streams: freeing their early messages counts */
    cs->early = NULL;
    cs->nearly = 0;
    free(cs->late);
    eng_gens_destroy(&cs->gens);
    if (cs->coll_timer >= 0)
        cl_timer_remove(cs->ctx.timers, cs->coll_timer);
    local_msg_t *l = cs->local_head;
    while (l != NULL) {
        local_msg_t *next = l->next;
        free(l);
        l = next;
    }
    sodium_memzero(cs->pairkeys, sizeof cs->pairkeys);
    free(cs);
    *self_p = NULL;
}

uint64_t eng_coll_completed(const eng_cs_t *cs)
{
    return cs != NULL ? cs->progress : 0;
}

double eng_coll_step_gap(const eng_cs_t *cs)
{
    return cs != NULL ? cs->step_gap : 0;
}

bool eng_coll_waiting_for_group(const eng_cs_t *cs)
{
    return cs != NULL && cs->waiting_for_group;
}

bool eng_coll_local_pending(const eng_cs_t *cs)
{
    return cs != NULL && cs->local_head != NULL;
}

bool eng_coll_comm_rank_is(const eng_cs_t *cs, uint64_t comm, int r, int w)
{
    for (size_t i = 0; cs != NULL && i < cs->nstreams; i++) {
        const stream_t *s = cs->streams[i];
        if (s->comm_id == comm && s->comm != NULL && cl_comm_world_of(s->comm, r) != w)
            return false;
    }
    return true;
}

size_t eng_coll_entered(const eng_cs_t *cs, cl_wire_bye_comm_t *comms, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; cs != NULL && i < cs->nstreams; i++) {
        const stream_t *s = cs->streams[i];
        if (s->comm_id == CL_COMM_SELF_ID || s->started == 0)
            continue;
        if (n < max) {
            comms[n].comm = s->comm_id;
            comms[n].entered = s->started;
        }
        n++;
    }
    /* Then the communicators freed last, newest first, in the room left:
       a member may still run the last collectives of one (MPI_Comm_free
       right before MPI_Finalize) and must count this peer there. */
    for (int k = 1; cs != NULL && k <= cs->nfreed && n < max; k++) {
        int at = (cs->freed_next - k + ENG_FREED_KEEP) % ENG_FREED_KEEP;
        bool named = false; /* a GOODBYE names each communicator once */
        for (size_t j = 0; j < n && !named; j++)
            named = comms[j].comm == cs->freed[at].comm;
        if (named)
            continue;
        comms[n].comm = cs->freed[at].comm;
        comms[n].entered = cs->freed[at].entered;
        n++;
    }
    return n;
}

/* Queues req on its stream under the stream's next sequence.  again: a
   request handed back (eng_cs_submit_at), already recorded by the
   elastic hooks when it was first posted. */
static void submit(eng_cs_t *cs, collab_request_t *req, bool again)
{
    stream_t *s = eng_cs_stream(cs, req->comm->id, true);
    if (s == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    if (s->comm == NULL)
        s->comm = req->comm;
    eng_fast_drain(cs, s); /* sequences the program ran on the fast path */
    req->coll.comm_id = s->comm_id;
    req->coll.seq = s->next_seq++;
    eng_fast_on_post(s, req->coll.seq);                 /* a group's grant: all fall back here */
    if (cs->ctx.el_on_post(cs->ctx.arg, s, req, again)) /* elastic hook: may renumber or take it */
        return;
    if (zlist_append(s->queue, req) != 0) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    eng_coll_try_start(cs, s);
}

void eng_coll_submit(eng_cs_t *cs, collab_request_t *req)
{
    submit(cs, req, false);
}

int eng_cs_submit_at(eng_cs_t *cs, collab_request_t *req, uint64_t seq, uint64_t next)
{
    stream_t *w = eng_cs_stream(cs, CL_COMM_WORLD_ID, false);
    if (w == NULL)
        return COLLAB_ERR_INTERNAL;
    uint64_t keep = w->next_seq;
    w->next_seq = seq;
    submit(cs, req, true); /* not recorded again (eng_el_on_post) */
    w->next_seq = next != UINT64_MAX ? next : keep;
    return COLLAB_OK;
}

void eng_cs_renumber(eng_cs_t *cs, uint64_t started, uint64_t next)
{
    stream_t *w = eng_cs_stream(cs, CL_COMM_WORLD_ID, false);
    if (w == NULL)
        return;
    if (w->started < started)
        w->started = started;
    if (next != UINT64_MAX)
        w->next_seq = next;
}

void eng_coll_number(stream_t *s, collab_request_t *req, uint64_t seq)
{
    req->coll.seq = seq;
    s->next_seq = seq + 1;
}

void eng_coll_skip_to(stream_t *s, uint64_t seq)
{
    if (seq + 1 > s->next_seq)
        s->next_seq = seq + 1;
}

uint64_t eng_stream_comm_id(const stream_t *s)
{
    return s->comm_id;
}

const collab_comm_t *eng_stream_comm(const stream_t *s)
{
    return s->comm;
}

bool eng_stream_is_world(const stream_t *s)
{
    return s != NULL && s->comm_id == CL_COMM_WORLD_ID && s->comm != NULL &&
           s->comm->kind == CL_COMM_WORLD;
}

uint64_t eng_stream_next_seq(const stream_t *s)
{
    return s->next_seq;
}

bool eng_stream_running(const stream_t *s, uint64_t *seq, uint64_t *gen)
{
    if (s->active == NULL)
        return false;
    *seq = s->active_ctx->seq;
    *gen = s->active_ctx->gen;
    return true;
}

bool eng_stream_finishing(const stream_t *s, uint64_t *seq, uint64_t *gen, int *nmismatch,
                          int *ncontrib)
{
    const coll_ctx_t *ctx = s->active_ctx;
    *seq = ctx != NULL ? ctx->seq : 0;
    *gen = ctx != NULL ? ctx->gen : 0;
    *nmismatch = ctx != NULL ? ctx->nmismatch : 0;
    *ncontrib = 0;
    if (s->active != NULL)
        (void)cl_coll_contributors(s->active, ncontrib);
    return ctx != NULL;
}

size_t eng_stream_queued(const stream_t *s)
{
    return zlist_size(s->queue);
}

collab_request_t *eng_stream_queue_head(const stream_t *s)
{
    return zlist_head(s->queue); /* leaves the list's cursor */
}

void eng_stream_dequeue(stream_t *s, collab_request_t *req)
{
    zlist_remove(s->queue, req);
}

void eng_coll_fail_member(stream_t *s, int r, bool left)
{
    coll_ctx_t *ctx = s->active_ctx;
    for (int i = 0; i < ctx->nfailed; i++)
        if (ctx->failed[i] == r)
            return;
    int *f = realloc(ctx->failed, (size_t)(ctx->nfailed + 1) * sizeof *f);
    if (f != NULL)
        ctx->failed = f;
    bool *fl = realloc(ctx->failed_left, (size_t)(ctx->nfailed + 1) * sizeof *fl);
    if (fl != NULL)
        ctx->failed_left = fl;
    if (f != NULL && fl != NULL) {
        ctx->failed[ctx->nfailed] = r;
        ctx->failed_left[ctx->nfailed] = left;
        ctx->nfailed++;
    }
    (void)cl_coll_on_fail(s->active, r);
}

static void log_result(eng_cs_t *cs, stream_t *s, coll_ctx_t *ctx, int ncontrib, double seconds)
{
    /* Members that dropped out during the call. */
    int left = ctx->nmembers - ctx->nfailed;
    for (int i = 0; i < ctx->nfailed; i++) {
        int w = cl_comm_world_of(s->comm, ctx->failed[i]);
        if (ctx->failed_left[i])
            cl_info("peer rank %d left during %s #%llu; finished with %d peer%s", w,
                    eng_coll_kind_name(ctx->kind), (unsigned long long)ctx->seq, left,
                    left == 1 ? "" : "s");
        else
            cl_warn("peer rank %d failed during %s #%llu; finished with %d peer%s", w,
                    eng_coll_kind_name(ctx->kind), (unsigned long long)ctx->seq, left,
                    left == 1 ? "" : "s");
    }
    double now = cs_now(cs);
    if (ctx->kind == CL_COLL_ALLREDUCE) {
        cs->log_tensors++;
        cs->log_bytes +=
            (uint64_t)(s->active_req->coll.count * collab_dtype_extent(s->active_req->coll.dtype));
        cs->log_seconds += seconds;
        cs->log_peers = ncontrib;
    }
    if (cs->log_tensors > 0 && now - cs->last_step_log >= ENG_STEP_LOG_EVERY) {
        uint64_t step =
            cs->ctx.steps(cs->ctx.arg) > 0 ? cs->ctx.steps(cs->ctx.arg) : cs->progress + 1;
        cl_info("step %llu: averaged %llu tensor%s (%.1f MB) with %d peer%s in %.2f s",
                (unsigned long long)step, (unsigned long long)cs->log_tensors,
                cs->log_tensors == 1 ? "" : "s", (double)cs->log_bytes / 1e6, cs->log_peers,
                cs->log_peers == 1 ? "" : "s", cs->log_seconds);
        cs->last_step_log = now;
        cs->log_tensors = cs->log_bytes = 0;
        cs->log_seconds = 0;
    }
}

/* Has everything this peer sent to the live members of the running
   collective of s left this process?  Nothing may wait for credit (class
   EARLY) or in a shared-memory link's queue to one of them.  A result is
   final only once this member's own contribution went out: otherwise a
   member stopped just then (SIGSTOP) would hold a result with the others'
   inputs while they, never getting its own, complete without it
   (docs/collectives.md §3, "Members that were stopped"). */
static bool own_sent(eng_cs_t *cs, const stream_t *s)
{
    const coll_ctx_t *ctx = s->active_ctx;
    cl_shm_t *shm = cl_transport_shm(cs->ctx.tp);
    for (int k = 0; k < ctx->nmembers; k++) {
        int r = ctx->members[k];
        bool failed = r == s->comm->rank;
        for (int j = 0; j < ctx->nfailed && !failed; j++)
            failed = ctx->failed[j] == r;
        int w = failed ? -1 : cl_comm_world_of(s->comm, r);
        const cl_peer_t *p = w >= 0 ? cl_member_at_rank(cs->ctx.mb, w) : NULL;
        if (p == NULL || p->state == CL_PEER_GONE)
            continue;
        if (eng_p2p_coll_waiting(cs->ctx.p2p, w) > 0 || cl_shm_queued(shm, p->key) > 0)
            return false;
    }
    return true;
}

void eng_coll_check_done(eng_cs_t *cs, stream_t *s)
{
    /* Elastic hook: a peer just continued after a stop completes nothing
       before the members' answers say whether it is still in the group
       (an evicted straggler's collective then restarts alone). */
    if (cs->ctx.el_in_doubt(cs->ctx.arg))
        return;
    /* Its own messages first (the loop looks again at every turn). */
    while (s->active != NULL && cl_coll_done(s->active) && own_sent(cs, s)) {
        cl_coll_t *c = s->active;
        coll_ctx_t *ctx = s->active_ctx;
        collab_request_t *req = s->active_req;
        int status = cl_coll_status(c);
        int ncontrib = 0;
        const int *contrib = cl_coll_contributors(c, &ncontrib);
        if (contrib == NULL)
            ncontrib = 0;
        double now = cs_now(cs);
        double seconds = now - ctx->t_start;
        collab_info_t info;
        memset(&info, 0, sizeof info);
        info.group_size = ncontrib;
        info.world_size = s->comm->size;
        info.sequence = ctx->seq;
        cl_coll_traffic(c, &info.bytes_sent, &info.bytes_received);
        info.seconds = seconds;
        info.nranks = ncontrib < COLLAB_MAX_INFO_RANKS ? ncontrib : COLLAB_MAX_INFO_RANKS;
        for (int i = 0; i < info.nranks; i++)
            info.ranks[i] = contrib[i];
        if (cl_coll_release_user_buffers(c) != COLLAB_OK && status == COLLAB_OK)
            status = COLLAB_ERR_NO_MEM;
        free(req->snapshot);
        req->snapshot = NULL;
        log_result(cs, s, ctx, ncontrib, seconds);
        eng_report_coll_done(cs->ctx.rep, s->comm_id, req, ncontrib, &info, now);
        cs->ctx.el_on_done(cs->ctx.arg, s, req, status); /* elastic hook: start-up results */
        /* Members that answered are no longer late. */
        for (int i = 0; i < ncontrib; i++) {
            const cl_peer_t *p = eng_coll_peer_of(ctx, contrib[i]);
            if (p != NULL)
                cs->ctx.answered(cs->ctx.arg, p);
        }
        if (cs->last_done > 0)
            cs->step_gap = cs->step_gap > 0 ? 0.8 * cs->step_gap + 0.2 * (now - cs->last_done)
                                            : now - cs->last_done;
        cs->last_done = now;
        cs->progress++;
        cl_coll_destroy(&s->retained);
        eng_coll_ctx_free(&s->retained_ctx);
        s->retained = c;
        s->retained_ctx = ctx;
        s->active = NULL;
        s->active_ctx = NULL;
        s->active_req = NULL;
        cs->ctx.set_info(cs->ctx.arg, &info);
        /* Granted again before the program learns of the completion:
           woken first, its next call would count itself as submitted
           before the engine looked, and a loop of calls that take longer
           than a wake-up (a big all-reduce) would never be granted. */
        if (req->counted) {
            req->counted = false;
            atomic_fetch_sub(&req->comm->coll_pending, 1);
        }
        eng_coll_try_start(cs, s);
        eng_fast_update_stream(cs, s);
        cl_request_complete(req, status);
    }
    /* A collective that may complete later without a message coming
       (cl_coll_wake_at) is looked at then (coll_deadlines). */
    if (s->active != NULL) {
        double w = cl_coll_wake_at(s->active);
        if (w < INFINITY)
            eng_coll_wake_by(cs, w);
    }
}

/* ---------------------------------------------------------------------- */
/* Membership changes and timers. */

void eng_coll_peer_gone(eng_cs_t *cs, const cl_peer_t *p)
{
    int w = p->rank >= 0 ? p->rank : p->prev_rank;
    if (w < 0)
        return;
    /* Streams of communicators this program has not created hold only
       early messages: a failed peer's go (its collectives will count it
       failed), and a stream left empty is freed, which also gives back
       its place under COLLAB_MAX_STREAMS (docs/security-bounds.md §5).  A peer
       that said goodbye counts in the collectives it entered: its
       messages stay. */
    bool left = p->suspect_reason == ENG_REASON_LEFT;
    for (size_t i = 0; i < cs->nstreams && !left;) {
        stream_t *s = cs->streams[i];
        if (s->comm == NULL && eng_coll_drop_buffered_from(cs, s, w) == 0) {
            cs->streams[i] = cs->streams[--cs->nstreams];
            stream_free(cs, s, COLLAB_ERR_COMM);
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < cs->nretired && !left;) {
        stream_t *s = cs->retired[i];
        if (eng_coll_drop_buffered_from(cs, s, w) == 0) {
            cs->retired[i] = cs->retired[--cs->nretired];
            stream_free(cs, s, COLLAB_ERR_COMM);
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < cs->nstreams; i++) {
        stream_t *s = cs->streams[i];
        int r = s->comm != NULL ? cl_comm_rank_of_world(s->comm, w) : -1;
        /* A completed all-reduce that still owes relays learns of the
           failure too: it repairs from its copy at the new view, and stops
           waiting for a DONE that cannot come. */
        if (r >= 0 && r != s->comm->rank && cl_coll_owes(s->retained))
            (void)cl_coll_on_fail(s->retained, r);
        if (s->active == NULL)
            continue;
        bool member = false;
        for (int k = 0; k < s->active_ctx->nmembers && !member; k++)
            member = s->active_ctx->members[k] == r;
        if (r < 0 || !member || r == s->comm->rank)
            continue;
        if (eng_leave_status(cs->ctx.leave, w, s->comm_id, s->active_ctx->seq) == 1)
            continue; /* it left after taking part: its contribution is here */
        eng_coll_fail_member(s, r, p->suspect_reason == ENG_REASON_LEFT);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < cs->nstreams; i++)
        eng_coll_check_done(cs, cs->streams[i]);
}

void eng_coll_fail_departed(eng_cs_t *cs, const uint8_t key[32])
{
    int w = eng_leave_world_of(cs->ctx.leave, key);
    if (w < 0)
        return;
    for (size_t i = 0; i < cs->nstreams; i++) {
        stream_t *s = cs->streams[i];
        if (s->active == NULL)
            continue;
        int r = cl_comm_rank_of_world(s->comm, w);
        bool member = false;
        for (int k = 0; k < s->active_ctx->nmembers && !member; k++)
            member = s->active_ctx->members[k] == r;
        if (r < 0 || !member || r == s->comm->rank)
            continue;
        cl_debug("%s #%llu still waits for rank %d, which left; counting it as failed there",
                 eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq,
                 w);
        eng_coll_fail_member(s, r, true);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < cs->nstreams; i++)
        eng_coll_check_done(cs, cs->streams[i]);
}

const group_gen_t *eng_cs_gen(eng_cs_t *cs, uint64_t gen)
{
    return eng_gens_find(cs->gens, gen);
}

void eng_coll_record_group(eng_cs_t *cs)
{
    if (!cl_member_group_closed(cs->ctx.mb))
        return;
    size_t n;
    const cl_peer_t *const *list = (const cl_peer_t *const *)cl_member_list(cs->ctx.mb, &n);
    eng_gens_record(cs->gens, cl_member_group_epoch(cs->ctx.mb), list, n);
}

size_t eng_coll_gen_encode(eng_cs_t *cs, uint64_t gen, uint8_t **out)
{
    return eng_gens_encode(cs->gens, gen, out);
}

bool eng_coll_learn_gen(eng_cs_t *cs, uint64_t gen, uint64_t cur, int from_world,
                        const uint8_t *body, size_t len)
{
    return eng_gens_learn(cs->gens, gen, cur, from_world, body, len);
}

bool eng_cs_in_gen(eng_cs_t *cs, uint64_t gen)
{
    return eng_gens_has_self(cs->gens, gen);
}

void eng_coll_view_changed(eng_cs_t *cs)
{
    eng_coll_record_group(cs);
    if (cl_member_group_closed(cs->ctx.mb))
        cs->waiting_for_group = false;
    cs->ctx.el_view_changed(cs->ctx.arg); /* elastic hook: evictions, admissions */
    for (size_t i = 0; i < cs->nstreams; i++)
        eng_coll_try_start(cs, cs->streams[i]);
}

void eng_cs_start_queued(eng_cs_t *cs)
{
    for (size_t i = 0; i < cs->nstreams; i++) {
        eng_coll_check_done(cs, cs->streams[i]);
        eng_coll_try_start(cs, cs->streams[i]);
    }
}

/* Why a call gave up waiting for the world group to form. */
static void log_no_group(eng_cs_t *cs)
{
    char desc[CL_WIRE_STR_MAX + 64];
    size_t n;
    (void)cl_member_list(cs->ctx.mb, &n);
    const cl_settings_t *set = cl_member_settings(cs->ctx.mb);
    double waited = eng_group_wait_limit(cs->ctx.cfg->timeout) + cs->ctx.cfg->matchmaking_time;
    const cl_peer_t *c = cl_member_coordinator(cs->ctx.mb);
    if (set->strict)
        cl_error("the group of the world communicator did not form within %.0f s: "
                 "COLLAB_STRICT=1 needs all %d ranks of the world, and %zu are members",
                 waited, set->world_size, n);
    else if (c == NULL)
        cl_error("the group of the world communicator did not form within %.0f s: no live "
                 "member can form it (%zu of %d ranks are members)",
                 waited, n, set->world_size);
    else if (memcmp(c->key, cs->ctx.self_key, 32) == 0)
        cl_error("the group of the world communicator did not form within %.0f s: this peer "
                 "forms it, but only %zu of %d ranks are members (COLLAB_MIN_GROUP=%d)",
                 waited, n, set->world_size, cs->ctx.cfg->min_group);
    else
        cl_error("the group of the world communicator did not form within %.0f s: waited for "
                 "%s, which forms it, to close it (%zu of %d ranks are members)",
                 waited, cs->ctx.desc(c, desc, sizeof desc), n, set->world_size);
}

/* Device input on its way to host memory (cl_stage.c): a deferred start
   tried again, a collective waiting for input pumped.  True while s
   still waits for it. */
static bool stage_turn(eng_cs_t *cs, stream_t *s)
{
    if (s->stage_wait) {
        s->stage_wait = false;
        eng_coll_try_start(cs, s);
    }
    if (s->active != NULL && cl_coll_waits_input(s->active)) {
        (void)cl_coll_pump(s->active);
        eng_coll_check_done(cs, s);
    }
    return s->stage_wait || (s->active != NULL && cl_coll_waits_input(s->active));
}

/* The deadlines of the streams: the tick of running collectives (every
   ENG_COLL_TICK), the time a running collective asked to be looked at
   again (cl_coll_wake_at), the calls waiting for the group, device input; returns
   the next one (INFINITY when nothing is due). */
static double coll_deadlines(eng_cs_t *cs, double now)
{
    double next = INFINITY;
    bool tick = now >= cs->next_tick;
    bool any_active = false;
    for (size_t i = 0; i < cs->nstreams; i++) {
        stream_t *s = cs->streams[i];
        if (stage_turn(cs, s))
            next = fmin(next, now + ENG_STAGE_POLL);
        if (s->active != NULL && cl_coll_wake_at(s->active) <= now) {
            (void)cl_coll_recheck(s->active);
            eng_coll_check_done(cs, s);
        }
        if (s->active != NULL) {
            any_active = true;
            next = fmin(next, cl_coll_wake_at(s->active));
            if (tick)
                (void)cl_coll_on_tick(s->active);
            if (tick || cl_coll_done(s->active))
                eng_coll_check_done(cs, s);
        }
        /* A call waiting for the group (or for admission) has a deadline. */
        collab_request_t *req = s->active == NULL ? zlist_first(s->queue) : NULL;
        if (req != NULL && req->deadline > 0) {
            if (now >= req->deadline) {
                zlist_pop(s->queue);
                if (cl_member_group_closed(cs->ctx.mb))
                    cl_error("gave up waiting to be admitted to the group of the world "
                             "communicator; admission of peers that join after the group "
                             "formed needs every member at a step boundary");
                else
                    log_no_group(cs);
                cl_request_complete(req, COLLAB_ERR_TIMEOUT);
                eng_coll_try_start(cs, s);
            } else {
                next = fmin(next, req->deadline);
            }
        }
    }
    if (tick)
        cs->next_tick = now + ENG_COLL_TICK;
    if (any_active)
        next = fmin(next, cs->next_tick);
    return next;
}

/* _coll's deadline in the loop's set, while this peer is a member;
   re-armed at the next one.  Found no member, it stops until
   eng_coll_member. */
static void on_timer(void *arg, double now)
{
    eng_cs_t *cs = arg;
    if (!cs->ctx.is_member(cs->ctx.arg))
        return;
    double next = coll_deadlines(cs, now);
    if (!isinf(next))
        cl_timer_arm_by(cs->ctx.timers, cs->coll_timer, next);
}

void eng_coll_wake_by(eng_cs_t *cs, double when)
{
    cl_timer_arm_by(cs->ctx.timers, cs->coll_timer, when);
}

void eng_coll_member(eng_cs_t *cs)
{
    /* What waited while this peer was no member is looked at now. */
    cl_timer_arm(cs->ctx.timers, cs->coll_timer, cs_now(cs));
}

void eng_coll_progress(eng_cs_t *cs)
{
    eng_fast_hier_update(cs);
    if (!cs->ctx.is_member(cs->ctx.arg))
        return;
    eng_fast_update(cs);
    bool input = false;
    for (size_t i = 0; i < cs->nstreams; i++) {
        stream_t *s = cs->streams[i];
        input |= stage_turn(cs, s);
        /* One done may wait for its own messages to leave (own_sent),
           which this round may have sent. */
        if (s->active != NULL && cl_coll_done(s->active))
            eng_coll_check_done(cs, s);
    }
    if (input)
        eng_coll_wake_by(cs, cs_now(cs) + ENG_STAGE_POLL);
}

bool eng_coll_idle(eng_cs_t *cs)
{
    /* A completed all-reduce that may still owe relays counts as running
       (its copy goes once every live member sent DONE). */
    for (size_t i = 0; i < cs->nstreams; i++)
        if (cs->streams[i]->active != NULL || zlist_size(cs->streams[i]->queue) > 0 ||
            cl_coll_owes(cs->streams[i]->retained))
            return false;
    return true;
}

void eng_coll_comm_free(eng_cs_t *cs, collab_comm_t *comm)
{
    for (size_t i = 0; i < cs->nstreams; i++) {
        if (cs->streams[i]->comm_id != comm->id)
            continue;
        stream_t *s = cs->streams[i];
        if (s->started > 0) {
            cs->freed[cs->freed_next].comm = s->comm_id;
            cs->freed[cs->freed_next].entered = s->started;
            cs->freed_next = (cs->freed_next + 1) % ENG_FREED_KEEP;
            if (cs->nfreed < ENG_FREED_KEEP)
                cs->nfreed++;
        }
        cs->streams[i] = cs->streams[--cs->nstreams];
        stream_free(cs, s, COLLAB_ERR_COMM);
        break;
    }
    eng_p2p_comm_free(cs->ctx.p2p, comm->id);
    cl_comm_destroy(&comm);
}

/* Is world rank w in this peer's current group?  Only members still in
   the group may pull a collective back to an older generation: a member
   taken out since (failed, evicted) may still send under the generation
   it knew, and following it would split the survivors between those
   that already completed under the new generation and those that
   restarted under the old one. */
bool eng_coll_in_group(eng_cs_t *cs, int w)
{
    const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, w);
    return p != NULL && p->in_group;
}
