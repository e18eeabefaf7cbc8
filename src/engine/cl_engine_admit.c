/*  cl_engine_admit.c - admission into the world group at step boundaries
    (docs/elastic.md §3 and §6).

    The admitter.  Admissions are decided by the coordinator when it is in
    the world group; when it is not (a newcomer took the lowest free rank),
    by the lowest-ranked live public member of the group, the only peer
    whose stream can tell where the group's steps begin.  Peers outside the
    group send ADMIT_REQ every second; the admitter queues them in its
    cl_admission (which tracks the view and the ranks) and, each time its
    own program posts a world collective that begins a step (cl_stream),
    admits every waiting peer: it sends ADMIT (the sequence s, the start-up
    prefix P, the signatures of the start-up collectives, the joiners) to
    every member and joiner, then installs and publishes a view that puts
    the joiners into the group, whose generation takes effect at s.  Its
    own collective s starts under that generation.  Once collective s
    completes it logs the admission.  While world all-reduces run in
    several groups, s is a step boundary at least one step ahead of the
    collective it is in (groups without it may run ahead of it), and it
    serves the joiners alone from a copy of its state taken at s
    (cl_engine_donor.c; docs/elastic.md §9).

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
    computed from stale parameters.
*/
#include "engine/cl_engine_elastic.h"
#include "engine/cl_stage.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double wait_limit(struct cl_engine *e)
{
    return eng_admit_wait_limit(e->cfg.timeout);
}

static bool is_self(struct cl_engine *e, const cl_peer_t *p)
{
    return p != NULL && memcmp(p->key, e->self_key, 32) == 0;
}

/* The peer that decides admissions (see the top comment). */
static cl_peer_t *admitter(struct cl_engine *e)
{
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (c != NULL && c->in_group && cl_member_group_closed(e->mb))
        return c;
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (!p->client && p->in_group && (is_self(e, p) || p->state == CL_PEER_ALIVE))
            return p;
    }
    /* No public member in the group: its members reach each other through
       a relaying monitor (docs/monitor.md §8), and a client admits. */
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (p->in_group && (is_self(e, p) || p->state == CL_PEER_ALIVE))
            return p;
    }
    return NULL;
}

cl_peer_t *eng_admit_admitter(struct cl_engine *e)
{
    return admitter(e);
}

static bool others_alive(struct cl_engine *e)
{
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    for (size_t i = 0; i < n; i++)
        if (!is_self(e, list[i]) && list[i]->state == CL_PEER_ALIVE)
            return true;
    return false;
}

static uint64_t step_of(const struct eng_elastic *el, uint64_t idx)
{
    uint64_t p = cl_stream_prefix(el->stream), t = cl_stream_period(el->stream);
    if (p == CL_STREAM_NONE || t == 0 || idx < p)
        return idx;
    return (idx - p) / t;
}

/* ---------------------------------------------------------------------- */
/* What every member remembers of an admission. */

static void remember(struct cl_engine *e, const cl_elmsg_t *m, const uint8_t *admitter)
{
    struct eng_elastic *el = e->el;
    const el_barrier_t *have = NULL;
    for (int i = 0; i < EL_BARRIERS; i++)
        if (el->barriers[i].gen == m->gen && el->barriers[i].s == m->s)
            have = &el->barriers[i];
    if (have != NULL && have->void_until != 0)
        return; /* a lost admission handed on late: it stays lost */
    if (have == NULL) {
        el_barrier_t *b = &el->barriers[el->next_barrier];
        free(b->admit);
        *b = (el_barrier_t){.gen = m->gen, .s = m->s, .prev_gen = cl_member_group_epoch(e->mb)};
        if (cl_elmsg_encode(m, &b->admit, &b->admit_len) != COLLAB_OK) {
            b->admit = NULL; /* then it cannot be handed on */
            b->admit_len = 0;
        }
        if (admitter != NULL)
            memcpy(b->admitter, admitter, 32);
        el->next_barrier = (el->next_barrier + 1) % EL_BARRIERS;
    }
    for (uint32_t j = 0; j < m->njoiners; j++) {
        const cl_el_joiner_t *x = &m->joiners[j];
        el_entrant_t *slot = NULL;
        for (int i = 0; i < EL_ENTRANTS && slot == NULL; i++)
            if (el->entrants[i].rank == x->rank)
                slot = &el->entrants[i];
        if (slot == NULL) {
            slot = &el->entrants[el->next_entrant];
            el->next_entrant = (el->next_entrant + 1) % EL_ENTRANTS;
        }
        memcpy(slot->key, x->key, 32);
        slot->rank = x->rank;
        slot->from = m->s;
        slot->w0_end = m->w0_end;
        slot->readmit = (x->flags & CL_EL_JOINER_READMIT) != 0;
        slot->gen = m->gen;
    }
}

/* Are the joiners of the admission of generation gen in the group in
   this peer's view (it installed the admitting view, or a later one that
   keeps them)?  False when a joiner is out of the group: then this
   peer's views void the admission (eng_el_view_changed). */
static bool joiners_in_group(struct cl_engine *e, uint64_t gen)
{
    const struct eng_elastic *el = e->el;
    bool any = false;
    for (int k = 0; k < EL_ENTRANTS; k++) {
        const el_entrant_t *x = &el->entrants[k];
        if (x->rank < 0 || x->gen != gen)
            continue;
        const cl_peer_t *p = cl_member_find(e->mb, x->key);
        if (p == NULL || p->state == CL_PEER_GONE || p->rank != x->rank || !p->in_group)
            return false;
        any = true;
    }
    return any;
}

/* An admitter may die after its ADMIT reached only some members: those
   run the admission's sequence s under its generation, the others under
   the one before, and neither side can complete s (each waits for the
   other; e2e.kill_admitter).  The coordinator that takes over, if it got
   that ADMIT and also the view that puts its joiners into the group, and
   has not completed s, hands the ADMIT on to every member: those that
   have it already ignore it, the others adopt the admission (and serve
   the joiners' FETCHes).  Without that view, its own views leave the
   joiners out and the admission is lost (eng_el_view_changed voids it
   first); it is not handed on.  A member that sees this coordinator's
   ADMIT before it sees the admitter fail keeps it until then
   (eng_auth_successor_check).  Once per admission. */
void eng_admit_hand_on(struct cl_engine *e)
{
    struct eng_elastic *el = e->el;
    if (el == NULL || e->state != ENG_MEMBER || !is_self(e, admitter(e)))
        return;
    for (int i = 0; i < EL_BARRIERS; i++) {
        el_barrier_t *b = &el->barriers[i];
        if (b->gen == 0 || b->admit == NULL || b->handed_on || b->void_until != 0 ||
            el->done_seq > b->s || memcmp(b->admitter, e->self_key, 32) == 0)
            continue;
        const cl_peer_t *a = cl_member_find(e->mb, b->admitter);
        if (a != NULL && a->rank >= 0 && a->state == CL_PEER_ALIVE)
            continue; /* its admitter lives: it sent the ADMIT to everyone */
        if (!joiners_in_group(e, b->gen))
            continue; /* this peer never got the admitting view: the admission is lost */
        b->handed_on = true;
        cl_elmsg_t m;
        if (cl_elmsg_decode(CL_EL_ADMIT, b->admit, b->admit_len, &m) != COLLAB_OK)
            continue;
        size_t n;
        cl_peer_t *const *list = cl_member_list(e->mb, &n);
        int sent = 0;
        for (size_t k = 0; k < n; k++) {
            const cl_peer_t *q = list[k];
            if (is_self(e, q) || q->state == CL_PEER_GONE || q->rank < 0 ||
                memcmp(q->key, b->admitter, 32) == 0)
                continue;
            if (eng_el_send(e, q->key, &m) == COLLAB_OK)
                sent++;
        }
        cl_info("the admitter of the admission at collective #%llu (generation %llu) failed "
                "during it; this peer, which admits now, handed its ADMIT on to %d member%s",
                (unsigned long long)b->s, (unsigned long long)b->gen, sent, sent == 1 ? "" : "s");
        cl_elmsg_clear(&m);
    }
}

/* ---------------------------------------------------------------------- */
/* The admitter. */

static bool is_bcast(uint64_t index, void *ctx)
{
    const struct eng_elastic *el = ctx;
    return index < CL_STREAM_HISTORY && el->kinds[index] == CL_COLL_BCAST + 1;
}

/* The sequence at which an admission decided while this peer's program
   is in collective seq (local index idx, a step boundary) takes effect.
   With one group, seq itself: nobody can complete it without this peer.
   With several groups (docs/elastic.md §9), groups without this peer may
   run ahead of it, so the first step boundary at least one step and
   EL_ADMIT_AHEAD collectives later, which every member learns from the
   ADMIT before it gets there; seq when no later boundary is known (steps
   marked irregularly). */
static uint64_t admission_seq(struct cl_engine *e, uint64_t seq, uint64_t idx, bool split)
{
    struct eng_elastic *el = e->el;
    if (!split)
        return seq;
    uint64_t t = cl_stream_period(el->stream);
    uint64_t ahead = t > EL_ADMIT_AHEAD ? t : EL_ADMIT_AHEAD;
    uint64_t at = cl_stream_next_boundary(el->stream, idx + ahead);
    if (at == CL_STREAM_NONE || at < idx + ahead) {
        cl_debug("no step boundary is known after collective #%llu; admitting at it",
                 (unsigned long long)seq);
        return seq;
    }
    return seq + (at - idx);
}

/* Publishes batch b, decided while this peer's program is in the world
   collective seq (local index idx, a step boundary). */
static void publish(struct cl_engine *e, uint64_t seq, uint64_t idx, cl_adm_batch_t *b)
{
    struct eng_elastic *el = e->el;
    cl_wire_view_t v;
    memset(&v, 0, sizeof v);
    cl_el_joiner_t *js = calloc(b->njoiners, sizeof *js);
    uint32_t *sigs = b->prefix > 0 ? calloc(b->prefix, sizeof *sigs) : NULL;
    if (js == NULL || (b->prefix > 0 && sigs == NULL) || cl_member_view(e->mb, &v) != COLLAB_OK)
        goto requeue;
    uint32_t nj = 0;
    for (size_t k = 0; k < b->njoiners; k++) {
        for (uint32_t i = 0; i < v.count; i++) {
            cl_wire_member_t *m = &v.members[i];
            if (memcmp(m->key, b->joiners[k].key, 32) != 0 || m->rank != b->joiners[k].rank)
                continue;
            m->flags |= CL_MEMBER_IN_GROUP;
            memcpy(js[nj].key, m->key, 32);
            js[nj].rank = m->rank;
            js[nj].flags = b->joiners[k].readmit ? CL_EL_JOINER_READMIT : 0;
            nj++;
        }
    }
    if (nj == 0)
        goto requeue;
    for (uint64_t i = 0; i < b->prefix; i++)
        if (cl_stream_signature(el->stream, i, &sigs[i]) != COLLAB_OK)
            goto requeue;
    bool split = eng_el_split_admission(e, js, nj, NULL);
    uint64_t now_seq = seq;
    seq = admission_seq(e, seq, idx, split);
    uint64_t t = cl_stream_period(el->stream);
    cl_elmsg_t am;
    memset(&am, 0, sizeof am);
    am.type = CL_EL_ADMIT;
    am.s = seq;
    am.prefix = b->prefix;
    am.w0_end = seq + (t > 0 ? t : 1);
    am.gen = v.epoch + 1;
    am.joiners = js;
    am.njoiners = nj;
    am.sigs = sigs;
    am.nsigs = (uint32_t)b->prefix;
    v.epoch = am.gen;
    v.group_epoch = am.gen;
    remember(e, &am, e->self_key);
    /* ADMIT first: members must know the rule before the view arrives
       (both travel on the same connection, in order). */
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    for (size_t i = 0; i < n; i++)
        if (!is_self(e, list[i]))
            (void)eng_el_send(e, list[i]->key, &am);
    cl_member_delta_t d;
    int rc = cl_member_apply_view(e->mb, &v, eng_now(), &d);
    if (rc != 1) {
        cl_member_delta_clear(&d);
        cl_error("could not install the view that admits %u peer%s: %s", nj, nj == 1 ? "" : "s",
                 collab_strerror(rc < 0 ? rc : COLLAB_ERR_INTERNAL));
        goto requeue;
    }
    /* Several groups: this peer alone serves the joiners, from a copy of
       its state taken when its program posts seq (now, when seq is the
       collective it is in), since its group at seq need not hold them. */
    if (split)
        eng_donor_expect(el->donor, seq, js, nj);
    el->report_pending = true;
    el->report_s = seq;
    el->report_step = step_of(el, seq); /* in the group's numbering */
    el->report_rank = js[0].rank;
    el->report_readmit = (js[0].flags & CL_EL_JOINER_READMIT) != 0;
    el->report_n = nj;
    cl_debug("admitting %u peer%s at collective #%llu (step %llu, start-up prefix %llu, "
             "generation %llu; this peer is in #%llu)",
             nj, nj == 1 ? "" : "s", (unsigned long long)seq, (unsigned long long)el->report_step,
             (unsigned long long)b->prefix, (unsigned long long)am.gen,
             (unsigned long long)now_seq);
    eng_coordinator_commit(e, &d);
    free(v.members);
    free(js);
    free(sigs);
    return;
requeue:
    (void)cl_admission_requeue(el->adm, b);
    free(v.members);
    free(js);
    free(sigs);
}

void eng_admit_on_post(struct cl_engine *e, stream_t *s, collab_request_t *req, uint64_t idx)
{
    struct eng_elastic *el = e->el;
    (void)s;
    if (e->state != ENG_MEMBER || el->evicted || el->phase != EL_IN || !is_self(e, admitter(e)))
        return;
    uint64_t p = cl_stream_prefix(el->stream);
    if (p == CL_STREAM_NONE || !cl_stream_is_boundary(el->stream, idx))
        return;
    eng_ckpt_on_boundary(el->ckpt, req->coll.seq, idx); /* docs/monitor.md §7 */
    if (cl_admission_pending(el->adm) == 0) {
        eng_audit_maybe_start(el->audit, req->coll.seq, step_of(el, req->coll.seq));
        return;
    }
    /* An admission ahead of this collective (several groups) is still to
       come: the next one waits until it took effect. */
    if (el->report_pending && req->coll.seq < el->report_s)
        return;
    if (p > CL_ELMSG_MAX_PREFIX || !cl_startup_complete(el->startup, p, is_bcast, el)) {
        if (!el->startup_warned)
            cl_warn("peers wait to be admitted, but the results of this program's %llu start-up "
                    "collectives are not all kept here (too many or too large); they cannot be "
                    "admitted",
                    (unsigned long long)p);
        el->startup_warned = true;
        return;
    }
    cl_adm_batch_t b;
    if (cl_admission_poll(el->adm, el->stream, idx, 0, &b) == 1)
        publish(e, req->coll.seq, idx, &b);
    cl_adm_batch_clear(&b);
}

void eng_admit_on_request(struct cl_engine *e, cl_peer_t *p, const cl_elmsg_t *m)
{
    struct eng_elastic *el = e->el;
    if (!is_self(e, admitter(e)) || p->in_group || p->rank < 0)
        return;
    int rank;
    cl_adm_state_t before = cl_admission_state(el->adm, p->key, NULL);
    int st = cl_admission_request(el->adm, p->key, -1, p->rank, m->readmit != 0, eng_now(), &rank);
    if (st < 0) {
        cl_warn("cannot queue rank %d for admission: %s", p->rank, collab_strerror(st));
        return;
    }
    if (before == CL_ADM_NONE)
        cl_info("rank %d asks to be %s the group; it enters at the next step boundary", p->rank,
                m->readmit ? "re-admitted to" : "admitted to");
}

void eng_admit_on_done(struct cl_engine *e, uint64_t seq, int ncontrib)
{
    struct eng_elastic *el = e->el;
    if (!el->report_pending || seq < el->report_s)
        return;
    el->report_pending = false;
    if (seq != el->report_s)
        return;
    char others[32] = "";
    if (el->report_n > 1)
        snprintf(others, sizeof others, " and %zu more", el->report_n - 1);
    /* The line of DESIGN §7. */
    cl_info("%s rank %d%s at step %llu (state sent: %zu buffers, %.1f MB)",
            el->report_readmit ? "re-admitted" : "admitted", el->report_rank, others,
            (unsigned long long)el->report_step, cl_statereg_count(el->reg),
            (double)cl_statereg_total(el->reg) / 1e6);
    cl_debug("collective #%llu completed with %d peers", (unsigned long long)seq, ncontrib);
}

/* ---------------------------------------------------------------------- */
/* This peer outside the group. */

static void park(struct eng_elastic *el, collab_request_t *req, uint64_t idx)
{
    el_parked_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    p->req = req;
    p->local = idx;
    if (el->parked_tail != NULL)
        el->parked_tail->next = p;
    else
        el->parked = p;
    el->parked_tail = p;
}

/* This peer runs another program than the swarm (or the same one with
   other arguments): its start-up collectives differ from the veterans'.
   It cannot be admitted, now or later, so it leaves the swarm; its
   pending and later calls fail with COLLAB_ERR_MISMATCH (docs/elastic.md
   §3).  Called while parked requests are answered: the caller stops
   there (el->foreign) and eng_admit_leave_foreign finishes the job. */
void eng_admit_foreign(struct cl_engine *e, const char *what)
{
    struct eng_elastic *el = e->el;
    if (el->foreign)
        return;
    el->foreign = true;
    cl_error("this program differs from the one the swarm runs under COLLAB_RUN_ID=%s (%s): "
             "another program, or the same one with other arguments; it cannot take part and "
             "leaves the swarm, its MPI calls now fail (give each experiment its own "
             "COLLAB_RUN_ID)",
             e->cfg.run_id != NULL ? e->cfg.run_id : "default", what);
}

void eng_admit_leave_foreign(struct cl_engine *e)
{
    struct eng_elastic *el = e->el;
    el->phase = EL_IN; /* the pull is done; eng_el_timer frees it */
    eng_leave(e, COLLAB_ERR_MISMATCH);
}

/* Fills a start-up collective's outputs as the veterans had them, or
   leaves the program's own values (docs/state-sync.md §4). */
static void answer(struct cl_engine *e, collab_request_t *req, uint64_t i)
{
    struct eng_elastic *el = e->el;
    cl_coll_args_t *a = &req->coll;
    uint32_t sig = eng_el_signature(req);
    if (i >= el->adm_nsigs || el->adm_sigs[i] != sig) {
        char what[96];
        snprintf(what, sizeof what, "start-up %s #%llu has signature %08x here and %08x in the swarm",
                 eng_coll_kind_name(a->kind), (unsigned long long)i, (unsigned)sig,
                 i < el->adm_nsigs ? (unsigned)el->adm_sigs[i] : 0u);
        eng_admit_foreign(e, what);
        cl_request_complete(req, COLLAB_ERR_MISMATCH);
        return;
    }
    const uint8_t *d;
    size_t len;
    uint32_t rsig;
    int comm_size = req->comm != NULL ? req->comm->size : 1;
    if (a->kind == CL_COLL_BCAST) {
        if (eng_sync_item(eng_el_sync(e), CL_EL_ITEM_BUFFER, i, &d, &len, NULL) == COLLAB_OK) {
            if (len != a->count) {
                char what[96];
                snprintf(what, sizeof what, "start-up broadcast #%llu has %zu bytes here and %zu "
                         "in the swarm", (unsigned long long)i, a->count, len);
                        eng_admit_foreign(e, what);
                cl_request_complete(req, COLLAB_ERR_MISMATCH);
                return;
            }
            if (len > 0)
                memcpy(a->recvbuf, d, len);
        }
        cl_request_complete(req, COLLAB_OK);
        return;
    }
    void *ptr;
    size_t want;
    if (eng_el_result_span(req, comm_size, &ptr, &want)) {
        if (eng_sync_item(eng_el_sync(e), CL_EL_ITEM_RESULT, i, &d, &len, &rsig) == COLLAB_OK &&
            len == want && rsig == sig) {
            if (len > 0)
                memcpy(ptr, d, len);
            (void)cl_startup_put(el->startup, i, sig, d, len);
        } else {
            cl_warn("no result of the swarm's start-up %s #%llu reached this peer; it keeps "
                    "its own input",
                    eng_coll_kind_name(a->kind), (unsigned long long)i);
            /* (Device input still on the device under the staging
               pipeline: staging copies it at completion.) */
            if (a->kind == CL_COLL_ALLREDUCE && a->sendbuf != NULL && want > 0 &&
                !cl_stage_keep_input(req))
                memcpy(a->recvbuf, a->sendbuf, want);
        }
    } else {
        /* A result that differs by rank: nothing delivered (reduce,
           gatherv), or a zero-filled receive buffer. */
        size_t z = 0;
        if (a->kind == CL_COLL_SCATTERV)
            z = a->rbytes;
        else if (a->kind == CL_COLL_ALLTOALL)
            z = a->count * (size_t)comm_size;
        else if (a->kind == CL_COLL_REDUCE_SCATTER_BLOCK)
            z = a->count * collab_dtype_extent(a->dtype);
        if (z > 0 && a->recvbuf != NULL)
            memset(a->recvbuf, 0, z);
        (void)cl_startup_put(el->startup, i, sig, NULL, 0);
    }
    cl_request_complete(req, COLLAB_OK);
}

/* Hands a request back to the engine under its mapped sequence. */
static void resubmit(struct cl_engine *e, collab_request_t *req, uint64_t idx)
{
    struct eng_elastic *el = e->el;
    stream_t *w = eng_el_world(e);
    if (w == NULL) {
        cl_request_complete(req, COLLAB_ERR_INTERNAL);
        return;
    }
    w->next_seq = el->map_seq + (idx - el->map_local);
    el->resubmit = req;
    eng_coll_submit(e, req);
    w->next_seq = el->map_seq + (el->posted - el->map_local);
}

static void answer_parked(struct cl_engine *e)
{
    struct eng_elastic *el = e->el;
    while (el->parked != NULL) {
        el_parked_t *p = el->parked;
        el->parked = p->next;
        if (el->parked == NULL)
            el->parked_tail = NULL;
        if (el->foreign)
            cl_request_complete(p->req, COLLAB_ERR_MISMATCH);
        else if (p->local < el->adm_prefix)
            answer(e, p->req, p->local);
        else
            resubmit(e, p->req, p->local);
        free(p);
    }
    if (el->foreign)
        eng_admit_leave_foreign(e);
}

/* This peer's first world collective (idx 0): when a monitor sent a
   checkpoint to resume from (cl_engine_checkpoint.c), sets up the
   joiner's numbering and pulls the checkpoint from that monitor; the
   caller goes on as for a joiner (it parks the collective until the
   pull is done). */
static void resume(struct cl_engine *e, stream_t *s, collab_request_t *req, uint64_t idx)
{
    struct eng_elastic *el = e->el;
    eng_ckpt_resume_t r;
    if (!eng_ckpt_take_resume(el->ckpt, &r))
        return;
    if (idx != 0 || el->phase != EL_IN)
        return;
    free(el->adm_sigs);
    el->adm_sigs = r.prefix > 0 ? malloc(r.prefix * sizeof *el->adm_sigs) : NULL;
    if (r.prefix > 0 && el->adm_sigs == NULL)
        return;
    if (r.prefix > 0)
        memcpy(el->adm_sigs, r.sigs, r.prefix * sizeof *el->adm_sigs);
    el->adm_nsigs = (uint32_t)r.prefix;
    eng_ckpt_resuming(el->ckpt);
    el->adm_s = r.s;
    el->adm_prefix = r.prefix;
    el->adm_gen = 0;
    el->adm_pending = false;
    el->adm_answered = false;
    el->readmit = false;
    el->phase = EL_SYNCING;
    el->mapped = true;
    el->map_local = r.prefix;
    el->map_seq = r.s;
    if (s->started < r.s)
        s->started = r.s;
    if (idx >= el->map_local)
        req->coll.seq = el->map_seq + (idx - el->map_local);
    s->next_seq = el->map_seq + (el->posted > el->map_local ? el->posted - el->map_local : 0);
    cl_info("resuming from the monitor's checkpoint of step %llu (collective #%llu); fetching it",
            (unsigned long long)r.step, (unsigned long long)r.s);
    if (!eng_el_sync_start_one(e, r.s, r.key)) {
        cl_error("out of memory starting the state sync; this peer keeps its own state");
        eng_admit_sync_finished(e);
    }
}

bool eng_admit_take(struct cl_engine *e, stream_t *s, collab_request_t *req, uint64_t idx)
{
    struct eng_elastic *el = e->el;
    resume(e, s, req, idx); /* resuming from a checkpoint: as a joiner */
    cl_peer_t *me = cl_member_self(e->mb);
    bool closed = cl_member_group_closed(e->mb);
    double now = eng_now();
    if (el->phase == EL_IN && !el->was_in_group && !el->evicted && closed &&
        e->state == ENG_MEMBER && me != NULL && !me->in_group) {
        el->phase = EL_WAITING;
        el->readmit = false;
        el->next_request = now;
        el->wait_deadline = now + wait_limit(e);
        cl_info("the group of the world communicator is running; this peer waits to be admitted "
                "at its next step boundary");
    }
    if (!el->readmit && el->phase == EL_WAITING) {
        park(el, req, idx);
        return true;
    }
    if (el->readmit && el->phase == EL_WAITING && el->hold_next && el->held == NULL) {
        /* A lost admission whose state already reached the program
           (eng_admit_undo): its next collective waits for the next one. */
        el->hold_next = false;
        el->held = req;
        el->held_local = idx;
        el->next_request = now;
        el->wait_deadline = now + wait_limit(e);
        return true;
    }
    if (!el->readmit && el->phase == EL_SYNCING) {
        if (idx >= el->adm_prefix) {
            if (eng_sync_done(eng_el_sync(e)) && el->parked == NULL) {
                el->phase = EL_IN;
                eng_el_sync_stop(e);
            }
            return false;
        }
        if (eng_sync_done(eng_el_sync(e)) && el->parked == NULL) {
            answer(e, req, idx);
            if (el->foreign)
                eng_admit_leave_foreign(e);
        } else {
            park(el, req, idx);
        }
        return true;
    }
    if (el->evicted && el->readmit && el->phase == EL_WAITING && el->held == NULL &&
        cl_stream_is_boundary(el->stream, idx) && others_alive(e)) {
        el->held = req;
        el->held_local = idx;
        el->next_request = now;
        el->wait_deadline = now + wait_limit(e);
        cl_info("holding this peer's step %llu at its first collective until the group "
                "re-admits it",
                (unsigned long long)step_of(el, idx));
        return true;
    }
    return false;
}

void eng_admit_on_admit(struct cl_engine *e, cl_peer_t *p, const cl_elmsg_t *m)
{
    struct eng_elastic *el = e->el;
    remember(e, m, p != NULL ? p->key : NULL);
    eng_el_check_admissions(e);
    const cl_el_joiner_t *mine = NULL;
    for (uint32_t j = 0; j < m->njoiners; j++)
        if (memcmp(m->joiners[j].key, e->self_key, 32) == 0)
            mine = &m->joiners[j];
    if (mine == NULL)
        return;
    if (el->phase != EL_WAITING || (el->readmit && el->held == NULL) ||
        (!el->readmit && el->parked == NULL)) {
        cl_debug("an ADMIT for this peer arrived while it was not waiting; ignored");
        return;
    }
    free(el->adm_sigs);
    el->adm_sigs = NULL;
    if (m->nsigs > 0) {
        el->adm_sigs = malloc(m->nsigs * sizeof *el->adm_sigs);
        if (el->adm_sigs == NULL) {
            cl_error("out of memory for an admission");
            return;
        }
        memcpy(el->adm_sigs, m->sigs, m->nsigs * sizeof *el->adm_sigs);
    }
    el->adm_nsigs = m->nsigs;
    /* What eng_admit_undo restores if this admission is lost. */
    el->adm_pending = true;
    el->adm_answered = false;
    el->adm_unserved = false;
    el->adm_deadline = eng_now() + eng_exchange_limit(e->cfg.timeout);
    el->adm_prev_mapped = el->mapped;
    el->adm_prev_local = el->map_local;
    el->adm_prev_seq = el->map_seq;
    el->adm_prev_in = el->was_in_group;
    el->adm_prev_evicted = el->evicted;
    el->hold_next = false;
    el->adm_s = m->s;
    el->adm_gen = m->gen;
    el->adm_prefix = m->prefix;
    el->phase = EL_SYNCING;
    el->mapped = true;
    el->map_local = el->readmit ? el->held_local : m->prefix;
    el->map_seq = m->s;
    stream_t *w = eng_el_world(e);
    if (w != NULL) {
        if (w->started < m->s)
            w->started = m->s;
        w->next_seq = m->s + (el->posted > el->map_local ? el->posted - el->map_local : 0);
    }
    cl_info("%s at collective #%llu of the group; fetching the swarm's state",
            el->readmit ? "re-admitted" : "admitted", (unsigned long long)m->s);
    if (!eng_el_sync_start(e, m->s, m, p != NULL ? p->key : NULL)) {
        cl_error("out of memory starting the state sync; this peer keeps its own state");
        eng_admit_sync_finished(e);
        return;
    }
    eng_el_sync_check_donors(e); /* finishes at once when there is nothing to ask */
}

void eng_admit_sync_finished(struct cl_engine *e)
{
    struct eng_elastic *el = e->el;
    if (el->phase != EL_SYNCING)
        return;
    const el_sync_t *y = eng_el_sync(e);
    if (el->adm_pending && eng_sync_unserved(y)) {
        /* Undone from the timer: this may run inside the sync's own. */
        el->adm_unserved = true;
        return;
    }
    el->adm_answered = true;
    size_t nitems = 0;
    uint64_t bytes = 0;
    int ndonors = 0;
    if (y != NULL)
        eng_sync_totals(y, &nitems, &bytes, &ndonors);
    if (!el->readmit) {
        cl_info("received the swarm's state from %d peer%s (%zu items, %.1f MB)", ndonors,
                ndonors == 1 ? "" : "s", nitems, (double)bytes / 1e6);
        answer_parked(e);
        return; /* EL_IN once the program is past its start-up (eng_admit_take) */
    }
    /* A straggler: overwrite its state while its program is blocked in
       the held collective. */
    size_t written = 0;
    uint64_t wbytes = 0;
    cl_statereg_entry_t ent;
    for (bool ok = cl_statereg_first(el->reg, &ent); ok;
         ok = cl_statereg_next(el->reg, ent.index, &ent)) {
        const uint8_t *d;
        size_t len;
        if (y == NULL ||
            eng_sync_item(y, CL_EL_ITEM_BUFFER, ent.index, &d, &len, NULL) != COLLAB_OK)
            continue;
        if (len != ent.bytes) {
            char what[96];
            snprintf(what, sizeof what, "start-up broadcast #%llu has %zu bytes here and %zu in "
                     "the swarm", (unsigned long long)ent.index, ent.bytes, len);
            eng_admit_foreign(e, what);
            break;
        }
        if (len > 0 && cl_statereg_write(el->reg, ent.index, 0, d, len) != COLLAB_OK) {
            cl_error("could not overwrite start-up broadcast #%llu (%zu bytes at %p) with the "
                     "swarm's contents",
                     (unsigned long long)ent.index, len, ent.addr);
            (void)cl_statereg_drop(el->reg, ent.index, "it cannot be written");
            continue;
        }
        written++;
        wbytes += len;
    }
    if (el->foreign) {
        el->evicted = false;
        el->readmit = false;
        eng_admit_leave_foreign(e); /* fails the held collective too */
        return;
    }
    cl_info("resynced with the group from %d peer%s: %zu buffers (%.1f MB) overwritten; "
            "this peer's first step back counts with weight 0",
            ndonors, ndonors == 1 ? "" : "s", written, (double)wbytes / 1e6);
    el->phase = EL_IN; /* eng_el_timer frees the pull (we may be inside it) */
    el->evicted = false;
    el->readmit = false;
    collab_request_t *req = el->held;
    uint64_t idx = el->held_local;
    el->held = NULL;
    el->hold_next = false;
    if (req != NULL)
        resubmit(e, req, idx);
    /* Later collectives taken back from the engine with it (eng_admit_undo). */
    while (el->parked != NULL) {
        el_parked_t *p = el->parked;
        el->parked = p->next;
        if (el->parked == NULL)
            el->parked_tail = NULL;
        resubmit(e, p->req, p->local);
        free(p);
    }
}

double eng_admit_timer(struct cl_engine *e, double now)
{
    struct eng_elastic *el = e->el;
    double next = now + ENG_IDLE_WAKE;
    if (is_self(e, admitter(e)))
        (void)cl_admission_expire(el->adm, now, ENG_ADMIT_REQ_EXPIRE);
    if (el->adm_pending && el->adm_unserved) {
        el->adm_unserved = false;
        eng_admit_undo(e, "live members did not serve the swarm's state");
    }
    if (el->adm_pending && cl_member_epoch(e->mb) < el->adm_gen) {
        /* The view of an admission follows its ADMIT on the same
           connection; without it the admitter never published it. */
        if (now >= el->adm_deadline)
            eng_admit_undo(e, "the view that admits it never came");
        else
            next = fmin(next, el->adm_deadline);
    }
    if (el->phase != EL_WAITING)
        return next;
    bool waits = el->readmit ? el->held != NULL : el->parked != NULL;
    if (!waits)
        return next;
    if (el->readmit && !others_alive(e)) {
        /* Nobody left to rejoin: go on alone (DESIGN §5). */
        cl_warn("no other live peer is left; this peer goes on alone");
        collab_request_t *req = el->held;
        el->held = NULL;
        stream_t *w = eng_el_world(e);
        if (w == NULL) {
            cl_request_complete(req, COLLAB_ERR_INTERNAL);
            return next;
        }
        uint64_t keep = w->next_seq;
        w->next_seq = req->coll.seq; /* the number it got when it was posted */
        el->resubmit = req;
        eng_coll_submit(e, req);
        w->next_seq = keep;
        return next;
    }
    if (now >= el->wait_deadline) {
        cl_error("gave up waiting to be %s the group of the world communicator after %.0f s",
                 el->readmit ? "re-admitted to" : "admitted to", wait_limit(e));
        eng_admit_abort(e, COLLAB_ERR_TIMEOUT);
        return next;
    }
    if (e->state == ENG_MEMBER && now >= el->next_request) {
        cl_peer_t *a = admitter(e);
        cl_elmsg_t m;
        memset(&m, 0, sizeof m);
        m.type = CL_EL_ADMIT_REQ;
        m.readmit = el->readmit ? 1 : 0;
        m.posted = el->posted;
        if (a != NULL && !is_self(e, a))
            (void)eng_el_send(e, a->key, &m);
        el->next_request = now + ENG_ADMIT_REQ_EVERY;
    }
    next = fmin(next, fmin(el->next_request, el->wait_deadline));
    return next;
}

#define UNDO_MAX 16 /* world collectives taken back from the engine at most */

void eng_admit_undo(struct cl_engine *e, const char *why)
{
    struct eng_elastic *el = e->el;
    if (!el->adm_pending)
        return;
    el->adm_pending = false;
    eng_el_sync_stop(e);
    stream_t *w = eng_el_world(e);
    collab_request_t *taken[UNDO_MAX];
    size_t n = w != NULL ? eng_coll_take_back(w, taken, UNDO_MAX) : 0;
    uint64_t local[UNDO_MAX];
    for (size_t i = 0; i < n; i++)
        local[i] = el->map_local + (taken[i]->coll.seq - el->map_seq);
    bool readmit = el->readmit || el->adm_answered;
    cl_warn("the admission at collective #%llu of the group did not take effect (%s); this "
            "peer asks to be %s again",
            (unsigned long long)el->adm_s, why, readmit ? "re-admitted" : "admitted");
    double now = eng_now();
    el->was_in_group = el->adm_prev_in;
    el->evicted = el->adm_prev_evicted;
    el->phase = EL_WAITING;
    el->next_request = now;
    el->wait_deadline = now + wait_limit(e);
    if (!el->adm_answered) {
        /* Nothing of the group's state reached the program: as before
           the ADMIT (its parked or held collectives are still here). */
        el->mapped = el->adm_prev_mapped;
        el->map_local = el->adm_prev_local;
        el->map_seq = el->adm_prev_seq;
        for (size_t i = 0; i < n; i++)
            park(el, taken[i], local[i]);
    } else {
        /* Its program runs on the state of the lost admission: like a
           straggler, it holds its next collective until it is admitted
           again, its registered buffers are then overwritten with the
           group's state and that step counts with weight 0. */
        el->readmit = true;
        el->held = NULL;
        el->hold_next = n == 0;
        if (n > 0) {
            el->held = taken[0];
            el->held_local = local[0];
        }
        for (size_t i = 1; i < n; i++)
            park(el, taken[i], local[i]);
    }
    if (w != NULL)
        w->next_seq = el->mapped ? el->map_seq + (el->posted - el->map_local) : el->posted;
}

void eng_admit_abort(struct cl_engine *e, int status)
{
    struct eng_elastic *el = e->el;
    while (el->parked != NULL) {
        el_parked_t *p = el->parked;
        el->parked = p->next;
        cl_request_complete(p->req, status);
        free(p);
    }
    el->parked_tail = NULL;
    if (el->held != NULL) {
        collab_request_t *r = el->held;
        el->held = NULL;
        cl_request_complete(r, status);
    }
    if (el->phase == EL_WAITING)
        el->phase = EL_IN;
}
