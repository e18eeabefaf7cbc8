/*  cl_engine_coll.c - collective streams: one per communicator.

    Each call on a communicator gets the next sequence number.  At most one
    collective per communicator runs at a time (a cl_coll_t from
    src/coll/); later calls wait in order.  The group of a collective is
    the set of live members of the world group that belong to the
    communicator, ascending by comm rank, with weights and client flags
    from the view.  Before the world group is formed, the first call asks
    the coordinator to form it (matchmaking) and waits.

    Incoming COLL messages are routed by (communicator, sequence number):
    to the running collective, to the last completed one (kept for relay
    requests of members still inside it), or into a buffer when the local
    program has not called that collective yet; older ones are dropped.
    A message whose signature differs from the local collective's is not
    delivered, and its sender is excluded from that collective.
*/
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)256 * 1024) /* pipelining chunk */
#define SMALL_BYTES ((size_t)64 * 1024)  /* one-round allreduce below this */
#define BUFFER_LIMIT ((size_t)1 << 30)   /* early messages kept at most, bytes */
#define TICK 0.1                         /* seconds between ticks of a running collective */
#define DEFAULT_BANDWIDTH 25e6           /* bytes/s assumed before any measurement */

static const char *kind_name(cl_coll_kind_t k)
{
    static const char *const names[] = {"barrier",  "bcast",   "allreduce",
                                        "reduce",   "reduce_scatter_block",
                                        "allgatherv", "gatherv", "scatterv",
                                        "alltoall"};
    return (unsigned)k < CL_COLL_KIND_COUNT ? names[k] : "collective";
}

static void ctx_free(coll_ctx_t **ctx_p)
{
    if (*ctx_p == NULL)
        return;
    free((*ctx_p)->members);
    free((*ctx_p)->failed);
    free(*ctx_p);
    *ctx_p = NULL;
}

static void buffered_free_all(struct cl_engine *e, stream_t *s)
{
    buffered_t *b = s->buf_head;
    while (b != NULL) {
        buffered_t *next = b->next;
        e->buffered_bytes -= b->len;
        free(b->data);
        free(b);
        b = next;
    }
    s->buf_head = s->buf_tail = NULL;
}

/* Frees a stream; requests still attached complete with status. */
static void stream_free(struct cl_engine *e, stream_t *s, int status)
{
    if (s->active != NULL) {
        cl_coll_destroy(&s->active);
        ctx_free(&s->active_ctx);
        cl_request_complete(s->active_req, status);
        s->active_req = NULL;
    }
    if (s->queue != NULL) {
        collab_request_t *r;
        while ((r = zlist_pop(s->queue)) != NULL)
            cl_request_complete(r, status);
        zlist_destroy(&s->queue);
    }
    cl_coll_destroy(&s->retained);
    ctx_free(&s->retained_ctx);
    buffered_free_all(e, s);
    free(s);
}

static stream_t *stream_get(struct cl_engine *e, uint64_t id, bool create)
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

int eng_coll_init(struct cl_engine *e)
{
    (void)e;
    return COLLAB_OK;
}

void eng_coll_fini(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nstreams; i++)
        stream_free(e, e->streams[i], COLLAB_ERR_NOT_INIT);
    free(e->streams);
    e->streams = NULL;
    e->nstreams = e->capstreams = 0;
    free(e->late);
    e->late = NULL;
    e->nlate = e->caplate = 0;
    local_msg_t *l = e->local_head;
    while (l != NULL) {
        local_msg_t *next = l->next;
        free(l);
        l = next;
    }
    e->local_head = e->local_tail = NULL;
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
    m.hdr.seq = ctx->seq;
    m.hdr.signature = ctx->signature;
    m.hdr.part = msg->part;
    m.hdr.chunk = msg->chunk;
    m.hdr.aux = msg->aux;
    m.payload = msg->data;
    m.payload_len = msg->len;
    int rc = eng_send(e, p, &m);
    cl_debug("coll send #%llu type %u part %u chunk %u aux %u len %zu to rank %d: %d",
             (unsigned long long)ctx->seq, msg->type, msg->part, msg->chunk, msg->aux, msg->len,
             w, rc);
    return rc;
}

static double env_now(void *eng)
{
    (void)eng;
    return eng_now();
}

static double env_deadline(void *eng, int from, size_t bytes)
{
    coll_ctx_t *ctx = eng;
    cl_peer_t *p = peer_of(ctx, from);
    double bw = p != NULL && p->bandwidth > 0 ? p->bandwidth : DEFAULT_BANDWIDTH;
    return ctx->e->cfg.timeout + (double)bytes / bw;
}

/* Queues a late member for eng_coll_deferred: acting on it may change
   the view and call back into the algorithm, which must not happen while
   the algorithm is running. */
static void defer_late(struct cl_engine *e, const cl_peer_t *p, int reason)
{
    if (e->nlate == e->caplate) {
        size_t cap = e->caplate > 0 ? 2 * e->caplate : 8;
        struct late_report *a = realloc(e->late, cap * sizeof *a);
        if (a == NULL)
            return;
        e->late = a;
        e->caplate = cap;
    }
    memcpy(e->late[e->nlate].key, p->key, 32);
    e->late[e->nlate].reason = reason;
    e->nlate++;
}

void eng_coll_deferred(struct cl_engine *e)
{
    for (size_t i = 0; i < e->nlate; i++) {
        cl_peer_t *p = cl_member_find(e->mb, e->late[i].key);
        if (p != NULL && p->state != CL_PEER_GONE)
            eng_report_late(e, p, e->late[i].reason);
    }
    e->nlate = 0;
}

static void env_suspect(void *eng, int r)
{
    coll_ctx_t *ctx = eng;
    cl_peer_t *p = peer_of(ctx, r);
    if (p != NULL)
        defer_late(ctx->e, p, CL_SUSPECT_STRAGGLER);
}

/* ---------------------------------------------------------------------- */
/* Starting and finishing. */

typedef struct {
    int rank;      /* comm rank */
    double weight;
    int client;
    cl_peer_t *peer;
} member_t;

static int cmp_member(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Fills the group of a collective on comm.  Returns the member count,
   0 when the caller must wait (group not formed, or this peer outside it),
   or a negative status. */
static int group_of(struct cl_engine *e, collab_comm_t *comm, member_t **out)
{
    *out = NULL;
    cl_peer_t *me = cl_member_self(e->mb);
    if (comm->kind == CL_COMM_SELF || comm->size == 1) {
        member_t *m = malloc(sizeof *m);
        if (m == NULL)
            return COLLAB_ERR_NO_MEM;
        *m = (member_t){0, me->weight, me->client ? 1 : 0, me};
        *out = m;
        return 1;
    }
    if (!cl_member_group_closed(e->mb) || !me->in_group)
        return 0;
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    member_t *m = malloc((n > 0 ? n : 1) * sizeof *m);
    if (m == NULL)
        return COLLAB_ERR_NO_MEM;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (!p->in_group)
            continue;
        int r = cl_comm_rank_of_world(comm, p->rank);
        if (r >= 0)
            m[k++] = (member_t){r, p->weight, p->client ? 1 : 0, p};
    }
    qsort(m, (size_t)k, sizeof *m, cmp_member);
    *out = m;
    return k;
}

static void check_done(struct cl_engine *e, stream_t *s);

/* Tells the running collective that comm rank r is out, and remembers it
   for the log line at completion. */
static void fail_member(stream_t *s, int r)
{
    coll_ctx_t *ctx = s->active_ctx;
    for (int i = 0; i < ctx->nfailed; i++)
        if (ctx->failed[i] == r)
            return;
    int *f = realloc(ctx->failed, (size_t)(ctx->nfailed + 1) * sizeof *f);
    if (f != NULL) {
        ctx->failed = f;
        ctx->failed[ctx->nfailed++] = r;
    }
    (void)cl_coll_on_fail(s->active, r);
}
static void deliver(struct cl_engine *e, stream_t *s, bool active, int from_world,
                    uint64_t seq, uint32_t signature, uint8_t type, uint32_t part,
                    uint32_t chunk, uint32_t aux, const void *data, size_t len);

static void start(struct cl_engine *e, stream_t *s, collab_request_t *req, member_t *mem, int n)
{
    const cl_settings_t *set = cl_member_settings(e->mb);
    cl_coll_args_t args = req->coll;
    int *ranks = malloc((size_t)n * sizeof(int));
    double *weights = malloc((size_t)n * sizeof(double));
    int *clients = malloc((size_t)n * sizeof(int));
    coll_ctx_t *ctx = calloc(1, sizeof *ctx);
    cl_coll_t *c = NULL;
    int rc = COLLAB_ERR_NO_MEM;
    if (ranks == NULL || weights == NULL || clients == NULL || ctx == NULL)
        goto err;
    for (int i = 0; i < n; i++) {
        ranks[i] = mem[i].rank;
        weights[i] = mem[i].weight;
        clients[i] = mem[i].client;
    }
    args.comm_id = s->comm_id;
    args.comm_size = s->comm->size;
    args.nmembers = n;
    args.members = ranks;
    args.weights = weights;
    args.clients = clients;
    args.self = s->comm->rank;
    args.strict = set->strict ? 1 : 0;
    args.compression = set->compression;
    args.chunk_bytes = CHUNK_BYTES;
    args.small_bytes = SMALL_BYTES;
    ctx->e = e;
    ctx->s = s;
    ctx->seq = args.seq;
    ctx->signature = cl_coll_signature(&args);
    ctx->kind = args.kind;
    ctx->members = ranks;
    ctx->nmembers = n;
    ctx->t_start = req->t_start;
    ranks = NULL;
    cl_coll_env_t env = {ctx, env_send, env_now, env_deadline, env_suspect};
    c = cl_coll_new(&args, &env);
    if (c == NULL)
        goto err;
    s->active = c;
    s->active_ctx = ctx;
    s->active_req = req;
    s->started = args.seq + 1;
    free(weights);
    free(clients);
    rc = cl_coll_start(c);
    if (rc != COLLAB_OK) {
        cl_error("%s #%llu could not start: %s", kind_name(ctx->kind),
                 (unsigned long long)ctx->seq, collab_strerror(rc));
        cl_coll_destroy(&s->active);
        ctx_free(&s->active_ctx);
        s->active_req = NULL;
        cl_request_complete(req, rc);
        return;
    }
    /* Messages that arrived before the program called this collective. */
    buffered_t *prev = NULL, *b = s->buf_head;
    while (b != NULL && s->active == c) {
        buffered_t *next = b->next;
        if (b->seq == args.seq) {
            if (prev != NULL)
                prev->next = next;
            else
                s->buf_head = next;
            if (s->buf_tail == b)
                s->buf_tail = prev;
            e->buffered_bytes -= b->len;
            deliver(e, s, true, b->from_world, b->seq, b->signature, b->type, b->part,
                    b->chunk, b->aux, b->data, b->len);
            free(b->data);
            free(b);
        } else {
            prev = b;
        }
        b = next;
    }
    if (s->active == c) {
        (void)cl_coll_on_tick(c);
        check_done(e, s);
    }
    return;
err:
    free(ranks);
    free(weights);
    free(clients);
    ctx_free(&ctx);
    cl_error("out of memory starting a collective");
    cl_request_complete(req, rc);
}

static void try_start(struct cl_engine *e, stream_t *s)
{
    while (s->active == NULL && s->comm != NULL) {
        collab_request_t *req = zlist_first(s->queue);
        if (req == NULL)
            return;
        member_t *mem = NULL;
        int n = group_of(e, s->comm, &mem);
        if (n == 0) {
            bool formed = cl_member_group_closed(e->mb);
            if (req->deadline <= 0) {
                req->deadline =
                    eng_now() + fmax(30.0, 4.0 * e->cfg.timeout) +
                    (formed ? 0.0 : e->cfg.matchmaking_time);
            }
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
        if (n < 0) {
            cl_request_complete(req, n);
            continue;
        }
        const cl_settings_t *set = cl_member_settings(e->mb);
        if (set->strict && s->comm->kind != CL_COMM_SELF && n < s->comm->size) {
            free(mem);
            cl_request_complete(req, COLLAB_ERR_PROC_FAILED);
            continue;
        }
        start(e, s, req, mem, n);
        free(mem);
    }
}

void eng_coll_submit(struct cl_engine *e, collab_request_t *req)
{
    stream_t *s = stream_get(e, req->comm->id, true);
    if (s == NULL) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    if (s->comm == NULL)
        s->comm = req->comm;
    req->coll.comm_id = s->comm_id;
    req->coll.seq = s->next_seq++;
    if (zlist_append(s->queue, req) != 0) {
        cl_request_complete(req, COLLAB_ERR_NO_MEM);
        return;
    }
    try_start(e, s);
}

static void log_result(struct cl_engine *e, stream_t *s, coll_ctx_t *ctx, int ncontrib,
                       double seconds)
{
    /* Members that dropped out during the call. */
    int left = ctx->nmembers - ctx->nfailed;
    for (int i = 0; i < ctx->nfailed; i++) {
        int w = cl_comm_world_of(s->comm, ctx->failed[i]);
        cl_warn("peer rank %d failed during %s #%llu; finished with %d peer%s", w,
                kind_name(ctx->kind), (unsigned long long)ctx->seq, left, left == 1 ? "" : "s");
    }
    double now = eng_now();
    if (ctx->kind == CL_COLL_ALLREDUCE) {
        e->log_tensors++;
        e->log_bytes += (uint64_t)(s->active_req->coll.count *
                                   collab_dtype_extent(s->active_req->coll.dtype));
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

static void check_done(struct cl_engine *e, stream_t *s)
{
    while (s->active != NULL && cl_coll_done(s->active)) {
        cl_coll_t *c = s->active;
        coll_ctx_t *ctx = s->active_ctx;
        collab_request_t *req = s->active_req;
        int status = cl_coll_status(c);
        int ncontrib = 0;
        const int *contrib = cl_coll_contributors(c, &ncontrib);
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
        for (int i = 0; i < info.nranks && contrib != NULL; i++)
            info.ranks[i] = contrib[i];
        if (cl_coll_release_user_buffers(c) != COLLAB_OK && status == COLLAB_OK)
            status = COLLAB_ERR_NO_MEM;
        log_result(e, s, ctx, contrib != NULL ? ncontrib : 0, seconds);
        /* Members that answered are no longer late. */
        for (int i = 0; i < ncontrib && contrib != NULL; i++) {
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
/* Incoming messages. */

static void deliver(struct cl_engine *e, stream_t *s, bool active, int from_world,
                    uint64_t seq, uint32_t signature, uint8_t type, uint32_t part,
                    uint32_t chunk, uint32_t aux, const void *data, size_t len)
{
    cl_coll_t *c = active ? s->active : s->retained;
    coll_ctx_t *ctx = active ? s->active_ctx : s->retained_ctx;
    int from = cl_comm_rank_of_world(s->comm, from_world);
    if (c == NULL || from < 0)
        return;
    if (signature != ctx->signature) {
        cl_peer_t *p = cl_member_at_rank(e->mb, from_world);
        cl_warn("rank %d called a different collective than this peer's %s #%llu (signature "
                "%08x, ours %08x); excluding it from this one",
                from_world, kind_name(ctx->kind), (unsigned long long)seq, signature,
                ctx->signature);
        if (active) {
            fail_member(s, from);
            if (p != NULL)
                defer_late(e, p, CL_SUSPECT_MISMATCH);
        }
    } else {
        cl_coll_msg_t msg = {type, part, chunk, aux, from, data, len};
        (void)cl_coll_on_msg(c, &msg);
    }
    if (active && s->active == c) {
        (void)cl_coll_on_tick(c);
        check_done(e, s);
    }
}

static void route(struct cl_engine *e, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                  const void *data, size_t len)
{
    cl_debug("coll recv #%llu type %u part %u chunk %u aux %u len %zu from rank %d (active %lld, "
             "started %llu)",
             (unsigned long long)h->seq, h->sub, h->part, h->chunk, h->aux, len, from_world,
             s->active != NULL ? (long long)s->active_ctx->seq : -1LL,
             (unsigned long long)s->started);
    if (s->comm != NULL && s->active != NULL && h->seq == s->active_ctx->seq) {
        deliver(e, s, true, from_world, h->seq, h->signature, h->sub, h->part, h->chunk, h->aux,
                data, len);
    } else if (s->comm != NULL && s->retained != NULL && h->seq == s->retained_ctx->seq) {
        deliver(e, s, false, from_world, h->seq, h->signature, h->sub, h->part, h->chunk,
                h->aux, data, len);
    } else if (h->seq >= s->started) {
        if (e->buffered_bytes + len > BUFFER_LIMIT) {
            cl_warn("dropping an early collective message from rank %d: %zu bytes already "
                    "wait for collectives this peer has not called",
                    from_world, e->buffered_bytes);
            return;
        }
        buffered_t *b = calloc(1, sizeof *b);
        if (b == NULL)
            return;
        if (len > 0 && (b->data = malloc(len)) == NULL) {
            free(b);
            return;
        }
        if (len > 0)
            memcpy(b->data, data, len);
        b->seq = h->seq;
        b->signature = h->signature;
        b->from_world = from_world;
        b->type = h->sub;
        b->part = h->part;
        b->chunk = h->chunk;
        b->aux = h->aux;
        b->len = len;
        if (s->buf_tail != NULL)
            s->buf_tail->next = b;
        else
            s->buf_head = b;
        s->buf_tail = b;
        e->buffered_bytes += len;
    }
    /* else: a collective this peer finished long ago; nobody needs it. */
}

void eng_coll_on_message(struct cl_engine *e, cl_peer_t *from, const cl_wire_msg_t *m)
{
    if (from->rank < 0)
        return;
    if (m->payload_len >= 65536) {
        /* Bandwidth seen from this peer, for data deadlines. */
        double now = eng_now();
        double gap = now - from->last_data;
        if (from->last_data > 0 && gap > 1e-4 && gap < 1.0) {
            double bw = fmin((double)m->payload_len / gap, 1e10);
            from->bandwidth = from->bandwidth > 0 ? 0.8 * from->bandwidth + 0.2 * bw : bw;
        }
        from->last_data = now;
    }
    if (m->hdr.comm == CL_COMM_SELF_ID)
        return; /* nobody else speaks on our self communicator */
    stream_t *s = stream_get(e, m->hdr.comm, true);
    if (s != NULL)
        route(e, s, from->rank, &m->hdr, m->payload, m->payload_len);
}

void eng_coll_deliver_local(struct cl_engine *e)
{
    while (e->local_head != NULL) {
        local_msg_t *l = e->local_head;
        e->local_head = l->next;
        if (e->local_head == NULL)
            e->local_tail = NULL;
        stream_t *s = stream_get(e, l->comm, false);
        if (s != NULL) {
            cl_wire_hdr_t h;
            memset(&h, 0, sizeof h);
            h.seq = l->seq;
            h.signature = l->signature;
            h.sub = l->msg.type;
            h.part = l->msg.part;
            h.chunk = l->msg.chunk;
            h.aux = l->msg.aux;
            int w = cl_comm_world_of(s->comm, l->msg.from);
            route(e, s, w, &h, l->msg.data, l->msg.len);
        }
        free(l);
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
        if (r < 0 || !member)
            continue;
        fail_member(s, r);
        (void)cl_coll_on_tick(s->active);
    }
    for (size_t i = 0; i < e->nstreams; i++)
        check_done(e, e->streams[i]);
}

void eng_coll_view_changed(struct cl_engine *e)
{
    if (cl_member_group_closed(e->mb))
        e->waiting_for_group = false;
    for (size_t i = 0; i < e->nstreams; i++)
        try_start(e, e->streams[i]);
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
                check_done(e, s);
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
                    cl_error("the group of the world communicator did not form in time "
                             "(COLLAB_STRICT needs all COLLAB_WORLD_SIZE ranks)");
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
