/*  cl_engine_audit.c - the periodic check that members still hold the
    same state (docs/state-sync.md §3, "Periodic check").

    Every AUDIT_STEPS steps, at a step boundary s where nobody is admitted,
    the admitter asks every other member of the group for the hashes of
    its registered broadcast buffers (QUERY; a member answers while its
    program is blocked inside collective s, as a donor does) and hashes
    its own.  For each buffer: when one hash is held by more than half of
    the members that have it, the members holding another one have
    diverged and are taken out of the group (when the admitter is the
    coordinator, which alone changes views); they then resync like
    stragglers at the next step boundary (cl_engine_admit.c).  When no
    hash has a majority the buffer is not shared state (a scratch buffer):
    every member drops it with a warning (DROP).  An audit that does not
    hear from every member before its deadline is abandoned.  While the
    group runs all-reduces in several groups (more members than
    COLLAB_TARGET_GROUP, docs/elastic.md §9) the members' states differ by
    design, and no audit runs.
*/
#include "engine/cl_engine_elastic.h"

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

struct el_audit {
    uint64_t s;
    double deadline;
    auditee_t *m; /* m[0] is this peer */
    int n;
};

void eng_audit_destroy(el_audit_t **a_p)
{
    if (a_p == NULL || *a_p == NULL)
        return;
    el_audit_t *a = *a_p;
    for (int i = 0; i < a->n; i++)
        free(a->m[i].bufs);
    free(a->m);
    free(a);
    *a_p = NULL;
}

/* This peer's own hashes, as a donor reports them. */
static bool own_hashes(struct cl_engine *e, auditee_t *me)
{
    cl_statereg_t *reg = e->el->reg;
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

void eng_audit_maybe_start(struct cl_engine *e, uint64_t seq, uint64_t step)
{
    struct eng_elastic *el = e->el;
    if (el->audit != NULL || step == 0 || step % AUDIT_STEPS != 0 ||
        cl_statereg_count(el->reg) == 0)
        return;
    if (eng_coll_multigroup(e)) {
        /* Several groups hold different states by design: comparing them
           would take correct members out (docs/elastic.md §9). */
        if (!el->audit_skip_logged)
            cl_debug("the group runs all-reduces in several groups: the periodic state check "
                     "is off");
        el->audit_skip_logged = true;
        return;
    }
    el->audit_skip_logged = false;
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    el_audit_t *a = calloc(1, sizeof *a);
    if (a == NULL || (a->m = calloc(n + 1, sizeof *a->m)) == NULL) {
        free(a);
        return;
    }
    a->s = seq;
    a->deadline = eng_now() + eng_exchange_limit(e->cfg.timeout);
    memcpy(a->m[0].key, e->self_key, 32);
    a->n = 1;
    if (!own_hashes(e, &a->m[0])) {
        eng_audit_destroy(&a);
        return;
    }
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = seq;
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (memcmp(p->key, e->self_key, 32) == 0 || !p->in_group || p->state != CL_PEER_ALIVE)
            continue;
        memcpy(a->m[a->n].key, p->key, 32);
        a->n++;
        (void)eng_el_send(e, p->key, &q);
    }
    el->audit = a;
    cl_debug("checking that the %d members hold the same state at step %llu", a->n,
             (unsigned long long)step);
    if (a->n == 1)
        eng_audit_destroy(&el->audit);
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
static void decide(struct cl_engine *e, el_audit_t *a)
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
            (void)eng_el_send(e, a->m[i].key, &m);
        for (uint32_t k = 0; k < ndrops; k++)
            (void)cl_statereg_drop(e->el->reg, drops[k],
                                   "its contents differ between peers (no majority)");
    }
    size_t nout = 0;
    for (int i = 0; i < a->n; i++) {
        if (!diverged[i])
            continue;
        cl_peer_t *p = cl_member_find(e->mb, a->m[i].key);
        cl_warn("rank %d holds parameters that differ from the group's; it is resynced at the "
                "next step boundary",
                p != NULL ? p->rank : -1);
        memcpy(out[nout++], a->m[i].key, 32);
    }
    if (nout > 0 && eng_self_coordinates(e)) {
        eng_take_over(e);
        cl_member_delta_t d;
        if (cl_member_ungroup(e->mb, (const uint8_t(*)[32])out, nout, &d) == 1)
            eng_coordinator_commit(e, &d);
        else
            cl_member_delta_clear(&d);
    }
done:
    free(out);
    free(diverged);
    free(drops);
}

void eng_audit_on_message(struct cl_engine *e, const uint8_t key[32], const cl_elmsg_t *m)
{
    el_audit_t *a = e->el->audit;
    if (a == NULL || m->s != a->s)
        return;
    for (int i = 1; i < a->n; i++) {
        auditee_t *x = &a->m[i];
        if (memcmp(x->key, key, 32) != 0 || x->replied)
            continue;
        if (m->type == CL_EL_NACK) {
            eng_audit_destroy(&e->el->audit); /* it went past s: try another time */
            return;
        }
        x->replied = true;
        x->bufs = m->nbufs > 0 ? malloc(m->nbufs * sizeof *x->bufs) : NULL;
        if (m->nbufs > 0 && x->bufs == NULL) {
            eng_audit_destroy(&e->el->audit);
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
    decide(e, a);
    eng_audit_destroy(&e->el->audit);
}

double eng_audit_timer(struct cl_engine *e, double now)
{
    el_audit_t *a = e->el->audit;
    if (a == NULL)
        return now + ENG_IDLE_WAKE;
    bool gone = false;
    for (int i = 1; i < a->n && !gone; i++) {
        cl_peer_t *p = cl_member_find(e->mb, a->m[i].key);
        gone = p == NULL || p->state == CL_PEER_GONE || !p->in_group;
    }
    if (gone || now >= a->deadline) {
        cl_debug("the state check of collective #%llu was abandoned", (unsigned long long)a->s);
        eng_audit_destroy(&e->el->audit);
        return now + ENG_IDLE_WAKE;
    }
    return a->deadline;
}
