/*  cl_engine_donor.c - a veteran serving its state to joiners
    (docs/state-sync.md §3-§5).

    A joiner admitted at sequence s asks every donor for the hashes of its
    state (QUERY).  A donor answers only while its program is blocked
    inside collective s of the world communicator, so that what it hashes
    and later sends is the state after step s - 1 on every member: a query
    that arrives earlier waits here until the program posts s, one that
    arrives after the donor went past s is refused (NACK).  The answer
    (HASHES) lists (index, size, BLAKE2b-256) of each registered broadcast
    buffer, read with process_vm_readv through cl_statereg (a buffer that
    cannot be read is dropped with a warning), and of each kept start-up
    result.  The joiner then FETCHes stripes, which go out as DATA pieces
    of CHUNK bytes; a DROP names buffers whose hashes differed between
    donors, which every donor forgets.

    The donor never blocks: every read is bounded by the stripe asked for,
    and ZeroMQ queues what it sends.

    Snapshots.  While world all-reduces run in several groups, the admitter
    is the single donor of its admission and picks s ahead of its own
    program (docs/elastic.md §9); its group at s need not hold the joiner,
    so it may complete s and go on before the joiner has fetched.  It
    therefore copies its registered buffers (and their hashes) when its
    program posts s, and answers QUERY and FETCH for s from that copy (and
    from the kept start-up results), even after it went past s.  A query
    that arrives before the copy is taken waits for it.  The contents are
    freed once every joiner of the admission fetched all of them, the
    entry after max(60 s, 12 x COLLAB_TIMEOUT).

    The donor is a component (cl_engine_donor.h): it owns its queries and
    copies and sees the engine only through eng_donor_ctx_t.
*/
#include "engine/cl_engine_donor.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)256 * 1024) /* bytes of state per DATA message */
#define MAX_QUERIES 1024           /* queries waiting at most */

typedef struct query {
    struct query *next;
    uint8_t key[32];
    uint64_t s;
} query_t;

/* A registered buffer as it was when the program posted s. */
typedef struct {
    uint64_t index;
    uint64_t size;
    uint8_t hash[CL_ELMSG_HASH];
    uint8_t *data;
} snap_item_t;

/* The state this peer serves alone for admission s. */
typedef struct snapshot {
    struct snapshot *next;
    uint64_t s;
    bool taken;     /* the program posted s and the copy is made */
    bool emptied;   /* every joiner has it all: contents freed, hashes kept */
    double expires; /* freed then, served or not */
    snap_item_t *items;
    size_t nitems;
    uint64_t total;      /* bytes of all items */
    uint8_t (*keys)[32]; /* the joiners of the admission */
    uint64_t *served;    /* bytes sent to each of them */
    uint32_t nkeys;
} snapshot_t;

#define MAX_SNAPSHOTS 4 /* admissions served from a copy at once */

/* What one joiner asked of this donor for one admission (FETCH): at most
   COLLAB_FETCH_LIMIT times the state served (docs/security-bounds.md §5). */
typedef struct {
    uint8_t key[32];
    uint64_t s;
    uint64_t bytes;   /* asked for and served */
    uint64_t refused; /* FETCHes refused past the bound */
} fetcher_t;

#define MAX_FETCHERS 256 /* joiners of admissions this donor still serves */

struct el_donor {
    eng_donor_ctx_t ctx; /* the engine, as the donor sees it */
    int timer;           /* in ctx.timers: the earliest expiry of a copy */
    query_t *head;
    size_t n;
    snapshot_t *snaps;
    size_t nsnaps;
    fetcher_t fetchers[MAX_FETCHERS];
    size_t nfetchers;
};

static void snap_free(snapshot_t *sn)
{
    for (size_t i = 0; i < sn->nitems; i++)
        free(sn->items[i].data);
    free(sn->items);
    free(sn->keys);
    free(sn->served);
    free(sn);
}

static snapshot_t *snap_of(const el_donor_t *d, uint64_t s)
{
    for (snapshot_t *sn = d->snaps; sn != NULL; sn = sn->next)
        if (sn->s == s)
            return sn;
    return NULL;
}

static void snap_unlink(el_donor_t *d, snapshot_t *sn)
{
    for (snapshot_t **pp = &d->snaps; *pp != NULL; pp = &(*pp)->next)
        if (*pp == sn) {
            *pp = sn->next;
            d->nsnaps--;
            snap_free(sn);
            return;
        }
}

static void on_timer(void *arg, double now);

el_donor_t *eng_donor_new(const eng_donor_ctx_t *ctx)
{
    el_donor_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->ctx = *ctx;
    d->timer = cl_timer_add(ctx->timers, on_timer, d);
    if (d->timer < 0) {
        free(d);
        return NULL;
    }
    return d;
}

void eng_donor_destroy(el_donor_t **d_p)
{
    if (d_p == NULL || *d_p == NULL)
        return;
    cl_timer_remove((*d_p)->ctx.timers, (*d_p)->timer);
    query_t *q = (*d_p)->head;
    while (q != NULL) {
        query_t *next = q->next;
        free(q);
        q = next;
    }
    while ((*d_p)->snaps != NULL)
        snap_unlink(*d_p, (*d_p)->snaps);
    free(*d_p);
    *d_p = NULL;
}

static void nack(el_donor_t *d, const uint8_t key[32], uint64_t s, int what, uint64_t index,
                 uint64_t offset, uint64_t len, int reason)
{
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_NACK;
    m.s = s;
    m.what = (uint8_t)what;
    m.index = index;
    m.offset = offset;
    m.len = len;
    m.reason = (uint8_t)reason;
    (void)d->ctx.send(d->ctx.arg, key, &m);
}

static void send_hashes(el_donor_t *d, const uint8_t key[32], uint64_t s)
{
    cl_statereg_t *reg = d->ctx.reg;
    const snapshot_t *sn = snap_of(d, s);
    if (sn != NULL && !sn->taken)
        sn = NULL;
    cl_startup_t *st = d->ctx.startup;
    size_t nb = cl_statereg_count(reg), nr = cl_startup_count(st);
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_HASHES;
    m.s = s;
    m.bufs = calloc(nb > 0 ? nb : 1, sizeof *m.bufs);
    m.res = calloc(nr > 0 ? nr : 1, sizeof *m.res);
    if (m.bufs == NULL || m.res == NULL) {
        cl_error("out of memory answering a joiner's state query");
        goto out;
    }
    if (sn != NULL) {
        nb = sn->nitems;
        free(m.bufs);
        m.bufs = calloc(nb > 0 ? nb : 1, sizeof *m.bufs);
        if (m.bufs == NULL) {
            cl_error("out of memory answering a joiner's state query");
            goto out;
        }
        for (size_t i = 0; i < sn->nitems && m.nbufs < CL_ELMSG_MAX_ITEMS; i++) {
            cl_el_buf_t *b = &m.bufs[m.nbufs++];
            b->index = sn->items[i].index;
            b->size = sn->items[i].size;
            memcpy(b->hash, sn->items[i].hash, CL_ELMSG_HASH);
        }
    }
    cl_statereg_entry_t ent;
    for (bool ok = sn == NULL && cl_statereg_first(reg, &ent); ok && m.nbufs < CL_ELMSG_MAX_ITEMS;
         ok = cl_statereg_next(reg, ent.index, &ent)) {
        cl_el_buf_t *b = &m.bufs[m.nbufs];
        if (cl_statereg_hash(reg, ent.index, b->hash) != COLLAB_OK) {
            (void)cl_statereg_drop(reg, ent.index, "it can no longer be read");
            continue;
        }
        b->index = ent.index;
        b->size = ent.bytes;
        m.nbufs++;
    }
    cl_startup_entry_t r;
    for (bool ok = cl_startup_first(st, &r); ok && m.nres < CL_ELMSG_MAX_ITEMS;
         ok = cl_startup_next(st, r.index, &r)) {
        cl_el_res_t *x = &m.res[m.nres++];
        x->index = r.index;
        x->signature = r.signature;
        x->len = r.len;
        cl_elmsg_hash(r.data, r.len, x->hash);
    }
    cl_debug("state query for collective #%llu: %u buffers%s, %u results", (unsigned long long)s,
             m.nbufs, sn != NULL ? " (from the copy taken at it)" : "", m.nres);
    (void)d->ctx.send(d->ctx.arg, key, &m);
out:
    free(m.bufs);
    free(m.res);
}

/* Counts bytes of a copy sent to one of its joiners; frees the copy once
   every joiner has all of it. */
static void snap_served(el_donor_t *dn, snapshot_t *sn, const uint8_t key[32], uint64_t bytes)
{
    bool all = sn->nkeys > 0;
    for (uint32_t k = 0; k < sn->nkeys; k++) {
        if (memcmp(sn->keys[k], key, 32) == 0)
            sn->served[k] += bytes;
        all = all && sn->served[k] >= sn->total;
    }
    if (all && !sn->emptied) {
        /* The contents go; the entry stays until it expires, so that the
           start-up results (kept anyway) are still served for s. */
        cl_debug("every joiner of collective #%llu has this peer's copy of its state; freeing it",
                 (unsigned long long)sn->s);
        for (size_t i = 0; i < sn->nitems; i++) {
            free(sn->items[i].data);
            sn->items[i].data = NULL;
        }
        sn->emptied = true;
    }
    (void)dn;
}

/* The record of key's FETCHes for admission s: found, or made (records
   of admissions this donor can no longer serve make room); NULL when the
   table is full of admissions still served. */
static fetcher_t *fetcher_of(el_donor_t *d, const uint8_t key[32], uint64_t s)
{
    for (size_t i = 0; i < d->nfetchers; i++)
        if (d->fetchers[i].s == s && memcmp(d->fetchers[i].key, key, 32) == 0)
            return &d->fetchers[i];
    if (d->nfetchers == MAX_FETCHERS)
        for (size_t i = 0; i < d->nfetchers;) {
            if (d->ctx.can_serve(d->ctx.arg, d->fetchers[i].s) <= 0)
                d->fetchers[i] = d->fetchers[--d->nfetchers];
            else
                i++;
        }
    if (d->nfetchers == MAX_FETCHERS)
        return NULL;
    fetcher_t *fr = &d->fetchers[d->nfetchers++];
    memset(fr, 0, sizeof *fr);
    memcpy(fr->key, key, 32);
    fr->s = s;
    return fr;
}

/* The state this donor serves for admission s: its copy, or its
   registered buffers, and the kept start-up results. */
static uint64_t state_bytes(const el_donor_t *d, uint64_t s)
{
    const snapshot_t *sn = snap_of(d, s);
    uint64_t bufs = sn != NULL && sn->taken ? sn->total : cl_statereg_total(d->ctx.reg);
    return bufs + (uint64_t)cl_startup_bytes(d->ctx.startup);
}

/* A joiner may make this donor read and queue its state only a bounded
   number of times per admission: an honest one fetches each byte once,
   again after a hash mismatch and once more from a donor that stalled,
   so COLLAB_FETCH_LIMIT (4) times the state is never reached; a FETCH
   past it is refused (NACK: an honest joiner asks another donor) and
   the flood named, at its first refusal and every power of 2 after. */
static bool fetch_admitted(el_donor_t *d, const uint8_t key[32], const cl_elmsg_t *f)
{
    fetcher_t *fr = fetcher_of(d, key, f->s);
    uint64_t state = state_bytes(d, f->s);
    uint64_t limit = (uint64_t)(d->ctx.cfg->fetch_limit > 0 ? d->ctx.cfg->fetch_limit : 4) * state;
    if (fr != NULL && f->len <= limit && fr->bytes <= limit - f->len) {
        fr->bytes += f->len;
        return true;
    }
    uint64_t n = fr != NULL ? ++fr->refused : 1;
    if ((n & (n - 1)) == 0) {
        char id[64] = "?";
        (void)cl_base58_encode(key, 32, id, sizeof id);
        cl_warn("refused %llu FETCH%s of %.12s for collective #%llu: it asked for more than "
                "COLLAB_FETCH_LIMIT=%d times the %llu bytes of state this peer serves (%llu "
                "bytes served to it already; a FETCH flood)",
                (unsigned long long)n, n == 1 ? "" : "es", id, (unsigned long long)f->s,
                d->ctx.cfg->fetch_limit, (unsigned long long)state,
                (unsigned long long)(fr != NULL ? fr->bytes : 0));
    }
    return false;
}

static void send_range(el_donor_t *d, const uint8_t key[32], const cl_elmsg_t *f)
{
    cl_statereg_t *reg = d->ctx.reg;
    uint64_t end = f->offset + f->len;
    const uint8_t *src = NULL;
    snapshot_t *sn = snap_of(d, f->s);
    if (sn != NULL && !sn->taken)
        sn = NULL;
    if (f->what == CL_EL_ITEM_BUFFER && sn != NULL) {
        const snap_item_t *it = NULL;
        for (size_t i = 0; i < sn->nitems && it == NULL; i++)
            if (sn->items[i].index == f->index)
                it = &sn->items[i];
        if (it == NULL || end > it->size || (sn->emptied && it->size > 0)) {
            nack(d, key, f->s, f->what, f->index, f->offset, f->len, CL_EL_NACK_UNKNOWN);
            return;
        }
        src = it->data;
    } else if (f->what == CL_EL_ITEM_BUFFER) {
        cl_statereg_entry_t ent;
        if (cl_statereg_find(reg, f->index, &ent) != COLLAB_OK || end > ent.bytes) {
            nack(d, key, f->s, f->what, f->index, f->offset, f->len, CL_EL_NACK_UNKNOWN);
            return;
        }
    } else {
        cl_startup_entry_t r;
        if (cl_startup_get(d->ctx.startup, f->index, &r) != COLLAB_OK || end > r.len) {
            nack(d, key, f->s, f->what, f->index, f->offset, f->len, CL_EL_NACK_UNKNOWN);
            return;
        }
        src = r.data;
    }
    uint8_t *chunk = src == NULL ? malloc(CHUNK) : NULL;
    if (src == NULL && chunk == NULL) {
        cl_error("out of memory serving a joiner");
        return;
    }
    cl_elmsg_t dm;
    memset(&dm, 0, sizeof dm);
    dm.type = CL_EL_DATA;
    dm.s = f->s;
    dm.what = f->what;
    dm.index = f->index;
    uint64_t sent = 0;
    for (uint64_t off = f->offset; off < end;) {
        size_t n = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
        if (chunk != NULL) {
            if (cl_statereg_read(reg, f->index, (size_t)off, n, chunk) != COLLAB_OK) {
                (void)cl_statereg_drop(reg, f->index, "it can no longer be read");
                nack(d, key, f->s, f->what, f->index, off, end - off, CL_EL_NACK_READ);
                break;
            }
            dm.data = chunk;
        } else {
            dm.data = src + off;
        }
        dm.offset = off;
        dm.len = n;
        if (d->ctx.send(d->ctx.arg, key, &dm) != COLLAB_OK)
            break; /* the joiner is gone; it will ask someone else */
        off += n;
        sent += n;
    }
    free(chunk);
    if (sn != NULL && f->what == CL_EL_ITEM_BUFFER)
        snap_served(d, sn, key, sent);
}

/* ---------------------------------------------------------------------- */
/* Snapshots (see the top comment). */

void eng_donor_expect(el_donor_t *d, uint64_t s, const cl_el_joiner_t *js, uint32_t nj)
{
    if (snap_of(d, s) != NULL)
        return;
    while (d->nsnaps >= MAX_SNAPSHOTS) {
        snapshot_t *old = d->snaps;
        while (old->next != NULL)
            old = old->next; /* the oldest: new ones go first */
        cl_warn("more than %d admissions wait for this peer's state; forgetting the copy for "
                "collective #%llu",
                MAX_SNAPSHOTS, (unsigned long long)old->s);
        snap_unlink(d, old);
    }
    snapshot_t *sn = calloc(1, sizeof *sn);
    if (sn == NULL)
        return; /* served live, as far as the program still is in s */
    sn->keys = nj > 0 ? calloc(nj, sizeof *sn->keys) : NULL;
    sn->served = nj > 0 ? calloc(nj, sizeof *sn->served) : NULL;
    if (nj > 0 && (sn->keys == NULL || sn->served == NULL)) {
        snap_free(sn);
        return;
    }
    for (uint32_t j = 0; j < nj; j++)
        memcpy(sn->keys[j], js[j].key, 32);
    sn->nkeys = nj;
    sn->s = s;
    sn->expires = d->ctx.now(d->ctx.arg) + eng_donor_keep_limit(d->ctx.cfg->timeout);
    cl_timer_arm_by(d->ctx.timers, d->timer, sn->expires);
    sn->next = d->snaps;
    d->snaps = sn;
    d->nsnaps++;
}

void eng_donor_on_post(el_donor_t *d, uint64_t seq)
{
    snapshot_t *sn = snap_of(d, seq);
    if (sn == NULL || sn->taken)
        return;
    cl_statereg_t *reg = d->ctx.reg;
    size_t nb = cl_statereg_count(reg);
    sn->items = calloc(nb > 0 ? nb : 1, sizeof *sn->items);
    if (sn->items == NULL) {
        cl_error("out of memory copying this peer's state for a joiner");
        snap_unlink(d, sn);
        return;
    }
    cl_statereg_entry_t ent;
    for (bool ok = cl_statereg_first(reg, &ent); ok && sn->nitems < nb;
         ok = cl_statereg_next(reg, ent.index, &ent)) {
        snap_item_t *it = &sn->items[sn->nitems];
        it->data = ent.bytes > 0 ? malloc(ent.bytes) : NULL;
        if (ent.bytes > 0 && it->data == NULL) {
            cl_error("out of memory copying this peer's state for a joiner");
            snap_unlink(d, sn);
            return;
        }
        if (ent.bytes > 0 &&
            cl_statereg_read(reg, ent.index, 0, ent.bytes, it->data) != COLLAB_OK) {
            free(it->data);
            (void)cl_statereg_drop(reg, ent.index, "it can no longer be read");
            continue;
        }
        it->index = ent.index;
        it->size = ent.bytes;
        cl_elmsg_hash(it->data, ent.bytes, it->hash);
        sn->total += ent.bytes;
        sn->nitems++;
    }
    sn->taken = true;
    cl_debug("copied this peer's state at collective #%llu for its joiners: %zu buffers, %.1f MB",
             (unsigned long long)seq, sn->nitems, (double)sn->total / 1e6);
}

void eng_donor_forget(el_donor_t *d, const uint8_t key[32])
{
    snapshot_t *sn = d->snaps;
    while (sn != NULL) {
        snapshot_t *after = sn->next;
        if (sn->nkeys == 1 && memcmp(sn->keys[0], key, 32) == 0)
            snap_unlink(d, sn);
        sn = after;
    }
}

bool eng_donor_expects(const el_donor_t *d, uint64_t s, const uint8_t key[32])
{
    for (const snapshot_t *sn = d->snaps; sn != NULL; sn = sn->next)
        for (uint32_t k = 0; (s == UINT64_MAX || sn->s == s) && k < sn->nkeys; k++)
            if (memcmp(sn->keys[k], key, 32) == 0)
                return true;
    return false;
}

bool eng_donor_waiting(const el_donor_t *d)
{
    for (const snapshot_t *sn = d != NULL ? d->snaps : NULL; sn != NULL; sn = sn->next)
        if (!sn->taken)
            return true;
    return false;
}

int eng_donor_snapshot(const el_donor_t *d, uint64_t s)
{
    const snapshot_t *sn = snap_of(d, s);
    return sn == NULL ? -1 : sn->taken ? 1 : 0;
}

/* Frees copies past their time; armed again at the earliest expiry of
   those left. */
static void on_timer(void *arg, double now)
{
    el_donor_t *d = arg;
    double next = INFINITY;
    snapshot_t *sn = d->snaps;
    while (sn != NULL) {
        snapshot_t *after = sn->next;
        if (now >= sn->expires) {
            cl_debug("dropping this peer's copy of its state for collective #%llu (%s)",
                     (unsigned long long)sn->s,
                     sn->taken ? "not all fetched in time" : "its program never posted it");
            snap_unlink(d, sn);
        } else if (sn->expires < next) {
            next = sn->expires;
        }
        sn = after;
    }
    if (next < INFINITY)
        cl_timer_arm(d->ctx.timers, d->timer, next);
}

void eng_donor_on_message(el_donor_t *d, const uint8_t key[32], const cl_elmsg_t *m)
{
    int can = d->ctx.can_serve(d->ctx.arg, m->s);
    switch (m->type) {
    case CL_EL_QUERY:
        if (can > 0) {
            send_hashes(d, key, m->s);
        } else if (can < 0) {
            nack(d, key, m->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
        } else {
            for (query_t *q = d->head; q != NULL; q = q->next)
                if (q->s == m->s && memcmp(q->key, key, 32) == 0)
                    return;
            query_t *q = d->n < MAX_QUERIES ? calloc(1, sizeof *q) : NULL;
            if (q == NULL) {
                nack(d, key, m->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
                return;
            }
            memcpy(q->key, key, 32);
            q->s = m->s;
            q->next = d->head;
            d->head = q;
            d->n++;
        }
        break;
    case CL_EL_FETCH:
        if (can > 0 && !fetch_admitted(d, key, m))
            nack(d, key, m->s, m->what, m->index, m->offset, m->len, CL_EL_NACK_UNKNOWN);
        else if (can > 0)
            send_range(d, key, m);
        else
            nack(d, key, m->s, m->what, m->index, m->offset, m->len, CL_EL_NACK_MOVED);
        break;
    case CL_EL_DROP:
        for (uint32_t i = 0; i < m->ndrops; i++) {
            cl_statereg_entry_t ent;
            if (cl_statereg_find(d->ctx.reg, m->drops[i], &ent) == COLLAB_OK)
                (void)cl_statereg_drop(d->ctx.reg, m->drops[i],
                                       "its contents differ between peers");
        }
        break;
    default:
        break;
    }
}

void eng_donor_progress(el_donor_t *d)
{
    query_t **pp = &d->head;
    while (*pp != NULL) {
        query_t *q = *pp;
        int can = d->ctx.can_serve(d->ctx.arg, q->s);
        if (can == 0) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        d->n--;
        if (can > 0)
            send_hashes(d, q->key, q->s);
        else
            nack(d, q->key, q->s, CL_EL_ITEM_BUFFER, 0, 0, 0, CL_EL_NACK_MOVED);
        free(q);
    }
}
