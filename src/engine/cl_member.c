/*  cl_member.c - membership records and views.

    Records live in one array of pointers (so a record's address never
    moves) with an open-addressing index on the key.  The view is a second
    array of record pointers sorted by rank.  Every change to the view goes
    through member_view_set(), which computes the delta against the
    previous view, so the coordinator's own changes (cl_member_change.c)
    and views received from the network (here) are treated exactly alike.
*/
#include "engine/cl_member_int.h"

#include "mpi_collab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t key_hash(const uint8_t key[32])
{
    uint64_t h;
    memcpy(&h, key, sizeof h); /* keys are uniformly random */
    return (size_t)(h ^ (h >> 29));
}

static int index_rebuild(cl_member_t *self, size_t cap)
{
    size_t *idx = calloc(cap, sizeof *idx);
    if (idx == NULL)
        return COLLAB_ERR_NO_MEM;
    for (size_t i = 0; i < self->nrecs; i++) {
        size_t h = key_hash(self->recs[i]->key) & (cap - 1);
        while (idx[h] != 0)
            h = (h + 1) & (cap - 1);
        idx[h] = i + 1;
    }
    free(self->index);
    self->index = idx;
    self->capindex = cap;
    return COLLAB_OK;
}

cl_member_t *cl_member_new(const uint8_t self_key[32])
{
    cl_member_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    memcpy(self->self_key, self_key, 32);
    if (index_rebuild(self, 16) != COLLAB_OK) {
        free(self);
        return NULL;
    }
    return self;
}

void cl_member_destroy(cl_member_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_member_t *self = *self_p;
    for (size_t i = 0; i < self->nrecs; i++)
        free(self->recs[i]);
    free(self->recs);
    free(self->index);
    free(self->view);
    free(self->mons);
    free(self);
    *self_p = NULL;
}

cl_peer_t *cl_member_find(const cl_member_t *self, const uint8_t key[32])
{
    size_t h = key_hash(key) & (self->capindex - 1);
    while (self->index[h] != 0) {
        cl_peer_t *p = self->recs[self->index[h] - 1];
        if (memcmp(p->key, key, 32) == 0)
            return p;
        h = (h + 1) & (self->capindex - 1);
    }
    return NULL;
}

cl_peer_t *cl_member_touch(cl_member_t *self, const uint8_t key[32])
{
    cl_peer_t *p = cl_member_find(self, key);
    if (p != NULL)
        return p;
    if (self->nrecs == self->caprecs) {
        size_t cap = self->caprecs > 0 ? self->caprecs * 2 : 16;
        cl_peer_t **r = realloc(self->recs, cap * sizeof *r);
        if (r == NULL)
            return NULL;
        self->recs = r;
        self->caprecs = cap;
    }
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    memcpy(p->key, key, 32);
    if (cl_base58_encode(key, 32, p->id, sizeof p->id) != 0)
        p->id[0] = '\0';
    p->rank = -1;
    p->prev_rank = -1;
    p->weight = 1.0;
    p->state = CL_PEER_GONE;
    self->recs[self->nrecs++] = p;
    if (self->nrecs * 2 > self->capindex) {
        if (index_rebuild(self, self->capindex * 2) != COLLAB_OK) {
            self->nrecs--;
            free(p);
            return NULL;
        }
    } else {
        size_t h = key_hash(key) & (self->capindex - 1);
        while (self->index[h] != 0)
            h = (h + 1) & (self->capindex - 1);
        self->index[h] = self->nrecs;
    }
    return p;
}

static bool is_self(const cl_member_t *self, const cl_peer_t *p)
{
    return memcmp(p->key, self->self_key, 32) == 0;
}

cl_peer_t *cl_member_self(const cl_member_t *self)
{
    return cl_member_find(self, self->self_key);
}

/* ---------------------------------------------------------------------- */

static int push(cl_peer_t ***arr, size_t *n, cl_peer_t *p)
{
    cl_peer_t **a = realloc(*arr, (*n + 1) * sizeof *a);
    if (a == NULL)
        return COLLAB_ERR_NO_MEM;
    a[(*n)++] = p;
    *arr = a;
    return COLLAB_OK;
}

/* Did the world group (members, weights, client flags, bandwidth
   figures) change? */
static bool group_changed(const cl_member_t *self, const entry_t *e, size_t n, bool group_closed)
{
    if (group_closed != self->group_closed)
        return true;
    size_t old = 0, now = 0;
    for (size_t i = 0; i < self->nview; i++)
        old += self->view[i]->in_group;
    for (size_t i = 0; i < n; i++) {
        if (!e[i].in_group)
            continue;
        now++;
        const cl_peer_t *p = e[i].p;
        if (!p->in_group || p->state == CL_PEER_GONE || p->weight != e[i].weight ||
            p->client != e[i].client || p->bw_figure != e[i].bw)
            return true;
    }
    return old != now;
}

/* group_epoch 0: computed here (the coordinator's changes). */
int member_view_set(cl_member_t *self, const entry_t *e, size_t n, uint64_t epoch,
                    const cl_settings_t *settings, bool group_closed, uint64_t group_epoch,
                    double now, cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    /* Epochs never wrap: a view past the ceiling is refused (every step
       that raises an epoch is bounded, docs/security.md §3, so an honest
       swarm never comes near it). */
    if (epoch == 0 || epoch > CL_EPOCH_MAX || group_epoch > epoch)
        return COLLAB_ERR_ARG;
    if (group_epoch == 0)
        group_epoch = self->group_epoch == 0 || group_changed(self, e, n, group_closed)
                          ? epoch
                          : self->group_epoch;
    memset(delta, 0, sizeof *delta);
    cl_peer_t **view = malloc((n > 0 ? n : 1) * sizeof *view);
    cl_peer_t **mons = malloc((n > 0 ? n : 1) * sizeof *mons);
    if (view == NULL || mons == NULL) {
        free(view);
        free(mons);
        return COLLAB_ERR_NO_MEM;
    }
    size_t nv = 0, nm = 0;
    int rc = COLLAB_OK;
    /* Mark the old members; those still marked afterwards were removed. */
    for (size_t i = 0; i < self->nview; i++)
        self->view[i]->gone_at = -1.0;
    for (size_t i = 0; i < self->nmons; i++)
        self->mons[i]->gone_at = -1.0;
    bool self_in = false;
    for (size_t i = 0; i < n && rc == COLLAB_OK; i++) {
        cl_peer_t *p = e[i].p;
        bool was_member = p->state != CL_PEER_GONE;
        if (was_member && p->monitor != e[i].monitor) {
            rc = COLLAB_ERR_ARG; /* a role never changes while a member */
            break;
        }
        if (!was_member) {
            if (e[i].monitor)
                rc = push(&delta->mon_added, &delta->nmon_added, p);
            else
                rc = push(&delta->added, &delta->nadded, p);
            p->state = CL_PEER_ALIVE;
            p->last_heard = now;
            p->suspect_since = 0;
            p->link_closed = false;
        } else if (p->in_group && !e[i].in_group) {
            rc = push(&delta->ungrouped, &delta->nungrouped, p);
        } else if (!p->in_group && e[i].in_group && !e[i].monitor) {
            /* Taken (back) into the group: it owes no collective yet.  A
               time it was first seen late, kept from before it was taken
               out, would count its first collective back as late for
               that long, and take it out again at once. */
            p->suspect_since = 0;
            if (p->state == CL_PEER_ALIVE)
                p->suspect_reason = 0;
        }
        p->gone_at = 0.0;
        p->monitor = e[i].monitor;
        p->relay = e[i].monitor && e[i].relay;
        p->rank = e[i].monitor ? -1 : e[i].rank;
        if (!e[i].monitor)
            p->prev_rank = e[i].rank;
        p->in_group = e[i].in_group && !e[i].monitor;
        p->client = e[i].client;
        p->weight = e[i].weight;
        p->bw_figure = e[i].monitor ? 0 : e[i].bw;
        if (e[i].address != p->address) {
            size_t len = strlen(e[i].address);
            if (len > CL_WIRE_STR_MAX)
                len = CL_WIRE_STR_MAX;
            memmove(p->address, e[i].address, len);
            p->address[len] = '\0';
        }
        if (e[i].monitor)
            mons[nm++] = p;
        else
            view[nv++] = p;
        if (is_self(self, p)) {
            self_in = true;
            if (!was_member)
                delta->self_added = true;
        }
    }
    for (size_t i = 0; i < self->nmons && rc == COLLAB_OK; i++) {
        cl_peer_t *p = self->mons[i];
        if (p->gone_at < 0) {
            rc = push(&delta->mon_removed, &delta->nmon_removed, p);
            p->state = CL_PEER_GONE;
            p->gone_at = now;
            if (is_self(self, p))
                delta->self_removed = true;
        }
    }
    for (size_t i = 0; i < self->nview && rc == COLLAB_OK; i++) {
        cl_peer_t *p = self->view[i];
        if (p->gone_at < 0) {
            rc = push(&delta->removed, &delta->nremoved, p);
            p->state = CL_PEER_GONE;
            p->rank = -1;
            p->in_group = false;
            p->gone_at = now;
            if (is_self(self, p))
                delta->self_removed = true;
        }
    }
    if (rc != COLLAB_OK) {
        free(view);
        free(mons);
        cl_member_delta_clear(delta);
        return rc;
    }
    (void)self_in;
    delta->group_closed_now = group_closed && !self->group_closed;
    free(self->view);
    self->view = view;
    self->nview = nv;
    free(self->mons);
    self->mons = mons;
    self->nmons = nm;
    self->epoch = epoch;
    self->group_epoch = group_epoch;
    self->settings = *settings;
    self->group_closed = group_closed;
    return COLLAB_OK;
}

/* Current view as entries (so that a coordinator change can edit it). */
entry_t *member_view_entries(const cl_member_t *self, size_t extra)
{
    entry_t *e = malloc((self->nmons + self->nview + extra + 1) * sizeof *e);
    if (e == NULL)
        return NULL;
    for (size_t i = 0; i < self->nmons; i++) {
        cl_peer_t *p = self->mons[i];
        e[i] = (entry_t){p, -1, false, false, p->weight, p->address, true, p->relay, 0};
    }
    for (size_t i = 0; i < self->nview; i++) {
        cl_peer_t *p = self->view[i];
        e[self->nmons + i] = (entry_t){p,          p->rank, p->in_group, p->client,   p->weight,
                                       p->address, false,   false,       p->bw_figure};
    }
    return e;
}

size_t member_view_nentries(const cl_member_t *self)
{
    return self->nmons + self->nview;
}

void cl_member_delta_clear(cl_member_delta_t *delta)
{
    if (delta == NULL)
        return;
    free(delta->added);
    free(delta->removed);
    free(delta->ungrouped);
    free(delta->mon_added);
    free(delta->mon_removed);
    memset(delta, 0, sizeof *delta);
}

int cl_member_apply_view(cl_member_t *self, const cl_wire_view_t *v, double now,
                         cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (v->epoch <= self->epoch)
        return 0;
    if (v->count == 0 || v->members == NULL)
        return COLLAB_ERR_ARG;
    entry_t *e = malloc(v->count * sizeof *e);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    int rc = COLLAB_OK;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_wire_member_t *m = &v->members[i];
        /* The decoder guarantees sorted unique ranks in range, unique keys
           and valid weights; check again what this class relies on. */
        bool monitor = (m->flags & CL_MEMBER_MONITOR) != 0;
        if (monitor ? m->rank != -1 || (i > 0 && !e[i - 1].monitor)
                    : m->rank < 0 || m->rank >= v->settings.world_size ||
                          (i > 0 && !e[i - 1].monitor && m->rank <= e[i - 1].rank)) {
            rc = COLLAB_ERR_ARG;
            break;
        }
        cl_peer_t *p = cl_member_touch(self, m->key);
        if (p == NULL) {
            rc = COLLAB_ERR_NO_MEM;
            break;
        }
        e[i] = (entry_t){p,
                         m->rank,
                         (m->flags & CL_MEMBER_IN_GROUP) != 0,
                         (m->flags & CL_MEMBER_CLIENT) != 0,
                         m->weight,
                         m->address != NULL ? m->address : "",
                         monitor,
                         (m->flags & CL_MEMBER_RELAY) != 0,
                         monitor ? 0 : m->bandwidth};
    }
    if (rc == COLLAB_OK) {
        cl_settings_t s;
        cl_settings_from_wire(&v->settings, false, &s);
        rc = member_view_set(self, e, v->count, v->epoch, &s,
                             (v->flags & CL_VIEW_GROUP_CLOSED) != 0, v->group_epoch, now, delta);
    }
    free(e);
    return rc == COLLAB_OK ? 1 : rc;
}

/* The first view entry with a rank of at least r (the view is sorted). */
static size_t view_lower_bound(const cl_member_t *self, int r)
{
    size_t lo = 0, hi = self->nview;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (self->view[mid]->rank < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

cl_peer_t *cl_member_at_rank(const cl_member_t *self, int r)
{
    size_t i = view_lower_bound(self, r);
    return i < self->nview && self->view[i]->rank == r ? self->view[i] : NULL;
}

void cl_settings_to_wire(const cl_settings_t *s, bool optional, cl_wire_settings_t *out)
{
    *out = (cl_wire_settings_t){
        .world_size = s->world_size,
        .strict = s->strict ? 1 : 0,
        .compression = (uint8_t)s->compression,
        .target_group = s->target_group,
        .aggregation = (uint8_t)(s->aggregation + (optional ? 1 : 0)),
        .robust_min = s->robust_min,
        .max_weight_ratio = s->max_weight_ratio,
        .verify = (uint8_t)((s->verify ? 1 : 0) + (optional ? 1 : 0)),
    };
}

void cl_settings_from_wire(const cl_wire_settings_t *w, bool optional, cl_settings_t *out)
{
    int off = optional ? 1 : 0;
    *out = (cl_settings_t){
        .world_size = w->world_size,
        .strict = w->strict != 0,
        .compression = w->compression,
        .target_group = w->target_group,
        .aggregation = w->aggregation >= off ? w->aggregation - off : 0,
        .robust_min = w->robust_min,
        .max_weight_ratio = w->max_weight_ratio,
        .verify = w->verify > off,
    };
}

bool cl_member_rank_live(const cl_member_t *self, int r, const uint8_t self_key[32])
{
    if (r < 0)
        return false;
    for (size_t i = view_lower_bound(self, r); i < self->nview && self->view[i]->rank == r; i++) {
        const cl_peer_t *q = self->view[i];
        if (q->state == CL_PEER_ALIVE || memcmp(q->key, self_key, 32) == 0)
            return true;
    }
    return false;
}

int cl_member_view(const cl_member_t *self, cl_wire_view_t *out)
{
    memset(out, 0, sizeof *out);
    size_t total = member_view_nentries(self);
    if (self->epoch == 0 || total == 0)
        return COLLAB_ERR_ARG;
    cl_wire_member_t *m = calloc(total, sizeof *m);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    for (size_t i = 0; i < self->nmons; i++) {
        const cl_peer_t *p = self->mons[i];
        memcpy(m[i].key, p->key, 32);
        m[i].rank = -1;
        m[i].flags = (uint8_t)(CL_MEMBER_MONITOR | (p->relay ? CL_MEMBER_RELAY : 0));
        m[i].weight = 1.0;
        m[i].address = p->address;
    }
    for (size_t k = 0; k < self->nview; k++) {
        const cl_peer_t *p = self->view[k];
        size_t i = self->nmons + k;
        memcpy(m[i].key, p->key, 32);
        m[i].rank = p->rank;
        m[i].flags =
            (uint8_t)((p->client ? CL_MEMBER_CLIENT : 0) | (p->in_group ? CL_MEMBER_IN_GROUP : 0));
        m[i].weight = p->weight;
        m[i].address = p->address;
        m[i].bandwidth = p->bw_figure;
    }
    out->epoch = self->epoch;
    out->group_epoch = self->group_epoch;
    cl_settings_to_wire(&self->settings, false, &out->settings);
    out->flags = self->group_closed ? CL_VIEW_GROUP_CLOSED : 0;
    out->count = (uint32_t)total;
    out->members = m;
    return COLLAB_OK;
}

cl_peer_t *const *cl_member_list(const cl_member_t *self, size_t *n)
{
    *n = self->nview;
    return self->view;
}

cl_peer_t *const *cl_member_monitors(const cl_member_t *self, size_t *n)
{
    *n = self->nmons;
    return self->mons;
}

cl_peer_t *cl_member_coordinator(const cl_member_t *self)
{
    for (size_t i = 0; i < self->nview; i++) {
        cl_peer_t *p = self->view[i];
        if (!p->client && (is_self(self, p) || p->state == CL_PEER_ALIVE))
            return p;
    }
    for (size_t i = 0; i < self->nmons; i++) {
        cl_peer_t *p = self->mons[i];
        if (is_self(self, p) || p->state == CL_PEER_ALIVE)
            return p;
    }
    return NULL;
}

cl_peer_t *cl_member_admitter(const cl_member_t *self)
{
    cl_peer_t *c = cl_member_coordinator(self);
    if (c != NULL && c->in_group && cl_member_group_closed(self))
        return c;
    /* The lowest-ranked live public member of the group; with none, its
       members reach each other through a relaying monitor
       (docs/monitor.md §8), and a client admits. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < self->nview; i++) {
            cl_peer_t *p = self->view[i];
            if ((pass == 1 || !p->client) && p->in_group &&
                (is_self(self, p) || p->state == CL_PEER_ALIVE))
                return p;
        }
    }
    return NULL;
}

cl_peer_t *cl_member_successor(const cl_member_t *self)
{
    bool first = true;
    for (size_t i = 0; i < self->nview; i++) {
        cl_peer_t *p = self->view[i];
        if (p->client || !(is_self(self, p) || p->state == CL_PEER_ALIVE))
            continue;
        if (!first)
            return p;
        first = false;
    }
    return NULL;
}

uint64_t cl_member_epoch(const cl_member_t *self)
{
    return self->epoch;
}

const cl_settings_t *cl_member_settings(const cl_member_t *self)
{
    return &self->settings;
}

uint64_t cl_member_group_epoch(const cl_member_t *self)
{
    return self->group_epoch;
}

bool cl_member_group_closed(const cl_member_t *self)
{
    return self->group_closed;
}

size_t cl_member_group(const cl_member_t *self, cl_peer_t **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nview; i++) {
        cl_peer_t *p = self->view[i];
        if (!p->in_group)
            continue;
        if (n < cap)
            out[n] = p;
        n++;
    }
    return n;
}

void cl_member_heard(cl_member_t *self, const uint8_t key[32], double now)
{
    cl_peer_t *p = cl_member_find(self, key);
    if (p != NULL)
        p->last_heard = now;
}

void cl_member_data_seen(cl_member_t *self, const uint8_t key[32], size_t bytes, double now)
{
    cl_peer_t *p = cl_member_find(self, key);
    if (p == NULL)
        return;
    double gap = now - p->last_data;
    if (p->last_data > 0 && gap > 1e-4 && gap < 1.0) {
        double bw = fmin((double)bytes / gap, 1e10);
        p->bandwidth = p->bandwidth > 0 ? 0.8 * p->bandwidth + 0.2 * bw : bw;
    }
    p->last_data = now;
}

size_t cl_member_silent(const cl_member_t *self, double now, double timeout, cl_peer_t **out,
                        size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nmons + self->nview && n < cap; i++) {
        cl_peer_t *p = i < self->nmons ? self->mons[i] : self->view[i - self->nmons];
        if (p->state == CL_PEER_ALIVE && !is_self(self, p) && p->last_heard + timeout < now)
            out[n++] = p;
    }
    return n;
}

void cl_member_purge(cl_member_t *self, double now, double keep)
{
    /* The index keeps its size, so rebuilding it cannot need more memory;
       allocate it first so that a failure leaves everything as it was. */
    size_t *idx = calloc(self->capindex, sizeof *idx);
    if (idx == NULL)
        return;
    size_t n = 0;
    for (size_t i = 0; i < self->nrecs; i++) {
        cl_peer_t *p = self->recs[i];
        double last = p->gone_at > p->last_heard ? p->gone_at : p->last_heard;
        if (p->state == CL_PEER_GONE && !is_self(self, p) && last + keep < now) {
            free(p);
            continue;
        }
        self->recs[n++] = p;
    }
    self->nrecs = n;
    free(self->index);
    self->index = idx;
    for (size_t i = 0; i < n; i++) {
        size_t h = key_hash(self->recs[i]->key) & (self->capindex - 1);
        while (idx[h] != 0)
            h = (h + 1) & (self->capindex - 1);
        idx[h] = i + 1;
    }
}
