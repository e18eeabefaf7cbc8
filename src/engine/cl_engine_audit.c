/*  cl_engine_audit.c - the periodic check that members still hold the
    same state (docs/state-sync.md §3, "Periodic check").

    Every AUDIT_STEPS steps, at a step boundary s where nobody is admitted
    (the first one the admitter sees on the engine path once the step
    count passed a multiple of AUDIT_STEPS: boundaries run on the
    same-host fast path are not seen, and its lease brings the engine
    path back at least every FAST_LEASE_MAX seconds, cl_engine_fast.c),
    the admitter asks every other member of the group for the hashes of
    its registered broadcast buffers (QUERY; a member answers while its
    program is blocked inside collective s, as a donor does) and hashes
    its own.  For each buffer: when one hash is held by more than half of
    the members that have it, the members holding another one have
    diverged and are taken out of the group (when the admitter is the
    coordinator, which alone changes views); they then resync like
    stragglers at the next step boundary (cl_engine_admitter.c).  When no
    hash has a majority the buffer is not shared state (a scratch buffer):
    every member drops it with a warning (DROP).  An audit that does not
    hear from every member before its deadline is abandoned.  While the
    group runs all-reduces in several groups (more members than
    COLLAB_TARGET_GROUP, docs/elastic.md §9) the members' states differ by
    design, and no audit runs.

    The audit is a component (cl_engine_audit.h): it owns the check in
    progress and sees the engine only through eng_audit_ctx_t; taking
    members out of the group is the engine's, asked through take_out.
*/
#include "engine/cl_engine_audit.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_STEPS 64 /* steps between two checks */

typedef struct {
    uint8_t key[32];
    bool replied;
    cl_el_buf_t *bufs;
    uint32_t nbufs;
} auditee_t;

/* One check in progress. */
typedef struct {
    uint64_t s;
    double deadline;
    auditee_t *m; /* m[0] is this peer */
    int n;
} check_t;

struct el_audit {
    eng_audit_ctx_t ctx; /* the engine, as the audit sees it */
    int timer;           /* in ctx.timers: the running check's deadline */
    check_t *run;        /* the check in progress, or NULL */
    bool skip_logged;    /* said that several groups turn the check off */
    uint64_t last_step;  /* the step of the last check started (0: none) */
};

static void check_destroy(check_t **a_p)
{
    if (a_p == NULL || *a_p == NULL)
        return;
    check_t *a = *a_p;
    for (int i = 0; i < a->n; i++)
        free(a->m[i].bufs);
    free(a->m);
    free(a);
    *a_p = NULL;
}

static void on_timer(void *arg, double now);

el_audit_t *eng_audit_new(const eng_audit_ctx_t *ctx)
{
    el_audit_t *au = calloc(1, sizeof *au);
    if (au == NULL)
        return NULL;
    au->ctx = *ctx;
    au->timer = cl_timer_add(ctx->timers, on_timer, au);
    if (au->timer < 0) {
        free(au);
        return NULL;
    }
    return au;
}

void eng_audit_destroy(el_audit_t **a_p)
{
    if (a_p == NULL || *a_p == NULL)
        return;
    check_destroy(&(*a_p)->run);
    cl_timer_remove((*a_p)->ctx.timers, (*a_p)->timer);
    free(*a_p);
    *a_p = NULL;
}

bool eng_audit_running(const el_audit_t *a)
{
    return a != NULL && a->run != NULL;
}

/* This peer's own hashes, as a donor reports them. */
static bool own_hashes(el_audit_t *au, auditee_t *me)
{
    cl_statereg_t *reg = au->ctx.reg;
    size_t nb = cl_statereg_count(reg);
    me->bufs = calloc(nb > 0 ? nb : 1, sizeof *me->bufs);
    if (me->bufs == NULL)
        return false;
    cl_statereg_entry_t ent;
    for (bool ok = cl_statereg_first(reg, &ent); ok && me->nbufs < CL_ELMSG_MAX_ITEMS;
         ok = cl_statereg_next(reg, ent.index, &ent)) {
        cl_el_buf_t *b = &me->bufs[me->nbufs];
        if (cl_statereg_hash(reg, ent.index, b->hash) != COLLAB_OK) {
            (void)cl_statereg_drop(reg, ent.index, "it can no longer be read");
            continue;
        }
        b->index = ent.index;
        b->size = ent.bytes;
        me->nbufs++;
    }
    me->replied = true;
    return true;
}

/* A multiple of AUDIT_STEPS passed since the last check at `step`, none
   runs and something is registered (the step is in the admitter's
   numbering, which a new admitter's group may restart lower). */
static bool passed(const el_audit_t *au, uint64_t step)
{
    uint64_t last = step < au->last_step ? step : au->last_step;
    return au->run == NULL && step != 0 && step / AUDIT_STEPS > last / AUDIT_STEPS &&
           cl_statereg_count(au->ctx.reg) > 0;
}

bool eng_audit_due(const el_audit_t *au, uint64_t steps)
{
    return au != NULL && passed(au, steps) && !au->ctx.multigroup(au->ctx.arg);
}

void eng_audit_maybe_start(el_audit_t *au, uint64_t seq, uint64_t step)
{
    if (step < au->last_step)
        au->last_step = step; /* another numbering (a new admitter's group) */
    if (!passed(au, step))
        return;
    if (au->ctx.multigroup(au->ctx.arg)) {
        /* Several groups hold different states by design: comparing them
           would take correct members out (docs/elastic.md §9). */
        if (!au->skip_logged)
            cl_debug("the group runs all-reduces in several groups: the periodic state check "
                     "is off");
        au->skip_logged = true;
        return;
    }
    au->skip_logged = false;
    au->last_step = step;
    size_t n;
    cl_peer_t *const *list = au->ctx.members(au->ctx.arg, &n);
    check_t *a = calloc(1, sizeof *a);
    if (a == NULL || (a->m = calloc(n + 1, sizeof *a->m)) == NULL) {
        free(a);
        return;
    }
    a->s = seq;
    a->deadline = au->ctx.now(au->ctx.arg) + eng_exchange_limit(au->ctx.cfg->timeout);
    memcpy(a->m[0].key, au->ctx.self_key, 32);
    a->n = 1;
    if (!own_hashes(au, &a->m[0])) {
        check_destroy(&a);
        return;
    }
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = seq;
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (memcmp(p->key, au->ctx.self_key, 32) == 0 || !p->in_group || p->state != CL_PEER_ALIVE)
            continue;
        memcpy(a->m[a->n].key, p->key, 32);
        a->n++;
        (void)au->ctx.send(au->ctx.arg, p->key, &q);
    }
    au->run = a;
    cl_timer_arm(au->ctx.timers, au->timer, a->deadline);
    cl_debug("checking that the %d members hold the same state at step %llu", a->n,
             (unsigned long long)step);
    if (a->n == 1)
        check_destroy(&au->run);
}

static const cl_el_buf_t *find_buf(const auditee_t *m, uint64_t index)
{
    for (uint32_t k = 0; k < m->nbufs; k++)
        if (m->bufs[k].index == index)
            return &m->bufs[k];
    return NULL;
}

static bool same(const cl_el_buf_t *x, const cl_el_buf_t *y)
{
    return x->size == y->size && memcmp(x->hash, y->hash, CL_ELMSG_HASH) == 0;
}

/* Every member answered: decide. */
static void decide(el_audit_t *au, check_t *a)
{
    uint8_t(*out)[32] = calloc((size_t)a->n, 32);
    bool *diverged = calloc((size_t)a->n, sizeof *diverged);
    uint64_t *drops = calloc(a->m[0].nbufs > 0 ? a->m[0].nbufs : 1, sizeof *drops);
    uint32_t ndrops = 0;
    if (out == NULL || diverged == NULL || drops == NULL)
        goto done;
    /* The buffers this peer has (the others registered the same ones,
       running the same program). */
    for (uint32_t k = 0; k < a->m[0].nbufs; k++) {
        uint64_t index = a->m[0].bufs[k].index;
        int have = 0;
        for (int i = 0; i < a->n; i++)
            have += find_buf(&a->m[i], index) != NULL;
        const cl_el_buf_t *major = NULL;
        for (int i = 0; i < a->n && major == NULL; i++) {
            const cl_el_buf_t *b = find_buf(&a->m[i], index);
            if (b == NULL)
                continue;
            int votes = 0;
            for (int j = 0; j < a->n; j++) {
                const cl_el_buf_t *c = find_buf(&a->m[j], index);
                votes += c != NULL && same(b, c);
            }
            if (2 * votes > have)
                major = b;
        }
        if (major == NULL) {
            if (have > 1)
                drops[ndrops++] = index; /* not shared state */
            continue;
        }
        for (int i = 0; i < a->n; i++) {
            const cl_el_buf_t *b = find_buf(&a->m[i], index);
            if (b != NULL && !same(b, major))
                diverged[i] = true;
        }
    }
    if (ndrops > 0) {
        cl_elmsg_t m;
        memset(&m, 0, sizeof m);
        m.type = CL_EL_DROP;
        m.s = a->s;
        m.drops = drops;
        m.ndrops = ndrops;
        for (int i = 1; i < a->n; i++)
            (void)au->ctx.send(au->ctx.arg, a->m[i].key, &m);
        for (uint32_t k = 0; k < ndrops; k++)
            (void)cl_statereg_drop(au->ctx.reg, drops[k],
                                   "its contents differ between peers (no majority)");
    }
    size_t nout = 0;
    for (int i = 0; i < a->n; i++) {
        if (!diverged[i])
            continue;
        cl_peer_t *p = au->ctx.find(au->ctx.arg, a->m[i].key);
        cl_warn("rank %d holds parameters that differ from the group's; it is resynced at the "
                "next step boundary",
                p != NULL ? p->rank : -1);
        memcpy(out[nout++], a->m[i].key, 32);
    }
    if (nout > 0)
        au->ctx.take_out(au->ctx.arg, (const uint8_t(*)[32])out, nout);
done:
    free(out);
    free(diverged);
    free(drops);
}

void eng_audit_on_message(el_audit_t *au, const uint8_t key[32], const cl_elmsg_t *m)
{
    check_t *a = au->run;
    if (a == NULL || m->s != a->s)
        return;
    for (int i = 1; i < a->n; i++) {
        auditee_t *x = &a->m[i];
        if (memcmp(x->key, key, 32) != 0 || x->replied)
            continue;
        if (m->type == CL_EL_NACK) {
            check_destroy(&au->run); /* it went past s: try another time */
            return;
        }
        x->replied = true;
        x->bufs = m->nbufs > 0 ? malloc(m->nbufs * sizeof *x->bufs) : NULL;
        if (m->nbufs > 0 && x->bufs == NULL) {
            check_destroy(&au->run);
            return;
        }
        if (m->nbufs > 0)
            memcpy(x->bufs, m->bufs, m->nbufs * sizeof *x->bufs);
        x->nbufs = m->nbufs;
        break;
    }
    for (int i = 0; i < a->n; i++)
        if (!a->m[i].replied)
            return;
    decide(au, a);
    check_destroy(&au->run);
}

void eng_audit_view_changed(el_audit_t *au)
{
    if (au != NULL && au->run != NULL)
        cl_timer_arm_by(au->ctx.timers, au->timer, au->ctx.now(au->ctx.arg));
}

/* Abandons a check past its deadline or one of whose members left the
   group; armed again at the deadline of a check that goes on. */
static void on_timer(void *arg, double now)
{
    el_audit_t *au = arg;
    check_t *a = au->run;
    if (a == NULL)
        return;
    bool gone = false;
    for (int i = 1; i < a->n && !gone; i++) {
        cl_peer_t *p = au->ctx.find(au->ctx.arg, a->m[i].key);
        gone = p == NULL || p->state == CL_PEER_GONE || !p->in_group;
    }
    if (gone || now >= a->deadline) {
        cl_debug("the state check of collective #%llu was abandoned", (unsigned long long)a->s);
        check_destroy(&au->run);
        return;
    }
    cl_timer_arm(au->ctx.timers, au->timer, a->deadline);
}
