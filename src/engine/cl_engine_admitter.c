/*  cl_engine_admitter.c - the admitter: admission of joiners and
    stragglers into the world group at step boundaries (docs/elastic.md
    §3, §6 and §9).

    Admissions are decided by the coordinator when it is in the world
    group; when it is not (a newcomer took the lowest free rank), by the
    lowest-ranked live public member of the group, the only peer whose
    stream can tell where the group's steps begin.  Peers outside the
    group send ADMIT_REQ every second; the admitter queues them in its
    cl_admission (which tracks the view and the ranks; a request not
    repeated for ENG_ADMIT_REQ_EXPIRE seconds expires, from its timer)
    and, each time its own program posts a world collective that begins a
    step (cl_stream), admits every waiting peer: it sends ADMIT (the
    sequence s, the start-up prefix P, the signatures of the start-up
    collectives, the joiners) to every member and joiner, then installs
    and publishes a view that puts the joiners into the group, whose
    generation takes effect at s.  Its own collective s starts under that
    generation.  Once collective s completes it logs the admission.  While
    world all-reduces run in several groups, s is a step boundary at least
    one step ahead of the collective it is in (groups without it may run
    ahead of it), and it serves the joiners alone from a copy of its state
    taken at s (cl_engine_donor.c; docs/elastic.md §9).

    The joiner's and the straggler's side is cl_engine_admittee.c.  This
    file sees the engine only through eng_admitter_ctx_t.
*/
#include "engine/cl_engine_admitter.h"

#include "coll/cl_coll.h"
#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct el_admitter {
    eng_admitter_ctx_t ctx; /* the engine, as the admitter sees it */
    int timer;              /* in ctx.timers: the next expiry of queued requests */
    cl_admission_t *adm;    /* the peers waiting to be admitted */
    /* An admission to report once its collective completes. */
    bool report_pending;
    uint64_t report_s, report_step;
    int report_rank;     /* one admitted rank (the first) */
    bool report_readmit; /* it was a straggler */
    size_t report_n;     /* peers admitted */
    bool startup_warned;
};

static bool is_key(const cl_peer_t *p, const uint8_t key[32])
{
    return p != NULL && memcmp(p->key, key, 32) == 0;
}

static bool admits(const el_admitter_t *a)
{
    return is_key(cl_member_admitter(a->ctx.mb), a->ctx.self_key);
}

bool eng_admitter_admits(const el_admitter_t *a)
{
    return a != NULL && a->ctx.may_admit(a->ctx.arg) && admits(a);
}

static uint64_t step_of(const cl_stream_t *stream, uint64_t idx)
{
    uint64_t p = cl_stream_prefix(stream), t = cl_stream_period(stream);
    if (p == CL_STREAM_NONE || t == 0 || idx < p)
        return idx;
    return (idx - p) / t;
}

uint64_t eng_admitter_step(const el_admitter_t *a, uint64_t seq)
{
    return step_of(a->ctx.stream, seq);
}

/* Requests not repeated for ENG_ADMIT_REQ_EXPIRE seconds leave the queue;
   checked every ENG_ADMIT_REQ_EVERY while some are queued. */
static void on_timer(void *arg, double now)
{
    el_admitter_t *a = arg;
    if (admits(a))
        (void)cl_admission_expire(a->adm, now, ENG_ADMIT_REQ_EXPIRE);
    if (cl_admission_pending(a->adm) > 0)
        cl_timer_arm(a->ctx.timers, a->timer, now + ENG_ADMIT_REQ_EVERY);
}

el_admitter_t *eng_admitter_new(const eng_admitter_ctx_t *ctx)
{
    el_admitter_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->ctx = *ctx;
    a->adm = cl_admission_new(ctx->cfg->world_size > 0 ? ctx->cfg->world_size : 1);
    a->timer = a->adm != NULL ? cl_timer_add(ctx->timers, on_timer, a) : -1;
    if (a->timer < 0) {
        cl_admission_destroy(&a->adm);
        free(a);
        return NULL;
    }
    return a;
}

void eng_admitter_destroy(el_admitter_t **a_p)
{
    if (a_p == NULL || *a_p == NULL)
        return;
    el_admitter_t *a = *a_p;
    cl_timer_remove(a->ctx.timers, a->timer);
    cl_admission_destroy(&a->adm);
    free(a);
    *a_p = NULL;
}

int eng_admitter_view(el_admitter_t *a, const cl_adm_member_t *members, size_t n)
{
    return cl_admission_set_view(a->adm, members, n);
}

size_t eng_admitter_pending(const el_admitter_t *a)
{
    return cl_admission_pending(a->adm);
}

bool eng_admitter_reporting(const el_admitter_t *a)
{
    return a->report_pending;
}

static bool is_bcast(uint64_t index, void *arg)
{
    const el_admitter_t *a = arg;
    return index < CL_STREAM_HISTORY && a->ctx.kinds[index] == CL_COLL_BCAST + 1;
}

/* The sequence at which an admission decided while this peer's program
   is in collective seq (local index idx, a step boundary) takes effect.
   With one group, seq itself: nobody can complete it without this peer.
   With several groups (docs/elastic.md §9), groups without this peer may
   run ahead of it, so the first step boundary at least one step and
   EL_ADMIT_AHEAD collectives later, which every member learns from the
   ADMIT before it gets there; seq when no later boundary is known (steps
   marked irregularly). */
static uint64_t admission_seq(const el_admitter_t *a, uint64_t seq, uint64_t idx, bool split)
{
    if (!split)
        return seq;
    uint64_t t = cl_stream_period(a->ctx.stream);
    uint64_t ahead = t > EL_ADMIT_AHEAD ? t : EL_ADMIT_AHEAD;
    uint64_t at = cl_stream_next_boundary(a->ctx.stream, idx + ahead);
    if (at == CL_STREAM_NONE || at < idx + ahead) {
        cl_debug("no step boundary is known after collective #%llu; admitting at it",
                 (unsigned long long)seq);
        return seq;
    }
    return seq + (at - idx);
}

/* Publishes batch b, decided while this peer's program is in the world
   collective seq (local index idx, a step boundary). */
static void publish(el_admitter_t *a, uint64_t seq, uint64_t idx, cl_adm_batch_t *b)
{
    const eng_admitter_ctx_t *c = &a->ctx;
    cl_wire_view_t v;
    memset(&v, 0, sizeof v);
    cl_el_joiner_t *js = calloc(b->njoiners, sizeof *js);
    uint32_t *sigs = b->prefix > 0 ? calloc(b->prefix, sizeof *sigs) : NULL;
    if (js == NULL || (b->prefix > 0 && sigs == NULL) || cl_member_view(c->mb, &v) != COLLAB_OK)
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
        if (cl_stream_signature(c->stream, i, &sigs[i]) != COLLAB_OK)
            goto requeue;
    bool split = c->split(c->arg, js, nj);
    uint64_t now_seq = seq;
    seq = admission_seq(a, seq, idx, split);
    uint64_t t = cl_stream_period(c->stream);
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
    c->remember(c->arg, &am);
    /* ADMIT first: members must know the rule before the view arrives
       (both travel on the same connection, in order). */
    size_t n;
    cl_peer_t *const *list = cl_member_list(c->mb, &n);
    for (size_t i = 0; i < n; i++)
        if (!is_key(list[i], c->self_key))
            (void)c->send(c->arg, list[i]->key, &am);
    cl_member_delta_t d;
    int rc = cl_member_apply_view(c->mb, &v, c->now(c->arg), &d);
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
        c->serve_alone(c->arg, seq, js, nj);
    a->report_pending = true;
    a->report_s = seq;
    a->report_step = step_of(c->stream, seq); /* in the group's numbering */
    a->report_rank = js[0].rank;
    a->report_readmit = (js[0].flags & CL_EL_JOINER_READMIT) != 0;
    a->report_n = nj;
    cl_debug("admitting %u peer%s at collective #%llu (step %llu, start-up prefix %llu, "
             "generation %llu; this peer is in #%llu)",
             nj, nj == 1 ? "" : "s", (unsigned long long)seq, (unsigned long long)a->report_step,
             (unsigned long long)b->prefix, (unsigned long long)am.gen,
             (unsigned long long)now_seq);
    c->commit(c->arg, &d);
    free(v.members);
    free(js);
    free(sigs);
    return;
requeue:
    (void)cl_admission_requeue(a->adm, b);
    free(v.members);
    free(js);
    free(sigs);
}

void eng_admitter_on_post(el_admitter_t *a, uint64_t seq, uint64_t idx)
{
    const eng_admitter_ctx_t *c = &a->ctx;
    if (!c->may_admit(c->arg) || !admits(a))
        return;
    uint64_t p = cl_stream_prefix(c->stream);
    if (p == CL_STREAM_NONE || !cl_stream_is_boundary(c->stream, idx))
        return;
    c->boundary(c->arg, seq, idx); /* docs/monitor.md §7 */
    if (cl_admission_pending(a->adm) == 0) {
        c->idle(c->arg, seq, step_of(c->stream, seq));
        return;
    }
    /* An admission ahead of this collective (several groups) is still to
       come: the next one waits until it took effect. */
    if (a->report_pending && seq < a->report_s)
        return;
    if (p > CL_ELMSG_MAX_PREFIX || !cl_startup_complete(c->startup, p, is_bcast, a)) {
        if (!a->startup_warned)
            cl_warn("peers wait to be admitted, but the results of this program's %llu start-up "
                    "collectives are not all kept here (too many or too large); they cannot be "
                    "admitted",
                    (unsigned long long)p);
        a->startup_warned = true;
        return;
    }
    cl_adm_batch_t b;
    if (cl_admission_poll(a->adm, c->stream, idx, 0, &b) == 1)
        publish(a, seq, idx, &b);
    cl_adm_batch_clear(&b);
}

void eng_admitter_on_request(el_admitter_t *a, const cl_peer_t *p, const cl_elmsg_t *m)
{
    if (!admits(a) || p->in_group || p->rank < 0)
        return;
    int rank;
    double now = a->ctx.now(a->ctx.arg);
    cl_adm_state_t before = cl_admission_state(a->adm, p->key, NULL);
    int st = cl_admission_request(a->adm, p->key, -1, p->rank, m->readmit != 0, now, &rank);
    if (st < 0) {
        cl_warn("cannot queue rank %d for admission: %s", p->rank, collab_strerror(st));
        return;
    }
    cl_timer_arm_by(a->ctx.timers, a->timer, now + ENG_ADMIT_REQ_EXPIRE);
    if (before == CL_ADM_NONE)
        cl_info("rank %d asks to be %s the group; it enters at the next step boundary", p->rank,
                m->readmit ? "re-admitted to" : "admitted to");
}

void eng_admitter_on_done(el_admitter_t *a, uint64_t seq, int ncontrib)
{
    if (!a->report_pending || seq < a->report_s)
        return;
    a->report_pending = false;
    if (seq != a->report_s)
        return;
    char others[32] = "";
    if (a->report_n > 1)
        snprintf(others, sizeof others, " and %zu more", a->report_n - 1);
    /* The line of DESIGN §7. */
    cl_info("%s rank %d%s at step %llu (state sent: %zu buffers, %.1f MB)",
            a->report_readmit ? "re-admitted" : "admitted", a->report_rank, others,
            (unsigned long long)a->report_step, cl_statereg_count(a->ctx.reg),
            (double)cl_statereg_total(a->ctx.reg) / 1e6);
    cl_debug("collective #%llu completed with %d peers", (unsigned long long)seq, ncontrib);
}
