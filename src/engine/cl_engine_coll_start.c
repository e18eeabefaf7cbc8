/*  cl_engine_coll_start.c - starting a collective on its stream.

    The generation a call starts under (choose_gen: the oldest of the
    current one and those early messages for it carry), its member list
    (members_of: that generation restricted to the communicator, ascending
    by comm rank, with its weights, capped in the robust modes, and client
    flags; this peer's part only when a world all-reduce runs in several
    groups, cl_engine_groups.c), a copy of an in-place input so that a
    restart finds it intact, and the cl_coll_t built from all that
    (start_gen).  Members of that generation that are gone by now are
    marked failed before the start.  A call that cannot start yet (no
    group, or this peer outside it) waits with a deadline
    (cl_engine_coll.c gives up on it).  The reverse is here too: a running
    collective restarted under an older generation (eng_cs_restart) or
    stopped and handed back with the queued calls (eng_coll_take_back).
*/
#include "engine/cl_engine_coll_int.h"
#include "engine/cl_stage.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)256 * 1024) /* pipelining chunk */
#define SMALL_BYTES ((size_t)64 * 1024)  /* one-round allreduce below this */
/* A butterfly all-reduce completes before the others' DONE once its
   transfer ran 16 times as long as copying the result takes (0.5 GB/s:
   memcpy into fresh pages on a small virtual machine); docs/collectives.md
   §3 "Retention", docs/benchmarks.md. */
#define EARLY_RATE (0.5e9 / 16)

void eng_coll_ctx_free(coll_ctx_t **ctx_p)
{
    if (*ctx_p == NULL)
        return;
    free((*ctx_p)->members);
    free((*ctx_p)->keys);
    eng_coll_free_seen(*ctx_p);
    free((*ctx_p)->failed);
    free((*ctx_p)->failed_left);
    free((*ctx_p)->notified);
    free(*ctx_p);
    *ctx_p = NULL;
}

typedef struct {
    int rank; /* comm rank */
    double weight;
    int client;
    bool gone;          /* no longer a live member of the world group */
    uint32_t bandwidth; /* the generation's bandwidth figure (kbit/s, 0 unknown) */
    bool haskey;        /* key holds its identity key when the collective started */
    uint8_t key[32];
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
static int keep_my_group(eng_cs_t *cs, const collab_comm_t *comm, cl_coll_kind_t kind, uint64_t seq,
                         member_t *m, int k)
{
    if (!eng_groups_split_applies(cs->ctx.groups, comm, kind, k))
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
        rc = eng_groups_mine(cs->ctx.groups, comm->rank, seq, k, rank, weight, client);
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
static int members_of(eng_cs_t *cs, collab_comm_t *comm, uint64_t gen, uint64_t seq,
                      cl_coll_kind_t kind, member_t **out)
{
    *out = NULL;
    if (gen == 0) {
        const cl_peer_t *me = cl_member_self(cs->ctx.mb);
        member_t *m = malloc(sizeof *m);
        if (m == NULL)
            return COLLAB_ERR_NO_MEM;
        *m = (member_t){comm->rank, me->weight, me->client ? 1 : 0, false, 0, false, {0}};
        *out = m;
        return 1;
    }
    const group_gen_t *g = eng_cs_gen(cs, gen);
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
        if (!cs->ctx.el_takes_part(cs->ctx.arg, comm, g->world[i], seq, &w))
            continue; /* elastic hook: admitted from a later sequence on */
        const cl_peer_t *p = cl_member_at_rank(cs->ctx.mb, g->world[i]);
        bool gone = p == NULL || !p->in_group;
        /* A peer that said goodbye counts in exactly the collectives it
           entered (cl_engine_leave.c), whatever the view says by now. */
        int left = eng_leave_status(cs->ctx.leave, g->world[i], comm->id, seq);
        if (left >= 0)
            gone = left == 0;
        m[k] = (member_t){r, w, g->client[i], gone, g->bandwidth[i], p != NULL, {0}};
        if (p != NULL)
            memcpy(m[k].key, p->key, 32);
        k++;
    }
    qsort(m, (size_t)k, sizeof *m, cmp_member);
    k = keep_my_group(cs, comm, kind, seq, m, k);
    if (k < 0) {
        free(m);
        return k;
    }
    *out = m;
    return k;
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

/* The identity key of comm rank r, a member of generation gen whose
   record is gone (it failed before this collective started), from the
   last completed collective of this communicator when it ran under the
   same generation (the same identity held r then).  Relays of its pieces
   are checked against it (docs/security.md §6); without it they could
   not be.  True when found. */
static bool key_of_gone(const stream_t *s, uint64_t gen, int r, uint8_t key[32])
{
    const coll_ctx_t *old = s->retained_ctx;
    if (old == NULL || old->gen != gen || old->keys == NULL)
        return false;
    for (int i = 0; i < old->nmembers; i++)
        if (old->members[i] == r && old->haskey[i]) {
            memcpy(key, old->keys[i], 32);
            return true;
        }
    return false;
}

/* Creates and starts the collective of req under generation gen. */
static void start_gen(eng_cs_t *cs, stream_t *s, collab_request_t *req, uint64_t gen)
{
    const cl_settings_t *set = cl_member_settings(cs->ctx.mb);
    member_t *mem = NULL;
    s->stage_wait = false; /* set again below if it must wait for its device input */
    int n = members_of(cs, s->comm, gen, req->coll.seq, req->coll.kind, &mem);
    int *ranks = NULL, *clients = NULL;
    double *weights = NULL;
    uint32_t *bandwidths = NULL;
    coll_ctx_t *ctx = NULL;
    int rc = n;
    bool deferred = false; /* the device input must reach host memory first */
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
    /* keys, then whether each is known, in one block */
    ctx->keys = malloc((size_t)n * (32 + sizeof(bool)));
    if (ctx->keys == NULL)
        goto err;
    ctx->haskey = (bool *)(ctx->keys + n);
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
        memcpy(ctx->keys[i], mem[i].key, 32);
        ctx->haskey[i] = mem[i].haskey;
        if (!mem[i].haskey)
            ctx->haskey[i] = key_of_gone(s, gen, mem[i].rank, ctx->keys[i]);
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
    /* An all-reduce among members that all declared their link's rate
       pipelines in chunks that the slowest link's tail allows
       (cl_coll_chunk_bw); the chunk is signed below, so members that see
       other figures do not run it together. */
    args.chunk_bytes = args.kind == CL_COLL_ALLREDUCE ? cl_coll_chunk_bw(CHUNK_BYTES, n, bandwidths)
                                                      : CHUNK_BYTES;
    args.small_bytes = SMALL_BYTES;
    args.early_rate = EARLY_RATE;
    /* COLLAB_VERIFY (docs/security.md §6c): the coordinator also checks
       the part of a member reported to it. */
    if (set->verify) {
        args.verify = 1;
        if (args.kind == CL_COLL_ALLREDUCE &&
            args.count * collab_dtype_extent(args.dtype) >= SMALL_BYTES && args.aggregation == 0)
            args.verify_target = cs->ctx.verify_target(cs->ctx.arg, ranks, n, s->comm);
    }
    /* Device buffers under the staging pipeline: a collective that does
       not read its input chunk by chunk starts once the whole input is
       in host memory (the loop looks again every ENG_STAGE_POLL, or when
       the device wakes it). */
    args.stage = cl_stage_hooks(req);
    if (args.stage != NULL && !cl_coll_stage_aware(&args)) {
        int ready = cl_stage_in_whole(req);
        if (ready < 0) {
            rc = ready;
            goto err;
        }
        if (ready == 0) {
            deferred = true;
            goto err;
        }
        args.stage = NULL;
    }
    ctx->cs = cs;
    ctx->s = s;
    ctx->seq = args.seq;
    ctx->gen = gen;
    ctx->signature = cl_coll_signature(&args);
    ctx->kind = args.kind;
    ctx->members = ranks;
    ctx->nmembers = n;
    ctx->t_start = req->t_start;
    ranks = NULL;
    cl_coll_env_t env = eng_coll_env(ctx);
    cl_coll_t *c = cl_coll_new(&args, &env);
    if (c == NULL)
        goto err;
    s->active = c;
    eng_coll_wake_by(cs, cs->next_tick); /* its tick */
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
        eng_coll_ctx_free(&s->active_ctx);
        s->active_req = NULL;
        cl_request_complete(req, rc);
        return;
    }
    eng_coll_take_buffered(cs, s);
    if (s->active == c) {
        (void)cl_coll_on_tick(c);
        eng_coll_check_done(cs, s);
    }
    return;
err: /* also the deferral: the input is not yet in host memory */
    free(mem);
    free(ranks);
    free(weights);
    free(clients);
    free(bandwidths);
    eng_coll_ctx_free(&ctx);
    if (deferred) {
        zlist_push(s->queue, req); /* first again */
        s->stage_wait = true;
        eng_coll_wake_by(cs, cs_now(cs) + ENG_STAGE_POLL);
        return;
    }
    cl_error("cannot start a collective: %s", collab_strerror(rc));
    cl_request_complete(req, rc);
}

void eng_cs_restart(eng_cs_t *cs, stream_t *s, uint64_t gen)
{
    collab_request_t *req = s->active_req;
    cl_debug("%s #%llu restarts under the older group generation %llu (was %llu)",
             eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq,
             (unsigned long long)gen, (unsigned long long)s->active_ctx->gen);
    eng_coll_requeue_seen(cs, s);
    cl_coll_destroy(&s->active);
    eng_coll_ctx_free(&s->active_ctx);
    s->active_req = NULL;
    start_gen(cs, s, req, gen);
}

size_t eng_coll_take_back(stream_t *s, collab_request_t **out, size_t max)
{
    size_t n = 0;
    if (s->active != NULL && max > 0) {
        collab_request_t *req = s->active_req;
        cl_debug("%s #%llu stops; its request goes back to the elastic layer",
                 eng_coll_kind_name(s->active_ctx->kind), (unsigned long long)s->active_ctx->seq);
        cl_coll_destroy(&s->active);
        eng_coll_ctx_free(&s->active_ctx);
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

/* The generation a new collective on s starts under: the oldest of the
   current one and those that early messages for it carry (if known and
   this peer is in them).  Returns 0 to wait (no group yet, or this peer is
   outside it). */
static uint64_t choose_gen(eng_cs_t *cs, stream_t *s, uint64_t seq)
{
    if (s->comm->kind == CL_COMM_SELF || s->comm->size == 1)
        return 0;
    uint64_t el =
        cs->ctx.el_choose_gen(cs->ctx.arg, s, seq); /* elastic hook: a straggler runs alone */
    if (el != ENG_CS_GEN_DEFAULT)
        return el;
    uint64_t cur = cl_member_group_epoch(cs->ctx.mb);
    if (!cl_member_group_closed(cs->ctx.mb) || !cl_member_self(cs->ctx.mb)->in_group)
        return UINT64_MAX;
    cur = eng_coll_gen_with_departed(cs, s, seq, cur);
    for (buffered_t *b = s->buf_head; b != NULL; b = b->next)
        if (b->seq == seq && b->gen < cur && eng_cs_in_gen(cs, b->gen) &&
            eng_coll_may_pull(cs, s, b->from_world, seq) &&
            cs->ctx.el_gen_ok(cs->ctx.arg, s, seq,
                              b->gen)) /* elastic hook: not before an admission */
            cur = b->gen;
    return cur;
}

void eng_coll_try_start(eng_cs_t *cs, stream_t *s)
{
    if (cs->ctx.el_in_doubt(cs->ctx.arg))
        return; /* elastic hook: stopped; the others' answers come first */
    while (s->active == NULL && s->comm != NULL) {
        collab_request_t *req = zlist_first(s->queue);
        if (req == NULL)
            return;
        uint64_t gen = choose_gen(cs, s, req->coll.seq);
        if (gen == UINT64_MAX) {
            bool formed = cl_member_group_closed(cs->ctx.mb);
            if (req->deadline <= 0)
                req->deadline = cs_now(cs) + eng_group_wait_limit(cs->ctx.cfg->timeout) +
                                (formed ? 0.0 : cs->ctx.cfg->matchmaking_time);
            eng_coll_wake_by(cs, req->deadline);
            if (!formed) {
                cs->waiting_for_group = true;
                cs->ctx.request_match(cs->ctx.arg);
            } else if (!req->waiting_logged) {
                cl_warn("this peer is not in the group of the world communicator (it joined "
                        "after the group formed, or was taken out); waiting to be admitted");
                req->waiting_logged = true;
            }
            return;
        }
        zlist_pop(s->queue);
        const cl_settings_t *set = cl_member_settings(cs->ctx.mb);
        if (set->strict && gen != 0) {
            /* Strict: every rank of the communicator must be there. */
            member_t *mem = NULL;
            int n = members_of(cs, s->comm, gen, req->coll.seq, req->coll.kind, &mem);
            int live = 0;
            for (int i = 0; i < n; i++)
                live += !mem[i].gone;
            free(mem);
            if (live < s->comm->size) {
                cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
                continue;
            }
        }
        start_gen(cs, s, req, gen);
        if (s->stage_wait)
            return; /* _coll's timer or eng_coll_progress tries again */
    }
}

/* A peer that left after taking part in seq counts there, so seq runs
   under a generation that still lists it: the newest one (not after cur)
   that lists every such peer of this communicator and this peer.  The
   others started seq before the view dropped it, under that generation
   (the coordinator drops it only once its GOODBYE reached every member,
   cl_engine_leave.c).  Returns cur when it lists them all or none does. */
uint64_t eng_coll_gen_with_departed(eng_cs_t *cs, stream_t *s, uint64_t seq, uint64_t cur)
{
    enum { MAXDEP = 64 };
    int dep[MAXDEP];
    int k = 0, n = eng_leave_contributors(cs->ctx.leave, s->comm_id, seq, dep, MAXDEP);
    for (int i = 0; i < n; i++)
        if (cl_comm_rank_of_world(s->comm, dep[i]) >= 0)
            dep[k++] = dep[i];
    const group_gen_t *g = eng_cs_gen(cs, cur);
    bool all = g != NULL;
    for (int i = 0; i < k && all; i++)
        all = eng_gens_lists(g, dep[i]);
    if (k == 0 || all)
        return cur;
    uint64_t best = eng_gens_newest_listing(cs->gens, cur, dep, k);
    return best != 0 ? best : cur;
}
