/*  cl_engine_elastic.c - the elastic swarm's hooks in the engine
    (docs/elastic.md, docs/state-sync.md).

    The world communicator's stream.  Every collective the program posts
    on MPI_COMM_WORLD is recorded in a cl_stream (its signature and buffer
    addresses), which learns the start-up prefix P and the steps.  Every
    buffer passed to a broadcast before P is known is registered in a
    cl_statereg, and the result of every other collective completed before
    P is kept in a cl_startup; both are trimmed to P once it is known.

    Numbering.  The engine numbers a peer's collectives on a communicator
    from 0.  A joiner does not run its start-up collectives in the group,
    and a straggler misses some of the group's, so from the collective at
    which they are admitted their local index L runs as the group's
    sequence s + (L - L0) (the mapping is set by the ADMIT).

    Generations around an admission.  The coordinator admits peers with a
    view whose group generation G' takes effect at sequence s.  The
    engine's rule that the oldest generation wins (docs/wire.md §6) is
    bent for that sequence: from s on only generations >= G' may run
    (eng_el_gen_ok), a member that started s under an older one restarts
    under G' as soon as it installs that view or hears from a member of G'
    (eng_el_route), and the joiner takes part only from s on
    (eng_el_takes_part), so a member still finishing s - 1 under G'
    waits for nobody who never runs it.

    Pauses.  A process stopped for longer than COLLAB_TIMEOUT (SIGSTOP)
    finds, when it runs again, that it heard from nobody for a long time.
    Its own stop explains that silence, so it refreshes the others'
    records instead of suspecting them, reopens its connections (the
    others dropped theirs when they took it out) and asks the members
    whether it is still in the view (PROBE; they answer with their view).
    Until they answered (or COLLAB_TIMEOUT passed) no collective starts or
    completes here (eng_el_in_doubt): the others' inputs for a sequence
    they completed without this peer wait in its early buffer and must
    not be folded in.  A peer taken out of the group then finishes its
    step alone and asks to be re-admitted (cl_engine_admittee.c; the
    admitter decides, in cl_engine_admitter.c).  One that never was in
    the group (stopped after it posted its first collectives, before the
    group formed here) is a joiner: at a view that shows the group closed
    without it, the collectives still queued are handed to the admittee
    (adopt_queued), which parks them and asks to be admitted.  Both ends are
    logged once (the first world collective posted before the group
    formed; the queued ones handed on as a joiner's), so that a test or
    an operator can tell this path from the straggler's.

    How it sees the engine.  This file is the layer's logic on its own
    state (struct eng_elastic, cl_engine_elastic_int.h): its functions
    are eng_elastic_*, and none takes struct cl_engine.  It reaches the
    engine only through its context eng_el_ctx_t (the engine's state,
    this peer's key and rank, the membership's records, sending, the
    group generations, the world stream as an opaque handle: its running
    collective, restart, numbering, early buffer, queue), which
    cl_engine_elastic_ctx.c fills; the hooks of cl_engine_elastic.h, thin
    wrappers that check that a stream is the world's, are in
    cl_engine_elastic_hooks.c; what every member remembers of an
    admission (the ADMITs, their hand-on and voiding, the check of this
    peer's completed sequences) is in cl_engine_elastic_adm.c.  It does
    not include the loop's header
    (cl_engine_loop_int.h).  It is the only writer of this peer's standing
    el->st: the admittee asks through its context (eng_elastic_stand).
*/
#include "engine/cl_engine_elastic_int.h"
#include "engine/cl_stage.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* The layer's own state. */

struct eng_elastic *eng_elastic_new(const eng_el_ctx_t *ctx)
{
    struct eng_elastic *el = calloc(1, sizeof *el);
    if (el == NULL)
        return NULL;
    el->ctx = *ctx;
    el->stream = cl_stream_new("the world communicator", ctx->cfg->collectives_per_step);
    el->reg = cl_statereg_new();
    el->startup = cl_startup_new(0);
    el->kinds = calloc(CL_STREAM_HISTORY, 1);
    el->trimmed = CL_STREAM_NONE;
    for (int i = 0; i < EL_ENTRANTS; i++)
        el->entrants[i].rank = -1;
    if (el->stream == NULL || el->reg == NULL || el->startup == NULL || el->kinds == NULL)
        eng_elastic_destroy(&el);
    return el;
}

void eng_elastic_stand(struct eng_elastic *el, el_st_field_t f, uint64_t v)
{
    el_standing_t *st = &el->st;
    switch (f) {
    case EL_ST_PHASE:
        st->phase = (el_phase_t)v;
        break;
    case EL_ST_WAS_IN_GROUP:
        st->was_in_group = v != 0;
        break;
    case EL_ST_EVICTED:
        st->evicted = v != 0;
        break;
    case EL_ST_READMIT:
        st->readmit = v != 0;
        break;
    case EL_ST_MAPPED:
        st->mapped = v != 0;
        break;
    case EL_ST_MAP_LOCAL:
        st->map_local = v;
        break;
    case EL_ST_MAP_SEQ:
        st->map_seq = v;
        break;
    }
}

void eng_elastic_destroy(struct eng_elastic **el_p)
{
    struct eng_elastic *el = el_p != NULL ? *el_p : NULL;
    if (el == NULL)
        return;
    cl_stream_destroy(&el->stream);
    cl_statereg_destroy(&el->reg);
    cl_startup_destroy(&el->startup);
    for (int i = 0; i < EL_BARRIERS; i++)
        free(el->barriers[i].admit);
    free(el->kinds);
    free(el);
    *el_p = NULL;
}

/* ---------------------------------------------------------------------- */
/* Helpers shared with the other elastic files. */

uint32_t eng_el_signature(const collab_request_t *req)
{
    const cl_coll_args_t *a = &req->coll;
    uint64_t f[6] = {(uint64_t)a->kind,          (uint64_t)a->count,
                     (uint64_t)a->dtype,         (uint64_t)a->op.kind,
                     (uint64_t)(int64_t)a->root, req->comm != NULL ? req->comm->id : 0};
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 6; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (uint8_t)(f[i] >> (8 * b));
            h *= 16777619u;
        }
    return h;
}

bool eng_el_result_span(const collab_request_t *req, int comm_size, void **ptr, size_t *len)
{
    const cl_coll_args_t *a = &req->coll;
    *ptr = NULL;
    *len = 0;
    switch (a->kind) {
    case CL_COLL_BARRIER:
        return true;
    case CL_COLL_ALLREDUCE:
        *ptr = a->recvbuf;
        *len = a->count * collab_dtype_extent(a->dtype);
        return true;
    case CL_COLL_ALLGATHERV:
        if (a->counts == NULL || a->displs == NULL)
            return false;
        for (int r = 0; r < comm_size; r++)
            if (a->counts[r] > 0 && a->displs[r] + a->counts[r] > *len)
                *len = a->displs[r] + a->counts[r];
        *ptr = a->recvbuf;
        return true;
    default:
        return false;
    }
}

int eng_elastic_send(struct eng_elastic *el, const uint8_t key[32], const cl_elmsg_t *msg)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    int rc = cl_elmsg_encode(msg, &body, &blen);
    if (rc != COLLAB_OK) {
        cl_error("cannot encode an elastic %s message: %s", cl_elmsg_name(msg->type),
                 collab_strerror(rc));
        return rc;
    }
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_ELASTIC;
    m.hdr.sub = msg->type;
    m.payload = body;
    m.payload_len = blen;
    rc = el->ctx.send(el->ctx.arg, key, &m);
    free(body);
    return rc;
}

int eng_elastic_can_serve(struct eng_elastic *el, uint64_t s)
{
    struct stream *w = el->ctx.world(el->ctx.arg);
    int snap = eng_donor_snapshot(el->donor, s);
    if (snap > 0)
        return 1; /* a copy taken when the program posted s */
    if (el->st.evicted || el->st.phase != EL_IN || el->done_seq > s)
        return -1;
    if (snap == 0)
        return 0; /* the copy is taken when the program posts s */
    return w != NULL && el->ctx.next_seq(el->ctx.arg, w) > s ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* The stream. */

/* Once the start-up prefix is known, later broadcasts and results are
   not start-up state. */
static void trim(struct eng_elastic *el)
{
    uint64_t p = cl_stream_prefix(el->stream);
    if (p == CL_STREAM_NONE || p == el->trimmed)
        return;
    (void)cl_statereg_trim(el->reg, p);
    (void)cl_startup_trim(el->startup, p);
    el->trimmed = p;
}

static void record(struct eng_elastic *el, collab_request_t *req, uint64_t *idx_out)
{
    const cl_coll_args_t *a = &req->coll;
    const void *a1 = a->sendbuf, *a2 = a->recvbuf;
    if (a->kind == CL_COLL_BCAST || a->kind == CL_COLL_BARRIER) {
        a1 = a->recvbuf;
        a2 = NULL;
    }
    bool dev; /* staged device buffers: the program's own addresses count */
    a1 = cl_stage_user(req, a1, &dev);
    a2 = cl_stage_user(req, a2, &dev);
    uint64_t idx = cl_stream_record(el->stream, eng_el_signature(req), a1, a2);
    if (idx < CL_STREAM_HISTORY)
        el->kinds[idx] = (uint8_t)(a->kind + 1);
    uint64_t p = cl_stream_prefix(el->stream);
    if (a->kind == CL_COLL_BCAST && (p == CL_STREAM_NONE || idx < p)) {
        int rc = cl_statereg_add(el->reg, idx, (void *)a1, a->count);
        if (rc != COLLAB_OK && cl_statereg_count(el->reg) >= CL_STATEREG_MAX && !el->full_warned) {
            cl_warn("more than %d start-up broadcasts: the buffers of later ones are not "
                    "served to joiners (they keep their own values)",
                    CL_STATEREG_MAX);
            el->full_warned = true;
        }
    }
    trim(el);
    *idx_out = idx;
}

bool eng_elastic_on_post(struct eng_elastic *el, struct stream *s, collab_request_t *req,
                         bool again)
{
    if (again)
        return false; /* recorded when it was first posted */
    el->st.posted++;
    uint64_t idx;
    record(el, req, &idx);
    if (idx == 0 && !cl_member_group_closed(el->ctx.mb))
        cl_info("posted its first world collective before the group formed; it waits for the "
                "group to form");
    if (el->st.mapped && idx >= el->st.map_local)
        el->ctx.number(el->ctx.arg, s, req, el->st.map_seq + (idx - el->st.map_local));
    if (eng_admittee_take(el->admittee, req, idx))
        return true;
    eng_admitter_on_post(el->admitter, req->coll.seq, idx);
    eng_donor_on_post(el->donor, req->coll.seq);
    eng_donor_progress(el->donor);
    return false;
}

void eng_elastic_on_fast(struct eng_elastic *el, const collab_request_t *req)
{
    el->st.posted++;
    uint64_t idx;
    record(el, (collab_request_t *)req, &idx);
    uint64_t seq = req->coll.seq;
    if (el->st.mapped && idx >= el->st.map_local &&
        el->st.map_seq + (idx - el->st.map_local) != seq)
        cl_debug("fast collective #%llu is local #%llu, mapped to #%llu", (unsigned long long)seq,
                 (unsigned long long)idx,
                 (unsigned long long)(el->st.map_seq + (idx - el->st.map_local)));
    eng_donor_on_post(el->donor, seq);
    eng_donor_progress(el->donor);
    if (seq + 1 > el->done_seq)
        el->done_seq = seq + 1;
    el->done_ring[seq % EL_DONE_RING].seq = seq;
    el->done_ring[seq % EL_DONE_RING].gen = cl_member_group_epoch(el->ctx.mb);
}

bool eng_elastic_fast_ok(const struct eng_elastic *el, bool world)
{
    if (eng_pause_in_doubt(el->pause))
        return false; /* stopped: the others' answers come first */
    if (!world)
        return true;
    if (el->st.phase != EL_IN || el->st.evicted || eng_admittee_busy(el->admittee) ||
        eng_admitter_reporting(el->admitter) || el->sync != NULL || !el->st.was_in_group)
        return false;
    if (eng_admitter_pending(el->admitter) > 0)
        return false;
    /* A monitor's checkpoint or the periodic state check needs its step
       boundary on the engine path (the copy is taken, and a QUERY
       answered, while the program is blocked inside that collective). */
    if (eng_donor_waiting(el->donor) || eng_audit_running(el->audit))
        return false;
    /* ... once it is due: the check every 64 steps, a checkpoint every
       N steps the monitor asked for, not when a lease lapses (asked at
       every turn of the loop: the step tests come before the admitter's
       lookup). */
    uint64_t step = eng_admitter_step(el->admitter, el->done_seq);
    if (eng_ckpt_due(el->ckpt, step, eng_elastic_period(el)))
        return false;
    if (eng_audit_due(el->audit, step) && eng_admitter_admits(el->admitter))
        return false;
    uint64_t p = cl_stream_prefix(el->stream);
    if (p == CL_STREAM_NONE || el->st.posted < p || cl_stream_state(el->stream) != CL_STREAM_LOCKED)
        return false;
    for (int i = 0; i < EL_BARRIERS; i++)
        if (el->barriers[i].gen != 0 && el->barriers[i].s >= el->done_seq)
            return false;
    return true;
}

uint64_t eng_elastic_period(const struct eng_elastic *el)
{
    uint64_t t = el != NULL ? cl_stream_period(el->stream) : 0;
    return t == 0 || t == CL_STREAM_NONE ? 1 : t;
}

uint64_t eng_elastic_steps(const struct eng_elastic *el)
{
    if (el == NULL || el->stream == NULL)
        return 0;
    uint64_t period = cl_stream_period(el->stream);
    uint64_t count = cl_stream_count(el->stream), prefix = cl_stream_prefix(el->stream);
    if (period == 0 || prefix == CL_STREAM_NONE || count <= prefix)
        return 0;
    return (count - prefix) / period;
}

void eng_elastic_on_done(struct eng_elastic *el, struct stream *s, collab_request_t *req,
                         int status, int comm_size)
{
    uint64_t seq = 0, gen = 0;
    int nmismatch = 0, ncontrib = 0;
    el->ctx.finishing(el->ctx.arg, s, &seq, &gen, &nmismatch, &ncontrib);
    if (gen != 0 && seq + 1 > el->done_seq)
        el->done_seq = seq + 1;
    if (gen != 0) {
        el->done_ring[seq % EL_DONE_RING].seq = seq;
        el->done_ring[seq % EL_DONE_RING].gen = gen;
        eng_admittee_on_done(el->admittee, seq, status);
    }
    /* Keep the result of a start-up collective for joiners.  Its local
       index: a peer whose numbering is mapped is past its start-up. */
    uint64_t p = cl_stream_prefix(el->stream);
    if (!el->st.mapped && status == COLLAB_OK && req->coll.kind != CL_COLL_BCAST &&
        (p == CL_STREAM_NONE || seq < p) && seq < CL_STREAM_HISTORY) {
        void *ptr;
        size_t len;
        if (!eng_el_result_span(req, comm_size, &ptr, &len))
            len = 0; /* a result that differs by rank: joiners get none (docs/state-sync.md) */
        (void)cl_startup_put(el->startup, seq, eng_el_signature(req), ptr, len);
    }
    /* Early messages kept for a generation this collective did not use. */
    el->ctx.drop_below(el->ctx.arg, s, seq + 1);
    /* What the collective found, read after the admittee and the early
       buffer had their turn, as the stream holds it now. */
    uint64_t seq_now, gen_now;
    el->ctx.finishing(el->ctx.arg, s, &seq_now, &gen_now, &nmismatch, &ncontrib);
    /* The odd one out: every other member (two or more) called another
       collective, again and again after being re-admitted.  This peer
       runs another program than the swarm (docs/elastic.md §6). */
    if (gen_now != 0 && !eng_admittee_is_foreign(el->admittee)) {
        if (nmismatch >= 2 && ncontrib <= 1) {
            if (++el->odd_out >= EL_ODD_OUT_LIMIT) {
                char what[320];
                snprintf(what, sizeof what,
                         "in %d collectives every other member of the group called another "
                         "collective; if it is the same program, its training step could not "
                         "be lined up with the swarm's: set COLLAB_COLLECTIVES_PER_STEP or call "
                         "MPIX_Collab_step() at the top of the loop",
                         el->odd_out);
                eng_admittee_foreign(el->admittee, what);
            }
        } else if (ncontrib >= 2) {
            el->odd_out = 0;
        }
    }
    eng_admitter_on_done(el->admitter, seq, ncontrib);
    eng_elastic_check_admissions(el);
    eng_donor_progress(el->donor);
}

bool eng_elastic_boundaries_known(const struct eng_elastic *el)
{
    return el != NULL && el->stream != NULL && cl_stream_state(el->stream) == CL_STREAM_LOCKED;
}

void eng_elastic_follow(struct eng_elastic *el, const collab_follow_t *v, size_t n)
{
    if (el == NULL)
        return;
    unsigned long long got = 0;
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        long long r = cl_statereg_follow(el->reg, v[i].src, v[i].dst, v[i].bytes);
        if (r > 0) {
            got += (unsigned long long)r;
            hits++;
        }
    }
    cl_debug("%zu of %zu copies out of start-up broadcast buffers followed (%llu bytes)", hits, n,
             got);
}

void eng_elastic_mark_step(struct eng_elastic *el)
{
    if (el != NULL)
        cl_stream_mark_step(el->stream);
}

/* ---------------------------------------------------------------------- */
/* Generations. */

static bool gen_has(const struct eng_elastic *el, uint64_t gen, int w)
{
    const group_gen_t *g = el->ctx.gen(el->ctx.arg, gen);
    for (int i = 0; g != NULL && i < g->n; i++)
        if (g->world[i] == w)
            return true;
    return false;
}

bool eng_elastic_gen_ok(const struct eng_elastic *el, uint64_t seq, uint64_t gen)
{
    if (gen == 0)
        return true;
    for (int i = 0; i < EL_BARRIERS; i++) {
        const el_barrier_t *b = &el->barriers[i];
        if (b->gen == 0 || b->s > seq)
            continue;
        /* A lost admission: its generations (they hold a joiner that never
           runs s) may not run, the older ones may again. */
        if (b->void_until != 0) {
            if (gen >= b->gen && gen < b->void_until)
                return false;
            continue;
        }
        /* Only once its view, or a later one, is installed here: before
           that nobody here can run under it.  (A member that got the ADMIT
           handed on by a new coordinator never sees the admission's own
           view, only the new coordinator's later one.) */
        if (gen < b->gen && (el->ctx.gen(el->ctx.arg, b->gen) != NULL ||
                             cl_member_group_epoch(el->ctx.mb) > b->gen))
            return false;
    }
    return true;
}

uint64_t eng_elastic_choose_gen(const struct eng_elastic *el)
{
    if (el->st.evicted)
        return 0; /* finishing its step alone (docs/elastic.md §6) */
    return ENG_EL_DEFAULT;
}

eng_el_route_t eng_elastic_route(const struct eng_elastic *el, uint64_t seq, uint64_t cur,
                                 uint64_t hgen)
{
    if (cur == 0)
        return ENG_EL_ROUTE_DEFAULT;
    if (hgen > cur) {
        bool known = el->ctx.gen(el->ctx.arg, hgen) != NULL;
        if (known && !eng_elastic_gen_ok(el, seq, cur) &&
            gen_has(el, hgen, el->ctx.rank(el->ctx.arg)))
            return ENG_EL_ROUTE_RESTART;
        if (!known)
            return ENG_EL_ROUTE_KEEP; /* its view may admit someone: keep it for then */
        return ENG_EL_ROUTE_DEFAULT;
    }
    if (hgen < cur && !eng_elastic_gen_ok(el, seq, hgen))
        return ENG_EL_ROUTE_NOTIFY;
    return ENG_EL_ROUTE_DEFAULT;
}

bool eng_elastic_is_entrant(const struct eng_elastic *el, const uint8_t key[32])
{
    if (el == NULL)
        return false;
    for (int i = 0; i < EL_ENTRANTS; i++)
        if (el->entrants[i].rank >= 0 && memcmp(el->entrants[i].key, key, 32) == 0)
            return true;
    return false;
}

bool eng_elastic_takes_part(const struct eng_elastic *el, int w, uint64_t seq, double *weight)
{
    for (int i = 0; i < EL_ENTRANTS; i++) {
        const el_entrant_t *x = &el->entrants[i];
        if (x->rank != w)
            continue;
        if (seq < x->from)
            return false;
        if (x->readmit && seq < x->w0_end)
            *weight = 0.0;
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* Views. */

static void feed_admission(struct eng_elastic *el)
{
    size_t n;
    cl_peer_t *const *list = cl_member_list(el->ctx.mb, &n);
    cl_adm_member_t *m = calloc(n > 0 ? n : 1, sizeof *m);
    if (m == NULL)
        return;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (list[i]->rank < 0)
            continue;
        memcpy(m[k].key, list[i]->key, 32);
        m[k].rank = list[i]->rank;
        m[k].in_group = list[i]->in_group;
        k++;
    }
    if (eng_admitter_view(el->admitter, m, k) != COLLAB_OK)
        cl_debug("the admission queue refused a view of %zu members", k);
    free(m);
}

/* The world collectives this peer posted before the group formed here
   and that still wait in its queue (none started), when the group formed
   or went on without it (it was stopped meanwhile, taken out, and is
   back): they wait as a joiner's do, parked by the admittee, which asks
   to be admitted (docs/elastic.md §3).  The admittee takes them only in
   that standing; otherwise they stay queued. */
static void adopt_queued(struct eng_elastic *el, struct stream *w)
{
    struct cl_engine *arg = el->ctx.arg;
    size_t k = el->ctx.queued(arg, w);
    uint64_t count = cl_stream_count(el->stream);
    if (k == 0 || count < k)
        return;
    /* One at a time from the head, with no copy of the queue: a take may
       end in a departure (a foreign swarm's answer: eng_leave), which
       completes and empties the queue, and the loop then ends. */
    size_t i = 0;
    collab_request_t *r;
    while (i < k && (r = el->ctx.queue_head(arg, w)) != NULL) {
        /* The queued ones are the latest posted: indexes count-k.. */
        if (!eng_admittee_take(el->admittee, r, count - k + i))
            break;
        el->ctx.dequeue(arg, w, r);
        i++;
    }
    if (i > 0)
        cl_info("never in the group that formed: this peer waits to be admitted with its %zu "
                "queued world collective%s as a joiner",
                i, i == 1 ? "" : "s");
}

void eng_elastic_view_changed(struct eng_elastic *el)
{
    struct cl_engine *arg = el->ctx.arg;
    cl_member_t *mb = el->ctx.mb;
    eng_audit_view_changed(el->audit); /* a member of its check may have left */
    feed_admission(el);
    cl_peer_t *me = cl_member_self(mb);
    bool closed = cl_member_group_closed(mb);
    bool in = el->ctx.state(arg) == ENG_MEMBER && me != NULL && me->state != CL_PEER_GONE &&
              me->in_group && closed;
    struct stream *w = el->ctx.world(arg);
    uint64_t aseq, agen;
    eng_elastic_void_lost(el);
    /* After the voiding: an admission lost here is not handed on.  Still
       before this view goes out (an ADMIT precedes its view). */
    eng_elastic_hand_on(el);
    uint64_t adm_gen = eng_admittee_gen(el->admittee);
    if (!in && eng_admittee_pending(el->admittee) && el->ctx.state(arg) == ENG_MEMBER &&
        cl_member_epoch(mb) >= adm_gen)
        eng_admittee_undo(el->admittee, "a later view of the group leaves it out");
    bool regrouped = false;
    /* The group formed in this view (matchmaking closed it): a straggler
       whose program went on alone is not put back at its first
       collective (eng_admittee_keep_out).  A peer removed from the swarm
       knows no group until a view takes it back: a rejoiner whose first
       view puts it into the group got a group formed after it was
       admitted (a joiner enters a formed group out of it). */
    bool formed_now = closed && el->group_open;
    el->group_open = el->ctx.state(arg) != ENG_MEMBER || !closed;
    bool put_in = in && el->st.evicted && el->st.phase != EL_SYNCING;
    bool kept_out = eng_admittee_keep_out(el->admittee, put_in, formed_now);
    if (in) {
        el->st.was_in_group = true;
        if (put_in && !kept_out) {
            /* Back in without an admission of ours (a view that regrouped
               everyone, or its own when it formed the group again):
               nothing to resync; its held collective is released below. */
            el->st.evicted = false;
            el->st.phase = EL_IN;
            regrouped = true;
        }
    } else if (el->st.was_in_group && !el->st.evicted &&
               (closed || el->ctx.state(arg) != ENG_MEMBER) && cl_member_epoch(mb) >= adm_gen) {
        el->st.evicted = true;
        el->st.phase = EL_WAITING;
        el->st.readmit = true;
        cl_warn("the group went on without this peer; it finishes its current step alone and "
                "asks to be re-admitted at a step boundary");
        if (w != NULL && el->ctx.running(arg, w, &aseq, &agen) && agen != 0)
            el->ctx.restart(arg, w, 0);
    } else if (!el->st.was_in_group && closed && el->ctx.state(arg) == ENG_MEMBER && me != NULL &&
               me->state != CL_PEER_GONE && w != NULL && !el->ctx.running(arg, w, &aseq, &agen)) {
        /* Never in the group, its first collectives posted before the
           group formed: a joiner (nobody else would ask for it). */
        adopt_queued(el, w);
    }
    /* A collective started under a generation that an admission made
       obsolete restarts under the current one (docs/elastic.md §3). */
    if (w != NULL && el->ctx.running(arg, w, &aseq, &agen) && in && !kept_out) {
        uint64_t cur = cl_member_group_epoch(mb);
        if (!eng_elastic_gen_ok(el, aseq, agen) && el->ctx.gen(arg, cur) != NULL)
            el->ctx.restart(arg, w, cur);
    }
    if (el->sync != NULL)
        eng_sync_view_changed(el->sync);
    eng_elastic_check_admissions(el);
    eng_donor_progress(el->donor);
    if (regrouped)
        eng_admittee_regrouped(el->admittee); /* last: it may start a collective */
}

/* ---------------------------------------------------------------------- */
/* Messages. */

void eng_elastic_on_message(struct eng_elastic *el, cl_peer_t *p, const uint8_t key[32],
                            const cl_wire_msg_t *m)
{
    struct cl_engine *arg = el->ctx.arg;
    if (el->ctx.state(arg) == ENG_LEFT)
        return;
    cl_elmsg_t em;
    int rc = cl_elmsg_decode(m->hdr.sub, m->payload, m->payload_len, &em);
    if (rc != COLLAB_OK) {
        if (rc == COLLAB_ERR_ARG) {
            cl_warn("dropped a malformed elastic message (type %u, %zu bytes) from peer %.8s…; "
                    "ignoring it for %.0f s",
                    m->hdr.sub, m->payload_len, p != NULL ? p->id : "?", el->ctx.cfg->ban_time);
            el->ctx.ban(arg, key, el->ctx.cfg->ban_time);
        }
        return;
    }
    bool member = p != NULL && p->state != CL_PEER_GONE && p->rank >= 0;
    if (eng_ckpt_on_message(el->ckpt, p, key, &em)) {
        cl_elmsg_clear(&em);
        return;
    }
    /* A monitor reads a member's state only for a copy expected for it
       (a checkpoint, cl_engine_checkpoint.c; the gate checked it). */
    bool fetcher = p != NULL && p->state != CL_PEER_GONE && p->monitor &&
                   (em.type == CL_EL_QUERY || em.type == CL_EL_FETCH) &&
                   eng_donor_expects(el->donor, em.s, key);
    cl_debug("elastic %s from %.8s… (s %llu)", cl_elmsg_name(em.type), p != NULL ? p->id : "?",
             (unsigned long long)em.s);
    switch (em.type) {
    case CL_EL_PROBE: {
        /* A peer that was stopped asks whether it is still in: our view
           tells it (back on the connection it used). */
        if (el->ctx.state(arg) == ENG_MEMBER)
            el->ctx.reply_view(arg, key);
        break;
    }
    case CL_EL_ADMIT_REQ:
        if (member && el->ctx.state(arg) == ENG_MEMBER)
            eng_admitter_on_request(el->admitter, p, &em);
        break;
    case CL_EL_ADMIT:
        if (member)
            eng_admittee_on_admit(el->admittee, p, &em);
        break;
    case CL_EL_QUERY:
    case CL_EL_FETCH:
    case CL_EL_DROP:
        if ((member || fetcher) && el->ctx.state(arg) == ENG_MEMBER)
            eng_donor_on_message(el->donor, key, &em);
        break;
    case CL_EL_HASHES:
    case CL_EL_DATA:
    case CL_EL_NACK:
        if ((member || (p != NULL && p->monitor && p->state != CL_PEER_GONE)) && el->sync != NULL)
            eng_sync_on_message(el->sync, key, &em);
        if (member && eng_audit_running(el->audit) && em.type != CL_EL_DATA)
            eng_audit_on_message(el->audit, key, &em);
        break;
    default:
        break;
    }
    cl_elmsg_clear(&em);
}
