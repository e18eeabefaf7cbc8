/*  cl_coll.c - the collective state machine's common part and dispatcher.

    cl_coll_new validates and copies the arguments, then picks one
    algorithm by kind and size:

      kind                  algorithm (file)
      barrier               exchange of empty inputs     (cl_coll_exchange.c)
      allreduce < small     exchange of inputs, local fold (cl_coll_exchange.c)
      allreduce >= small    butterfly                     (cl_coll_butterfly.c)
      reduce < small        direct sends to the root      (cl_coll_direct.c)
      reduce >= small       butterfly, results to root    (cl_coll_butterfly.c)
      reduce_scatter_block  butterfly, block r at rank r  (cl_coll_butterfly.c)
      bcast                 chain / binomial tree         (cl_coll_bcast.c)
      allgatherv            exchange                      (cl_coll_exchange.c)
      gatherv, scatterv, alltoall  direct sends           (cl_coll_direct.c)

    Everything else here is shared by the algorithms: the member list and
    the failed set (this member's view), message sending with traffic
    counts, the DONE bookkeeping, deadlines (on_tick), completion and the
    reduction rule of DESIGN §2 (cl_coll_combine).  The engine sees only
    the functions of cl_coll.h; it never learns which algorithm runs.
*/
#include "cl_coll_impl.h"

#include "util/cl_log.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* --- bitmaps, lookup, argument checks ------------------------------- */

size_t cl_bm_count(const uint8_t *bm, size_t bits)
{
    size_t n = 0;
    for (size_t i = 0; i < bits; i++)
        n += cl_bit(bm, i);
    return n;
}

double cl_coll_now(cl_coll_t *self)
{
    return self->env.now(self->env.eng);
}

/* Member index of comm rank r, -1 when r is not a member. */
static int s_index(const cl_coll_t *self, int r)
{
    int lo = 0, hi = self->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (self->members[mid] == r)
            return mid;
        if (self->members[mid] < r)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static bool s_rooted(cl_coll_kind_t k)
{
    return k == CL_COLL_BCAST || k == CL_COLL_REDUCE || k == CL_COLL_GATHERV ||
           k == CL_COLL_SCATTERV;
}

static bool s_reduction(cl_coll_kind_t k)
{
    return k == CL_COLL_ALLREDUCE || k == CL_COLL_REDUCE || k == CL_COLL_REDUCE_SCATTER_BLOCK;
}

/* a * b without overflow, or false. */
static bool s_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}

int cl_coll_args_check(const cl_coll_args_t *a)
{
    if (a == NULL || (unsigned)a->kind >= CL_COLL_KIND_COUNT)
        return COLLAB_ERR_ARG;
    if (a->comm_size < 1 || a->nmembers < 1 || a->nmembers > a->comm_size || a->members == NULL)
        return COLLAB_ERR_ARG;
    bool self_in = false;
    for (int i = 0; i < a->nmembers; i++) {
        int r = a->members[i];
        if (r < 0 || r >= a->comm_size || (i > 0 && r <= a->members[i - 1]))
            return COLLAB_ERR_RANK;
        self_in = self_in || r == a->self;
        if (a->weights != NULL && !(isfinite(a->weights[i]) && a->weights[i] >= 0))
            return COLLAB_ERR_ARG;
        if (a->clients != NULL && a->clients[i] != 0 && a->clients[i] != 1)
            return COLLAB_ERR_ARG;
    }
    if (!self_in)
        return COLLAB_ERR_RANK;
    if (s_rooted(a->kind) && (a->root < 0 || a->root >= a->comm_size))
        return COLLAB_ERR_ROOT;
    if (a->compression < 0 || a->compression > CL_COLL_COMPRESSION_ADAPTIVE)
        return COLLAB_ERR_ARG;
    bool at_root = a->self == a->root;
    size_t total;
    if (s_reduction(a->kind)) {
        if ((unsigned)a->dtype >= COLLAB_DTYPE_COUNT)
            return COLLAB_ERR_TYPE;
        collab_op_kind_t op = a->op.kind;
        if ((unsigned)op >= COLLAB_OP_COUNT || op == COLLAB_OP_REPLACE || op == COLLAB_OP_NO_OP)
            return COLLAB_ERR_OP;
        if (op == COLLAB_OP_USER && a->op.user_fn == NULL)
            return COLLAB_ERR_OP;
        if (!collab_op_valid(op, a->dtype))
            return COLLAB_ERR_OP;
        size_t esize = collab_dtype_extent(a->dtype);
        size_t blocks = a->kind == CL_COLL_REDUCE_SCATTER_BLOCK ? (size_t)a->comm_size : 1;
        if (!s_mul(a->count, esize, &total) || !s_mul(total, blocks, &total))
            return COLLAB_ERR_COUNT;
        if (total > 0) {
            bool need_recv = a->kind != CL_COLL_REDUCE || at_root;
            if (need_recv && a->recvbuf == NULL)
                return COLLAB_ERR_ARG;
            if (a->sendbuf == NULL && a->kind == CL_COLL_REDUCE && !at_root)
                return COLLAB_ERR_ARG;
        }
        return COLLAB_OK;
    }
    switch (a->kind) {
    case CL_COLL_BARRIER:
        return COLLAB_OK;
    case CL_COLL_BCAST:
        return a->count > 0 && a->recvbuf == NULL ? COLLAB_ERR_ARG : COLLAB_OK;
    case CL_COLL_ALLTOALL:
        if (!s_mul(a->count, (size_t)a->comm_size, &total))
            return COLLAB_ERR_COUNT;
        return total > 0 && a->recvbuf == NULL ? COLLAB_ERR_ARG : COLLAB_OK;
    case CL_COLL_ALLGATHERV:
    case CL_COLL_GATHERV:
        if (a->sbytes > 0 && a->sendbuf == NULL && !(a->kind == CL_COLL_GATHERV && at_root) &&
            a->kind != CL_COLL_ALLGATHERV)
            return COLLAB_ERR_ARG;
        if (a->kind == CL_COLL_ALLGATHERV || at_root) {
            if (a->counts == NULL || a->displs == NULL)
                return COLLAB_ERR_ARG;
            for (int r = 0; r < a->comm_size; r++) {
                if (a->displs[r] > SIZE_MAX - a->counts[r])
                    return COLLAB_ERR_COUNT;
                if (a->counts[r] > 0 && a->recvbuf == NULL)
                    return COLLAB_ERR_ARG;
            }
        }
        return COLLAB_OK;
    case CL_COLL_SCATTERV:
        if (at_root) {
            if (a->counts == NULL || a->displs == NULL)
                return COLLAB_ERR_ARG;
            for (int r = 0; r < a->comm_size; r++) {
                if (a->displs[r] > SIZE_MAX - a->counts[r])
                    return COLLAB_ERR_COUNT;
                if (a->counts[r] > 0 && a->sendbuf == NULL)
                    return COLLAB_ERR_ARG;
            }
            return COLLAB_OK;
        }
        return a->rbytes > 0 && a->recvbuf == NULL ? COLLAB_ERR_ARG : COLLAB_OK;
    default:
        return COLLAB_ERR_ARG;
    }
}

/* --- life cycle ----------------------------------------------------- */

static const cl_algo_t *s_pick(const cl_coll_args_t *a, size_t esize)
{
    size_t bytes = a->count * esize;
    switch (a->kind) {
    case CL_COLL_BARRIER:
    case CL_COLL_ALLGATHERV:
        return &cl_algo_exchange;
    case CL_COLL_ALLREDUCE:
        /* Robust aggregation needs every member's whole contribution at
           every member (docs/collectives.md): always the exchange. */
        if (a->aggregation != 0)
            return &cl_algo_exchange;
        return a->nmembers == 1 || bytes < a->small_bytes ? &cl_algo_exchange : &cl_algo_butterfly;
    case CL_COLL_REDUCE:
        return a->nmembers == 1 || bytes < a->small_bytes ? &cl_algo_direct : &cl_algo_butterfly;
    case CL_COLL_REDUCE_SCATTER_BLOCK:
        return &cl_algo_butterfly;
    case CL_COLL_BCAST:
        return &cl_algo_bcast;
    default:
        return &cl_algo_direct;
    }
}

static void *s_dup(const void *p, size_t bytes)
{
    void *q = malloc(bytes > 0 ? bytes : 1);
    if (q != NULL && bytes > 0)
        memcpy(q, p, bytes);
    return q;
}

cl_coll_t *cl_coll_new(const cl_coll_args_t *args, const cl_coll_env_t *env)
{
    if (env == NULL || env->send == NULL || env->now == NULL || env->deadline == NULL ||
        env->suspect == NULL)
        return NULL;
    int rc = cl_coll_args_check(args);
    if (rc != COLLAB_OK) {
        cl_error("collective %d on comm %016llx #%llu: invalid arguments (%s)",
                 args != NULL ? (int)args->kind : -1,
                 args != NULL ? (unsigned long long)args->comm_id : 0ULL,
                 args != NULL ? (unsigned long long)args->seq : 0ULL, collab_strerror(rc));
        return NULL;
    }
    cl_coll_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    self->a = *args;
    self->env = *env;
    self->n = args->nmembers;
    size_t n = (size_t)self->n;
    self->nb = cl_bm_bytes(n);
    self->members = s_dup(args->members, n * sizeof(int));
    self->weights = malloc(n * sizeof(double));
    self->clients = calloc(n, sizeof(int));
    self->bandwidths = calloc(n, sizeof(uint32_t));
    self->failed = calloc(self->nb, 1);
    self->done_from = calloc(self->nb, 1);
    self->heard = calloc(n, sizeof(double));
    self->first = calloc(n, sizeof(double));
    self->waiting = malloc(n * sizeof(double));
    if (self->members == NULL || self->weights == NULL || self->clients == NULL ||
        self->bandwidths == NULL || self->failed == NULL || self->done_from == NULL ||
        self->heard == NULL || self->first == NULL || self->waiting == NULL)
        goto err;
    for (size_t i = 0; i < n; i++) {
        self->weights[i] = args->weights != NULL ? args->weights[i] : 1.0;
        self->clients[i] = args->clients != NULL ? args->clients[i] : 0;
        self->bandwidths[i] = args->bandwidths != NULL ? args->bandwidths[i] : 0;
        self->waiting[i] = -1;
    }
    size_t cs = (size_t)args->comm_size;
    if (args->counts != NULL && (self->counts = s_dup(args->counts, cs * sizeof(size_t))) == NULL)
        goto err;
    if (args->displs != NULL && (self->displs = s_dup(args->displs, cs * sizeof(size_t))) == NULL)
        goto err;
    self->a.members = self->members;
    self->a.weights = self->weights;
    self->a.clients = self->clients;
    self->a.bandwidths = self->bandwidths;
    self->a.counts = self->counts;
    self->a.displs = self->displs;
    self->me = s_index(self, args->self);
    self->root = s_rooted(args->kind) ? s_index(self, args->root) : -1;
    self->esize = s_reduction(args->kind) ? collab_dtype_extent(args->dtype) : 1;
    self->codec = CL_COMPRESS_NONE;
    if (s_reduction(args->kind) && args->op.kind == COLLAB_OP_SUM &&
        (args->dtype == COLLAB_FLOAT || args->dtype == COLLAB_DOUBLE)) {
        if (args->compression == CL_COLL_COMPRESSION_ADAPTIVE) {
            if ((self->codecs = malloc(n * sizeof *self->codecs)) == NULL ||
                cl_coll_adaptive_codecs(self->bandwidths, (int)n, self->codecs) != COLLAB_OK)
                goto err;
        } else {
            self->codec = (cl_compress_t)args->compression;
        }
    }
    self->last_check = -1;
    /* Signed proofs when every member reads them; with two members
       nobody relays, and no proof is made (docs/security.md §6). */
    self->sig = env->sign != NULL && env->verify != NULL && env->signs != NULL && n > 2;
    for (size_t m = 0; m < n && self->sig; m++)
        if ((int)m != self->me && !env->signs(env->eng, self->members[m]))
            self->sig = false;
    self->algo = s_pick(args, self->esize);
    return self;
err:
    cl_coll_destroy(&self);
    return NULL;
}

void cl_coll_destroy(cl_coll_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_coll_t *self = *self_p;
    if (self->algo != NULL && self->st != NULL)
        self->algo->destroy(self);
    free(self->members);
    free(self->weights);
    free(self->clients);
    free(self->bandwidths);
    free(self->codecs);
    free(self->counts);
    free(self->displs);
    free(self->failed);
    free(self->disowned);
    free(self->done_from);
    free(self->heard);
    free(self->first);
    free(self->waiting);
    free(self->contrib);
    free(self);
    *self_p = NULL;
}

/* An algorithm entry's error completes the collective with it, unless
   the entry completed it already.  Returns rc. */
static int s_settle(cl_coll_t *self, int rc)
{
    if (rc != COLLAB_OK && !self->done)
        cl_coll_complete(self, rc);
    return rc;
}

int cl_coll_start(cl_coll_t *self)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    if (self->started)
        return COLLAB_OK;
    self->started = true;
    if (self->done)
        return COLLAB_OK; /* failed (strict) before it started */
    double now = cl_coll_now(self);
    self->t_start = now;
    self->wake_at = INFINITY;
    for (int i = 0; i < self->n; i++) {
        self->heard[i] = now;
        self->first[i] = -1;
    }
    return s_settle(self, self->algo->start(self));
}

/* A STATUS names the failures its sender knows of (its view).  Those were
   declared by the engine, which tells every survivor in time; taking them
   over now only makes views converge sooner, and keeps a completed
   (retained) collective answering with the current view even if the
   engine reports failures to running collectives only.  Only failures
   this member's engine confirms are taken over (env->confirms_failed): a
   hostile member's STATUS cannot declare honest members failed (it
   declared rank 1 failed at every reducer it sent data to, which left
   rank 1 out of every result: tests/attack/recorded/status.txt).  A
   malformed view is left for the algorithm to refuse; this member never
   counts itself. */
static void s_adopt_view(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    if (msg->len < self->nb)
        return;
    const uint8_t *tag = msg->data;
    size_t k = cl_bm_count(tag, (size_t)self->n);
    if (k == 0 || k != cl_bm_count(tag, self->nb * 8) || cl_bit(tag, (size_t)from))
        return;
    for (int i = 0; i < self->n; i++) {
        if (i == self->me || !cl_bit(tag, (size_t)i) || !cl_coll_alive(self, i))
            continue;
        if (self->env.confirms_failed != NULL &&
            !self->env.confirms_failed(self->env.eng, self->members[i])) {
            cl_debug("collective #%llu: rank %d's status names rank %d failed; not taken over "
                     "(no evidence here)",
                     (unsigned long long)self->a.seq, self->members[from], self->members[i]);
            continue;
        }
        cl_coll_on_fail(self, self->members[i]);
    }
}

int cl_coll_on_msg(cl_coll_t *self, const cl_coll_msg_t *msg)
{
    if (self == NULL || msg == NULL)
        return COLLAB_ERR_ARG;
    int from = s_index(self, msg->from);
    if (from < 0 || from == self->me || msg->type < 1 || msg->type > CL_MSG_MAX ||
        (msg->len > 0 && msg->data == NULL))
        return COLLAB_ERR_ARG;
    /* A member this member knows to have failed is out of the collective:
       its late messages must not change anything (cl_relay.c). */
    /* A member disowned here for a forgery lives for the others: its
       statuses count, and its relays, which are checked like anyone's. */
    if (!cl_coll_alive(self, from) &&
        !((msg->type == CL_MSG_STATUS || msg->type == CL_MSG_RELAY) && cl_coll_disowned(self, from)))
        return COLLAB_OK;
    if (!self->started) {
        int rc = cl_coll_start(self);
        if (rc != COLLAB_OK)
            return rc;
    }
    if (msg->type == CL_MSG_STATUS)
        s_adopt_view(self, from, msg);
    if (msg->type == CL_MSG_DONE) {
        if (msg->len != 0 || msg->part != 0 || msg->chunk != 0)
            return COLLAB_ERR_ARG;
        if (cl_bit(self->done_from, (size_t)from))
            return COLLAB_ERR_ARG;
        cl_bit_set(self->done_from, (size_t)from);
    }
    /* Nothing to do: a zero-sized collective, or one that ended with an
       error (strict mode), which promises nothing to anybody. */
    if (self->st == NULL || (self->done && self->status != COLLAB_OK))
        return COLLAB_OK;
    int rc = self->algo->on_msg(self, from, msg);
    if (rc == COLLAB_OK) {
        self->heard[from] = cl_coll_now(self);
        if (self->first[from] < 0)
            self->first[from] = self->heard[from];
        self->received += msg->len;
    }
    return rc;
}

int cl_coll_on_fail(cl_coll_t *self, int r)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    int idx = s_index(self, r);
    if (idx < 0 || idx == self->me)
        return COLLAB_ERR_ARG;
    if (cl_bit(self->failed, (size_t)idx))
        return COLLAB_OK;
    cl_bit_set(self->failed, (size_t)idx);
    self->nfailed++;
    self->waiting[idx] = -1;
    if (self->a.strict) {
        /* Strict: no partial result is promised, so nobody needs relays. */
        if (!self->done)
            cl_coll_complete(self, COLLAB_ERR_PROC_FAILED);
        return COLLAB_OK;
    }
    if (!self->started)
        return COLLAB_OK; /* start() looks at the failed set */
    if (self->st != NULL)
        self->algo->on_fail(self, idx);
    return COLLAB_OK;
}

int cl_coll_on_tick(cl_coll_t *self)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    if (!self->started || self->done || self->st == NULL)
        return COLLAB_OK;
    double now = cl_coll_now(self);
    if (self->last_check >= 0 && now - self->last_check < CL_COLL_TICK_MIN)
        return COLLAB_OK;
    self->last_check = now;
    size_t *bytes = calloc((size_t)self->n, sizeof *bytes);
    if (bytes == NULL)
        return COLLAB_ERR_NO_MEM;
    self->algo->expect(self, bytes);
    for (int m = 0; m < self->n; m++) {
        if (m == self->me || !cl_coll_alive(self, m) || bytes[m] == 0) {
            self->waiting[m] = -1;
            continue;
        }
        if (self->waiting[m] < 0)
            self->waiting[m] = now;
        double since = self->waiting[m] > self->heard[m] ? self->waiting[m] : self->heard[m];
        double limit = self->env.deadline(self->env.eng, self->members[m], bytes[m]);
        if (now - since > limit) {
            cl_debug("collective #%llu: rank %d is late (%zu bytes outstanding for %.1f s)",
                     (unsigned long long)self->a.seq, self->members[m], bytes[m], now - since);
            self->waiting[m] = now; /* re-armed: the engine decides */
            self->env.suspect(self->env.eng, self->members[m]);
        }
    }
    free(bytes);
    return COLLAB_OK;
}

bool cl_coll_stage_aware(const cl_coll_args_t *args)
{
    return args != NULL && args->kind == CL_COLL_ALLREDUCE && !args->verify &&
           s_pick(args, collab_dtype_extent(args->dtype)) == &cl_algo_butterfly;
}

bool cl_coll_waits_input(const cl_coll_t *self)
{
    return self != NULL && !self->done && self->in_wait;
}

int cl_coll_pump(cl_coll_t *self)
{
    if (!cl_coll_waits_input(self) || self->st == NULL || self->algo->pump == NULL)
        return COLLAB_OK;
    self->in_wait = false;
    return s_settle(self, self->algo->pump(self));
}

double cl_coll_wake_at(const cl_coll_t *self)
{
    if (self == NULL || !self->started || self->done || self->st == NULL)
        return INFINITY;
    return self->wake_at;
}

int cl_coll_recheck(cl_coll_t *self)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    double at = cl_coll_wake_at(self);
    if (at == INFINITY || cl_coll_now(self) < at)
        return COLLAB_OK;
    self->wake_at = INFINITY;
    return self->algo->recheck != NULL ? s_settle(self, self->algo->recheck(self)) : COLLAB_OK;
}

bool cl_coll_done(const cl_coll_t *self)
{
    return self != NULL && self->done;
}

int cl_coll_status(const cl_coll_t *self)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    return self->done ? self->status : COLLAB_OK;
}

const int *cl_coll_contributors(const cl_coll_t *self, int *n)
{
    if (self == NULL || !self->done) {
        if (n != NULL)
            *n = 0;
        return NULL;
    }
    if (n != NULL)
        *n = self->ncontrib;
    return self->contrib;
}

void cl_coll_traffic(const cl_coll_t *self, uint64_t *sent, uint64_t *received)
{
    if (sent != NULL)
        *sent = self != NULL ? self->sent : 0;
    if (received != NULL)
        *received = self != NULL ? self->received : 0;
}

bool cl_coll_owes(const cl_coll_t *self)
{
    return self != NULL && self->done && self->status == COLLAB_OK && self->st != NULL &&
           self->algo->owes != NULL && self->algo->owes(self);
}

int cl_coll_release_user_buffers(cl_coll_t *self)
{
    if (self == NULL)
        return COLLAB_ERR_ARG;
    if (self->released)
        return COLLAB_OK;
    int rc = COLLAB_OK;
    if (self->st != NULL)
        rc = self->algo->release(self);
    self->released = true;
    self->a.sendbuf = NULL;
    self->a.recvbuf = NULL;
    self->a.stage = NULL; /* staging's buffers go back with the request */
    self->in_wait = false;
    return rc;
}

/* FNV-1a, 32 bits. */
static uint32_t s_fnv(uint32_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 16777619u;
    }
    return h;
}

bool cl_coll_any_codec(const cl_coll_t *self)
{
    if (self->codecs == NULL)
        return self->codec != CL_COMPRESS_NONE;
    for (int i = 0; i < self->n; i++)
        if (self->codecs[i] != CL_COMPRESS_NONE)
            return true;
    return false;
}

uint32_t cl_coll_signature(const cl_coll_args_t *args)
{
    if (args == NULL)
        return 0;
    uint32_t h = 2166136261u;
    uint64_t f[9] = {(uint64_t)args->kind,        args->comm_id,
                     (uint64_t)args->count,       (uint64_t)args->dtype,
                     (uint64_t)args->op.kind,     (uint64_t)(int64_t)args->root,
                     (uint64_t)args->compression, (uint64_t)args->chunk_bytes,
                     (uint64_t)args->small_bytes};
    if (args->kind != CL_COLL_ALLREDUCE && args->kind != CL_COLL_REDUCE &&
        args->kind != CL_COLL_REDUCE_SCATTER_BLOCK)
        f[3] = f[4] = 0; /* the op does not matter for data movement */
    if (args->kind != CL_COLL_BCAST && args->kind != CL_COLL_REDUCE &&
        args->kind != CL_COLL_GATHERV && args->kind != CL_COLL_SCATTERV)
        f[5] = 0;
    for (int i = 0; i < 9; i++)
        h = s_fnv(h, &f[i], sizeof f[i]);
    h = s_fnv(h, &args->strict, sizeof args->strict);
    if (args->aggregation != 0) { /* robust members are never averaged with plain ones */
        h = s_fnv(h, &args->aggregation, sizeof args->aggregation);
        h = s_fnv(h, &args->max_weight_ratio, sizeof args->max_weight_ratio);
    }
    /* Parts sized by bandwidth: members that would cut the vector
       differently (their views disagree on the figures) must not run it
       together, so the figures that size the parts are signed. */
    if (args->kind == CL_COLL_ALLREDUCE && args->bandwidths != NULL &&
        args->op.kind != COLLAB_OP_USER && args->nmembers > 0 && args->members != NULL) {
        uint32_t fig[64], *f = args->nmembers <= 64 ? fig : malloc((size_t)args->nmembers * 4);
        size_t k = 0;
        for (int i = 0; f != NULL && i < args->nmembers; i++)
            if (args->clients == NULL || !args->clients[i])
                f[k++] = args->bandwidths[i];
        for (int i = 0; f != NULL && k == 0 && i < args->nmembers; i++)
            f[i] = args->bandwidths[i]; /* clients only: every member reduces */
        if (f != NULL && k == 0)
            k = (size_t)args->nmembers;
        if (f != NULL && k > (size_t)args->count)
            k = (size_t)args->count;
        if (f != NULL && cl_coll_split_weighted(args->count, k, args->nmembers, f))
            h = s_fnv(h, f, k * sizeof *f);
        if (f != fig)
            free(f);
    }
    /* Adaptive compression: each member's codec follows every member's
       figure, so members that would encode or decode differently must
       not run the collective together. */
    if (args->compression == CL_COLL_COMPRESSION_ADAPTIVE && s_reduction(args->kind) &&
        args->bandwidths != NULL && args->nmembers > 0)
        h = s_fnv(h, args->bandwidths, (size_t)args->nmembers * sizeof *args->bandwidths);
    /* Allgatherv's counts are the same at every rank (MPI requires it). */
    if (args->kind == CL_COLL_ALLGATHERV && args->counts != NULL)
        h = s_fnv(h, args->counts, (size_t)args->comm_size * sizeof(size_t));
    return h;
}

/* --- services for the algorithms ------------------------------------ */

int cl_coll_send(cl_coll_t *self, int idx, int type, uint32_t part, uint32_t chunk, uint32_t aux,
                 const void *head, size_t hlen, const void *data, size_t dlen)
{
    if (idx == self->me || (!cl_coll_alive(self, idx) && !cl_coll_disowned(self, idx)))
        return COLLAB_OK;
    cl_coll_msg_t m = {
        .type = (uint8_t)type, .part = part, .chunk = chunk, .aux = aux, .from = self->a.self};
    void *buf = NULL;
    if (hlen > 0 && dlen > 0) {
        buf = malloc(hlen + dlen);
        if (buf == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(buf, head, hlen);
        memcpy((uint8_t *)buf + hlen, data, dlen);
        m.data = buf;
        m.len = hlen + dlen;
    } else if (hlen > 0) {
        m.data = head;
        m.len = hlen;
    } else {
        m.data = data;
        m.len = dlen;
    }
    int rc = self->env.send(self->env.eng, self->members[idx], &m);
    free(buf);
    if (rc == COLLAB_OK)
        self->sent += m.len;
    return rc;
}

/* The tag of (part, chunk) for the pair (this member, other), given the
   value's digest. */
static int s_tag(cl_coll_t *self, uint32_t part, uint32_t chunk, int other, const uint8_t *ctx,
                 size_t ctxlen, const uint8_t dig[32], uint8_t out[CL_COLL_TAG])
{
    uint8_t key[32];
    int rc = self->env.pair_key(self->env.eng, self->members[other], key);
    if (rc != COLLAB_OK) {
        sodium_memzero(key, sizeof key);
        return rc;
    }
    uint8_t head[24];
    uint64_t comm = self->a.comm_id, seq = self->a.seq;
    for (int k = 0; k < 8; k++) {
        head[k] = (uint8_t)(comm >> (8 * k));
        head[8 + k] = (uint8_t)(seq >> (8 * k));
    }
    for (int k = 0; k < 4; k++) {
        head[16 + k] = (uint8_t)(part >> (8 * k));
        head[20 + k] = (uint8_t)(chunk >> (8 * k));
    }
    crypto_generichash_state h;
    crypto_generichash_init(&h, key, sizeof key, CL_COLL_TAG);
    crypto_generichash_update(&h, head, sizeof head);
    if (ctxlen > 0)
        crypto_generichash_update(&h, ctx, ctxlen);
    crypto_generichash_update(&h, dig, 32);
    crypto_generichash_final(&h, out, CL_COLL_TAG);
    sodium_memzero(key, sizeof key);
    sodium_memzero(&h, sizeof h);
    return COLLAB_OK;
}

int cl_coll_tags_make(cl_coll_t *self, uint32_t part, uint32_t chunk, const uint8_t *ctx,
                      size_t ctxlen, const void *val, size_t bytes, uint8_t *out)
{
    memset(out, 0, (size_t)self->n * CL_COLL_TAG);
    /* With two members there is no third to relay anything: no tags. */
    if (self->env.pair_key == NULL || self->n <= 2)
        return COLLAB_OK;
    uint8_t dig[32];
    crypto_generichash(dig, sizeof dig, val, bytes, NULL, 0);
    for (int m = 0; m < self->n; m++) {
        if (m == self->me || !cl_coll_alive(self, m))
            continue;
        int rc = s_tag(self, part, chunk, m, ctx, ctxlen, dig, out + (size_t)m * CL_COLL_TAG);
        if (rc == COLLAB_ERR_NO_MEM)
            return rc;
    }
    return COLLAB_OK;
}

bool cl_coll_tags_check(cl_coll_t *self, uint32_t part, uint32_t chunk, int producer,
                        const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes,
                        const uint8_t *tags)
{
    if (self->env.pair_key == NULL)
        return true;
    if (producer < 0 || producer >= self->n || producer == self->me || self->n <= 2)
        return false;
    uint8_t dig[32], want[CL_COLL_TAG];
    crypto_generichash(dig, sizeof dig, val, bytes, NULL, 0);
    if (s_tag(self, part, chunk, producer, ctx, ctxlen, dig, want) != COLLAB_OK)
        return false;
    return sodium_memcmp(want, tags + (size_t)self->me * CL_COLL_TAG, CL_COLL_TAG) == 0;
}

void cl_coll_send_done(cl_coll_t *self)
{
    for (int m = 0; m < self->n; m++)
        cl_coll_send(self, m, CL_MSG_DONE, 0, 0, 0, NULL, 0, NULL, 0);
}

bool cl_coll_all_done(const cl_coll_t *self)
{
    for (int m = 0; m < self->n; m++)
        if (m != self->me && cl_coll_alive(self, m) && !cl_bit(self->done_from, (size_t)m))
            return false;
    return true;
}

void cl_coll_complete(cl_coll_t *self, int status)
{
    if (self->done)
        return;
    self->done = true;
    self->status = status;
}

int cl_coll_finish_pieces(cl_coll_t *self, int rc, const uint8_t *bm, const uint8_t *bad)
{
    if (rc == COLLAB_OK)
        rc = cl_coll_set_contrib(self, bm);
    bool mismatch = cl_bm_count(bad, (size_t)self->n) > 0;
    cl_coll_complete(self, rc != COLLAB_OK ? rc : mismatch ? COLLAB_ERR_TRUNCATE : COLLAB_OK);
    return rc;
}

int cl_coll_set_contrib(cl_coll_t *self, const uint8_t *bm)
{
    int k = (int)cl_bm_count(bm, (size_t)self->n);
    int *c = malloc((size_t)(k > 0 ? k : 1) * sizeof *c);
    if (c == NULL)
        return COLLAB_ERR_NO_MEM;
    int j = 0;
    for (int i = 0; i < self->n; i++)
        if (cl_bit(bm, (size_t)i))
            c[j++] = self->members[i];
    free(self->contrib);
    self->contrib = c;
    self->ncontrib = k;
    return COLLAB_OK;
}

bool cl_coll_plain_sum(const cl_coll_t *self)
{
    return cl_reduce_is_plain_sum(self->n, self->a.comm_size, self->weights) != 0;
}

int cl_coll_combine(cl_coll_t *self, void *out, const void *const *in, const int *idx, int k,
                    size_t count)
{
    if (count == 0)
        return COLLAB_OK;
    if (k <= 0) {
        memset(out, 0, count * self->esize);
        return COLLAB_OK;
    }
    if (self->a.op.kind != COLLAB_OP_SUM)
        return cl_reduce_fold(&self->a.op, self->a.dtype, out, in, k, count);
    double wbuf[64];
    double *w = k <= 64 ? wbuf : malloc((size_t)k * sizeof *w);
    if (w == NULL)
        return COLLAB_ERR_NO_MEM;
    double sum = 0;
    for (int i = 0; i < k; i++) {
        w[i] = self->weights[idx[i]];
        sum += w[i];
    }
    int rc;
    if (cl_reduce_is_plain_sum(k, self->a.comm_size, w)) {
        rc = cl_reduce_fold(&self->a.op, self->a.dtype, out, in, k, count);
    } else if (sum > 0 && isfinite(sum)) {
        rc = cl_reduce_weighted_sum(self->a.dtype, out, in, w, k, count,
                                    (double)self->a.comm_size / sum);
    } else {
        /* Every weight is 0 (e.g. re-admitted stragglers only): plain mean. */
        rc = cl_reduce_weighted_sum(self->a.dtype, out, in, NULL, k, count,
                                    (double)self->a.comm_size / k);
    }
    if (w != wbuf)
        free(w);
    return rc;
}

int cl_coll_lowest_producer(const cl_coll_t *self)
{
    for (int m = 0; m < self->n; m++)
        if (cl_coll_alive(self, m) && !self->clients[m])
            return m;
    return cl_coll_lowest_alive(self);
}

int cl_coll_lowest_alive(const cl_coll_t *self)
{
    for (int m = 0; m < self->n; m++)
        if (cl_coll_alive(self, m))
            return m;
    return -1;
}

void cl_coll_split(size_t count, size_t k, size_t i, size_t *lo, size_t *len)
{
    size_t q = count / k, r = count % k;
    *lo = q * i + (i < r ? i : r);
    *len = q + (i < r ? 1 : 0);
}

size_t cl_coll_nchunks(size_t bytes, size_t cb)
{
    return bytes == 0 ? 1 : (bytes - 1) / cb + 1;
}

void cl_coll_chunk(size_t bytes, size_t cb, size_t c, size_t *off, size_t *len)
{
    *off = c * cb;
    *len = *off >= bytes ? 0 : (bytes - *off < cb ? bytes - *off : cb);
}

bool cl_coll_whole(const cl_coll_t *self)
{
    return s_reduction(self->a.kind) && self->a.op.kind == COLLAB_OP_USER;
}

size_t cl_coll_chunk_bytes(const cl_coll_t *self)
{
    size_t cb = self->a.chunk_bytes > 0 ? self->a.chunk_bytes : CL_COLL_DEFAULT_CHUNK;
    size_t e = self->esize > 0 ? self->esize : 1;
    if (cl_coll_whole(self)) /* a whole vector (reduce_scatter_block: a whole block) */
        return self->a.count > 0 ? self->a.count * e : e;
    cb -= cb % e;
    return cb > 0 ? cb : e;
}
