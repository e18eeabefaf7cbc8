/*  cl_engine_admittee.c - this peer's own admission into the world group,
    as a joiner or a straggler (docs/elastic.md §3 and §6).

    A newcomer (a member of the swarm that joined after the group formed)
    parks its first world collectives and asks to be admitted.  With the
    ADMIT it learns P and s: its collectives 0..P-1 are answered from the
    veterans' state (cl_engine_sync.c), and its collective P runs as the
    group's s.

    A straggler (a member taken out of the group: stopped, partitioned,
    too slow) finishes the collectives it is in alone, holds its program
    in the first collective of its next step and asks to be re-admitted.
    With the ADMIT its held collective becomes the group's s; once the
    group's state is in, its registered buffers are overwritten with it
    (its program is blocked in that collective), and it runs s onwards
    with weight 0 for the rest of that step, since its contribution was
    computed from stale parameters.  A straggler with no other live peer
    goes on alone; when every member of the group left or failed while it
    and others were out of it, the one that coordinates forms the group
    again, alone, with its state (ctx.regroup) and re-admits the others;
    they wait for its view (docs/elastic.md, "Waiting").

    Its timer sends ADMIT_REQ every ENG_ADMIT_REQ_EVERY while it waits,
    gives up after eng_admit_wait_limit, and undoes an admission whose
    view never came.  The admitter's side is cl_engine_admitter.c.  This
    file sees the engine only through eng_admittee_ctx_t.
*/
#include "engine/cl_engine_admittee.h"

#include "engine/cl_comm.h"
#include "engine/cl_engine_timer.h"
#include "engine/cl_stage.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request the admittee took over from the engine. */
typedef struct el_parked {
    struct el_parked *next;
    collab_request_t *req;
    uint64_t local; /* its index in this peer's world stream */
} el_parked_t;

struct el_admittee {
    eng_admittee_ctx_t ctx; /* the engine, as the admittee sees it */
    int timer;              /* in ctx.timers: next_request, wait_deadline, adm_deadline */
    bool foreign;           /* runs another program than the swarm: it leaves */
    el_parked_t *parked, *parked_tail; /* joiner: start-up collectives to answer */
    collab_request_t *held;            /* straggler: its first collective of a step */
    uint64_t held_local;
    double next_request;  /* next ADMIT_REQ */
    double wait_deadline; /* gives up waiting for an admission */
    /* The admission this peer is in. */
    uint64_t adm_s, adm_prefix;
    uint64_t adm_gen; /* generation of the view that admits this peer */
    uint32_t *adm_sigs;
    uint32_t adm_nsigs;
    /* Until this peer completes a collective of the group from adm_s on,
       the admission can still be lost (its admitter died before the view
       that admits this peer reached the group): eng_admittee_undo. */
    bool adm_pending;
    bool adm_answered;   /* agreed on the group's state (a straggler: and overwritten) */
    bool adm_reached;    /* some of it reached the program (a start-up answer, the overwrite) */
    bool adm_unserved;   /* the sync ended unserved by live members: undo (eng_admittee_poll) */
    double adm_deadline; /* no view of generation adm_gen by then: the admission is lost */
    bool adm_prev_mapped, adm_prev_in, adm_prev_evicted; /* as before the ADMIT */
    uint64_t adm_prev_local, adm_prev_seq;
    bool hold_next; /* hold the next world collective the program posts (readmit) */
    bool kept_out;  /* in a group that formed past its program: asks to be taken out */
};

static double wait_limit(const el_admittee_t *a)
{
    return eng_admit_wait_limit(a->ctx.cfg->timeout);
}

/* Its standing changes only through the elastic layer (ctx.stand). */
static void stand(el_admittee_t *a, el_st_field_t f, uint64_t v)
{
    a->ctx.stand(a->ctx.arg, f, v);
}

static double now_of(const el_admittee_t *a)
{
    return a->ctx.now(a->ctx.arg);
}

static bool is_self(const el_admittee_t *a, const cl_peer_t *p)
{
    return p != NULL && memcmp(p->key, a->ctx.self_key, 32) == 0;
}

/* How others_in counts: the members in the state, or in any other; of
   the whole view, or of this peer's group only. */
typedef enum {
    OTHERS_IN_STATE = 0,
    OTHERS_NOT_IN_STATE = 1,
    OTHERS_OF_GROUP = 2,
} others_how_t;

/* How many members of this peer's view other than itself are counted,
   as `how` says, for `state`. */
static size_t others_in(const el_admittee_t *a, cl_peer_state_t state, unsigned how)
{
    bool invert = (how & OTHERS_NOT_IN_STATE) != 0, group_only = (how & OTHERS_OF_GROUP) != 0;
    size_t n, k = 0;
    cl_peer_t *const *list = cl_member_list(a->ctx.mb, &n);
    for (size_t i = 0; i < n; i++)
        k += !is_self(a, list[i]) && (!group_only || list[i]->in_group) &&
             (list[i]->state == state) != invert;
    return k;
}

static bool others_alive(const el_admittee_t *a)
{
    return others_in(a, CL_PEER_ALIVE, OTHERS_IN_STATE) > 0;
}

/* Whether another member of the group may still be alive (suspected ones
   count): a straggler waits for one of them to re-admit it.  With none
   left (they all finished or failed while it was out of the group),
   nobody would: its coordinator forms the group again (ctx.regroup). */
static bool group_alive(const el_admittee_t *a)
{
    return others_in(a, CL_PEER_GONE, OTHERS_NOT_IN_STATE | OTHERS_OF_GROUP) > 0;
}

/* Whether this peer's view lists no other member that may still be
   alive: every other one failed or left (suspected ones still count). */
static bool others_gone(const el_admittee_t *a)
{
    return others_in(a, CL_PEER_GONE, OTHERS_NOT_IN_STATE) == 0;
}

static uint64_t step_of(const el_admittee_t *a, uint64_t idx)
{
    const cl_stream_t *stream = a->ctx.stream;
    uint64_t p = cl_stream_prefix(stream), t = cl_stream_period(stream);
    if (p == CL_STREAM_NONE || t == 0 || idx < p)
        return idx;
    return (idx - p) / t;
}

static void on_timer(void *arg, double now);

/* The held collective, if any, goes to the engine under the number it got
   when it was posted (going on alone, or back in the group without an
   admission). */
static void release_held(el_admittee_t *a)
{
    collab_request_t *req = a->held;
    a->held = NULL;
    if (req != NULL && a->ctx.submit(a->ctx.arg, req, req->coll.seq, UINT64_MAX) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_INTERNAL);
}

el_admittee_t *eng_admittee_new(const eng_admittee_ctx_t *ctx)
{
    el_admittee_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->ctx = *ctx;
    a->timer = cl_timer_add(ctx->timers, on_timer, a);
    if (a->timer < 0) {
        free(a);
        return NULL;
    }
    return a;
}

void eng_admittee_destroy(el_admittee_t **a_p)
{
    if (a_p == NULL || *a_p == NULL)
        return;
    el_admittee_t *a = *a_p;
    eng_admittee_abort(a, COLLAB_ERR_NOT_INIT);
    cl_timer_remove(a->ctx.timers, a->timer);
    free(a->adm_sigs);
    free(a);
    *a_p = NULL;
}

bool eng_admittee_is_foreign(const el_admittee_t *a)
{
    return a->foreign;
}

bool eng_admittee_pending(const el_admittee_t *a)
{
    return a->adm_pending;
}

uint64_t eng_admittee_gen(const el_admittee_t *a)
{
    return a->adm_gen;
}

bool eng_admittee_busy(const el_admittee_t *a)
{
    return a->adm_pending || a->hold_next || a->held != NULL || a->parked != NULL || a->foreign;
}

void eng_admittee_on_done(el_admittee_t *a, uint64_t seq, int status)
{
    if (a->adm_pending && seq >= a->adm_s && status == COLLAB_OK)
        a->adm_pending = false; /* this peer's admission took effect */
}

static void park(el_admittee_t *a, collab_request_t *req, uint64_t idx)
{
    el_parked_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    p->req = req;
    p->local = idx;
    if (a->parked_tail != NULL)
        a->parked_tail->next = p;
    else
        a->parked = p;
    a->parked_tail = p;
}

/* It asks now, and waits until eng_admit_wait_limit from now. */
static void start_waiting(el_admittee_t *a, double now)
{
    a->next_request = now;
    a->wait_deadline = now + wait_limit(a);
    cl_timer_arm(a->ctx.timers, a->timer, now);
}

/* This peer runs another program than the swarm (or the same one with
   other arguments): its start-up collectives differ from the veterans'.
   It cannot be admitted, now or later, so it leaves the swarm; its
   pending and later calls fail with COLLAB_ERR_MISMATCH (docs/elastic.md
   §3).  Called while parked requests are answered: the caller stops
   there (a->foreign) and eng_admittee_leave_foreign finishes the job. */
void eng_admittee_foreign(el_admittee_t *a, const char *what)
{
    if (a->foreign)
        return;
    a->foreign = true;
    cl_error("this program differs from the one the swarm runs under COLLAB_RUN_ID=%s (%s): "
             "another program, or the same one with other arguments; it cannot take part and "
             "leaves the swarm, its MPI calls now fail (give each experiment its own "
             "COLLAB_RUN_ID)",
             a->ctx.cfg->run_id != NULL ? a->ctx.cfg->run_id : "default", what);
}

void eng_admittee_leave_foreign(el_admittee_t *a)
{
    stand(a, EL_ST_PHASE, EL_IN); /* the pull is done; eng_el_after_timers frees it */
    a->ctx.leave(a->ctx.arg, COLLAB_ERR_MISMATCH);
}

/* Tells the pull this program's own size of start-up item i
   (eng_sync_want): false while its bytes are still on the way. */
static bool wanted(el_admittee_t *a, int what, uint64_t i, size_t size)
{
    if (a->ctx.sync_want == NULL)
        return true;
    return a->ctx.sync_want(a->ctx.arg, what, i, size) != ENG_SYNC_PENDING;
}

/* Fills a start-up collective's outputs as the veterans had them, or
   leaves the program's own values (docs/state-sync.md §4).  False when
   the swarm's bytes for it are still on the way (nothing done: answer it
   again once the pull finishes). */
static bool answer(el_admittee_t *a, collab_request_t *req, uint64_t i)
{
    const eng_admittee_ctx_t *x = &a->ctx;
    cl_coll_args_t *c = &req->coll;
    uint32_t sig = x->signature(req);
    if (i >= a->adm_nsigs || a->adm_sigs[i] != sig) {
        char what[96];
        snprintf(what, sizeof what,
                 "start-up %s #%llu has signature %08x here and %08x in the swarm",
                 x->kind_name(c->kind), (unsigned long long)i, (unsigned)sig,
                 i < a->adm_nsigs ? (unsigned)a->adm_sigs[i] : 0u);
        eng_admittee_foreign(a, what);
        cl_request_complete(req, COLLAB_ERR_MISMATCH);
        return true;
    }
    const uint8_t *d;
    size_t len;
    uint32_t rsig;
    int comm_size = req->comm != NULL ? req->comm->size : 1;
    if (c->kind == CL_COLL_BCAST) {
        /* The bytes allocated for it are bounded by this program's own
           count (docs/security-bounds.md §5). */
        if (!wanted(a, CL_EL_ITEM_BUFFER, i, c->count))
            return false;
        if (eng_sync_item(x->sync(x->arg), CL_EL_ITEM_BUFFER, i, &d, &len, NULL) == COLLAB_OK) {
            if (len != c->count) {
                char what[96];
                snprintf(what, sizeof what,
                         "start-up broadcast #%llu has %zu bytes here and %zu "
                         "in the swarm",
                         (unsigned long long)i, c->count, len);
                eng_admittee_foreign(a, what);
                cl_request_complete(req, COLLAB_ERR_MISMATCH);
                return true;
            }
            if (len > 0)
                memcpy(c->recvbuf, d, len);
        }
        a->adm_reached = true;
        cl_request_complete(req, COLLAB_OK);
        return true;
    }
    void *ptr;
    size_t want;
    if (x->result_span(req, comm_size, &ptr, &want)) {
        if (!wanted(a, CL_EL_ITEM_RESULT, i, want))
            return false;
        if (eng_sync_item(x->sync(x->arg), CL_EL_ITEM_RESULT, i, &d, &len, &rsig) == COLLAB_OK &&
            len == want && rsig == sig) {
            if (len > 0)
                memcpy(ptr, d, len);
            (void)cl_startup_put(a->ctx.startup, i, sig, d, len);
        } else {
            cl_warn("no result of the swarm's start-up %s #%llu reached this peer; it keeps "
                    "its own input",
                    x->kind_name(c->kind), (unsigned long long)i);
            /* (Device input still on the device under the staging
               pipeline: staging copies it at completion.) */
            if (c->kind == CL_COLL_ALLREDUCE && c->sendbuf != NULL && want > 0 &&
                !cl_stage_keep_input(req))
                memcpy(c->recvbuf, c->sendbuf, want);
        }
    } else {
        /* A result that differs by rank: nothing delivered (reduce,
           gatherv), or a zero-filled receive buffer. */
        size_t z = 0;
        if (c->kind == CL_COLL_SCATTERV)
            z = c->rbytes;
        else if (c->kind == CL_COLL_ALLTOALL)
            z = c->count * (size_t)comm_size;
        else if (c->kind == CL_COLL_REDUCE_SCATTER_BLOCK)
            z = c->count * collab_dtype_extent(c->dtype);
        if (z > 0 && c->recvbuf != NULL)
            memset(c->recvbuf, 0, z);
        (void)cl_startup_put(a->ctx.startup, i, sig, NULL, 0);
    }
    a->adm_reached = true;
    cl_request_complete(req, COLLAB_OK);
    return true;
}

/* Hands a request back to the engine under its mapped sequence. */
static void resubmit(el_admittee_t *a, collab_request_t *req, uint64_t idx)
{
    const el_standing_t *st = a->ctx.st;
    if (a->ctx.submit(a->ctx.arg, req, st->map_seq + (idx - st->map_local),
                      st->map_seq + (st->posted - st->map_local)) != COLLAB_OK)
        cl_request_complete(req, COLLAB_ERR_INTERNAL);
}

static void answer_parked(el_admittee_t *a)
{
    while (a->parked != NULL) {
        el_parked_t *p = a->parked;
        /* Its bytes still on the way: answered when the pull finishes
           again (eng_admittee_sync_finished). */
        if (!a->foreign && p->local < a->adm_prefix && !answer(a, p->req, p->local))
            return;
        a->parked = p->next;
        if (a->parked == NULL)
            a->parked_tail = NULL;
        if (a->foreign)
            cl_request_complete(p->req, COLLAB_ERR_MISMATCH);
        else if (p->local < a->adm_prefix)
            ; /* answered above */
        else
            resubmit(a, p->req, p->local);
        free(p);
    }
    if (a->foreign)
        eng_admittee_leave_foreign(a);
}

/* This peer's first world collective (idx 0): when a monitor sent a
   checkpoint to resume from (cl_engine_checkpoint.c), sets up the
   joiner's numbering and pulls the checkpoint from that monitor; the
   caller goes on as for a joiner (it parks the collective until the
   pull is done). */
static void resume(el_admittee_t *a, collab_request_t *req, uint64_t idx)
{
    const el_standing_t *st = a->ctx.st;
    eng_ckpt_resume_t r;
    if (!a->ctx.take_resume(a->ctx.arg, &r))
        return;
    if (idx != 0 || st->phase != EL_IN)
        return;
    free(a->adm_sigs);
    a->adm_sigs = r.prefix > 0 ? malloc(r.prefix * sizeof *a->adm_sigs) : NULL;
    if (r.prefix > 0 && a->adm_sigs == NULL)
        return;
    if (r.prefix > 0)
        memcpy(a->adm_sigs, r.sigs, r.prefix * sizeof *a->adm_sigs);
    a->adm_nsigs = (uint32_t)r.prefix;
    a->ctx.resuming(a->ctx.arg);
    a->adm_s = r.s;
    a->adm_prefix = r.prefix;
    a->adm_gen = 0;
    a->adm_pending = false;
    a->adm_answered = false;
    a->adm_reached = false;
    stand(a, EL_ST_READMIT, false);
    stand(a, EL_ST_PHASE, EL_SYNCING);
    stand(a, EL_ST_MAPPED, true);
    stand(a, EL_ST_MAP_LOCAL, r.prefix);
    stand(a, EL_ST_MAP_SEQ, r.s);
    if (idx >= st->map_local)
        req->coll.seq = st->map_seq + (idx - st->map_local);
    a->ctx.renumber(a->ctx.arg, r.s,
                    st->map_seq + (st->posted > st->map_local ? st->posted - st->map_local : 0));
    cl_info("resuming from the monitor's checkpoint of step %llu (collective #%llu); fetching it",
            (unsigned long long)r.step, (unsigned long long)r.s);
    if (!a->ctx.sync_start_one(a->ctx.arg, r.s, r.key)) {
        cl_error("out of memory starting the state sync; this peer keeps its own state");
        eng_admittee_sync_finished(a);
    }
}

bool eng_admittee_take(el_admittee_t *a, collab_request_t *req, uint64_t idx)
{
    const el_standing_t *st = a->ctx.st;
    resume(a, req, idx); /* resuming from a checkpoint: as a joiner */
    const cl_peer_t *me = cl_member_self(a->ctx.mb);
    bool closed = cl_member_group_closed(a->ctx.mb);
    double now = now_of(a);
    if (st->phase == EL_IN && !st->was_in_group && !st->evicted && closed &&
        a->ctx.member(a->ctx.arg) && me != NULL && !me->in_group) {
        stand(a, EL_ST_PHASE, EL_WAITING);
        stand(a, EL_ST_READMIT, false);
        start_waiting(a, now);
        cl_info("the group of the world communicator is running; this peer waits to be admitted "
                "at its next step boundary");
    }
    if (!st->readmit && st->phase == EL_WAITING) {
        park(a, req, idx);
        return true;
    }
    if (st->readmit && st->phase == EL_WAITING && a->hold_next && a->held == NULL) {
        /* A lost admission whose state already reached the program
           (eng_admittee_undo): its next collective waits for the next one. */
        a->hold_next = false;
        a->held = req;
        a->held_local = idx;
        start_waiting(a, now);
        return true;
    }
    if (!st->readmit && st->phase == EL_SYNCING) {
        if (idx >= a->adm_prefix) {
            if (eng_sync_done(a->ctx.sync(a->ctx.arg)) && a->parked == NULL) {
                size_t nitems = 0;
                uint64_t bytes = 0;
                int ndonors = 0;
                eng_sync_totals(a->ctx.sync(a->ctx.arg), &nitems, &bytes, &ndonors);
                cl_info("received the swarm's state from %d peer%s (%zu items, %.1f MB)", ndonors,
                        ndonors == 1 ? "" : "s", nitems, (double)bytes / 1e6);
                stand(a, EL_ST_PHASE, EL_IN);
                a->ctx.sync_stop(a->ctx.arg);
            }
            return false;
        }
        if (eng_sync_done(a->ctx.sync(a->ctx.arg)) && a->parked == NULL) {
            if (!answer(a, req, idx))
                park(a, req, idx); /* its bytes are on the way */
            if (a->foreign)
                eng_admittee_leave_foreign(a);
        } else {
            park(a, req, idx);
        }
        return true;
    }
    if (st->evicted && st->readmit && st->phase == EL_WAITING && a->held == NULL &&
        cl_stream_is_boundary(a->ctx.stream, idx) && others_alive(a)) {
        a->held = req;
        a->held_local = idx;
        start_waiting(a, now);
        cl_info("holding this peer's step %llu at its first collective until the group "
                "re-admits it",
                (unsigned long long)step_of(a, idx));
        return true;
    }
    return false;
}

void eng_admittee_on_admit(el_admittee_t *a, const cl_peer_t *p, const cl_elmsg_t *m)
{
    const el_standing_t *st = a->ctx.st;
    a->ctx.seen(a->ctx.arg, m, p != NULL ? p->key : NULL);
    const cl_el_joiner_t *mine = NULL;
    for (uint32_t j = 0; j < m->njoiners; j++)
        if (memcmp(m->joiners[j].key, a->ctx.self_key, 32) == 0)
            mine = &m->joiners[j];
    if (mine == NULL)
        return;
    if (st->phase != EL_WAITING || (st->readmit && a->held == NULL) ||
        (!st->readmit && a->parked == NULL)) {
        cl_debug("an ADMIT for this peer arrived while it was not waiting; ignored");
        return;
    }
    free(a->adm_sigs);
    a->adm_sigs = NULL;
    if (m->nsigs > 0) {
        a->adm_sigs = malloc(m->nsigs * sizeof *a->adm_sigs);
        if (a->adm_sigs == NULL) {
            cl_error("out of memory for an admission");
            return;
        }
        memcpy(a->adm_sigs, m->sigs, m->nsigs * sizeof *a->adm_sigs);
    }
    a->adm_nsigs = m->nsigs;
    /* What eng_admittee_undo restores if this admission is lost. */
    a->adm_pending = true;
    a->adm_answered = false;
    a->adm_reached = false;
    a->adm_unserved = false;
    a->adm_deadline = now_of(a) + eng_exchange_limit(a->ctx.cfg->timeout);
    cl_timer_arm_by(a->ctx.timers, a->timer, a->adm_deadline);
    a->adm_prev_mapped = st->mapped;
    a->adm_prev_local = st->map_local;
    a->adm_prev_seq = st->map_seq;
    a->adm_prev_in = st->was_in_group;
    a->adm_prev_evicted = st->evicted;
    a->hold_next = false;
    a->adm_s = m->s;
    a->adm_gen = m->gen;
    a->adm_prefix = m->prefix;
    stand(a, EL_ST_PHASE, EL_SYNCING);
    stand(a, EL_ST_MAPPED, true);
    stand(a, EL_ST_MAP_LOCAL, st->readmit ? a->held_local : m->prefix);
    stand(a, EL_ST_MAP_SEQ, m->s);
    a->ctx.renumber(a->ctx.arg, m->s,
                    m->s + (st->posted > st->map_local ? st->posted - st->map_local : 0));
    cl_info("%s at collective #%llu of the group; fetching the swarm's state",
            st->readmit ? "re-admitted" : "admitted", (unsigned long long)m->s);
    if (!a->ctx.sync_start(a->ctx.arg, m->s, m, p != NULL ? p->key : NULL)) {
        cl_error("out of memory starting the state sync; this peer keeps its own state");
        eng_admittee_sync_finished(a);
        return;
    }
    a->ctx.sync_check(a->ctx.arg); /* finishes at once when there is nothing to ask */
}

void eng_admittee_sync_finished(el_admittee_t *a)
{
    const el_standing_t *st = a->ctx.st;
    if (st->phase != EL_SYNCING)
        return;
    const el_sync_t *y = a->ctx.sync(a->ctx.arg);
    if (a->adm_pending && eng_sync_unserved(y)) {
        /* Undone by eng_admittee_poll: this may run inside the sync's timer. */
        a->adm_unserved = true;
        return;
    }
    if (a->adm_answered && !st->readmit) {
        /* Items this program's start-up asked for (eng_sync_want) are in. */
        answer_parked(a);
        return;
    }
    a->adm_answered = true;
    size_t nitems = 0;
    uint64_t bytes = 0;
    int ndonors = 0;
    if (y != NULL)
        eng_sync_totals(y, &nitems, &bytes, &ndonors);
    if (!st->readmit) {
        cl_info("agreed on the swarm's state with %d peer%s (%zu items agreed); each is fetched "
                "when this program's start-up reaches it",
                ndonors, ndonors == 1 ? "" : "s", eng_sync_count(y));
        answer_parked(a);
        return; /* EL_IN once the program is past its start-up (eng_admittee_take) */
    }
    /* A straggler: overwrite its state while its program is blocked in
       the held collective. */
    a->adm_reached = true;
    size_t written = 0;
    uint64_t wbytes = 0;
    cl_statereg_entry_t ent;
    for (bool ok = cl_statereg_first(a->ctx.reg, &ent); ok;
         ok = cl_statereg_next(a->ctx.reg, ent.index, &ent)) {
        const uint8_t *d;
        size_t len;
        if (y == NULL ||
            eng_sync_item(y, CL_EL_ITEM_BUFFER, ent.index, &d, &len, NULL) != COLLAB_OK)
            continue;
        if (len != ent.bytes) {
            char what[96];
            snprintf(what, sizeof what,
                     "start-up broadcast #%llu has %zu bytes here and %zu in "
                     "the swarm",
                     (unsigned long long)ent.index, ent.bytes, len);
            eng_admittee_foreign(a, what);
            break;
        }
        if (len > 0 && cl_statereg_write(a->ctx.reg, ent.index, 0, d, len) != COLLAB_OK) {
            cl_error("could not overwrite start-up broadcast #%llu (%zu bytes at %p) with the "
                     "swarm's contents",
                     (unsigned long long)ent.index, len, ent.addr);
            (void)cl_statereg_drop(a->ctx.reg, ent.index, "it cannot be written");
            continue;
        }
        written++;
        wbytes += len;
    }
    if (a->foreign) {
        stand(a, EL_ST_EVICTED, false);
        stand(a, EL_ST_READMIT, false);
        eng_admittee_leave_foreign(a); /* fails the held collective too */
        return;
    }
    cl_info("resynced with the group from %d peer%s: %zu buffers (%.1f MB) overwritten; "
            "this peer's first step back counts with weight 0",
            ndonors, ndonors == 1 ? "" : "s", written, (double)wbytes / 1e6);
    stand(a, EL_ST_PHASE, EL_IN); /* eng_el_after_timers frees the pull (we may be inside it) */
    stand(a, EL_ST_EVICTED, false);
    stand(a, EL_ST_READMIT, false);
    collab_request_t *req = a->held;
    uint64_t idx = a->held_local;
    a->held = NULL;
    a->hold_next = false;
    if (req != NULL)
        resubmit(a, req, idx);
    /* Later collectives taken back from the engine with it (eng_admittee_undo). */
    while (a->parked != NULL) {
        el_parked_t *p = a->parked;
        a->parked = p->next;
        if (a->parked == NULL)
            a->parked_tail = NULL;
        resubmit(a, p->req, p->local);
        free(p);
    }
}

/* The deadlines of the admission this peer is in and of its wait; the
   timer is armed again at the earliest that is still to come. */
static void on_timer(void *arg, double now)
{
    el_admittee_t *a = arg;
    const el_standing_t *st = a->ctx.st;
    double next = INFINITY;
    if (a->adm_pending && cl_member_epoch(a->ctx.mb) < a->adm_gen) {
        /* The view of an admission follows its ADMIT on the same
           connection; without it the admitter never published it. */
        if (now >= a->adm_deadline)
            eng_admittee_undo(a, "the view that admits it never came");
        else
            next = fmin(next, a->adm_deadline);
    }
    if (st->phase != EL_WAITING)
        goto out;
    bool waits = a->kept_out || (st->readmit ? a->held != NULL : a->parked != NULL);
    if (!waits)
        goto out;
    if (st->readmit && !others_alive(a)) {
        /* Nobody left to rejoin: go on alone (DESIGN §5). */
        cl_warn("no other live peer is left; this peer goes on alone");
        release_held(a);
        goto out;
    }
    if (st->readmit && !group_alive(a) && a->ctx.regroup(a->ctx.arg)) {
        /* Every member of the group finished or failed while this peer
           and others were out of it: nobody would re-admit them.  This
           peer coordinates: the group is formed again of it alone, with
           its state, and it re-admits the others at its step boundaries
           (they are resynced from it).  Another peer out of the group
           waits for the view of its coordinator that does this. */
        cl_warn("every member of the group left or failed while this peer was out of it; it "
                "forms the group again with its own state and re-admits the others");
        stand(a, EL_ST_PHASE, EL_IN);
        stand(a, EL_ST_EVICTED, false);
        eng_admittee_regrouped(a); /* done already when its view came back through the layer */
        goto out;
    }
    if (!st->readmit && a->ctx.member(a->ctx.arg) && others_gone(a)) {
        /* A joiner that never held the swarm's state cannot go on alone:
           the swarm it was admitted to ended (its members finished or
           failed) before its group took it in. */
        cl_error("every other member of the swarm left or failed before this peer was admitted "
                 "to the group of the world communicator (the run ended); giving up");
        eng_admittee_abort(a, COLLAB_ERR_PROC_FAILED);
        goto out;
    }
    if (now >= a->wait_deadline) {
        cl_error("gave up waiting to be %s the group of the world communicator after %.0f s",
                 st->readmit ? "re-admitted to" : "admitted to", wait_limit(a));
        eng_admittee_abort(a, COLLAB_ERR_TIMEOUT);
        goto out;
    }
    if (a->kept_out && a->ctx.member(a->ctx.arg) && now >= a->next_request) {
        a->ctx.self_out(a->ctx.arg); /* again each second: a report can be lost */
        a->next_request = now + ENG_ADMIT_REQ_EVERY;
    } else if (a->ctx.member(a->ctx.arg) && now >= a->next_request) {
        const cl_peer_t *to = a->ctx.admitter(a->ctx.arg);
        cl_elmsg_t m;
        memset(&m, 0, sizeof m);
        m.type = CL_EL_ADMIT_REQ;
        m.readmit = st->readmit ? 1 : 0;
        m.posted = st->posted;
        if (to != NULL && !is_self(a, to))
            (void)a->ctx.send(a->ctx.arg, to->key, &m);
        a->next_request = now + ENG_ADMIT_REQ_EVERY;
    }
    next = fmin(next, fmin(a->next_request, a->wait_deadline));
out:
    if (next < INFINITY)
        cl_timer_arm(a->ctx.timers, a->timer, next);
    else
        cl_timer_cancel(a->ctx.timers, a->timer);
}

void eng_admittee_poll(el_admittee_t *a, double now)
{
    if (!a->adm_unserved)
        return;
    a->adm_unserved = false; /* moot once the admission took effect */
    if (!a->adm_pending)
        return;
    eng_admittee_undo(a, "live members did not serve the swarm's state");
    on_timer(a, now); /* asks again in this turn, as before */
}

#define UNDO_MAX 16 /* world collectives taken back from the engine at most */

void eng_admittee_undo(el_admittee_t *a, const char *why)
{
    if (!a->adm_pending)
        return;
    const el_standing_t *st = a->ctx.st;
    a->adm_pending = false;
    a->ctx.sync_stop(a->ctx.arg);
    collab_request_t *taken[UNDO_MAX];
    size_t n = a->ctx.take_back(a->ctx.arg, taken, UNDO_MAX);
    uint64_t local[UNDO_MAX];
    for (size_t i = 0; i < n; i++)
        local[i] = st->map_local + (taken[i]->coll.seq - st->map_seq);
    /* A joiner's program still blocked in its first start-up collective
       got nothing of this admission, though its state was agreed on. */
    bool readmit = st->readmit || a->adm_reached;
    cl_warn("the admission at collective #%llu of the group did not take effect (%s); this "
            "peer asks to be %s again",
            (unsigned long long)a->adm_s, why, readmit ? "re-admitted" : "admitted");
    double now = now_of(a);
    stand(a, EL_ST_WAS_IN_GROUP, a->adm_prev_in);
    stand(a, EL_ST_EVICTED, a->adm_prev_evicted);
    stand(a, EL_ST_PHASE, EL_WAITING);
    start_waiting(a, now);
    if (!a->adm_reached) {
        /* Nothing of the group's state reached the program: as before
           the ADMIT (its parked or held collectives are still here). */
        stand(a, EL_ST_MAPPED, a->adm_prev_mapped);
        stand(a, EL_ST_MAP_LOCAL, a->adm_prev_local);
        stand(a, EL_ST_MAP_SEQ, a->adm_prev_seq);
        for (size_t i = 0; i < n; i++)
            park(a, taken[i], local[i]);
    } else {
        /* Its program runs on the state of the lost admission: like a
           straggler, it holds its next collective until it is admitted
           again, its registered buffers are then overwritten with the
           group's state and that step counts with weight 0. */
        stand(a, EL_ST_READMIT, true);
        a->held = NULL;
        a->hold_next = n == 0;
        if (n > 0) {
            a->held = taken[0];
            a->held_local = local[0];
        }
        for (size_t i = 1; i < n; i++)
            park(a, taken[i], local[i]);
    }
    a->ctx.renumber(a->ctx.arg, 0,
                    st->mapped ? st->map_seq + (st->posted - st->map_local) : st->posted);
}

void eng_admittee_regrouped(el_admittee_t *a)
{
    if (!a->ctx.st->readmit)
        return;
    stand(a, EL_ST_READMIT, false);
    a->hold_next = false;
    release_held(a);
}

bool eng_admittee_keep_out(el_admittee_t *a, bool put_in, bool formed_now)
{
    if (a == NULL)
        return false;
    const el_standing_t *st = a->ctx.st;
    double now = now_of(a);
    if (!put_in || !st->readmit) {
        if (a->kept_out) {
            a->kept_out = false; /* out of the group: asks to be re-admitted, at once */
            a->next_request = now;
            cl_timer_arm(a->ctx.timers, a->timer, now);
        }
        return false;
    }
    if (a->kept_out)
        return true;
    /* The index of the next world collective its program runs: the held
       one, or the next it posts. */
    uint64_t next = a->held != NULL ? a->held_local : st->posted;
    if (!formed_now || next == 0)
        return false;
    cl_warn("the group formed just now with this peer in it, but its members start at the "
            "first world collective and this peer's program is at collective #%llu (it went "
            "on alone): it asks to be taken out of the group, then to be re-admitted with the "
            "group's state",
            (unsigned long long)next);
    a->kept_out = true;
    a->next_request = now;
    if (a->wait_deadline <= now)
        a->wait_deadline = now + wait_limit(a);
    cl_timer_arm(a->ctx.timers, a->timer, now);
    return true;
}

void eng_admittee_abort(el_admittee_t *a, int status)
{
    while (a->parked != NULL) {
        el_parked_t *p = a->parked;
        a->parked = p->next;
        cl_request_complete(p->req, status);
        free(p);
    }
    a->parked_tail = NULL;
    if (a->held != NULL) {
        collab_request_t *r = a->held;
        a->held = NULL;
        cl_request_complete(r, status);
    }
    if (a->ctx.st->phase == EL_WAITING)
        stand(a, EL_ST_PHASE, EL_IN);
}
