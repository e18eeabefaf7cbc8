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
    cl_engine_gens.c remembers the generations, and incoming messages are
    routed in cl_engine_route.c.
*/
#include "engine/cl_engine_coll_int.h"
#include "engine/cl_engine_elastic.h" /* elastic hooks */
#include "engine/cl_shm.h"

#include "util/cl_log.h"

#include <math.h>
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

void eng_coll_fail_all(struct cl_engine *e, int status)
{
    for (size_t i = 0; i < e->nstreams; i++)
        stream_fail(e->streams[i], status);
}

static void stream_free(struct cl_engine *e, stream_t *s, int status);

stream_t *eng_coll_retired(struct cl_engine *e, uint64_t id)
{
    for (size_t i = 0; i < e->nretired; i++)
        if (e->retired[i]->comm_id == id)
            return e->retired[i];
    return NULL;
}

void eng_coll_retire_streams(struct cl_engine *e, double now, double after)
{
    for (size_t i = 0; i < e->nstreams;) {
        stream_t *s = e->streams[i];
        if (s->comm != NULL || s->opened_by <= 0 || s->active != NULL || zlist_size(s->queue) > 0 ||
            now - s->opened_at < after) {
            i++;
            continue;
        }
        e->streams[i] = e->streams[--e->nstreams];
        if (s->buf_head == NULL) {
            stream_free(e, s, COLLAB_ERR_COMM); /* nothing to keep */
            continue;
        }
        if (e->nretired == e->capretired) {
            size_t cap = e->capretired > 0 ? 2 * e->capretired : 8;
            stream_t **a = realloc(e->retired, cap * sizeof *a);
            if (a == NULL) {
                e->streams[e->nstreams++] = s; /* kept where it was */
                return;
            }
            e->retired = a;
            e->capretired = cap;
        }
        e->retired[e->nretired++] = s;
    }
}

/* Frees a stream; requests still attached complete with status. */
static void stream_free(struct cl_engine *e, stream_t *s, int status)
{
    eng_fast_release(e, s);
    stream_fail(s, status);
    zlist_destroy(&s->queue);
    cl_coll_destroy(&s->retained);
    eng_coll_ctx_free(&s->retained_ctx);
    eng_coll_free_buffered(e, s);
    free(s);
}

stream_t *eng_coll_stream(struct cl_engine *e, uint64_t id, bool create)
{
    for (size_t i = 0; i < e->nstreams; i++)
        if (e->streams[i]->comm_id == id)
            return e->streams[i];
    if (!create)
        return NULL;
    if (e->nstreams == e->capstreams) {
        size_t cap = e->capstreams > 0 ? 2 * e->capstreams : 8;
        stream_t **a = realloc(e->streams, cap * sizeof *a);
        if (a == NULL)
            return NULL;
        e->streams = a;
        e->capstreams = cap;
    }
    /* A retired stream of this communicator comes back with its early
       messages, older than anything that follows (docs/security-bounds.md §5). */
    for (size_t i = 0; i < e->nretired; i++)
        if (e->retired[i]->comm_id == id) {
            stream_t *r = e->retired[i];
            e->retired[i] = e->retired[--e->nretired];
            r->opened_at = eng_now();
            e->streams[e->nstreams++] = r;
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
    e->streams[e->nstreams++] = s;
    return s;
}

/* The generations' context (cl_engine_gens.h). */
static int gens_rank(struct cl_engine *e)
{
    return atomic_load(&e->rank);
}

static int gens_world_size(struct cl_engine *e)
{
    return atomic_load(&e->world_size);
}

static bool gens_in_group(struct cl_engine *e, int w)
{
    return eng_coll_in_group(e, w);
}

static void on_timer(void *arg, double now);

int eng_coll_init(struct cl_engine *e)
{
    e->coll_timer = cl_timer_add(e->timers, on_timer, e);
    if (e->coll_timer < 0)
        return COLLAB_ERR_NO_MEM;
    eng_gens_ctx_t gctx = {
        .arg = e, .rank = gens_rank, .world_size = gens_world_size, .in_group = gens_in_group};
    e->gens = eng_gens_new(&gctx);
    if (e->gens == NULL)
        return COLLAB_ERR_NO_MEM;
    return eng_el_init(e); /* elastic hook */
}

void eng_coll_fini(struct cl_engine *e)
{
    eng_el_fini(e); /* elastic hook: completes the requests it holds */
    for (size_t i = 0; i < e->nstreams; i++)
        stream_free(e, e->streams[i], COLLAB_ERR_NOT_INIT);
    free(e->streams);
    e->streams = NULL;
    e->nstreams = e->capstreams = 0;
    for (size_t i = 0; i < e->nretired; i++)
        stream_free(e, e->retired[i], COLLAB_ERR_NOT_INIT);
    free(e->retired);
    e->retired = NULL;
    e->nretired = e->capretired = 0;
    free(e->early); /* after the streams: freeing their early messages counts */
    e->early = NULL;
    e->nearly = 0;
    free(e->late);
    e->late = NULL;
    e->nlate = e->caplate = 0;
    eng_gens_destroy(&e->gens);
    cl_timer_remove(e->timers, e->coll_timer);
    e->coll_timer = -1;
    local_msg_t *l = e->local_head;
    while (l != NULL) {
        local_msg_t *next = l->next;
        free(l);
        l = next;
    }
    e->local_head = e->local_tail = NULL;
}

/* Queues req on its stream under the stream's next sequence.  again: a
   request handed back (eng_coll_submit_at), already recorded by the
   elastic hooks when it was first posted. */
static void submit(struct cl_engine *e, collab_request_t *req, bool again)
{
    stream_t *s = eng_coll_stream(e, req->comm->id, true);
    if (s == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    if (s->comm == NULL)
        s->comm = req->comm;
    eng_fast_drain(e, s); /* sequences the program ran on the fast path */
    req->coll.comm_id = s->comm_id;
    req->coll.seq = s->next_seq++;
    eng_fast_on_post(s, req->coll.seq); /* a group's grant: all fall back here */
    if (eng_el_on_post(e, s, req, again)) /* elastic hook: may renumber or take it */
        return;
    if (zlist_append(s->queue, req) != 0) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    eng_coll_try_start(e, s);
}

void eng_coll_submit(struct cl_engine *e, collab_request_t *req)
{
    submit(e, req, false);
}

int eng_coll_submit_at(struct cl_engine *e, collab_request_t *req, uint64_t seq, uint64_t next)
{
    stream_t *w = eng_coll_stream(e, CL_COMM_WORLD_ID, false);
    if (w == NULL)
        return COLLAB_ERR_INTERNAL;
    uint64_t keep = w->next_seq;
    w->next_seq = seq;
    submit(e, req, true); /* not recorded again (eng_el_on_post) */
    w->next_seq = next != UINT64_MAX ? next : keep;
    return COLLAB_OK;
}

void eng_coll_renumber(struct cl_engine *e, uint64_t started, uint64_t next)
{
    stream_t *w = eng_coll_stream(e, CL_COMM_WORLD_ID, false);
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

static void log_result(struct cl_engine *e, stream_t *s, coll_ctx_t *ctx, int ncontrib,
                       double seconds)
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
    double now = eng_now();
    if (ctx->kind == CL_COLL_ALLREDUCE) {
        e->log_tensors++;
        e->log_bytes +=
            (uint64_t)(s->active_req->coll.count * collab_dtype_extent(s->active_req->coll.dtype));
        e->log_seconds += seconds;
        e->log_peers = ncontrib;
    }
    if (e->log_tensors > 0 && now - e->last_step_log >= ENG_STEP_LOG_EVERY) {
        uint64_t step = e->steps > 0 ? e->steps : e->progress + 1;
        cl_info("step %llu: averaged %llu tensor%s (%.1f MB) with %d peer%s in %.2f s",
                (unsigned long long)step, (unsigned long long)e->log_tensors,
                e->log_tensors == 1 ? "" : "s", (double)e->log_bytes / 1e6, e->log_peers,
                e->log_peers == 1 ? "" : "s", e->log_seconds);
        e->last_step_log = now;
        e->log_tensors = e->log_bytes = 0;
        e->log_seconds = 0;
    }
}

/* Has everything this peer sent to the live members of the running
   collective of s left this process?  Nothing may wait for credit (class
   EARLY) or in a shared-memory link's queue to one of them.  A result is
   final only once this member's own contribution went out: otherwise a
   member stopped just then (SIGSTOP) would hold a result with the others'
   inputs while they, never getting its own, complete without it
   (docs/collectives.md §3, "Members that were stopped"). */
static bool own_sent(struct cl_engine *e, const stream_t *s)
{
    const coll_ctx_t *ctx = s->active_ctx;
    cl_shm_t *shm = cl_transport_shm(e->tp);
    for (int k = 0; k < ctx->nmembers; k++) {
        int r = ctx->members[k];
        bool failed = r == s->comm->rank;
        for (int j = 0; j < ctx->nfailed && !failed; j++)
            failed = ctx->failed[j] == r;
        int w = failed ? -1 : cl_comm_world_of(s->comm, r);
        cl_peer_t *p = w >= 0 ? cl_member_at_rank(e->mb, w) : NULL;
        if (p == NULL || p->state == CL_PEER_GONE)
            continue;
        if (eng_p2p_coll_waiting(e->p2p, w) > 0 || cl_shm_queued(shm, p->key) > 0)
            return false;
    }
    return true;
}

void eng_coll_check_done(struct cl_engine *e, stream_t *s)
{
    /* Elastic hook: a peer just continued after a stop completes nothing
       before the members' answers say whether it is still in the group
       (an evicted straggler's collective then restarts alone). */
    if (eng_el_in_doubt(e))
        return;
    /* Its own messages first (the loop looks again at every turn). */
    while (s->active != NULL && cl_coll_done(s->active) && own_sent(e, s)) {
        cl_coll_t *c = s->active;
        coll_ctx_t *ctx = s->active_ctx;
        collab_request_t *req = s->active_req;
        int status = cl_coll_status(c);
        int ncontrib = 0;
        const int *contrib = cl_coll_contributors(c, &ncontrib);
        if (contrib == NULL)
            ncontrib = 0;
        double now = eng_now();
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
        log_result(e, s, ctx, ncontrib, seconds);
        eng_report_coll_done(e->rep, s->comm_id, req, ncontrib, &info, now);
        eng_el_on_done(e, s, req, status); /* elastic hook: start-up results */
        /* Members that answered are no longer late. */
        for (int i = 0; i < ncontrib; i++) {
            cl_peer_t *p = eng_coll_peer_of(ctx, contrib[i]);
            if (p != NULL)
                eng_member_answered(e, p);
        }
        if (e->last_done > 0)
            e->step_gap = e->step_gap > 0 ? 0.8 * e->step_gap + 0.2 * (now - e->last_done)
                                          : now - e->last_done;
        e->last_done = now;
        e->progress++;
        cl_coll_destroy(&s->retained);
        eng_coll_ctx_free(&s->retained_ctx);
        s->retained = c;
        s->retained_ctx = ctx;
        s->active = NULL;
        s->active_ctx = NULL;
        s->active_req = NULL;
        eng_set_info(e, &info);
        /* Granted again before the program learns of the completion:
           woken first, its next call would count itself as submitted
           before the engine looked, and a loop of calls that take longer
           than a wake-up (a big all-reduce) would never be granted. */
        if (req->counted) {
            req->counted = false;
            atomic_fetch_sub(&req->comm->coll_pending, 1);
        }
        eng_coll_try_start(e, s);
        eng_fast_update_stream(e, s);
        cl_request_complete(req, status);
    }
}

/* ---------------------------------------------------------------------- */
/* Membership changes and timers. */

void eng_coll_peer_gone(struct cl_engine *e, const cl_peer_t *p)
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
    for (size_t i = 0; i < e->nstreams && !left;) {
        stream_t *s = e->streams[i];
        if (s->comm == NULL && eng_coll_drop_buffered_from(e, s, w) == 0) {
            e->streams[i] = e->streams[--e->nstreams];
            stream_free(e, s, COLLAB_ERR_COMM);
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < e->nretired && !left;) {
        stream_t *s = e->retired[i];
        if (eng_coll_drop_buffered_from(e, s, w) == 0) {
            e->retired[i] = e->retired[--e->nretired];
            stream_free(e, s, COLLAB_ERR_COMM);
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (s->active == NULL)
            continue;
        int r = cl_comm_rank_of_world(s->comm, w);
        bool member = false;
        for (int k = 0; k < s->active_ctx->nmembers && !member; k++)
            member = s->active_ctx->members[k] == r;
        if (r < 0 || !member || r == s->comm->rank)
            continue;
        if (eng_leave_status(e->leave, w, s->comm_id, s->active_ctx->seq) == 1)
            continue; /* it left after taking part: its contribution is here */
        eng_coll_fail_member(s, r, p->suspect_reason == ENG_REASON_LEFT);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < e->nstreams; i++)
        eng_coll_check_done(e, e->streams[i]);
}

void eng_coll_fail_departed(struct cl_engine *e, const uint8_t key[32])
{
    int w = eng_leave_world_of(e->leave, key);
    if (w < 0)
        return;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
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
    for (size_t i = 0; i < e->nstreams; i++)
        eng_coll_check_done(e, e->streams[i]);
}

const group_gen_t *eng_coll_gen(struct cl_engine *e, uint64_t gen)
{
    return eng_gens_find(e->gens, gen);
}

void eng_coll_record_group(struct cl_engine *e)
{
    if (!cl_member_group_closed(e->mb))
        return;
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    eng_gens_record(e->gens, cl_member_group_epoch(e->mb), list, n);
}

size_t eng_coll_gen_encode(struct cl_engine *e, uint64_t gen, uint8_t **out)
{
    return eng_gens_encode(e->gens, gen, out);
}

bool eng_coll_learn_gen(struct cl_engine *e, uint64_t gen, uint64_t cur, int from_world,
                        const uint8_t *body, size_t len)
{
    return eng_gens_learn(e->gens, gen, cur, from_world, body, len);
}

bool eng_coll_in_gen(struct cl_engine *e, uint64_t gen)
{
    return eng_gens_has_self(e->gens, gen);
}

void eng_coll_view_changed(struct cl_engine *e)
{
    eng_coll_record_group(e);
    if (cl_member_group_closed(e->mb))
        e->waiting_for_group = false;
    eng_el_view_changed(e); /* elastic hook: evictions, admissions */
    for (size_t i = 0; i < e->nstreams; i++)
        eng_coll_try_start(e, e->streams[i]);
}

void eng_coll_start_queued(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nstreams; i++) {
        eng_coll_check_done(e, e->streams[i]);
        eng_coll_try_start(e, e->streams[i]);
    }
}

/* Why a call gave up waiting for the world group to form. */
static void log_no_group(struct cl_engine *e)
{
    char desc[CL_WIRE_STR_MAX + 64];
    size_t n;
    (void)cl_member_list(e->mb, &n);
    const cl_settings_t *set = cl_member_settings(e->mb);
    double waited = eng_group_wait_limit(e->cfg.timeout) + e->cfg.matchmaking_time;
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (set->strict)
        cl_error("the group of the world communicator did not form within %.0f s: "
                 "COLLAB_STRICT=1 needs all %d ranks of the world, and %zu are members",
                 waited, set->world_size, n);
    else if (c == NULL)
        cl_error("the group of the world communicator did not form within %.0f s: no live "
                 "member can form it (%zu of %d ranks are members)",
                 waited, n, set->world_size);
    else if (memcmp(c->key, e->self_key, 32) == 0)
        cl_error("the group of the world communicator did not form within %.0f s: this peer "
                 "forms it, but only %zu of %d ranks are members (COLLAB_MIN_GROUP=%d)",
                 waited, n, set->world_size, e->cfg.min_group);
    else
        cl_error("the group of the world communicator did not form within %.0f s: waited for "
                 "%s, which forms it, to close it (%zu of %d ranks are members)",
                 waited, eng_peer_desc(c, desc, sizeof desc), n, set->world_size);
}

/* Device input on its way to host memory (cl_stage.c): a deferred start
   tried again, a collective waiting for input pumped.  True while s
   still waits for it. */
static bool stage_turn(struct cl_engine *e, stream_t *s)
{
    if (s->stage_wait) {
        s->stage_wait = false;
        eng_coll_try_start(e, s);
    }
    if (s->active != NULL && cl_coll_waits_input(s->active)) {
        (void)cl_coll_pump(s->active);
        eng_coll_check_done(e, s);
    }
    return s->stage_wait || (s->active != NULL && cl_coll_waits_input(s->active));
}

/* The deadlines of the streams: the tick of running collectives (every
   ENG_COLL_TICK), the calls waiting for the group, device input; returns
   the next one (INFINITY when nothing is due). */
static double coll_deadlines(struct cl_engine *e, double now)
{
    double next = INFINITY;
    bool tick = now >= e->next_tick;
    bool any_active = false;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (stage_turn(e, s))
            next = fmin(next, now + ENG_STAGE_POLL);
        if (s->active != NULL) {
            any_active = true;
            if (tick)
                (void)cl_coll_on_tick(s->active);
            if (tick || cl_coll_done(s->active))
                eng_coll_check_done(e, s);
        }
        /* A call waiting for the group (or for admission) has a deadline. */
        collab_request_t *req = s->active == NULL ? zlist_first(s->queue) : NULL;
        if (req != NULL && req->deadline > 0) {
            if (now >= req->deadline) {
                zlist_pop(s->queue);
                if (cl_member_group_closed(e->mb))
                    cl_error("gave up waiting to be admitted to the group of the world "
                             "communicator; admission of peers that join after the group "
                             "formed needs every member at a step boundary");
                else
                    log_no_group(e);
                cl_request_complete(req, COLLAB_ERR_TIMEOUT);
                eng_coll_try_start(e, s);
            } else {
                next = fmin(next, req->deadline);
            }
        }
    }
    if (tick)
        e->next_tick = now + ENG_COLL_TICK;
    if (any_active)
        next = fmin(next, e->next_tick);
    return next;
}

/* _coll's deadline in the loop's set, while this peer is a member;
   re-armed at the next one.  Found no member, it stops until
   eng_coll_member. */
static void on_timer(void *arg, double now)
{
    struct cl_engine *e = arg;
    if (e->state != ENG_MEMBER)
        return;
    double next = coll_deadlines(e, now);
    if (!isinf(next))
        cl_timer_arm_by(e->timers, e->coll_timer, next);
}

void eng_coll_wake_by(struct cl_engine *e, double when)
{
    cl_timer_arm_by(e->timers, e->coll_timer, when);
}

void eng_coll_member(struct cl_engine *e)
{
    /* What waited while this peer was no member is looked at now. */
    cl_timer_arm(e->timers, e->coll_timer, eng_now());
}

void eng_coll_progress(struct cl_engine *e)
{
    if (e->state != ENG_MEMBER)
        return;
    eng_fast_update(e);
    bool input = false;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        input |= stage_turn(e, s);
        /* One done may wait for its own messages to leave (own_sent),
           which this round may have sent. */
        if (s->active != NULL && cl_coll_done(s->active))
            eng_coll_check_done(e, s);
    }
    if (input)
        eng_coll_wake_by(e, eng_now() + ENG_STAGE_POLL);
}

bool eng_coll_idle(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nstreams; i++)
        if (e->streams[i]->active != NULL || zlist_size(e->streams[i]->queue) > 0)
            return false;
    return true;
}

void eng_coll_comm_free(struct cl_engine *e, collab_comm_t *comm)
{
    for (size_t i = 0; i < e->nstreams; i++) {
        if (e->streams[i]->comm_id != comm->id)
            continue;
        stream_t *s = e->streams[i];
        e->streams[i] = e->streams[--e->nstreams];
        stream_free(e, s, COLLAB_ERR_COMM);
        break;
    }
    eng_p2p_comm_free(e->p2p, comm->id);
    cl_comm_destroy(&comm);
}

/* Is world rank w in this peer's current group?  Only members still in
   the group may pull a collective back to an older generation: a member
   taken out since (failed, evicted) may still send under the generation
   it knew, and following it would split the survivors between those
   that already completed under the new generation and those that
   restarted under the old one. */
bool eng_coll_in_group(struct cl_engine *e, int w)
{
    const cl_peer_t *p = cl_member_at_rank(e->mb, w);
    return p != NULL && p->in_group;
}
