/*  cl_engine_coll.c - collective streams: one per communicator.

    Each call on a communicator gets the next sequence number.  At most one
    collective per communicator runs at a time (a cl_coll_t from
    src/coll/); later calls wait in order.  Before the world group is
    formed, the first call asks the coordinator to form it (matchmaking)
    and waits.

    The member list of a collective is the world group of one *generation*
    (docs/wire.md section 6) restricted to the communicator, ascending by
    comm rank, with the generation's weights and client flags.  Members of
    that generation that are gone by now are marked failed before the
    start, and the relay rule of docs/collectives.md deals with them like
    with any failure.  Since the member list must be the same on every
    member, the oldest generation in use for a sequence number wins: a
    member that started under a newer one restarts (cl_engine_route.c).
    Restarts need the inputs intact, so an in-place input is copied first.

    Several groups.  A world all-reduce whose member list holds more than
    COLLAB_TARGET_GROUP members runs only with this peer's part of it
    (cl_engine_groups.c, docs/elastic.md §9).

    Incoming messages are routed in cl_engine_route.c.
*/
#include "engine/cl_engine_elastic.h" /* elastic hooks */
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)256 * 1024) /* pipelining chunk */
#define SMALL_BYTES ((size_t)64 * 1024)  /* one-round allreduce below this */
#define TICK 0.1                         /* seconds between ticks of a running collective */
#define DEFAULT_BANDWIDTH 25e6           /* bytes/s assumed before any measurement */

const char *eng_coll_kind_name(cl_coll_kind_t k)
{
    static const char *const names[] = {
        "barrier",    "bcast",   "allreduce", "reduce",  "reduce_scatter_block",
        "allgatherv", "gatherv", "scatterv",  "alltoall"};
    return (unsigned)k < CL_COLL_KIND_COUNT ? names[k] : "collective";
}

static void ctx_free(coll_ctx_t **ctx_p)
{
    if (*ctx_p == NULL)
        return;
    free((*ctx_p)->members);
    free((*ctx_p)->failed);
    free((*ctx_p)->failed_left);
    free((*ctx_p)->notified);
    free(*ctx_p);
    *ctx_p = NULL;
}

/* Completes the requests of a stream (running and queued) with status. */
static void stream_fail(stream_t *s, int status)
{
    if (s->active != NULL) {
        cl_coll_destroy(&s->active);
        ctx_free(&s->active_ctx);
        cl_request_complete(s->active_req, status);
        s->active_req = NULL;
    }
    collab_request_t *r;
    while (s->queue != NULL && (r = zlist_pop(s->queue)) != NULL)
        cl_request_complete(r, status);
}

void eng_coll_fail_all(struct cl_engine *e, int status)
{
    for (size_t i = 0; i < e->nstreams; i++)
        stream_fail(e->streams[i], status);
}

/* Frees a stream; requests still attached complete with status. */
static void stream_free(struct cl_engine *e, stream_t *s, int status)
{
    stream_fail(s, status);
    zlist_destroy(&s->queue);
    cl_coll_destroy(&s->retained);
    ctx_free(&s->retained_ctx);
    eng_coll_free_buffered(e, s);
    free(s);
}

stream_t *eng_coll_stream(struct cl_engine *e, uint64_t id, bool create)
{
    for (size_t i = 0; i < e->nstreams; i++)
        if (e->streams[i]->comm_id == id)
            return e->streams[i];
    if (!create)
        return NULL;
    if (e->nstreams == e->capstreams) {
        size_t cap = e->capstreams > 0 ? 2 * e->capstreams : 8;
        stream_t **a = realloc(e->streams, cap * sizeof *a);
        if (a == NULL)
            return NULL;
        e->streams = a;
        e->capstreams = cap;
    }
    stream_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->comm_id = id;
    s->queue = zlist_new();
    if (s->queue == NULL) {
        free(s);
        return NULL;
    }
    e->streams[e->nstreams++] = s;
    return s;
}

static void gen_clear(group_gen_t *g)
{
    free(g->world);
    free(g->weight);
    free(g->client);
    free(g->bandwidth);
    memset(g, 0, sizeof *g);
}

int eng_coll_init(struct cl_engine *e)
{
    return eng_el_init(e); /* elastic hook */
}

void eng_coll_fini(struct cl_engine *e)
{
    eng_el_fini(e); /* elastic hook: completes the requests it holds */
    for (size_t i = 0; i < e->nstreams; i++)
        stream_free(e, e->streams[i], COLLAB_ERR_NOT_INIT);
    free(e->streams);
    e->streams = NULL;
    e->nstreams = e->capstreams = 0;
    free(e->early); /* after the streams: freeing their early messages counts */
    e->early = NULL;
    e->nearly = 0;
    free(e->late);
    e->late = NULL;
    e->nlate = e->caplate = 0;
    for (int i = 0; i < ENG_GENS; i++)
        gen_clear(&e->gens[i]);
    local_msg_t *l = e->local_head;
    while (l != NULL) {
        local_msg_t *next = l->next;
        free(l);
        l = next;
    }
    e->local_head = e->local_tail = NULL;
}

/* ---------------------------------------------------------------------- */
/* Generations of the world group. */

const group_gen_t *eng_coll_gen(struct cl_engine *e, uint64_t gen)
{
    for (int i = 0; i < ENG_GENS && gen != 0; i++)
        if (e->gens[i].gen == gen)
            return &e->gens[i];
    return NULL;
}

void eng_coll_record_group(struct cl_engine *e)
{
    uint64_t gen = cl_member_group_epoch(e->mb);
    if (!cl_member_group_closed(e->mb) || gen == 0 || eng_coll_gen(e, gen) != NULL)
        return;
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    group_gen_t g = {gen,
                     0,
                     malloc((n > 0 ? n : 1) * sizeof(int)),
                     malloc((n > 0 ? n : 1) * sizeof(double)),
                     malloc((n > 0 ? n : 1) * sizeof(int)),
                     malloc((n > 0 ? n : 1) * sizeof(uint32_t))};
    if (g.world == NULL || g.weight == NULL || g.client == NULL || g.bandwidth == NULL) {
        gen_clear(&g);
        cl_error("out of memory recording the group");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!list[i]->in_group)
            continue;
        g.world[g.n] = list[i]->rank;
        g.weight[g.n] = list[i]->weight;
        g.client[g.n] = list[i]->client ? 1 : 0;
        g.bandwidth[g.n] = list[i]->bw_figure;
        g.n++;
    }
    gen_clear(&e->gens[e->gen_next]);
    e->gens[e->gen_next] = g;
    e->gen_next = (e->gen_next + 1) % ENG_GENS;
}

/* A generation notice's body (docs/wire.md §6): per member of the
   generation, its world rank (u32), client flag (u8) and weight (IEEE
   double bits, u64), little-endian. */
#define GEN_ENTRY 13

size_t eng_coll_gen_encode(struct cl_engine *e, uint64_t gen, uint8_t **out)
{
    const group_gen_t *g = eng_coll_gen(e, gen);
    *out = NULL;
    if (g == NULL || g->n <= 0 || (*out = malloc((size_t)g->n * GEN_ENTRY)) == NULL)
        return 0;
    uint8_t *b = *out;
    for (int i = 0; i < g->n; i++, b += GEN_ENTRY) {
        uint64_t bits;
        memcpy(&bits, &g->weight[i], 8);
        for (int k = 0; k < 4; k++)
            b[k] = (uint8_t)((uint32_t)g->world[i] >> (8 * k));
        b[4] = g->client[i] ? 1 : 0;
        for (int k = 0; k < 8; k++)
            b[5 + k] = (uint8_t)(bits >> (8 * k));
    }
    return (size_t)g->n * GEN_ENTRY;
}

bool eng_coll_learn_gen(struct cl_engine *e, uint64_t gen, uint64_t cur, int from_world,
                        const uint8_t *body, size_t len)
{
    const group_gen_t *c = eng_coll_gen(e, cur);
    int me = atomic_load(&e->rank), ws = atomic_load(&e->world_size);
    if (eng_coll_gen(e, gen) != NULL)
        return true;
    if (gen == 0 || gen >= cur || c == NULL || len == 0 || len % GEN_ENTRY != 0 ||
        len / GEN_ENTRY > (size_t)ws || !eng_coll_in_group(e, from_world))
        return false;
    int n = (int)(len / GEN_ENTRY);
    group_gen_t g = {gen,
                     0,
                     malloc((size_t)n * sizeof(int)),
                     malloc((size_t)n * sizeof(double)),
                     malloc((size_t)n * sizeof(int)),
                     malloc((size_t)n * sizeof(uint32_t))};
    bool ok = g.world != NULL && g.weight != NULL && g.client != NULL && g.bandwidth != NULL,
         has_me = false;
    for (int i = 0; i < n && ok; i++) {
        const uint8_t *b = body + (size_t)i * GEN_ENTRY;
        uint32_t w = 0;
        for (int k = 0; k < 4; k++)
            w |= (uint32_t)b[k] << (8 * k);
        ok = w < (uint32_t)ws && (g.n == 0 || (int)w > g.world[g.n - 1]); /* ascending */
        if (!ok)
            break;
        /* A member of the current generation keeps what this peer knows
           of it; any other must be gone here, so that the generation
           learned counts nobody this peer's own would not. */
        int j = 0;
        while (j < c->n && c->world[j] != (int)w)
            j++;
        if (j < c->n) {
            g.weight[g.n] = c->weight[j];
            g.client[g.n] = c->client[j];
            g.bandwidth[g.n] = c->bandwidth[j];
        } else {
            const cl_peer_t *p = cl_member_at_rank(e->mb, (int)w);
            ok = p == NULL || !p->in_group;
            g.weight[g.n] = 1.0;
            g.client[g.n] = b[4] != 0;
            g.bandwidth[g.n] = 0; /* unknown: the parts stay equal */
        }
        has_me = has_me || (int)w == me;
        g.world[g.n++] = (int)w;
    }
    /* Every member of the current generation is in it. */
    for (int j = 0; j < c->n && ok; j++) {
        bool found = false;
        for (int i = 0; i < g.n && !found; i++)
            found = g.world[i] == c->world[j];
        ok = found;
    }
    if (!ok || !has_me) {
        gen_clear(&g);
        return false;
    }
    cl_debug("learned group generation %llu (%d members) from rank %d: the view that formed it "
             "did not reach this peer",
             (unsigned long long)gen, g.n, from_world);
    gen_clear(&e->gens[e->gen_next]);
    e->gens[e->gen_next] = g;
    e->gen_next = (e->gen_next + 1) % ENG_GENS;
    return true;
}

/* ---------------------------------------------------------------------- */
/* The environment offered to the algorithms. */

static cl_peer_t *peer_of(coll_ctx_t *ctx, int comm_rank)
{
    int w = cl_comm_world_of(ctx->s->comm, comm_rank);
    return w >= 0 ? cl_member_at_rank(ctx->e->mb, w) : NULL;
}

static int env_send(void *eng, int to, const cl_coll_msg_t *msg)
{
    coll_ctx_t *ctx = eng;
    struct cl_engine *e = ctx->e;
    collab_comm_t *comm = ctx->s->comm;
    int w = cl_comm_world_of(comm, to);
    if (w < 0 || msg == NULL || (msg->data == NULL && msg->len > 0))
        return COLLAB_ERR_ARG;
    if (w == atomic_load(&e->rank)) {
        /* To itself: delivered from the main loop, never re-entrantly. */
        local_msg_t *l = malloc(sizeof *l + msg->len);
        if (l == NULL)
            return COLLAB_ERR_NO_MEM;
        l->next = NULL;
        l->comm = ctx->s->comm_id;
        l->seq = ctx->seq;
        l->signature = ctx->signature;
        l->msg = *msg;
        l->msg.from = comm->rank;
        if (msg->len > 0)
            memcpy(l->payload, msg->data, msg->len);
        l->msg.data = l->payload;
        if (e->local_tail != NULL)
            e->local_tail->next = l;
        else
            e->local_head = l;
        e->local_tail = l;
        return COLLAB_OK;
    }
    cl_peer_t *p = cl_member_at_rank(e->mb, w);
    if (p == NULL)
        return COLLAB_ERR_PROC_FAILED;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_COLL;
    m.hdr.sub = msg->type;
    m.hdr.comm = ctx->s->comm_id;
    m.hdr.epoch = ctx->gen;
    m.hdr.seq = ctx->seq;
    m.hdr.signature = ctx->signature;
    m.hdr.part = msg->part;
    m.hdr.chunk = msg->chunk;
    m.hdr.aux = msg->aux;
    m.payload = msg->data;
    m.payload_len = msg->len;
    int rc = eng_send(e, p, &m);
    cl_debug("coll send #%llu/%llu type %u part %u chunk %u aux %u len %zu to rank %d: %d",
             (unsigned long long)ctx->seq, (unsigned long long)ctx->gen, msg->type, msg->part,
             msg->chunk, msg->aux, msg->len, w, rc);
    return rc;
}

static double env_now(void *eng)
{
    (void)eng;
    return eng_now();
}

#define DEPARTED_GRACE 0.2 /* seconds a collective waits for a peer that said goodbye */

static double env_deadline(void *eng, int from, size_t bytes)
{
    coll_ctx_t *ctx = eng;
    /* Everything a peer that said goodbye sent has arrived (its GOODBYE
       came after it on the same connection): what is still missing never
       comes. */
    int w = cl_comm_world_of(ctx->s->comm, from);
    if (eng_leave_status(ctx->e, w, ctx->s->comm_id, ctx->seq) >= 0)
        return DEPARTED_GRACE;
    cl_peer_t *p = peer_of(ctx, from);
    double bw = p != NULL && p->bandwidth > 0 ? p->bandwidth : DEFAULT_BANDWIDTH;
    return ctx->e->cfg.timeout + (double)bytes / bw;
}

/* Queues a late member for eng_coll_deferred: acting on it may change
   the view and call back into the algorithm, which must not happen while
   the algorithm is running. */
/* Makes room for one more late report; false when out of memory. */
static bool eng_coll_defer_grow(struct cl_engine *e)
{
    size_t cap = e->caplate > 0 ? 2 * e->caplate : 8;
    struct late_report *a = realloc(e->late, cap * sizeof *a);
    if (a == NULL)
        return false;
    e->late = a;
    e->caplate = cap;
    return true;
}

void eng_coll_defer_late(struct cl_engine *e, const cl_peer_t *p, int reason)
{
    if (e->nlate == e->caplate && !eng_coll_defer_grow(e))
        return;
    memcpy(e->late[e->nlate].key, p->key, 32);
    e->late[e->nlate].reason = reason;
    e->nlate++;
}

void eng_coll_deferred(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nlate; i++) {
        if (e->late[i].reason == ENG_REASON_LEFT) {
            eng_coll_fail_departed(e, e->late[i].key);
            continue;
        }
        cl_peer_t *p = cl_member_find(e->mb, e->late[i].key);
        if (p != NULL && p->state != CL_PEER_GONE && e->late[i].reason == CL_SUSPECT_CORRUPT)
            eng_report_corrupt(e, p);
        else if (p != NULL && p->state != CL_PEER_GONE)
            eng_report_late(e, p, e->late[i].reason);
    }
    e->nlate = 0;
}

static void env_suspect(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    struct cl_engine *e = ctx->e;
    int w = cl_comm_world_of(ctx->s->comm, r);
    uint8_t key[32];
    if (eng_leave_status(e, w, ctx->s->comm_id, ctx->seq) >= 0 && eng_leave_key(e, w, key)) {
        /* It said goodbye and what this collective waits for never
           comes: failed here, whatever the view says. */
        if (e->nlate < e->caplate || eng_coll_defer_grow(e)) {
            memcpy(e->late[e->nlate].key, key, 32);
            e->late[e->nlate].reason = ENG_REASON_LEFT;
            e->nlate++;
        }
        return;
    }
    cl_peer_t *p = peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(e, p, CL_SUSPECT_STRAGGLER);
}

/* Relay tags (docs/security.md §6): the key shared with comm rank r. */
static int env_pair_key(void *eng, int r, uint8_t key[32])
{
    coll_ctx_t *ctx = eng;
    cl_peer_t *p = peer_of(ctx, r);
    if (p == NULL)
        return COLLAB_ERR_ARG;
    return eng_pair_key(ctx->e, p->key, key);
}

int eng_pair_key(struct cl_engine *e, const uint8_t peer[32], uint8_t out[32])
{
    size_t n = sizeof e->pairkeys / sizeof e->pairkeys[0];
    for (size_t i = 0; i < n; i++)
        if (e->pairkeys[i].set && memcmp(e->pairkeys[i].peer, peer, 32) == 0) {
            memcpy(out, e->pairkeys[i].key, 32);
            return COLLAB_OK;
        }
    uint8_t q[crypto_scalarmult_BYTES];
    if (crypto_scalarmult(q, cl_identity_secret_key(e->id), peer) != 0) {
        sodium_memzero(q, sizeof q);
        return COLLAB_ERR_ARG;
    }
    bool low = memcmp(e->self_key, peer, 32) < 0;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, 32);
    crypto_generichash_update(&h, q, sizeof q);
    crypto_generichash_update(&h, low ? e->self_key : peer, 32);
    crypto_generichash_update(&h, low ? peer : e->self_key, 32);
    crypto_generichash_final(&h, out, 32);
    sodium_memzero(q, sizeof q);
    sodium_memzero(&h, sizeof h);
    size_t k = (size_t)e->pairkey_next;
    e->pairkey_next = (int)((k + 1) % n);
    memcpy(e->pairkeys[k].peer, peer, 32);
    memcpy(e->pairkeys[k].key, out, 32);
    e->pairkeys[k].set = true;
    return COLLAB_OK;
}

/* A failure a STATUS names counts here only with this peer's own
   evidence (docs/security.md §3). */
static bool env_confirms_failed(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    for (int i = 0; i < ctx->nfailed; i++)
        if (ctx->failed[i] == r)
            return true;
    cl_peer_t *p = peer_of(ctx, r);
    if (p == NULL || p->state != CL_PEER_ALIVE || p->link_closed)
        return true;
    int w = cl_comm_world_of(ctx->s->comm, r);
    return eng_leave_status(ctx->e, w, ctx->s->comm_id, ctx->seq) >= 0;
}

/* COLLAB_VERIFY: a verdict, acted on from the main loop like a suspicion
   (it may change the view). */
static void env_convict(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    cl_peer_t *p = peer_of(ctx, r);
    if (p != NULL)
        eng_coll_defer_late(ctx->e, p, CL_SUSPECT_CORRUPT);
}

/* ---------------------------------------------------------------------- */
/* Starting and finishing. */

typedef struct {
    int rank; /* comm rank */
    double weight;
    int client;
    bool gone;          /* no longer a live member of the world group */
    uint32_t bandwidth; /* the generation's bandwidth figure (kbit/s, 0 unknown) */
} member_t;

static int cmp_member(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Robust modes: a weight counts at most ratio x the lower median of the
   group's positive weights (a weight of 0, a re-admitted straggler's, does
   not lower the cap), in every collective (docs/security.md §6b).  Every
   member caps the same list the same way. */
static void cap_weights(double *w, int n, double ratio)
{
    if (n <= 0)
        return;
    double *s = malloc((size_t)n * sizeof *s);
    if (s == NULL)
        return; /* the robust aggregation caps again on its own */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (w[i] > 0)
            s[m++] = w[i];
    if (m == 0) {
        free(s);
        return;
    }
    for (int a = 1; a < m; a++) { /* insertion sort: m is a group size */
        double x = s[a];
        int b = a - 1;
        while (b >= 0 && s[b] > x) {
            s[b + 1] = s[b];
            b--;
        }
        s[b + 1] = x;
    }
    double cap = ratio * s[(m - 1) / 2];
    free(s);
    for (int i = 0; i < n; i++)
        if (w[i] > cap)
            w[i] = cap;
}

/* Keeps in m (k members, sorted) only this peer's group when a world
   all-reduce runs in several groups (cl_engine_groups.c).  Returns the
   new count, or a negative status. */
static int keep_my_group(struct cl_engine *e, const collab_comm_t *comm, cl_coll_kind_t kind,
                         uint64_t seq, member_t *m, int k)
{
    if (!eng_groups_split_applies(e, comm, kind, k))
        return k;
    int *rank = malloc((size_t)k * sizeof *rank);
    int *client = malloc((size_t)k * sizeof *client);
    double *weight = malloc((size_t)k * sizeof *weight);
    int rc = COLLAB_ERR_NO_MEM;
    if (rank != NULL && client != NULL && weight != NULL) {
        for (int i = 0; i < k; i++) {
            rank[i] = m[i].rank;
            weight[i] = m[i].weight;
            client[i] = m[i].client;
        }
        rc = eng_groups_mine(e, comm->rank, seq, k, rank, weight, client);
        if (rc > 0) { /* rank[] now lists this peer's group, in order */
            int n = 0;
            for (int i = 0; i < k && n < rc; i++)
                if (m[i].rank == rank[n])
                    m[n++] = m[i];
        }
    }
    free(rank);
    free(client);
    free(weight);
    return rc;
}

/* The member list of collective seq (of kind) on comm under generation
   gen (gen 0: this peer alone).  Returns the count, or a negative
   status. */
static int members_of(struct cl_engine *e, collab_comm_t *comm, uint64_t gen, uint64_t seq,
                      cl_coll_kind_t kind, member_t **out)
{
    *out = NULL;
    if (gen == 0) {
        cl_peer_t *me = cl_member_self(e->mb);
        member_t *m = malloc(sizeof *m);
        if (m == NULL)
            return COLLAB_ERR_NO_MEM;
        *m = (member_t){comm->rank, me->weight, me->client ? 1 : 0, false, 0};
        *out = m;
        return 1;
    }
    const group_gen_t *g = eng_coll_gen(e, gen);
    if (g == NULL)
        return COLLAB_ERR_INTERNAL;
    member_t *m = malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *m);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    int k = 0;
    for (int i = 0; i < g->n; i++) {
        int r = cl_comm_rank_of_world(comm, g->world[i]);
        if (r < 0)
            continue;
        double w = g->weight[i];
        if (!eng_el_takes_part(e, comm, g->world[i], seq, &w))
            continue; /* elastic hook: admitted from a later sequence on */
        cl_peer_t *p = cl_member_at_rank(e->mb, g->world[i]);
        bool gone = p == NULL || !p->in_group;
        /* A peer that said goodbye counts in exactly the collectives it
           entered (cl_engine_leave.c), whatever the view says by now. */
        int left = eng_leave_status(e, g->world[i], comm->id, seq);
        if (left >= 0)
            gone = left == 0;
        m[k++] = (member_t){r, w, g->client[i], gone, g->bandwidth[i]};
    }
    qsort(m, (size_t)k, sizeof *m, cmp_member);
    k = keep_my_group(e, comm, kind, seq, m, k);
    if (k < 0) {
        free(m);
        return k;
    }
    *out = m;
    return k;
}

/* Is this peer in the member list of generation gen? */
bool eng_coll_in_gen(struct cl_engine *e, uint64_t gen)
{
    const group_gen_t *g = eng_coll_gen(e, gen);
    int me = atomic_load(&e->rank);
    for (int i = 0; g != NULL && i < g->n; i++)
        if (g->world[i] == me)
            return true;
    return false;
}

/* Copies an in-place input so that a restart finds it intact. */
static int snapshot_input(collab_request_t *req, int comm_size)
{
    cl_coll_args_t *a = &req->coll;
    if (a->sendbuf != NULL || req->snapshot != NULL)
        return COLLAB_OK;
    size_t bytes;
    switch (a->kind) {
    case CL_COLL_ALLREDUCE:
    case CL_COLL_REDUCE:
        bytes = a->count * collab_dtype_extent(a->dtype);
        break;
    case CL_COLL_REDUCE_SCATTER_BLOCK:
        bytes = a->count * collab_dtype_extent(a->dtype) * (size_t)comm_size;
        break;
    case CL_COLL_ALLTOALL:
        bytes = a->count * (size_t)comm_size;
        break;
    default:
        return COLLAB_OK; /* inputs these kinds keep in place are never written */
    }
    if (bytes == 0 || a->recvbuf == NULL)
        return COLLAB_OK;
    req->snapshot = malloc(bytes);
    if (req->snapshot == NULL)
        return COLLAB_ERR_NO_MEM;
    memcpy(req->snapshot, a->recvbuf, bytes);
    return COLLAB_OK;
}

/* Creates and starts the collective of req under generation gen. */
static void start_gen(struct cl_engine *e, stream_t *s, collab_request_t *req, uint64_t gen)
{
    const cl_settings_t *set = cl_member_settings(e->mb);
    member_t *mem = NULL;
    int n = members_of(e, s->comm, gen, req->coll.seq, req->coll.kind, &mem);
    int *ranks = NULL, *clients = NULL;
    double *weights = NULL;
    uint32_t *bandwidths = NULL;
    coll_ctx_t *ctx = NULL;
    int rc = n;
    if (n < 0)
        goto err;
    rc = COLLAB_ERR_NO_MEM;
    ranks = malloc((size_t)n * sizeof(int));
    weights = malloc((size_t)n * sizeof(double));
    clients = malloc((size_t)n * sizeof(int));
    bandwidths = malloc((size_t)n * sizeof(uint32_t));
    ctx = calloc(1, sizeof *ctx);
    if (ranks == NULL || weights == NULL || clients == NULL || bandwidths == NULL || ctx == NULL)
        goto err;
    if (n > 1 && snapshot_input(req, s->comm->size) != COLLAB_OK)
        goto err;
    cl_coll_args_t args = req->coll;
    if (req->snapshot != NULL)
        args.sendbuf = req->snapshot;
    for (int i = 0; i < n; i++) {
        ranks[i] = mem[i].rank;
        weights[i] = mem[i].weight;
        clients[i] = mem[i].client;
        bandwidths[i] = mem[i].bandwidth;
    }
    if (set->aggregation != 0 && set->max_weight_ratio > 0)
        cap_weights(weights, n, (double)set->max_weight_ratio);
    args.comm_id = s->comm_id;
    args.comm_size = s->comm->size;
    args.nmembers = n;
    args.members = ranks;
    args.weights = weights;
    args.clients = clients;
    args.bandwidths = bandwidths;
    args.self = s->comm->rank;
    args.strict = set->strict ? 1 : 0;
    args.compression = set->compression;
    /* Robust aggregation: float SUM all-reduces on the world communicator
       of at least COLLAB_ROBUST_MIN elements (docs/security.md). */
    if (set->aggregation != 0 && args.kind == CL_COLL_ALLREDUCE && args.op.kind == COLLAB_OP_SUM &&
        (args.dtype == COLLAB_FLOAT || args.dtype == COLLAB_DOUBLE) &&
        s->comm_id == CL_COMM_WORLD_ID && args.count >= set->robust_min) {
        args.aggregation = set->aggregation;
        args.max_weight_ratio = set->max_weight_ratio;
    }
    args.chunk_bytes = CHUNK_BYTES;
    args.small_bytes = SMALL_BYTES;
    /* COLLAB_VERIFY (docs/security.md §6c): the coordinator also checks
       the part of a member reported to it. */
    if (set->verify) {
        args.verify = 1;
        if (args.kind == CL_COLL_ALLREDUCE &&
            args.count * collab_dtype_extent(args.dtype) >= SMALL_BYTES && args.aggregation == 0)
            args.verify_target = eng_verify_target(e, ranks, n, s->comm);
    }
    ctx->e = e;
    ctx->s = s;
    ctx->seq = args.seq;
    ctx->gen = gen;
    ctx->signature = cl_coll_signature(&args);
    ctx->kind = args.kind;
    ctx->members = ranks;
    ctx->nmembers = n;
    ctx->t_start = req->t_start;
    ranks = NULL;
    cl_coll_env_t env = {ctx,         env_send,    env_now,      env_deadline,
                         env_suspect, env_convict, env_pair_key, env_confirms_failed};
    cl_coll_t *c = cl_coll_new(&args, &env);
    if (c == NULL)
        goto err;
    s->active = c;
    s->active_ctx = ctx;
    s->nstarts++;
    s->active_req = req;
    s->started = args.seq + 1;
    /* Members of that generation that are gone already. */
    for (int i = 0; i < n; i++)
        if (mem[i].gone && mem[i].rank != s->comm->rank)
            (void)cl_coll_on_fail(c, mem[i].rank);
    free(weights);
    free(clients);
    free(bandwidths);
    free(mem);
    rc = cl_coll_start(c);
    if (rc != COLLAB_OK && !cl_coll_done(c)) {
        cl_error("%s #%llu could not start: %s", eng_coll_kind_name(ctx->kind),
                 (unsigned long long)ctx->seq, collab_strerror(rc));
        cl_coll_destroy(&s->active);
        ctx_free(&s->active_ctx);
        s->active_req = NULL;
        cl_request_complete(req, rc);
        return;
    }
    eng_coll_take_buffered(e, s);
    if (s->active == c) {
        (void)cl_coll_on_tick(c);
        eng_coll_check_done(e, s);
    }
    return;
err:
    free(mem);
    free(ranks);
    free(weights);
    free(clients);
    free(bandwidths);
    ctx_free(&ctx);
    cl_error("cannot start a collective: %s", collab_strerror(rc));
    cl_request_complete(req, rc);
}

void eng_coll_restart(struct cl_engine *e, stream_t *s, uint64_t gen)
{
    collab_request_t *req = s->active_req;
    cl_debug("%s #%llu restarts under the older group generation %llu (was %llu)",
             eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq,
             (unsigned long long)gen, (unsigned long long)s->active_ctx->gen);
    cl_coll_destroy(&s->active);
    ctx_free(&s->active_ctx);
    s->active_req = NULL;
    start_gen(e, s, req, gen);
}

size_t eng_coll_take_back(stream_t *s, collab_request_t **out, size_t max)
{
    size_t n = 0;
    if (s->active != NULL && max > 0) {
        collab_request_t *req = s->active_req;
        cl_debug("%s #%llu stops; its request goes back to the elastic layer",
                 eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq);
        cl_coll_destroy(&s->active);
        ctx_free(&s->active_ctx);
        s->active_req = NULL;
        out[n++] = req;
    }
    collab_request_t *r;
    while (n < max && (r = zlist_pop(s->queue)) != NULL)
        out[n++] = r;
    for (size_t i = 0; i < n; i++) {
        out[i]->deadline = 0; /* a wait for the group starts afresh when submitted again */
        out[i]->waiting_logged = false;
    }
    return n;
}

static bool gen_has(const group_gen_t *g, int w)
{
    for (int i = 0; i < g->n; i++)
        if (g->world[i] == w)
            return true;
    return false;
}

/* A peer that left after taking part in seq counts there, so seq runs
   under a generation that still lists it: the newest one (not after cur)
   that lists every such peer of this communicator and this peer.  The
   others started seq before the view dropped it, under that generation
   (the coordinator drops it only once its GOODBYE reached every member,
   cl_engine_leave.c).  Returns cur when it lists them all or none does. */
static uint64_t gen_with_departed(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t cur)
{
    enum { MAXDEP = 64 };
    int dep[MAXDEP];
    int k = 0, n = eng_leave_contributors(e, s->comm_id, seq, dep, MAXDEP);
    for (int i = 0; i < n; i++)
        if (cl_comm_rank_of_world(s->comm, dep[i]) >= 0)
            dep[k++] = dep[i];
    const group_gen_t *g = eng_coll_gen(e, cur);
    bool all = g != NULL;
    for (int i = 0; i < k && all; i++)
        all = gen_has(g, dep[i]);
    if (k == 0 || all)
        return cur;
    uint64_t best = 0;
    for (int j = 0; j < ENG_GENS; j++) {
        const group_gen_t *c = &e->gens[j];
        if (c->gen == 0 || c->gen >= cur || c->gen <= best || !eng_coll_in_gen(e, c->gen))
            continue;
        bool ok = true;
        for (int i = 0; i < k && ok; i++)
            ok = gen_has(c, dep[i]);
        if (ok)
            best = c->gen;
    }
    return best != 0 ? best : cur;
}

/* The generation a new collective on s starts under: the oldest of the
   current one and those that early messages for it carry (if known and
   this peer is in them).  Returns 0 to wait (no group yet, or this peer is
   outside it). */
static uint64_t choose_gen(struct cl_engine *e, stream_t *s, uint64_t seq)
{
    if (s->comm->kind == CL_COMM_SELF || s->comm->size == 1)
        return 0;
    uint64_t el = eng_el_choose_gen(e, s, seq); /* elastic hook: a straggler runs alone */
    if (el != ENG_EL_DEFAULT)
        return el;
    uint64_t cur = cl_member_group_epoch(e->mb);
    if (!cl_member_group_closed(e->mb) || !cl_member_self(e->mb)->in_group)
        return UINT64_MAX;
    cur = gen_with_departed(e, s, seq, cur);
    for (buffered_t *b = s->buf_head; b != NULL; b = b->next)
        if (b->seq == seq && b->gen < cur && eng_coll_in_gen(e, b->gen) &&
            eng_coll_may_pull(e, s, b->from_world, seq) &&
            eng_el_gen_ok(e, s, seq, b->gen)) /* elastic hook: not before an admission */
            cur = b->gen;
    return cur;
}

static void try_start(struct cl_engine *e, stream_t *s)
{
    while (s->active == NULL && s->comm != NULL) {
        collab_request_t *req = zlist_first(s->queue);
        if (req == NULL)
            return;
        uint64_t gen = choose_gen(e, s, req->coll.seq);
        if (gen == UINT64_MAX) {
            bool formed = cl_member_group_closed(e->mb);
            if (req->deadline <= 0)
                req->deadline = eng_now() + fmax(30.0, 4.0 * e->cfg.timeout) +
                                (formed ? 0.0 : e->cfg.matchmaking_time);
            if (!formed) {
                e->waiting_for_group = true;
                eng_request_match(e);
            } else if (!req->waiting_logged) {
                cl_warn("this peer is not in the group of the world communicator (it joined "
                        "after the group formed, or was taken out); waiting to be admitted");
                req->waiting_logged = true;
            }
            return;
        }
        zlist_pop(s->queue);
        const cl_settings_t *set = cl_member_settings(e->mb);
        if (set->strict && gen != 0) {
            /* Strict: every rank of the communicator must be there. */
            member_t *mem = NULL;
            int n = members_of(e, s->comm, gen, req->coll.seq, req->coll.kind, &mem);
            int live = 0;
            for (int i = 0; i < n; i++)
                live += !mem[i].gone;
            free(mem);
            if (live < s->comm->size) {
                cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
                continue;
            }
        }
        start_gen(e, s, req, gen);
    }
}

void eng_coll_submit(struct cl_engine *e, collab_request_t *req)
{
    stream_t *s = eng_coll_stream(e, req->comm->id, true);
    if (s == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    if (s->comm == NULL)
        s->comm = req->comm;
    req->coll.comm_id = s->comm_id;
    req->coll.seq = s->next_seq++;
    if (eng_el_on_post(e, s, req)) /* elastic hook: may renumber or take it */
        return;
    if (zlist_append(s->queue, req) != 0) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    try_start(e, s);
}

void eng_coll_fail_member(stream_t *s, int r, bool left)
{
    coll_ctx_t *ctx = s->active_ctx;
    for (int i = 0; i < ctx->nfailed; i++)
        if (ctx->failed[i] == r)
            return;
    int *f = realloc(ctx->failed, (size_t)(ctx->nfailed + 1) * sizeof *f);
    if (f != NULL)
        ctx->failed = f;
    bool *fl = realloc(ctx->failed_left, (size_t)(ctx->nfailed + 1) * sizeof *fl);
    if (fl != NULL)
        ctx->failed_left = fl;
    if (f != NULL && fl != NULL) {
        ctx->failed[ctx->nfailed] = r;
        ctx->failed_left[ctx->nfailed] = left;
        ctx->nfailed++;
    }
    (void)cl_coll_on_fail(s->active, r);
}

static void log_result(struct cl_engine *e, stream_t *s, coll_ctx_t *ctx, int ncontrib,
                       double seconds)
{
    /* Members that dropped out during the call. */
    int left = ctx->nmembers - ctx->nfailed;
    for (int i = 0; i < ctx->nfailed; i++) {
        int w = cl_comm_world_of(s->comm, ctx->failed[i]);
        if (ctx->failed_left[i])
            cl_info("peer rank %d left during %s #%llu; finished with %d peer%s", w,
                    eng_coll_kind_name(ctx->kind), (unsigned long long)ctx->seq, left,
                    left == 1 ? "" : "s");
        else
            cl_warn("peer rank %d failed during %s #%llu; finished with %d peer%s", w,
                    eng_coll_kind_name(ctx->kind), (unsigned long long)ctx->seq, left,
                    left == 1 ? "" : "s");
    }
    double now = eng_now();
    if (ctx->kind == CL_COLL_ALLREDUCE) {
        e->log_tensors++;
        e->log_bytes +=
            (uint64_t)(s->active_req->coll.count * collab_dtype_extent(s->active_req->coll.dtype));
        e->log_seconds += seconds;
        e->log_peers = ncontrib;
    }
    if (e->log_tensors > 0 && now - e->last_step_log >= 1.0) {
        uint64_t step = e->steps > 0 ? e->steps : e->progress + 1;
        cl_info("step %llu: averaged %llu tensor%s (%.1f MB) with %d peer%s in %.2f s",
                (unsigned long long)step, (unsigned long long)e->log_tensors,
                e->log_tensors == 1 ? "" : "s", (double)e->log_bytes / 1e6, e->log_peers,
                e->log_peers == 1 ? "" : "s", e->log_seconds);
        e->last_step_log = now;
        e->log_tensors = e->log_bytes = 0;
        e->log_seconds = 0;
    }
}

void eng_coll_check_done(struct cl_engine *e, stream_t *s)
{
    while (s->active != NULL && cl_coll_done(s->active)) {
        cl_coll_t *c = s->active;
        coll_ctx_t *ctx = s->active_ctx;
        collab_request_t *req = s->active_req;
        int status = cl_coll_status(c);
        int ncontrib = 0;
        const int *contrib = cl_coll_contributors(c, &ncontrib);
        if (contrib == NULL)
            ncontrib = 0;
        double now = eng_now();
        double seconds = now - ctx->t_start;
        collab_info_t info;
        memset(&info, 0, sizeof info);
        info.group_size = ncontrib;
        info.world_size = s->comm->size;
        info.sequence = ctx->seq;
        cl_coll_traffic(c, &info.bytes_sent, &info.bytes_received);
        info.seconds = seconds;
        info.nranks = ncontrib < COLLAB_MAX_INFO_RANKS ? ncontrib : COLLAB_MAX_INFO_RANKS;
        for (int i = 0; i < info.nranks; i++)
            info.ranks[i] = contrib[i];
        if (cl_coll_release_user_buffers(c) != COLLAB_OK && status == COLLAB_OK)
            status = COLLAB_ERR_NO_MEM;
        free(req->snapshot);
        req->snapshot = NULL;
        log_result(e, s, ctx, ncontrib, seconds);
        eng_report_coll_done(e, s->comm_id, req, ncontrib, &info, now);
        eng_el_on_done(e, s, req, status); /* elastic hook: start-up results */
        /* Members that answered are no longer late. */
        for (int i = 0; i < ncontrib; i++) {
            cl_peer_t *p = peer_of(ctx, contrib[i]);
            if (p != NULL && p->state == CL_PEER_ALIVE)
                p->suspect_since = 0;
        }
        if (e->last_done > 0)
            e->step_gap = e->step_gap > 0 ? 0.8 * e->step_gap + 0.2 * (now - e->last_done)
                                          : now - e->last_done;
        e->last_done = now;
        e->progress++;
        cl_coll_destroy(&s->retained);
        ctx_free(&s->retained_ctx);
        s->retained = c;
        s->retained_ctx = ctx;
        s->active = NULL;
        s->active_ctx = NULL;
        s->active_req = NULL;
        eng_set_info(e, &info);
        cl_request_complete(req, status);
        try_start(e, s);
    }
}

/* ---------------------------------------------------------------------- */
/* Membership changes and timers. */

void eng_coll_peer_gone(struct cl_engine *e, const cl_peer_t *p)
{
    int w = p->rank >= 0 ? p->rank : p->prev_rank;
    if (w < 0)
        return;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (s->active == NULL)
            continue;
        int r = cl_comm_rank_of_world(s->comm, w);
        bool member = false;
        for (int k = 0; k < s->active_ctx->nmembers && !member; k++)
            member = s->active_ctx->members[k] == r;
        if (r < 0 || !member || r == s->comm->rank)
            continue;
        if (eng_leave_status(e, w, s->comm_id, s->active_ctx->seq) == 1)
            continue; /* it left after taking part: its contribution is here */
        eng_coll_fail_member(s, r, p->suspect_reason == ENG_REASON_LEFT);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < e->nstreams; i++)
        eng_coll_check_done(e, e->streams[i]);
}

void eng_coll_fail_departed(struct cl_engine *e, const uint8_t key[32])
{
    int w = eng_leave_world_of(e, key);
    if (w < 0)
        return;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (s->active == NULL)
            continue;
        int r = cl_comm_rank_of_world(s->comm, w);
        bool member = false;
        for (int k = 0; k < s->active_ctx->nmembers && !member; k++)
            member = s->active_ctx->members[k] == r;
        if (r < 0 || !member || r == s->comm->rank)
            continue;
        cl_debug("%s #%llu still waits for rank %d, which left; counting it as failed there",
                 eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq,
                 w);
        eng_coll_fail_member(s, r, true);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < e->nstreams; i++)
        eng_coll_check_done(e, e->streams[i]);
}

void eng_coll_view_changed(struct cl_engine *e)
{
    eng_coll_record_group(e);
    if (cl_member_group_closed(e->mb))
        e->waiting_for_group = false;
    eng_el_view_changed(e); /* elastic hook: evictions, admissions */
    for (size_t i = 0; i < e->nstreams; i++)
        try_start(e, e->streams[i]);
}

/* Why a call gave up waiting for the world group to form. */
static void log_no_group(struct cl_engine *e)
{
    char desc[CL_WIRE_STR_MAX + 64];
    size_t n;
    (void)cl_member_list(e->mb, &n);
    const cl_settings_t *set = cl_member_settings(e->mb);
    double waited = fmax(30.0, 4.0 * e->cfg.timeout) + e->cfg.matchmaking_time;
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (set->strict)
        cl_error("the group of the world communicator did not form within %.0f s: "
                 "COLLAB_STRICT=1 needs all %d ranks of the world, and %zu are members",
                 waited, set->world_size, n);
    else if (c == NULL)
        cl_error("the group of the world communicator did not form within %.0f s: no live "
                 "member can form it (%zu of %d ranks are members)",
                 waited, n, set->world_size);
    else if (memcmp(c->key, e->self_key, 32) == 0)
        cl_error("the group of the world communicator did not form within %.0f s: this peer "
                 "forms it, but only %zu of %d ranks are members (COLLAB_MIN_GROUP=%d)",
                 waited, n, set->world_size, e->cfg.min_group);
    else
        cl_error("the group of the world communicator did not form within %.0f s: waited for "
                 "%s, which forms it, to close it (%zu of %d ranks are members)",
                 waited, eng_peer_desc(c, desc, sizeof desc), n, set->world_size);
}

double eng_coll_timer(struct cl_engine *e, double now)
{
    double next = now + 5.0;
    bool tick = now >= e->next_tick;
    bool any_active = false;
    for (size_t i = 0; i < e->nstreams; i++) {
        stream_t *s = e->streams[i];
        if (s->active != NULL) {
            any_active = true;
            if (tick) {
                (void)cl_coll_on_tick(s->active);
                eng_coll_check_done(e, s);
            }
        }
        /* A call waiting for the group (or for admission) has a deadline. */
        collab_request_t *req = s->active == NULL ? zlist_first(s->queue) : NULL;
        if (req != NULL && req->deadline > 0) {
            if (now >= req->deadline) {
                zlist_pop(s->queue);
                if (cl_member_group_closed(e->mb))
                    cl_error("gave up waiting to be admitted to the group of the world "
                             "communicator; admission of peers that join after the group "
                             "formed needs every member at a step boundary");
                else
                    log_no_group(e);
                cl_request_complete(req, COLLAB_ERR_TIMEOUT);
                try_start(e, s);
            } else {
                next = fmin(next, req->deadline);
            }
        }
    }
    if (tick)
        e->next_tick = now + TICK;
    if (any_active)
        next = fmin(next, e->next_tick);
    return next;
}

bool eng_coll_idle(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nstreams; i++)
        if (e->streams[i]->active != NULL || zlist_size(e->streams[i]->queue) > 0)
            return false;
    return true;
}

void eng_coll_comm_free(struct cl_engine *e, collab_comm_t *comm)
{
    for (size_t i = 0; i < e->nstreams; i++) {
        if (e->streams[i]->comm_id != comm->id)
            continue;
        stream_t *s = e->streams[i];
        e->streams[i] = e->streams[--e->nstreams];
        stream_free(e, s, COLLAB_ERR_COMM);
        break;
    }
    cl_p2p_drop_comm(e->p2p, comm->id);
    cl_comm_destroy(&comm);
}
