/*  cl_member_change.c - the coordinator's changes to the membership
    (cl_member.h): founding a swarm, picking a rank, admitting, removing,
    taking out of the group and back, closing the group, weights and
    monitors.  Each edits the current view's entries and installs them
    through member_view_set, which computes the delta exactly as for a
    view received from the network (cl_member.c).
*/
#include "engine/cl_member_int.h"

#include "elastic/cl_rank.h"

#include "mpi_collab.h"

#include <stdlib.h>
#include <string.h>

int cl_member_found(cl_member_t *self, int rank, const char *address, bool client, double weight,
                    const cl_settings_t *settings)
{
    return cl_member_found_bw(self, rank, address, client, weight, 0, settings);
}

int cl_member_found_bw(cl_member_t *self, int rank, const char *address, bool client, double weight,
                       uint32_t bandwidth, const cl_settings_t *settings)
{
    cl_peer_t *me = cl_member_touch(self, self->self_key);
    if (me == NULL)
        return COLLAB_ERR_NO_MEM;
    if (rank < 0 || rank >= settings->world_size)
        rank = 0;
    entry_t e = {me,    rank,  false,    client, weight, address != NULL ? address : "",
                 false, false, bandwidth};
    cl_member_delta_t d;
    int rc = member_view_set(self, &e, 1, 1, settings, false, 1, 0.0, &d);
    cl_member_delta_clear(&d);
    return rc;
}

int cl_member_found_monitor(cl_member_t *self, const char *address, bool relay,
                            const cl_settings_t *settings)
{
    cl_peer_t *me = cl_member_touch(self, self->self_key);
    if (me == NULL)
        return COLLAB_ERR_NO_MEM;
    entry_t e = {me, -1, false, false, 1.0, address != NULL ? address : "", true, relay, 0};
    cl_member_delta_t d;
    int rc = member_view_set(self, &e, 1, 1, settings, false, 1, 0.0, &d);
    cl_member_delta_clear(&d);
    return rc;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static bool rank_free(const void *ctx, int r)
{
    const cl_member_t *self = ctx;
    return r >= 0 && r < self->settings.world_size && cl_member_at_rank(self, r) == NULL;
}

int cl_member_pick_rank(const cl_member_t *self, const uint8_t key[32], int preferred,
                        bool required)
{
    int ws = self->settings.world_size;
    cl_peer_t *p = cl_member_find(self, key);
    /* Lowest free: the view is sorted, so the first gap.  A rank whose
       holder went silent (stopped, or cut off: it may come back, and its
       program holds that rank) goes to a newcomer only when no other is
       free. */
    int r = 0;
    for (size_t i = 0; i < self->nview && self->view[i]->rank == r; i++)
        r++;
    /* The silent holders' ranks, sorted once: the scan below is then
       O(world log n), not O(world x records), for every JOIN. */
    int *silent = self->nrecs > 0 ? malloc(self->nrecs * sizeof *silent) : NULL;
    size_t nsilent = 0;
    for (size_t i = 0; silent != NULL && i < self->nrecs; i++) {
        const cl_peer_t *q = self->recs[i];
        if (q->state == CL_PEER_GONE && q->prev_rank >= r && q != p &&
            q->suspect_reason == CL_SUSPECT_SILENT)
            silent[nsilent++] = q->prev_rank;
    }
    if (nsilent > 1)
        qsort(silent, nsilent, sizeof *silent, cmp_int);
    for (int c = r; c < ws; c++) {
        if (rank_free(self, c) &&
            (nsilent == 0 || bsearch(&c, silent, nsilent, sizeof *silent, cmp_int) == NULL)) {
            r = c;
            break;
        }
    }
    free(silent);
    bool member = p != NULL && p->state != CL_PEER_GONE;
    cl_rank_ask_t ask = {
        .member = member,
        .required = required && preferred >= 0,
        .current = member ? p->rank : -1,
        .preferred = preferred,
        .remembered = {p != NULL ? p->prev_rank : -1, -1},
        .lowest_free = r < ws ? r : -1,
    };
    return cl_rank_pick(&ask, rank_free, self);
}

/* Monitors (rank -1) first, by key; then members by rank. */
static int cmp_entry_rank(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return memcmp(x->p->key, y->p->key, 32);
}

int cl_member_admit(cl_member_t *self, const uint8_t key[32], int rank, const char *address,
                    bool client, double weight, double now, cl_member_delta_t *delta)
{
    return cl_member_admit_bw(self, key, rank, address, client, weight, 0, now, delta);
}

int cl_member_admit_bw(cl_member_t *self, const uint8_t key[32], int rank, const char *address,
                       bool client, double weight, uint32_t bandwidth, double now,
                       cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (self->epoch == 0 || rank < 0 || rank >= self->settings.world_size)
        return COLLAB_ERR_RANK;
    cl_peer_t *holder = cl_member_at_rank(self, rank);
    if (holder != NULL && memcmp(holder->key, key, 32) != 0)
        return COLLAB_ERR_RANK;
    cl_peer_t *p = cl_member_touch(self, key);
    if (p == NULL)
        return COLLAB_ERR_NO_MEM;
    if (p->state != CL_PEER_GONE && p->monitor)
        return COLLAB_ERR_RANK;
    entry_t *e = member_view_entries(self, 1);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t n = member_view_nentries(self);
    size_t i;
    for (i = 0; i < n && e[i].p != p; i++)
        ;
    /* A member joining after the group formed waits for admission. */
    bool in_group = i < n ? e[i].in_group : false;
    if (i == n)
        n++;
    e[i] = (entry_t){p,     rank,  in_group, client, weight, address != NULL ? address : "",
                     false, false, bandwidth};
    qsort(e, n, sizeof *e, cmp_entry_rank);
    int rc = member_view_set(self, e, n, self->epoch + 1, &self->settings, self->group_closed, 0,
                             now, delta);
    free(e);
    return rc;
}

static bool in_keys(const uint8_t (*keys)[32], size_t n, const uint8_t *key)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(keys[i], key, 32) == 0)
            return true;
    return false;
}

int cl_member_remove(cl_member_t *self, const uint8_t (*keys)[32], size_t nkeys, double now,
                     cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    entry_t *e = member_view_entries(self, 0);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t n = 0, total = member_view_nentries(self);
    for (size_t i = 0; i < total; i++)
        if (!in_keys(keys, nkeys, e[i].p->key))
            e[n++] = e[i];
    /* A formed group whose last member is removed is open again: nobody is
       left to admit the peers that remain or come (a monitor's swarm after
       every trainer died), so they form a new group by matchmaking. */
    bool closed = self->group_closed;
    if (closed) {
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = e[i].in_group;
        closed = any;
    }
    int rc = 0;
    if (n != total) {
        rc = member_view_set(self, e, n, self->epoch + 1, &self->settings, closed, 0, now, delta);
        if (rc == COLLAB_OK)
            rc = 1;
    }
    free(e);
    return rc;
}

int cl_member_ungroup(cl_member_t *self, const uint8_t (*keys)[32], size_t nkeys,
                      cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    entry_t *e = member_view_entries(self, 0);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    bool changed = false;
    for (size_t i = 0; i < member_view_nentries(self); i++)
        if (e[i].in_group && in_keys(keys, nkeys, e[i].p->key)) {
            e[i].in_group = false;
            changed = true;
        }
    int rc = 0;
    if (changed) {
        rc = member_view_set(self, e, member_view_nentries(self), self->epoch + 1, &self->settings,
                             self->group_closed, 0, 0.0, delta);
        if (rc == COLLAB_OK)
            rc = 1;
    }
    free(e);
    return rc;
}

int cl_member_regroup_self(cl_member_t *self, cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (self->epoch == 0)
        return 0;
    entry_t *e = member_view_entries(self, 0);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t n = member_view_nentries(self), mine = n;
    bool other = false;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(e[i].p->key, self->self_key, 32) == 0)
            mine = i;
        else if (e[i].in_group)
            other = true;
    }
    int rc = 0;
    if (!other && mine < n && !e[mine].in_group && !e[mine].monitor) {
        e[mine].in_group = true;
        rc = member_view_set(self, e, n, self->epoch + 1, &self->settings, true, 0, 0.0, delta);
        if (rc == COLLAB_OK)
            rc = 1;
    }
    free(e);
    return rc;
}

int cl_member_adopt_admission(cl_member_t *self, const cl_wire_view_t *v, double now,
                              cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (self->epoch == 0 || self->epoch >= CL_EPOCH_MAX || !self->group_closed ||
        !(v->flags & CL_VIEW_GROUP_CLOSED) || v->group_epoch != v->epoch ||
        v->epoch > self->epoch || v->group_epoch <= self->group_epoch)
        return 0;
    /* Its group: members here, as here (rank, weight, figure, client),
       holding this peer's whole group; the others enter it. */
    size_t grouped = 0, kept = 0, nent = 0;
    for (size_t i = 0; i < self->nview; i++)
        grouped += self->view[i]->in_group;
    cl_peer_t **ent = malloc((v->count + 1) * sizeof *ent);
    if (ent == NULL)
        return COLLAB_ERR_NO_MEM;
    for (uint32_t i = 0; i < v->count; i++) {
        const cl_wire_member_t *x = &v->members[i];
        if (!(x->flags & CL_MEMBER_IN_GROUP) || (x->flags & CL_MEMBER_MONITOR))
            continue;
        cl_peer_t *p = cl_member_find(self, x->key);
        if (p == NULL || p->state == CL_PEER_GONE || p->monitor || p->rank != x->rank ||
            p->weight != x->weight || p->client != ((x->flags & CL_MEMBER_CLIENT) != 0) ||
            p->bw_figure != x->bandwidth) {
            free(ent);
            return 0;
        }
        if (p->in_group)
            kept++;
        else
            ent[nent++] = p;
    }
    int rc = 0;
    entry_t *e = NULL;
    if (kept == grouped && nent > 0 && (e = member_view_entries(self, 0)) != NULL) {
        /* Both in rank order (v lists its members by rank, as the
           entries are): one walk marks the entrants. */
        size_t n = member_view_nentries(self);
        for (size_t i = 0, k = 0; i < n && k < nent; i++)
            if (e[i].p == ent[k]) {
                e[i].in_group = true;
                k++;
            }
        rc = member_view_set(self, e, n, self->epoch + 1, &self->settings, true, v->group_epoch,
                             now, delta);
        if (rc == COLLAB_OK)
            rc = 1;
    } else if (kept == grouped && nent > 0) {
        rc = COLLAB_ERR_NO_MEM;
    }
    free(e);
    free(ent);
    return rc;
}

int cl_member_close_group(cl_member_t *self, cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (self->group_closed || self->epoch == 0)
        return 0;
    entry_t *e = member_view_entries(self, 0);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    for (size_t i = 0; i < member_view_nentries(self); i++)
        e[i].in_group = !e[i].monitor;
    int rc = member_view_set(self, e, member_view_nentries(self), self->epoch + 1, &self->settings,
                             true, 0, 0.0, delta);
    free(e);
    return rc == COLLAB_OK ? 1 : rc;
}

void cl_member_raise_epoch(cl_member_t *self, uint64_t epoch)
{
    if (epoch > CL_EPOCH_MAX - 1)
        epoch = CL_EPOCH_MAX - 1; /* leave room for the view that follows */
    if (self->epoch > 0 && epoch > self->epoch)
        self->epoch = epoch;
}

int cl_member_set_weight(cl_member_t *self, const uint8_t key[32], double weight)
{
    cl_peer_t *p = cl_member_find(self, key);
    if (p == NULL || p->state == CL_PEER_GONE || p->weight == weight)
        return 0;
    if (self->epoch >= CL_EPOCH_MAX)
        return 0;
    p->weight = weight;
    self->epoch++;
    if (p->in_group)
        self->group_epoch = self->epoch;
    return 1;
}

int cl_member_set_figure(cl_member_t *self, const uint8_t key[32], uint32_t kbit, double now,
                         double every)
{
    cl_peer_t *p = cl_member_find(self, key);
    if (p == NULL || p->state == CL_PEER_GONE || p->monitor || kbit == 0 || p->bw_figure == kbit)
        return 0;
    if (self->epoch >= CL_EPOCH_MAX || (p->figure_at > 0 && now - p->figure_at < every))
        return 0;
    p->bw_figure = kbit;
    p->figure_at = now;
    self->epoch++;
    if (p->in_group)
        self->group_epoch = self->epoch;
    return 1;
}

int cl_member_admit_monitor(cl_member_t *self, const uint8_t key[32], const char *address,
                            bool relay, double now, cl_member_delta_t *delta)
{
    memset(delta, 0, sizeof *delta);
    if (self->epoch == 0 || address == NULL || address[0] == '\0')
        return COLLAB_ERR_ARG;
    cl_peer_t *p = cl_member_touch(self, key);
    if (p == NULL)
        return COLLAB_ERR_NO_MEM;
    if (p->state != CL_PEER_GONE)
        return p->monitor ? COLLAB_OK : COLLAB_ERR_RANK;
    if (self->nmons >= CL_WIRE_MONITORS_MAX)
        return COLLAB_ERR_RANK;
    entry_t *e = member_view_entries(self, 1);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t n = member_view_nentries(self);
    e[n++] = (entry_t){p, -1, false, false, 1.0, address, true, relay, 0};
    qsort(e, n, sizeof *e, cmp_entry_rank);
    int rc = member_view_set(self, e, n, self->epoch + 1, &self->settings, self->group_closed, 0,
                             now, delta);
    free(e);
    return rc;
}
