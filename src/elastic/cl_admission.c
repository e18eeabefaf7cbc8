/*  cl_admission.c - the coordinator's queue of joiners and re-admissions.

    State: the current view (sorted by rank), one history slot per rank
    (the key that held it last and when, so a key's previous rank is the
    most recent slot naming it), the queue in arrival order, and the
    occupancy of every rank (free, held by a member, reserved by a queued
    peer), rebuilt from the view and the queue after every change so that
    it can never drift.  Sizes are small (the queue holds at most
    CL_ADMISSION_MAX_QUEUE peers, a view at most the world size) and
    changes are rare (joins, failures), so plain arrays and linear scans
    are enough.
*/
#include "elastic/cl_admission.h"
#include "elastic/cl_rank.h"

#include "mpi_collab.h"

#include <stdlib.h>
#include <string.h>

enum { OCC_FREE = 0, OCC_MEMBER = 1, OCC_RESERVED = 2 };

typedef struct {
    uint8_t key[32];   /* the peer's public key */
    int preferred;     /* its COLLAB_RANK, -1 = none */
    int prev;          /* the rank it says it held, -1 = none */
    bool readmit;      /* a straggler to resync */
    cl_adm_state_t st; /* PENDING, IN_FLIGHT or STANDBY */
    int rank;          /* reserved (or its own, for a member) rank; -1 for a standby */
    double last_seen;  /* local time of its last request */
} req_t;

typedef struct {
    uint8_t key[32]; /* the key that held this rank last */
    uint64_t seq;    /* when (a counter of views), 0 = never */
} hist_t;

struct cl_admission {
    int world;              /* ranks 0 .. world-1 */
    cl_adm_member_t *view;  /* current members, by rank */
    cl_adm_member_t *bykey; /* the same, by key (for lookups) */
    size_t nview;           /* members in the view */
    hist_t *hist;           /* per rank */
    uint64_t hist_seq;      /* views installed */
    uint8_t *occ;           /* per rank: OCC_* */
    req_t *q;               /* the queue, in arrival order */
    size_t nq, capq;        /* queued peers, room */
};

cl_admission_t *cl_admission_new(int world_size)
{
    if (world_size < 1 || world_size > CL_ADMISSION_MAX_WORLD)
        return NULL;
    cl_admission_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->world = world_size;
    self->hist = calloc((size_t)world_size, sizeof *self->hist);
    self->occ = calloc((size_t)world_size, sizeof *self->occ);
    if (self->hist == NULL || self->occ == NULL) {
        cl_admission_destroy(&self);
        return NULL;
    }
    return self;
}

void cl_admission_destroy(cl_admission_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_admission_t *self = *self_p;
    free(self->view);
    free(self->bykey);
    free(self->hist);
    free(self->occ);
    free(self->q);
    free(self);
    *self_p = NULL;
}

static int find_req(const cl_admission_t *self, const uint8_t key[32])
{
    for (size_t i = 0; i < self->nq; i++)
        if (memcmp(self->q[i].key, key, 32) == 0)
            return (int)i;
    return -1;
}

static int cmp_key(const void *a, const void *b)
{
    return memcmp(((const cl_adm_member_t *)a)->key, ((const cl_adm_member_t *)b)->key, 32);
}

static const cl_adm_member_t *find_member(const cl_admission_t *self, const uint8_t key[32])
{
    if (self->nview == 0)
        return NULL;
    cl_adm_member_t probe;
    memcpy(probe.key, key, 32);
    return bsearch(&probe, self->bykey, self->nview, sizeof probe, cmp_key);
}

/* The rank key held most recently in a view this class saw, or -1. */
static int hist_rank(const cl_admission_t *self, const uint8_t key[32])
{
    int best = -1;
    uint64_t best_seq = 0;
    for (int r = 0; r < self->world; r++) {
        const hist_t *h = &self->hist[r];
        if (h->seq > best_seq && memcmp(h->key, key, 32) == 0) {
            best = r;
            best_seq = h->seq;
        }
    }
    return best;
}

static void rebuild_occ(cl_admission_t *self)
{
    memset(self->occ, OCC_FREE, (size_t)self->world);
    for (size_t i = 0; i < self->nview; i++)
        self->occ[self->view[i].rank] = OCC_MEMBER;
    for (size_t i = 0; i < self->nq; i++)
        if (self->q[i].rank >= 0 && self->occ[self->q[i].rank] == OCC_FREE)
            self->occ[self->q[i].rank] = OCC_RESERVED;
}

static bool is_free(const cl_admission_t *self, int r)
{
    return r >= 0 && r < self->world && self->occ[r] == OCC_FREE;
}

static bool rank_free(const void *ctx, int r)
{
    return is_free(ctx, r);
}

/* Gives a queued peer without a rank its rank (cl_rank_pick, with the
   rank this class saw it hold last before the one it names), or makes it
   a standby. */
static void allocate(cl_admission_t *self, req_t *q)
{
    const cl_adm_member_t *m = find_member(self, q->key);
    int lowest = -1;
    for (int k = 0; k < self->world && lowest < 0; k++)
        if (self->occ[k] == OCC_FREE)
            lowest = k;
    cl_rank_ask_t ask = {
        .member = m != NULL,
        .current = m != NULL ? m->rank : -1,
        .preferred = q->preferred,
        .remembered = {m != NULL ? -1 : hist_rank(self, q->key), q->prev},
        .lowest_free = lowest,
    };
    int r = cl_rank_pick(&ask, rank_free, self);
    q->rank = r;
    if (r < 0) {
        q->st = CL_ADM_STANDBY;
        return;
    }
    if (q->st == CL_ADM_STANDBY)
        q->st = CL_ADM_PENDING;
    if (self->occ[r] == OCC_FREE)
        self->occ[r] = OCC_RESERVED;
}

/* Standbys take freed ranks, in arrival order. */
static void promote(cl_admission_t *self)
{
    for (size_t i = 0; i < self->nq; i++) {
        if (self->q[i].st != CL_ADM_STANDBY)
            continue;
        allocate(self, &self->q[i]);
        if (self->q[i].st == CL_ADM_STANDBY)
            break; /* no rank left */
    }
}

static void remove_req(cl_admission_t *self, size_t i)
{
    memmove(&self->q[i], &self->q[i + 1], (self->nq - i - 1) * sizeof *self->q);
    self->nq--;
}

static int cmp_rank(const void *a, const void *b)
{
    const cl_adm_member_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int cl_admission_set_view(cl_admission_t *self, const cl_adm_member_t *members, size_t n)
{
    if (self == NULL || (members == NULL && n > 0) || n > (size_t)self->world)
        return COLLAB_ERR_ARG;
    cl_adm_member_t *v = NULL, *byk = NULL;
    if (n > 0) {
        v = malloc(n * sizeof *v);
        byk = malloc(n * sizeof *byk);
        if (v == NULL || byk == NULL) {
            free(v);
            free(byk);
            return COLLAB_ERR_NO_MEM;
        }
        memcpy(v, members, n * sizeof *v);
        memcpy(byk, members, n * sizeof *byk);
        qsort(v, n, sizeof *v, cmp_rank);
        qsort(byk, n, sizeof *byk, cmp_key);
    }
    for (size_t i = 0; i < n; i++) {
        bool bad = v[i].rank < 0 || v[i].rank >= self->world ||
                   (i > 0 && (v[i].rank == v[i - 1].rank || cmp_key(&byk[i], &byk[i - 1]) == 0));
        if (bad) {
            free(v);
            free(byk);
            return COLLAB_ERR_ARG;
        }
    }
    free(self->view);
    free(self->bykey);
    self->view = v;
    self->bykey = byk;
    self->nview = n;
    self->hist_seq++;
    for (size_t i = 0; i < n; i++) {
        memcpy(self->hist[v[i].rank].key, v[i].key, 32);
        self->hist[v[i].rank].seq = self->hist_seq;
    }
    /* Queued peers: admitted ones leave, ungrouped members take their own
       rank, reservations now held by someone else are given up. */
    memset(self->occ, OCC_FREE, (size_t)self->world);
    for (size_t i = 0; i < n; i++)
        self->occ[v[i].rank] = OCC_MEMBER;
    for (size_t i = 0; i < self->nq;) {
        req_t *q = &self->q[i];
        const cl_adm_member_t *m = find_member(self, q->key);
        if (m != NULL && m->in_group) {
            remove_req(self, i);
            continue;
        }
        if (m != NULL) {
            q->rank = m->rank;
            if (q->st == CL_ADM_STANDBY)
                q->st = CL_ADM_PENDING;
        } else if (q->rank >= 0 && self->occ[q->rank] == OCC_MEMBER) {
            q->rank = -1; /* taken by another member: find another below */
            if (q->st == CL_ADM_IN_FLIGHT)
                q->st = CL_ADM_PENDING;
        }
        i++;
    }
    rebuild_occ(self);
    for (size_t i = 0; i < self->nq; i++)
        if (self->q[i].rank < 0 && self->q[i].st != CL_ADM_STANDBY)
            allocate(self, &self->q[i]);
    promote(self);
    return COLLAB_OK;
}

int cl_admission_request(cl_admission_t *self, const uint8_t key[32], int preferred, int prev_rank,
                         bool readmit, double now, int *rank)
{
    if (self == NULL || key == NULL || rank == NULL)
        return COLLAB_ERR_ARG;
    if (preferred < -1 || preferred >= self->world)
        return COLLAB_ERR_RANK;
    if (prev_rank < -1 || prev_rank >= self->world)
        prev_rank = -1; /* only a hint */
    const cl_adm_member_t *m = find_member(self, key);
    if (m != NULL && m->in_group) {
        *rank = m->rank;
        return CL_ADM_MEMBER;
    }
    int i = find_req(self, key);
    if (i >= 0) {
        req_t *q = &self->q[i];
        q->last_seen = now;
        q->readmit = q->readmit || readmit;
        q->preferred = preferred;
        q->prev = prev_rank;
        *rank = q->rank;
        return (int)q->st;
    }
    if (self->nq >= CL_ADMISSION_MAX_QUEUE)
        return COLLAB_ERR_NO_MEM;
    if (self->nq == self->capq) {
        size_t cap = self->capq > 0 ? 2 * self->capq : 8;
        req_t *a = realloc(self->q, cap * sizeof *a);
        if (a == NULL)
            return COLLAB_ERR_NO_MEM;
        self->q = a;
        self->capq = cap;
    }
    req_t *q = &self->q[self->nq++];
    memset(q, 0, sizeof *q);
    memcpy(q->key, key, 32);
    q->preferred = preferred;
    q->prev = prev_rank;
    q->readmit = readmit;
    q->st = CL_ADM_STANDBY; /* until allocate() finds a rank */
    q->rank = -1;
    q->last_seen = now;
    allocate(self, q);
    *rank = q->rank;
    return (int)q->st;
}

cl_adm_state_t cl_admission_state(const cl_admission_t *self, const uint8_t key[32], int *rank)
{
    int r = -1;
    cl_adm_state_t st = CL_ADM_NONE;
    if (self != NULL && key != NULL) {
        const cl_adm_member_t *m = find_member(self, key);
        int i = find_req(self, key);
        if (m != NULL && m->in_group) {
            st = CL_ADM_MEMBER;
            r = m->rank;
        } else if (i >= 0) {
            st = self->q[i].st;
            r = self->q[i].rank;
        }
    }
    if (rank != NULL)
        *rank = r;
    return st;
}

int cl_admission_cancel(cl_admission_t *self, const uint8_t key[32])
{
    if (self == NULL || key == NULL)
        return COLLAB_ERR_ARG;
    int i = find_req(self, key);
    if (i < 0)
        return COLLAB_ERR_ARG;
    remove_req(self, (size_t)i);
    rebuild_occ(self);
    promote(self);
    return COLLAB_OK;
}

size_t cl_admission_expire(cl_admission_t *self, double now, double max_age)
{
    if (self == NULL)
        return 0;
    size_t gone = 0;
    for (size_t i = 0; i < self->nq;) {
        if (self->q[i].st != CL_ADM_IN_FLIGHT && self->q[i].last_seen < now - max_age) {
            remove_req(self, i);
            gone++;
        } else {
            i++;
        }
    }
    if (gone > 0) {
        rebuild_occ(self);
        promote(self);
    }
    return gone;
}

static size_t count_state(const cl_admission_t *self, cl_adm_state_t st)
{
    size_t n = 0;
    for (size_t i = 0; self != NULL && i < self->nq; i++)
        n += self->q[i].st == st;
    return n;
}

size_t cl_admission_pending(const cl_admission_t *self)
{
    return count_state(self, CL_ADM_PENDING);
}

size_t cl_admission_standby(const cl_admission_t *self)
{
    return count_state(self, CL_ADM_STANDBY);
}

void cl_adm_batch_clear(cl_adm_batch_t *batch)
{
    if (batch == NULL)
        return;
    free(batch->joiners);
    free(batch->members);
    memset(batch, 0, sizeof *batch);
}

int cl_admission_take(cl_admission_t *self, uint64_t s, uint64_t prefix, size_t max,
                      cl_adm_batch_t *batch)
{
    if (batch != NULL)
        memset(batch, 0, sizeof *batch);
    if (self == NULL || batch == NULL)
        return COLLAB_ERR_ARG;
    size_t k = cl_admission_pending(self);
    if (max > 0 && k > max)
        k = max;
    if (k == 0)
        return 0;
    cl_adm_joiner_t *j = calloc(k, sizeof *j);
    cl_adm_member_t *m = calloc(self->nview + k, sizeof *m);
    if (j == NULL || m == NULL) {
        free(j);
        free(m);
        return COLLAB_ERR_NO_MEM;
    }
    if (self->nview > 0)
        memcpy(m, self->view, self->nview * sizeof *m);
    size_t nm = self->nview, nj = 0;
    for (size_t i = 0; i < self->nq && nj < k; i++) {
        req_t *q = &self->q[i];
        if (q->st != CL_ADM_PENDING)
            continue;
        q->st = CL_ADM_IN_FLIGHT;
        memcpy(j[nj].key, q->key, 32);
        j[nj].rank = q->rank;
        j[nj].readmit = q->readmit;
        nj++;
        size_t x = 0;
        while (x < self->nview && memcmp(m[x].key, q->key, 32) != 0)
            x++;
        if (x < self->nview) {
            m[x].in_group = true; /* an ungrouped member comes back */
        } else {
            memcpy(m[nm].key, q->key, 32);
            m[nm].rank = q->rank;
            m[nm].in_group = true;
            nm++;
        }
    }
    qsort(m, nm, sizeof *m, cmp_rank);
    batch->s = s;
    batch->prefix = prefix;
    batch->joiners = j;
    batch->njoiners = nj;
    batch->members = m;
    batch->nmembers = nm;
    return 1;
}

int cl_admission_poll(cl_admission_t *self, const cl_stream_t *stream, uint64_t index, size_t max,
                      cl_adm_batch_t *batch)
{
    if (batch != NULL)
        memset(batch, 0, sizeof *batch);
    if (self == NULL || stream == NULL || batch == NULL)
        return COLLAB_ERR_ARG;
    if (cl_admission_pending(self) == 0 || !cl_stream_is_boundary(stream, index))
        return 0;
    uint64_t prefix = cl_stream_prefix(stream);
    if (prefix == CL_STREAM_NONE)
        return 0;
    return cl_admission_take(self, index, prefix, max, batch);
}

size_t cl_admission_requeue(cl_admission_t *self, const cl_adm_batch_t *batch)
{
    if (self == NULL || batch == NULL)
        return 0;
    size_t n = 0;
    for (size_t k = 0; k < batch->njoiners; k++) {
        int i = find_req(self, batch->joiners[k].key);
        if (i >= 0 && self->q[i].st == CL_ADM_IN_FLIGHT) {
            self->q[i].st = CL_ADM_PENDING;
            n++;
        }
    }
    return n;
}

const char *cl_adm_state_name(cl_adm_state_t state)
{
    switch (state) {
    case CL_ADM_NONE:
        return "unknown";
    case CL_ADM_PENDING:
        return "pending";
    case CL_ADM_IN_FLIGHT:
        return "in flight";
    case CL_ADM_STANDBY:
        return "standby";
    case CL_ADM_MEMBER:
        return "member";
    }
    return "invalid";
}
