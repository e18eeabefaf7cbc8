/*  cl_engine_sync.c - a joiner pulling the swarm's state
    (docs/state-sync.md §4 and §5).

    Phases.  (1) QUERY every donor (the group's live public members other
    than the peers admitted together with this one; only one of them, the
    admitter, when the group runs all-reduces in several groups, whose
    states differ: docs/elastic.md §9) and collect their
    HASHES; a donor that leaves the view or refuses is dropped.  (2) Once
    every remaining donor answered (or the query deadline passed with at
    least one answer), agree: an item (a broadcast buffer or a start-up
    result) is served with the size and hash that more than half of the
    donors that answered report, by those donors (one that reports it
    otherwise is named); a buffer on which the donors differ without such
    a majority is dropped everywhere (DROP) and this peer keeps its own
    value.  (3) Once this peer knows its own size of an agreed item (a
    monitor: at once; a straggler: from its registry; a joiner: when its
    program posts that collective, eng_sync_want in
    cl_engine_sync_bound.c, which refuses donors that declared another
    size), allocate it, cut it into
    stripes (cl_stripe_plan: up to four donors, at least 1 MiB each,
    rotated by index and rank), FETCH each stripe from its donor and copy
    the DATA pieces in.  A stripe whose donor fails, refuses or stalls is
    asked again from another donor that has the item.  (4) Check each
    assembled item against the agreed hash; on a mismatch fetch it once
    more from other donors, then give up on it with a warning.

    Everything is kept in private memory; cl_engine_admittee.c writes it into
    the program's buffers.  Every wait has a deadline.  The majority rule
    of (2), shared with a monitor's checkpoints, is in cl_sync_agree.c.

    The sync is a component (cl_engine_sync.h): it owns its donors, items
    and stripes and sees the engine only through eng_sync_ctx_t.
*/
#include "engine/cl_engine_sync.h"
#include "engine/cl_engine_sync_int.h"

#include "engine/cl_engine_timer.h"
#include "engine/cl_sync_agree.h"
#include "mpi_collab.h"

#include "elastic/cl_moshpit.h"
#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_STRIPE ((uint64_t)1 << 20) /* docs/state-sync.md §5 */
#define MAX_BUFFER ((uint64_t)1 << 36) /* a donor announcing more is not believed */

static void finish(el_sync_t *y);

/* ---------------------------------------------------------------------- */

static int send_to(el_sync_t *y, const uint8_t key[32], const cl_elmsg_t *m)
{
    return y->ctx.send(y->ctx.arg, key, m);
}

static const cl_peer_t *find(const el_sync_t *y, const uint8_t key[32])
{
    return y->ctx.find(y->ctx.arg, key);
}

static int donor_of(const el_sync_t *y, const uint8_t key[32])
{
    for (int i = 0; i < y->ndonors; i++)
        if (memcmp(y->donors[i].key, key, 32) == 0)
            return i;
    return -1;
}

item_t *eng_sync_item_of(const el_sync_t *y, int what, uint64_t index)
{
    for (size_t i = 0; i < y->nitems; i++)
        if (y->items[i].what == what && y->items[i].index == index)
            return &y->items[i];
    return NULL;
}

static void on_timer(void *arg, double now);

/* Registers y's timer, due at once: the loop looks at a pull at its next
   turn after it starts.  Frees y and returns NULL without room. */
static el_sync_t *armed(el_sync_t *y)
{
    y->timer = cl_timer_add(y->ctx.timers, on_timer, y);
    if (y->timer < 0) {
        eng_sync_destroy(&y);
        return NULL;
    }
    cl_timer_arm(y->ctx.timers, y->timer, y->ctx.now(y->ctx.arg));
    return y;
}

el_sync_t *eng_sync_start_one(const eng_sync_ctx_t *ctx, uint64_t s, const uint8_t key[32])
{
    el_sync_t *y = calloc(1, sizeof *y);
    if (y == NULL)
        return NULL;
    y->ctx = *ctx;
    y->donors = calloc(1, sizeof *y->donors);
    if (y->donors == NULL) {
        free(y);
        return NULL;
    }
    y->s = s;
    y->ndonors = 1;
    memcpy(y->donors[0].key, key, 32);
    double now = y->ctx.now(y->ctx.arg);
    y->stall = eng_sync_stall(y->ctx.cfg->timeout);
    y->deadline = now + eng_sync_limit(y->ctx.cfg->timeout);
    y->next_query = now + ENG_SYNC_REQUERY_EVERY;
    y->last_progress = now;
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = s;
    if (send_to(y, key, &q) != COLLAB_OK)
        y->donors[0].gone = true;
    return armed(y);
}

size_t eng_sync_count(const el_sync_t *sync)
{
    return sync != NULL ? sync->nitems : 0;
}

int eng_sync_item_at(const el_sync_t *sync, size_t i, int *what, uint64_t *index,
                     const uint8_t **data, size_t *len, uint32_t *signature)
{
    if (sync == NULL || i >= sync->nitems || sync->items[i].state != IT_OK)
        return COLLAB_ERR_ARG;
    const item_t *it = &sync->items[i];
    *what = it->what;
    *index = it->index;
    *data = it->data;
    *len = (size_t)it->size;
    *signature = it->signature;
    return COLLAB_OK;
}

el_sync_t *eng_sync_start(const eng_sync_ctx_t *ctx, uint64_t s, const cl_elmsg_t *admit,
                          const uint8_t *admitter)
{
    el_sync_t *y = calloc(1, sizeof *y);
    if (y == NULL)
        return NULL;
    y->ctx = *ctx;
    y->s = s;
    size_t n;
    cl_peer_t *const *list = y->ctx.members(y->ctx.arg, &n);
    y->donors = calloc(n > 0 ? n : 1, sizeof *y->donors);
    if (y->donors == NULL) {
        free(y);
        return NULL;
    }
    int members = 0, admitter_at = -1, lowest_at = -1, lowest = -1;
    /* Client-mode members donate only when the group has no public one:
       then they reach this peer through a relaying monitor
       (docs/monitor.md §8). */
    bool public = false;
    for (size_t i = 0; i < n && !public; i++)
        public = list[i]->in_group && !list[i]->client && list[i]->state == CL_PEER_ALIVE &&
                 memcmp(list[i]->key, y->ctx.self_key, 32) != 0;
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        bool joiner = false;
        for (uint32_t j = 0; j < admit->njoiners; j++)
            joiner = joiner || memcmp(admit->joiners[j].key, p->key, 32) == 0;
        if (joiner || !p->in_group || (p->client && public) || p->state != CL_PEER_ALIVE ||
            memcmp(p->key, y->ctx.self_key, 32) == 0)
            continue;
        if (admitter != NULL && memcmp(p->key, admitter, 32) == 0)
            admitter_at = y->ndonors;
        if (lowest_at < 0 || p->rank < lowest) {
            lowest_at = y->ndonors;
            lowest = p->rank;
        }
        memcpy(y->donors[y->ndonors++].key, p->key, 32);
    }
    /* Several groups (docs/elastic.md §9): the members' states differ, so
       they would agree on nothing.  One donor serves everything, so that
       this peer ends equal to one member: the admitter, else the
       lowest-ranked donor. */
    int target_group = 0;
    if (y->ndonors > 1 &&
        y->ctx.split(y->ctx.arg, admit->joiners, admit->njoiners, &members, &target_group)) {
        int pick = admitter_at >= 0 ? admitter_at : lowest_at;
        if (pick != 0)
            memcpy(y->donors[0].key, y->donors[pick].key, 32);
        y->ndonors = 1;
        const cl_peer_t *d = find(y, y->donors[0].key);
        cl_info("%d members run all-reduces in several groups (COLLAB_TARGET_GROUP=%d): taking "
                "the state from rank %d alone",
                members, target_group, d != NULL ? d->rank : -1);
    }
    double now = y->ctx.now(y->ctx.arg);
    y->stall = eng_sync_stall(y->ctx.cfg->timeout);
    y->deadline = now + eng_sync_limit(y->ctx.cfg->timeout);
    y->next_query = now + ENG_SYNC_REQUERY_EVERY;
    y->last_progress = now;
    if (y->ndonors == 0) {
        cl_warn("no member of the group can serve its state; this peer keeps its own values");
        y->agreed = true; /* nothing to fetch: eng_sync_view_changed finishes it */
        return armed(y);
    }
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = s;
    for (int i = 0; i < y->ndonors; i++)
        if (send_to(y, y->donors[i].key, &q) != COLLAB_OK)
            y->donors[i].gone = true;
    return armed(y);
}

void eng_sync_destroy(el_sync_t **sync_p)
{
    if (sync_p == NULL || *sync_p == NULL)
        return;
    el_sync_t *y = *sync_p;
    cl_timer_remove(y->ctx.timers, y->timer);
    for (int i = 0; i < y->ndonors; i++) {
        free(y->donors[i].bufs);
        free(y->donors[i].res);
    }
    for (size_t i = 0; i < y->nitems; i++) {
        free(y->items[i].data);
        free(y->items[i].holder);
    }
    free(y->donors);
    free(y->items);
    free(y->stripes);
    free(y);
    *sync_p = NULL;
}

bool eng_sync_done(const el_sync_t *sync)
{
    return sync == NULL || sync->done;
}

int eng_sync_item(const el_sync_t *sync, int what, uint64_t index, const uint8_t **data,
                  size_t *len, uint32_t *signature)
{
    const item_t *it = sync != NULL ? eng_sync_item_of(sync, what, index) : NULL;
    if (it == NULL || it->state != IT_OK)
        return COLLAB_ERR_ARG;
    *data = it->data;
    *len = (size_t)it->size;
    if (signature != NULL)
        *signature = it->signature;
    return COLLAB_OK;
}

bool eng_sync_split(const el_sync_t *sync)
{
    return sync != NULL && sync->split;
}

void eng_sync_totals(const el_sync_t *sync, size_t *nitems, uint64_t *bytes, int *ndonors)
{
    *nitems = 0;
    *bytes = 0;
    *ndonors = 0;
    if (sync == NULL)
        return;
    for (size_t i = 0; i < sync->nitems; i++)
        if (sync->items[i].state == IT_OK) {
            (*nitems)++;
            *bytes += sync->items[i].size;
        }
    for (int i = 0; i < sync->ndonors; i++)
        *ndonors += sync->donors[i].replied && !sync->donors[i].gone;
}

bool eng_sync_unserved(const el_sync_t *sync)
{
    if (sync == NULL)
        return false;
    bool failed = false;
    for (size_t i = 0; i < sync->nitems && !failed; i++)
        failed = sync->items[i].state == IT_FAILED;
    if (!failed)
        return false;
    for (int d = 0; d < sync->ndonors; d++) {
        const cl_peer_t *p = find(sync, sync->donors[d].key);
        if ((sync->donors[d].stalled || sync->donors[d].moved) && p != NULL &&
            p->state == CL_PEER_ALIVE && !p->link_closed)
            return true;
    }
    return false;
}

/* ---------------------------------------------------------------------- */
/* Agreement and planning. */

static int add_item(el_sync_t *y, int what, uint64_t index, uint64_t size, uint32_t sig,
                    const uint8_t hash[CL_ELMSG_HASH])
{
    if (size > (what == CL_EL_ITEM_BUFFER ? MAX_BUFFER : (uint64_t)CL_STARTUP_DEFAULT_CAP)) {
        cl_warn("a peer announced %s #%llu of %llu bytes; not fetching it",
                what == CL_EL_ITEM_BUFFER ? "start-up broadcast" : "start-up result",
                (unsigned long long)index, (unsigned long long)size);
        return COLLAB_ERR_ARG;
    }
    item_t *a = realloc(y->items, (y->nitems + 1) * sizeof *a);
    if (a == NULL)
        return COLLAB_ERR_NO_MEM;
    y->items = a;
    item_t *it = &y->items[y->nitems];
    memset(it, 0, sizeof *it);
    it->what = what;
    it->index = index;
    it->size = size;
    it->signature = sig;
    memcpy(it->hash, hash, CL_ELMSG_HASH);
    it->holder = calloc((size_t)y->ndonors, 1);
    if (it->holder == NULL)
        return COLLAB_ERR_NO_MEM;
    y->nitems++;
    return COLLAB_OK;
}

static int add_stripe(el_sync_t *y, size_t item, int donor, uint64_t offset, uint64_t len)
{
    if (y->nstripes == y->capstripes) {
        size_t cap = y->capstripes > 0 ? 2 * y->capstripes : 16;
        stripe_t *a = realloc(y->stripes, cap * sizeof *a);
        if (a == NULL)
            return COLLAB_ERR_NO_MEM;
        y->stripes = a;
        y->capstripes = cap;
    }
    y->stripes[y->nstripes++] = (stripe_t){item, donor, offset, len, 0};
    return COLLAB_OK;
}

static void fetch(el_sync_t *y, const stripe_t *st)
{
    const item_t *it = &y->items[st->item];
    cl_elmsg_t f;
    memset(&f, 0, sizeof f);
    f.type = CL_EL_FETCH;
    f.s = y->s;
    f.what = (uint8_t)it->what;
    f.index = it->index;
    f.offset = st->offset + st->got;
    f.len = st->len - st->got;
    if (send_to(y, y->donors[st->donor].key, &f) != COLLAB_OK)
        y->donors[st->donor].gone = true;
}

static bool stripe_open(const stripe_t *st);

/* Does donor d owe an open stripe of an item still being fetched? */
static bool owes(const el_sync_t *y, int d)
{
    for (size_t k = 0; k < y->nstripes; k++)
        if (y->stripes[k].donor == d && stripe_open(&y->stripes[k]) &&
            y->items[y->stripes[k].item].state == IT_FETCHING)
            return true;
    return false;
}

/* Plans (or plans again) every stripe of item i over the donors that
   hold it and are not gone; false when none is left. */
bool eng_sync_plan_item(el_sync_t *y, size_t i)
{
    item_t *it = &y->items[i];
    int hold[CL_STRIPE_MAX * 64];
    int nh = 0;
    for (int d = 0; d < y->ndonors && nh < (int)(sizeof hold / sizeof hold[0]); d++)
        if (it->holder[d] && !y->donors[d].gone)
            hold[nh++] = d;
    if (nh == 0)
        return false;
    cl_stripe_t plan[CL_STRIPE_MAX];
    int ns = cl_stripe_plan(it->size, nh, MIN_STRIPE,
                            (unsigned)(it->index + (uint64_t)y->ctx.rank(y->ctx.arg)), plan);
    if (ns <= 0)
        return false;
    for (int k = 0; k < ns; k++) {
        if (add_stripe(y, i, hold[plan[k].donor], plan[k].offset, plan[k].len) != COLLAB_OK)
            return false;
        fetch(y, &y->stripes[y->nstripes - 1]);
    }
    return true;
}

/* Reports the donors named by the majority rule, one line each. */
static void report_names(const el_sync_t *y, const cl_sync_naming_t *names, const char *what)
{
    for (int d = 0; names != NULL && d < y->ndonors; d++) {
        if (names[d].count == 0)
            continue;
        const cl_peer_t *p = find(y, y->donors[d].key);
        char more[64] = "";
        if (names[d].count > 1)
            snprintf(more, sizeof more, " (%d items in all unlike the majority)", names[d].count);
        cl_warn("%s of collective #%llu: rank %d (%.12s) %s%s", what, (unsigned long long)y->s,
                p != NULL ? p->rank : -1, p != NULL ? p->id : "?", names[d].first, more);
    }
}

/* cl_sync_agree_prune, with the donors it names reported. */
static bool keep_majority(el_sync_t *y)
{
    cl_sync_naming_t *names = calloc((size_t)y->ndonors, sizeof *names); /* NULL: nobody named */
    bool decided = cl_sync_agree_prune(names, y->donors, y->ndonors);
    report_names(y, names, "checkpoint");
    free(names);
    return decided;
}

/* Agrees on every item (cl_sync_agree_decide): one that a majority of the donors
   that answered declares alike is served by those donors, so one hostile
   donor can neither feed this peer its bytes nor make the swarm forget a
   buffer; a buffer without a majority whose declarations differ (one the
   program writes differently on each peer) is dropped everywhere (DROP)
   and this peer keeps its own value; a result without one is kept as
   this peer computed it.  A monitor pruned its donors' lists by the same
   rule already (keep_majority). */
static void agree_items(el_sync_t *y, uint64_t **drops, uint32_t *ndrops)
{
    int replied = 0;
    for (int d = 0; d < y->ndonors; d++)
        replied += y->donors[d].replied && !y->donors[d].gone;
    cl_sync_naming_t *names =
        y->ctx.cfg->monitor ? NULL : calloc((size_t)y->ndonors, sizeof *names);
    for (int res = 0; res <= 1; res++)
        for (int d = 0; d < y->ndonors; d++) {
            const donor_t *dn = &y->donors[d];
            if (!dn->replied || dn->gone)
                continue;
            uint32_t n = res ? dn->nres : dn->nbufs;
            for (uint32_t k = 0; k < n; k++) {
                uint64_t index = res ? dn->res[k].index : dn->bufs[k].index;
                bool seen = false; /* decided at the first donor that declares it */
                for (int x = 0; x < d && !seen; x++)
                    seen = cl_sync_agree_decl(&y->donors[x], res, index).has;
                if (seen)
                    continue;
                cl_sync_decl_t keep;
                int what = res ? CL_EL_ITEM_RESULT : CL_EL_ITEM_BUFFER;
                if (cl_sync_agree_decide(names, y->donors, y->ndonors, replied, res, index,
                                         &keep) != 0) {
                    if (!keep.has ||
                        add_item(y, what, index, keep.size, keep.signature, keep.hash) != COLLAB_OK)
                        continue;
                    item_t *it = &y->items[y->nitems - 1];
                    for (int x = 0; x < y->ndonors; x++) {
                        cl_sync_decl_t o = cl_sync_agree_decl(&y->donors[x], res, index);
                        it->holder[x] = o.has && cl_sync_agree_same(&o, &keep);
                    }
                    continue;
                }
                /* No majority: alike where declared (too few) is not
                   served; different declarations are the program's. */
                cl_sync_decl_t mine = cl_sync_agree_decl(dn, res, index);
                bool differ = false;
                for (int x = d + 1; x < y->ndonors && !differ; x++) {
                    cl_sync_decl_t o = cl_sync_agree_decl(&y->donors[x], res, index);
                    differ = o.has && !cl_sync_agree_same(&o, &mine);
                }
                if (!differ)
                    continue;
                if (res) {
                    cl_warn("the peers disagree on the result of start-up collective #%llu; "
                            "this peer keeps its own",
                            (unsigned long long)index);
                    continue;
                }
                cl_warn("start-up broadcast #%llu differs between the peers that would serve "
                        "it (a temporary or freed buffer?); this peer keeps its own value",
                        (unsigned long long)index);
                uint64_t *a = realloc(*drops, (*ndrops + 1) * sizeof *a);
                if (a != NULL) {
                    *drops = a;
                    a[(*ndrops)++] = index;
                }
            }
        }
    report_names(y, names, "state");
    free(names);
}

static void agree_and_plan(el_sync_t *y)
{
    uint64_t *drops = NULL;
    uint32_t ndrops = 0;
    if (y->ctx.cfg->monitor && !keep_majority(y))
        y->split = true;
    agree_items(y, &drops, &ndrops);
    y->agreed = true;
    if (ndrops > 0 && !y->ctx.cfg->monitor) { /* a monitor makes nobody forget anything */
        /* Ascending, as the wire wants it. */
        for (uint32_t a = 1; a < ndrops; a++)
            for (uint32_t b = a; b > 0 && drops[b - 1] > drops[b]; b--) {
                uint64_t t = drops[b];
                drops[b] = drops[b - 1];
                drops[b - 1] = t;
            }
        cl_elmsg_t m;
        memset(&m, 0, sizeof m);
        m.type = CL_EL_DROP;
        m.s = y->s;
        m.drops = drops;
        m.ndrops = ndrops > CL_ELMSG_MAX_ITEMS ? CL_ELMSG_MAX_ITEMS : ndrops;
        for (int d = 0; d < y->ndonors; d++)
            if (y->donors[d].replied && !y->donors[d].gone)
                (void)send_to(y, y->donors[d].key, &m);
    }
    free(drops);
    /* Nothing is allocated for an item before this peer knows its own
       size for it (docs/security-bounds.md §5): a monitor, which runs no
       program, takes what the majority declares (keep_majority); a
       straggler knows its registry now; a joiner learns each size when
       its program posts the collective (eng_sync_want). */
    for (size_t i = 0; i < y->nitems; i++) {
        item_t *it = &y->items[i];
        if (it->state != IT_FETCHING)
            continue;
        uint64_t own = 0;
        int known =
            y->ctx.own_size != NULL ? y->ctx.own_size(y->ctx.arg, it->what, it->index, &own) : 2;
        if (known == 2)
            eng_sync_start_item(y, i);
        else if (known == 1)
            eng_sync_bound_item(y, i, own);
        else
            it->state = IT_DEFERRED;
    }
    y->last_progress = y->ctx.now(y->ctx.arg);
    cl_debug("state of collective #%llu: %zu items agreed, %zu stripes asked",
             (unsigned long long)y->s, y->nitems, y->nstripes);
    finish(y);
}

/* ---------------------------------------------------------------------- */

static bool stripe_open(const stripe_t *st)
{
    return st->got < st->len;
}

/* Every stripe of item i is in: check it. */
static void check_item(el_sync_t *y, size_t i)
{
    item_t *it = &y->items[i];
    for (size_t k = 0; k < y->nstripes; k++)
        if (y->stripes[k].item == i && stripe_open(&y->stripes[k]))
            return;
    uint8_t h[CL_ELMSG_HASH];
    cl_elmsg_hash(it->data, it->size, h);
    if (memcmp(h, it->hash, CL_ELMSG_HASH) == 0) {
        it->state = IT_OK;
        y->bytes += it->size;
        return;
    }
    /* A donor's buffer changed while it was read, or a donor served bytes
       other than those whose hash it declared: once more, from the other
       donors.  The donors of this try are named (which of them, when
       several served stripes, the hash cannot tell). */
    int served = 0;
    for (size_t k = 0; k < y->nstripes; k++)
        if (y->stripes[k].item == i && it->holder[y->stripes[k].donor] == 1) {
            it->holder[y->stripes[k].donor] = 2; /* served this try */
            served++;
        }
    for (size_t k = 0; k < y->nstripes; k++) {
        int d = y->stripes[k].donor;
        if (y->stripes[k].item != i || it->holder[d] != 2)
            continue;
        it->holder[d] = 0; /* named once; no holder from now on */
        const cl_peer_t *p = find(y, y->donors[d].key);
        cl_warn("state of collective #%llu: the %s #%llu that rank %d (%.12s)%s served does not "
                "match the hash its donors declared",
                (unsigned long long)y->s,
                it->what == CL_EL_ITEM_BUFFER ? "start-up broadcast" : "start-up result",
                (unsigned long long)it->index, p != NULL ? p->rank : -1, p != NULL ? p->id : "?",
                served > 1 ? " and others" : "");
    }
    if (++it->tries > 1 || !eng_sync_plan_item(y, i)) {
        cl_warn("the swarm's %s #%llu arrived with a wrong hash; this peer keeps its own value",
                it->what == CL_EL_ITEM_BUFFER ? "start-up broadcast" : "start-up result",
                (unsigned long long)it->index);
        it->state = IT_FAILED;
    }
}

/* Stripes of donor d that are not complete go to other donors. */
static void replan_donor(el_sync_t *y, int d, int what, uint64_t index, bool all)
{
    size_t n = y->nstripes;
    for (size_t k = 0; k < n; k++) {
        stripe_t *st = &y->stripes[k];
        item_t *it = &y->items[st->item];
        if (st->donor != d || !stripe_open(st) || it->state != IT_FETCHING)
            continue;
        if (!all && (it->what != what || it->index != index))
            continue;
        it->holder[d] = 0;
        int other = -1;
        for (int x = 0; x < y->ndonors && other < 0; x++)
            if (it->holder[x] && !y->donors[x].gone)
                other = x;
        if (other < 0) {
            /* A holder that went past s without this peer, or stalled,
               while it lives: eng_sync_unserved has the admission undone
               rather than keep this peer's own value. */
            const char *why = y->donors[d].moved     ? "its holders went past that collective"
                              : y->donors[d].stalled ? "its holders stopped answering"
                                                     : "this peer keeps its own value";
            cl_warn("no peer is left to serve the swarm's %s #%llu of collective #%llu; %s",
                    it->what == CL_EL_ITEM_BUFFER ? "start-up broadcast" : "start-up result",
                    (unsigned long long)it->index, (unsigned long long)y->s, why);
            it->state = IT_FAILED;
            continue;
        }
        uint64_t off = st->offset + st->got, len = st->len - st->got;
        st->len = st->got; /* closed; the rest moves */
        size_t item = st->item;
        if (add_stripe(y, item, other, off, len) != COLLAB_OK) {
            y->items[item].state = IT_FAILED;
            continue;
        }
        fetch(y, &y->stripes[y->nstripes - 1]);
    }
}

static void finish(el_sync_t *y)
{
    if (y->done || !y->agreed)
        return;
    for (size_t i = 0; i < y->nitems; i++)
        if (y->items[i].state == IT_FETCHING)
            return;
    y->done = true;
    y->ctx.finished(y->ctx.arg); /* the admission's, or a monitor's checkpoint */
}

/* All donors that can answer did (or the deadline forces a decision). */
static void maybe_agree(el_sync_t *y, bool force)
{
    if (y->agreed)
        return;
    int replied = 0, waiting = 0;
    for (int d = 0; d < y->ndonors; d++) {
        if (y->donors[d].gone)
            continue;
        if (y->donors[d].replied)
            replied++;
        else
            waiting++;
    }
    if (waiting > 0 && !force)
        return;
    if (replied == 0) {
        cl_warn("no member of the group answered for its state; this peer keeps its own values");
        y->agreed = true;
        finish(y);
        return;
    }
    for (int d = 0; d < y->ndonors; d++)
        if (!y->donors[d].replied)
            y->donors[d].gone = true;
    agree_and_plan(y);
}

void eng_sync_on_message(el_sync_t *y, const uint8_t key[32], const cl_elmsg_t *m)
{
    int d = donor_of(y, key);
    if (d < 0 || m->s != y->s || y->done)
        return;
    donor_t *dn = &y->donors[d];
    switch (m->type) {
    case CL_EL_HASHES:
        if (dn->replied || dn->gone || y->agreed)
            return;
        dn->replied = true;
        dn->bufs = m->nbufs > 0 ? malloc(m->nbufs * sizeof *dn->bufs) : NULL;
        dn->res = m->nres > 0 ? malloc(m->nres * sizeof *dn->res) : NULL;
        if ((m->nbufs > 0 && dn->bufs == NULL) || (m->nres > 0 && dn->res == NULL)) {
            dn->gone = true;
            return;
        }
        if (m->nbufs > 0)
            memcpy(dn->bufs, m->bufs, m->nbufs * sizeof *dn->bufs);
        if (m->nres > 0)
            memcpy(dn->res, m->res, m->nres * sizeof *dn->res);
        dn->nbufs = m->nbufs;
        dn->nres = m->nres;
        maybe_agree(y, false);
        break;
    case CL_EL_DATA: {
        item_t *it = eng_sync_item_of(y, m->what, m->index);
        if (it == NULL || it->state != IT_FETCHING)
            return;
        size_t i = (size_t)(it - y->items);
        for (size_t k = 0; k < y->nstripes; k++) {
            stripe_t *st = &y->stripes[k];
            if (st->item != i || st->donor != d || !stripe_open(st) ||
                m->offset != st->offset + st->got || m->len > st->len - st->got)
                continue;
            memcpy(it->data + m->offset, m->data, (size_t)m->len);
            st->got += m->len;
            y->last_progress = y->ctx.now(y->ctx.arg);
            if (!stripe_open(st))
                check_item(y, i);
            finish(y);
            return;
        }
        cl_debug("ignored a piece of state #%llu at %llu that nobody asked for",
                 (unsigned long long)m->index, (unsigned long long)m->offset);
        break;
    }
    case CL_EL_NACK:
        if (!y->agreed) {
            dn->gone = true; /* it went past s or cannot serve */
            maybe_agree(y, false);
            return;
        }
        if (m->reason == CL_EL_NACK_MOVED)
            dn->gone = dn->moved = true;
        replan_donor(y, d, m->what, m->index, m->reason == CL_EL_NACK_MOVED);
        finish(y);
        break;
    default:
        break;
    }
}

void eng_sync_view_changed(el_sync_t *y)
{
    if (y->done)
        return;
    for (int d = 0; d < y->ndonors; d++) {
        const cl_peer_t *p = find(y, y->donors[d].key);
        /* A monitor serves a checkpoint from outside the group. */
        if (y->donors[d].gone ||
            (p != NULL && p->state != CL_PEER_GONE && (p->in_group || p->monitor)))
            continue;
        y->donors[d].gone = true;
        if (y->agreed)
            replan_donor(y, d, 0, 0, true);
    }
    if (!y->agreed)
        maybe_agree(y, false);
    finish(y);
}

/* QUERY again to every donor that has not answered. */
static void requery(el_sync_t *y)
{
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = y->s;
    for (int d = 0; d < y->ndonors; d++)
        if (!y->donors[d].replied && !y->donors[d].gone &&
            send_to(y, y->donors[d].key, &q) != COLLAB_OK)
            y->donors[d].gone = true;
}

/* The query deadline, QUERY again to the silent, and stalled donors (a
   live one asked once more first); returns when it wants to run next. */
static double timer_due(el_sync_t *y, double now)
{
    if (!y->agreed) {
        if (now >= y->deadline) {
            cl_warn("not every member answered for its state within %.0f s; going on with those "
                    "that did",
                    eng_sync_limit(y->ctx.cfg->timeout));
            maybe_agree(y, true);
        } else if (now >= y->next_query) {
            /* A donor that did not know this peer yet (a monitor serving a
               checkpoint may hear a resuming peer's QUERY before the view
               that admits it) dropped the QUERY: ask again. */
            requery(y);
            y->next_query = now + ENG_SYNC_REQUERY_EVERY;
        }
        return y->agreed ? now + ENG_SYNC_AFTER_AGREE : fmin(y->deadline, y->next_query);
    }
    if (now - y->last_progress >= y->stall) {
        /* Donors that owe stripes and sent nothing for a while.  A live
           member is asked once more first: it may have dropped the FETCH
           because the ADMIT naming this peer reached it only later (its
           admitter died mid-admission and the next coordinator handed the
           ADMIT on, docs/elastic.md §3). */
        for (int d = 0; d < y->ndonors; d++) {
            if (y->donors[d].gone || !owes(y, d))
                continue;
            const cl_peer_t *p = find(y, y->donors[d].key);
            if (!y->donors[d].retried && p != NULL && p->state == CL_PEER_ALIVE &&
                !p->link_closed) {
                y->donors[d].retried = true;
                cl_debug("a peer serving the swarm's state sent nothing for %.0f s; asking it "
                         "again",
                         y->stall);
                for (size_t k = 0; k < y->nstripes; k++)
                    if (y->stripes[k].donor == d && stripe_open(&y->stripes[k]) &&
                        y->items[y->stripes[k].item].state == IT_FETCHING)
                        fetch(y, &y->stripes[k]);
                continue;
            }
            cl_warn("a peer serving the swarm's state stalled; asking another");
            y->donors[d].gone = true;
            y->donors[d].stalled = true;
            replan_donor(y, d, 0, 0, true);
        }
        y->last_progress = now;
        finish(y);
    }
    return y->last_progress + y->stall;
}

/* Armed again at what timer_due answers, until the pull is done. */
static void on_timer(void *arg, double now)
{
    el_sync_t *y = arg;
    if (y->done)
        return;
    double next = timer_due(y, now);
    if (!y->done)
        cl_timer_arm(y->ctx.timers, y->timer, next);
}
