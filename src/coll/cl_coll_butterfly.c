/*  cl_coll_butterfly.c - butterfly all-reduce, and the reduce and
    reduce_scatter_block built the same way.

    Schedule.  The vector is cut into one contiguous part per member that
    may reduce (not in client mode), on element boundaries; part j is
    reduced by its reducer.  An all-reduce sizes the parts by the
    reducers' agreed bandwidth figures (cl_coll_layout.c: the split that
    fills every link for the same time, each part within 1/16 .. 2 equal
    shares); equal or unknown figures give equal parts.  Every member cuts each part into chunks of
    chunk_bytes and sends chunk c of part j to j's reducer as DATA (part j,
    chunk c), chunk-major so that every reducer gets its first chunk early.
    The reducer folds the contributions of a chunk in rank order as they
    arrive (cl_coll_bfacc.c) and, once the chunk is complete, sends it as
    RESULT (payload: contributor bitmap, then the value) to the part's
    consumers at once, so reducing, sending and receiving overlap.

      allreduce             consumers: every member; a member holding every
                            chunk sends DONE to all and completes once every
                            live member has sent DONE, or at once when the
                            transfer ran long enough for a copy of the
                            result to cost little (s_early): it then keeps
                            that copy for the relays it may owe until every
                            live member has sent DONE.  Never in strict
                            mode nor with COLLAB_VERIFY.
      reduce                consumer: the root; the root sends DONE when it
                            holds everything, the others complete on it
                            (or when the root fails: no result delivered).
      reduce_scatter_block  one part per member = its block of recvcount
                            elements, reduced by that member itself (a
                            client's block by a non-client) and consumed by
                            it; absent ranks' blocks are skipped.

    Cost (n members, size S bytes): allreduce: each member sends and
    receives 2(n-1)/n x S; reduce: (n-1)/n x S each, plus (n-1)/n x S into
    the root; reduce_scatter_block: (n-1)/n x S each (S = n blocks).
    Latency: two message steps plus the pipeline fill of one chunk.

    Device buffers (a.stage, docs/cuda.md "Chunk pipeline"): at its start
    the butterfly asks staging for every chunk of its input in the order
    above (its own part's too), sends DATA for a chunk, and counts its own
    contribution to a chunk it reduces, only once staging says the
    chunk's copy from the device has landed (until then the producer waits
    in `pend`, retried by s_pump), and reports each chunk of the output
    that it holds, so that its copy back starts at once.

    Failures (cl_relay.c): a reducer finishes its chunks without a
    contributor that failed before its data arrived.  When a reducer fails,
    a consumer lacking its chunks starts a repair: holders relay them
    (RELAY: bitmap then raw value); chunks nobody holds are reduced anew by
    the lowest live non-client member from every survivor's input (DATA
    again), which every survivor still has since nobody completed.
*/
#include "cl_coll_butterfly.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_destroy(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    bf_verify_free(self);
    if (st->rl != NULL && st->acc != NULL)
        bf_acc_free_all(self);
    CL_FREE_ROWS(st->sent, st->nparts);
    CL_FREE_ROWS(st->pend, st->nparts);
    CL_FREE_ROWS(st->cbm, st->nparts);
    CL_FREE_ROWS(st->tags, st->nparts);
    CL_FREE_ROWS(st->rfrom, st->nparts);
    CL_FREE_ROWS(st->vprod, st->nparts);
    CL_FREE_ROWS(st->store, st->nparts);
    free(st->kept);
    cl_relay_destroy(&st->rl);
    free(st->acc);
    free(st->in_lo);
    free(st->out_lo);
    free(st->len);
    free(st->consumer);
    free(st->prod0);
    free(st->input_copy);
    free(st->scratch);
    free(st->res);
    free(st->wire);
    free(st);
    self->st = NULL;
}

static bool s_consumes(cl_coll_t *self, int j)
{
    int c = bf_st(self)->consumer[j];
    return c < 0 || c == self->me;
}

/* Part j still matters: somebody alive consumes it. */
static bool s_needed(cl_coll_t *self, int j)
{
    int c = bf_st(self)->consumer[j];
    return c < 0 || cl_coll_alive(self, c);
}

/* Sends this member's contribution to (j, c) to member `to`, once. */
static int s_contribute_to(cl_coll_t *self, int j, size_t c, int to)
{
    bf_t *st = bf_st(self);
    uint8_t *sent = st->sent[j] + c * self->nb;
    if (to == self->me || cl_bit(sent, (size_t)to) || st->input == NULL)
        return COLLAB_OK;
    /* Staged input: DATA goes once the chunk's copy from the device has
       completed; until then the producer waits in pend (s_pump). */
    int ready = bf_in_ready(self, j, c);
    if (ready < 0)
        return ready;
    if (ready == 0) {
        cl_bit_set(st->pend[j] + c * self->nb, (size_t)to);
        return COLLAB_OK;
    }
    cl_bit_clr(st->pend[j] + c * self->nb, (size_t)to);
    cl_bit_set(sent, (size_t)to);
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    const uint8_t *x = st->input + first * self->esize;
    cl_compress_t codec = cl_coll_codec(self, self->me, to);
    if (codec == CL_COMPRESS_NONE)
        return cl_coll_send(self, to, CL_MSG_DATA, (uint32_t)j, (uint32_t)c, 0, NULL, 0, x,
                            cnt * self->esize);
    uint8_t *enc = malloc(cl_compress_bound(codec, self->a.dtype, cnt) + 1);
    if (enc == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t elen = cl_compress_encode(codec, self->a.dtype, x, cnt, enc);
    int rc = cl_coll_send(self, to, CL_MSG_DATA, (uint32_t)j, (uint32_t)c, 0, NULL, 0, enc, elen);
    free(enc);
    return rc;
}

/* Contributors of the result as this member sees it: those in every
   chunk it holds. */
static int s_contrib(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    uint8_t *bm = malloc(self->nb);
    if (bm == NULL)
        return COLLAB_ERR_NO_MEM;
    memset(bm, 0xff, self->nb);
    bool any = false;
    for (int j = 0; j < st->nparts; j++) {
        if (!s_consumes(self, j))
            continue;
        size_t nch = cl_relay_nchunks(st->rl, j);
        for (size_t c = 0; c < nch; c++)
            if (cl_relay_held(st->rl, j, c)) {
                any = true;
                for (size_t k = 0; k < self->nb; k++)
                    bm[k] &= st->cbm[j][c * self->nb + k];
            }
    }
    if (!any) /* nothing consumed here: the members still alive */
        for (int m = 0; m < self->n; m++) {
            if (cl_coll_alive(self, m))
                cl_bit_set(bm, (size_t)m);
            else
                cl_bit_clr(bm, (size_t)m);
        }
    int rc = cl_coll_set_contrib(self, bm);
    free(bm);
    return rc;
}

/* An all-reduce member holding every chunk may complete before the
   others' DONE (docs/collectives.md §3, "Retention"): its program may
   then reuse the output buffer, so the result is copied at release for
   the relays it may still owe.  Only once the transfer has run long
   enough that the copy is a small part of it (a.early_rate), counted
   from the moment the last live member was heard from first (a member
   that came early and waited does not count its wait): on fast links the
   DONEs come sooner than a copy of fresh memory takes.  Not in strict
   mode (no relays: a failure fails the call), nor under COLLAB_VERIFY (a
   validator asks the members for their inputs before its DONE).  The
   copy's memory is taken here, so that a failed allocation only means
   waiting for every DONE. */
static bool s_early(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    if (self->a.strict || st->vf != NULL || self->a.recvbuf == NULL ||
        !(self->a.early_rate > 0))
        return false;
    size_t bytes = self->a.count * self->esize;
    double from = self->t_start;
    for (int m = 0; m < self->n; m++)
        if (m != self->me && cl_coll_alive(self, m) && self->first[m] > from)
            from = self->first[m];
    double at = from + (double)bytes / self->a.early_rate;
    if (cl_coll_now(self) < at) {
        /* Looked at again then, should no message come before. */
        self->wake_at = at;
        return false;
    }
    if (st->kept == NULL)
        st->kept = malloc(bytes > 0 ? bytes : 1);
    return st->kept != NULL;
}

/* Completes when this member has what it needs (see the top comment). */
static int s_check(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    if (self->done) {
        /* Completed early: once every live member holds everything, nobody
           can ask for a relay any more. */
        if (st->kept != NULL && self->released && cl_coll_all_done(self)) {
            free(st->kept);
            st->kept = NULL;
        }
        return COLLAB_OK;
    }
    bool have = true;
    for (int j = 0; j < st->nparts && have; j++)
        if (s_consumes(self, j) && cl_relay_missing(st->rl, j) > 0)
            have = false;
    switch (self->a.kind) {
    case CL_COLL_ALLREDUCE:
        if (!have)
            return COLLAB_OK;
        /* COLLAB_VERIFY: a validator sends DONE once its check is over. */
        if (!st->done_sent && bf_verify_hold(self))
            return COLLAB_OK;
        if (!st->done_sent) {
            st->done_sent = true;
            cl_coll_send_done(self);
        }
        if (!cl_coll_all_done(self)) {
            if (!s_early(self))
                return COLLAB_OK;
            cl_debug("collective #%llu: holds every chunk; completes before the others' DONE "
                     "(keeps a copy of %zu bytes for their relays)",
                     (unsigned long long)self->a.seq, self->a.count * self->esize);
        }
        break;
    case CL_COLL_REDUCE:
        if (self->me == self->root) {
            if (!have)
                return COLLAB_OK;
            cl_coll_send_done(self);
        } else if (cl_coll_alive(self, self->root) &&
                   !cl_bit(self->done_from, (size_t)self->root)) {
            return COLLAB_OK;
        }
        break;
    default: /* reduce_scatter_block: own block, and the blocks it reduces */
        if (!have)
            return COLLAB_OK;
        for (int j = 0; j < st->nparts; j++) {
            if (s_consumes(self, j) || !s_needed(self, j))
                continue;
            size_t nch = cl_relay_nchunks(st->rl, j);
            for (size_t c = 0; c < nch; c++)
                if (cl_relay_producing(st->rl, j, c) && !cl_relay_held(st->rl, j, c))
                    return COLLAB_OK;
        }
        break;
    }
    int rc = s_contrib(self);
    cl_coll_complete(self, rc);
    return rc;
}

static int s_relay(cl_coll_t *self, int part, int chunk, int to)
{
    bf_t *st = bf_st(self);
    uint8_t *val = bf_value(self, part, (size_t)chunk, false);
    if (val == NULL)
        return COLLAB_OK; /* released: everybody had it (DONE) */
    int prod = st->vprod[part][chunk];
    if (prod < 0)
        return COLLAB_OK; /* never held here */
    size_t first, cnt;
    bf_chunk(self, part, (size_t)chunk, &first, &cnt);
    /* bitmap, the producer's proof, then the value; aux names the
       producer and says whether the proof is signed. */
    const uint8_t *slot = st->tags[part] + (size_t)chunk * bf_slot(self);
    bool sig = slot[0] != 0;
    size_t prb = cl_coll_proof_bytes(self, sig);
    uint8_t *head = malloc(self->nb + prb);
    if (head == NULL)
        return COLLAB_ERR_NO_MEM;
    memcpy(head, st->cbm[part] + (size_t)chunk * self->nb, self->nb);
    memcpy(head + self->nb, slot + 1, prb);
    uint32_t aux = (uint32_t)prod | (sig ? CL_AUX_SIGNED : 0);
    int rc = cl_coll_send(self, to, CL_MSG_RELAY, (uint32_t)part, (uint32_t)chunk, aux, head,
                          self->nb + prb, val, cnt * self->esize);
    free(head);
    return rc;
}

static int s_decide(cl_coll_t *self, int part, int chunk, int producer)
{
    bf_t *st = bf_st(self);
    size_t c = (size_t)chunk;
    if (producer < 0)
        return COLLAB_ERR_INTERNAL;
    cl_relay_set_up(st->rl, part, c, s_consumes(self, part) ? producer : -1);
    if (producer != self->me)
        return s_contribute_to(self, part, c, producer);
    cl_relay_set_producing(st->rl, part, c, true);
    if (bf_acc(self, part, c, true) == NULL)
        return COLLAB_ERR_NO_MEM;
    return bf_try_finalize(self, part, c);
}

static const cl_relay_ops_t s_ops = {.relay = s_relay, .decide = s_decide};

/* Cuts the vector in parts (see the top comment). */
static int s_layout(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    int n = self->n;
    int np = 0;
    for (int m = 0; m < n; m++)
        np += !self->clients[m];
    int *elig = malloc((size_t)n * sizeof *elig);
    if (elig == NULL)
        return COLLAB_ERR_NO_MEM;
    for (int m = 0, k = 0; m < n; m++)
        if (!self->clients[m] || np == 0)
            elig[k++] = m;
    if (np == 0)
        np = n;
    bool rsb = self->a.kind == CL_COLL_REDUCE_SCATTER_BLOCK;
    if (rsb)
        st->nparts = n;
    else if (cl_coll_whole(self))
        st->nparts = 1; /* a user op's elements may span several basic ones */
    else
        st->nparts = (size_t)np < self->a.count ? np : (int)self->a.count;
    size_t P = (size_t)st->nparts;
    st->in_lo = calloc(P, sizeof(size_t));
    st->out_lo = calloc(P, sizeof(size_t));
    st->len = calloc(P, sizeof(size_t));
    st->consumer = calloc(P, sizeof(int));
    st->prod0 = calloc(P, sizeof(int));
    if (st->in_lo == NULL || st->out_lo == NULL || st->len == NULL || st->consumer == NULL ||
        st->prod0 == NULL) {
        free(elig);
        return COLLAB_ERR_NO_MEM;
    }
    /* An all-reduce's parts are sized by the reducers' agreed bandwidth
       figures (cl_coll_layout.c); equal figures give the equal split. */
    bool bw = self->a.kind == CL_COLL_ALLREDUCE && !cl_coll_whole(self) && st->nparts > 1;
    if (bw) {
        uint32_t *fig = malloc(P * sizeof *fig);
        if (fig == NULL) {
            free(elig);
            return COLLAB_ERR_NO_MEM;
        }
        for (int j = 0; j < st->nparts; j++)
            fig[j] = self->bandwidths[elig[j]];
        cl_coll_split_bw(self->a.count, P, n, fig, st->in_lo, st->len);
        if (cl_log_enabled(CL_LOG_DEBUG) && cl_coll_split_weighted(self->a.count, P, n, fig)) {
            char line[256];
            size_t at = 0;
            for (int j = 0; j < st->nparts && j < 8 && at < sizeof line; j++)
                at += (size_t)snprintf(line + at, sizeof line - at, " %zu (%u kbit/s)", st->len[j],
                                       fig[j]);
            cl_debug("collective #%llu: %d parts sized by bandwidth:%s%s; chunks of %zu bytes",
                     (unsigned long long)self->a.seq, st->nparts, line,
                     st->nparts > 8 ? " ..." : "", st->ce * self->esize);
        }
        free(fig);
    }
    int nclient = 0;
    for (int j = 0; j < st->nparts; j++) {
        if (rsb) {
            st->in_lo[j] = (size_t)self->members[j] * self->a.count;
            st->out_lo[j] = 0;
            st->len[j] = self->a.count;
            st->consumer[j] = j;
            st->prod0[j] = self->clients[j] ? elig[nclient++ % np] : j;
        } else {
            if (!bw)
                cl_coll_split(self->a.count, P, (size_t)j, &st->in_lo[j], &st->len[j]);
            st->out_lo[j] = st->in_lo[j];
            st->consumer[j] = self->a.kind == CL_COLL_REDUCE ? self->root : -1;
            st->prod0[j] = elig[j];
        }
    }
    free(elig);
    return COLLAB_OK;
}

static int s_setup(cl_coll_t *self)
{
    bf_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return COLLAB_ERR_NO_MEM;
    self->st = st;
    st->ce = cl_coll_chunk_bytes(self) / self->esize;
    st->eager = !(self->a.op.kind == COLLAB_OP_SUM && !cl_coll_plain_sum(self));
    int rc = s_layout(self);
    if (rc != COLLAB_OK)
        return rc;
    size_t P = (size_t)st->nparts;
    st->rl = cl_relay_new(self, st->nparts, &s_ops);
    st->acc = calloc(P, sizeof *st->acc);
    st->sent = calloc(P, sizeof *st->sent);
    st->pend = calloc(P, sizeof *st->pend);
    st->cbm = calloc(P, sizeof *st->cbm);
    st->tags = calloc(P, sizeof *st->tags);
    st->rfrom = calloc(P, sizeof *st->rfrom);
    st->vprod = calloc(P, sizeof *st->vprod);
    st->store = calloc(P, sizeof *st->store);
    if (st->rl == NULL || st->acc == NULL || st->sent == NULL || st->pend == NULL ||
        st->cbm == NULL || st->tags == NULL || st->rfrom == NULL || st->vprod == NULL ||
        st->store == NULL)
        return COLLAB_ERR_NO_MEM;
    size_t cb = st->ce * self->esize;
    for (int j = 0; j < st->nparts; j++) {
        size_t nch = cl_coll_nchunks(st->len[j] * self->esize, cb);
        bool mine = s_consumes(self, j);
        int up = mine && st->prod0[j] != self->me ? st->prod0[j] : -1;
        if ((rc = cl_relay_part(st->rl, j, nch, cb, st->consumer[j], CL_FB_REDUCE, up)) !=
            COLLAB_OK)
            return rc;
        st->sent[j] = calloc(nch, self->nb);
        st->pend[j] = calloc(nch, self->nb);
        st->cbm[j] = calloc(nch, self->nb);
        st->tags[j] = calloc(nch, bf_slot(self));
        st->rfrom[j] = malloc(nch * sizeof(int));
        st->vprod[j] = malloc(nch * sizeof(int));
        if (st->sent[j] == NULL || st->pend[j] == NULL || st->cbm[j] == NULL ||
            st->tags[j] == NULL || st->rfrom[j] == NULL || st->vprod[j] == NULL)
            return COLLAB_ERR_NO_MEM;
        for (size_t c = 0; c < nch; c++) {
            st->rfrom[j][c] = -1;
            st->vprod[j][c] = -1;
            if (st->prod0[j] == self->me)
                cl_relay_set_producing(st->rl, j, c, true);
        }
    }
    /* Input.  reduce_scatter_block writes block 0 of an in-place buffer and
       may reduce a client's block after completing: it works on a copy. */
    const uint8_t *in = self->a.sendbuf != NULL ? self->a.sendbuf : self->a.recvbuf;
    bool copy = false;
    if (self->a.kind == CL_COLL_REDUCE_SCATTER_BLOCK) {
        copy = self->a.sendbuf == NULL;
        for (int m = 0; m < self->n; m++)
            copy = copy || self->clients[m];
    }
    if (copy) {
        size_t bytes = (size_t)self->a.comm_size * self->a.count * self->esize;
        if ((st->input_copy = malloc(bytes)) == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(st->input_copy, in, bytes);
        in = st->input_copy;
    }
    st->input = in;
    return bf_verify_setup(self);
}

static int s_start(cl_coll_t *self)
{
    bool none = self->a.count == 0 || (self->a.kind == CL_COLL_REDUCE &&
                                       (self->root < 0 || !cl_coll_alive(self, self->root)));
    if (none) {
        /* Nothing to reduce, or the root is absent: no result delivered. */
        uint8_t *bm = calloc(self->nb, 1);
        if (bm == NULL)
            return COLLAB_ERR_NO_MEM;
        for (int m = 0; m < self->n; m++)
            if (cl_coll_alive(self, m) && self->a.count == 0)
                cl_bit_set(bm, (size_t)m);
        int rc = cl_coll_set_contrib(self, bm);
        free(bm);
        cl_coll_complete(self, rc);
        return rc;
    }
    int rc = s_setup(self);
    if (rc != COLLAB_OK)
        return rc;
    bf_t *st = bf_st(self);
    size_t maxc = 0;
    for (int j = 0; j < st->nparts; j++) {
        size_t nch = cl_relay_nchunks(st->rl, j);
        maxc = nch > maxc ? nch : maxc;
    }
    const cl_coll_stage_t *sg = self->a.stage;
    if (sg != NULL) {
        /* Staged input: the chunks' copies from the device are queued in
           the order they are sent (chunk-major), this member's own part
           included (it folds its own input). */
        sg->begin(sg->arg);
        for (size_t c = 0; c < maxc; c++)
            for (int j = 0; j < st->nparts; j++) {
                size_t first, cnt;
                if (c >= cl_relay_nchunks(st->rl, j))
                    continue;
                bf_chunk(self, j, c, &first, &cnt);
                if ((rc = sg->in_need(sg->arg, first * self->esize, cnt * self->esize)) !=
                    COLLAB_OK)
                    return rc;
            }
    }
    for (size_t c = 0; c < maxc && rc == COLLAB_OK; c++)
        for (int j = 0; j < st->nparts && rc == COLLAB_OK; j++)
            if (c < cl_relay_nchunks(st->rl, j) && s_needed(self, j) && st->prod0[j] != self->me) {
                rc = s_contribute_to(self, j, c, st->prod0[j]);
                if (rc == COLLAB_ERR_NO_MEM || rc == COLLAB_ERR_INTERNAL) /* memory, device */
                    return rc;
                rc = COLLAB_OK;
            }
    if (self->nfailed > 0 && (rc = cl_relay_on_fail(st->rl, -1)) != COLLAB_OK)
        return rc;
    for (int j = 0; j < st->nparts; j++) {
        if (st->prod0[j] != self->me)
            continue;
        for (size_t c = 0; c < cl_relay_nchunks(st->rl, j); c++)
            if ((rc = bf_try_finalize(self, j, c)) != COLLAB_OK)
                return rc;
    }
    return s_check(self);
}

/* A producer a relayed copy of (j, c) may name: the part's first reducer,
   the chunk's producer as this member sees it, or the member a repair
   decision would name now. */
static bool s_may_produce(cl_coll_t *self, int j, size_t c, int p)
{
    bf_t *st = bf_st(self);
    return p == st->prod0[j] || p == cl_relay_up(st->rl, j, c) ||
           p == cl_coll_lowest_producer(self);
}

/* A RESULT or RELAY: bitmap, the producer's proof, then the value
   (encoded in a RESULT when compression is on).  aux says whether the
   proof is signed (CL_AUX_SIGNED); a RELAY names the producer in the rest.
   A signed proof is checked whenever the chunk is first taken, from its
   producer or relayed, so that this member never holds (nor relays) a
   chunk its producer did not sign; tags are refused in a collective that
   signs, and otherwise checked on relays only, with this member's own tag
   (docs/security.md §6). */
static int s_on_value(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    bf_t *st = bf_st(self);
    if (msg->part >= (uint32_t)st->nparts)
        return COLLAB_ERR_ARG;
    bool sig = (msg->aux & CL_AUX_SIGNED) != 0;
    uint32_t aux = msg->aux & ~CL_AUX_SIGNED;
    if (msg->type == CL_MSG_RESULT ? aux != 0 : aux >= (uint32_t)self->n)
        return COLLAB_ERR_ARG;
    size_t prb = cl_coll_proof_bytes(self, sig);
    int j = (int)msg->part;
    size_t c = msg->chunk;
    if (c >= cl_relay_nchunks(st->rl, j) || !s_consumes(self, j) || msg->len < self->nb + prb)
        return COLLAB_ERR_ARG;
    /* A RESULT counts only from the chunk's producer (its reducer, or the
       member a repair decision made it): any other member's is a forgery
       (docs/security.md §3). */
    if (msg->type == CL_MSG_RESULT && from != cl_relay_up(st->rl, j, c))
        return COLLAB_ERR_ARG;
    const uint8_t *bm = msg->data;
    size_t nbits = cl_bm_count(bm, (size_t)self->n);
    if (nbits == 0 || cl_bm_count(bm, self->nb * 8) != nbits)
        return COLLAB_ERR_ARG;
    const uint8_t *proof = bm + self->nb;
    const uint8_t *data = proof + prb;
    size_t dlen = msg->len - self->nb - prb;
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    /* A RESULT comes from its producer, encoded with the producer's codec;
       a RELAY carries the decoded bits. */
    cl_compress_t codec =
        msg->type == CL_MSG_RESULT ? cl_coll_codec(self, from, -1) : CL_COMPRESS_NONE;
    bool coded = codec != CL_COMPRESS_NONE;
    if (!coded && dlen != cnt * self->esize)
        return COLLAB_ERR_ARG;
    if (cl_relay_held(st->rl, j, c)) {
        if (msg->type == CL_MSG_RESULT && st->rfrom[j][c] == from)
            return COLLAB_ERR_ARG; /* the same chunk twice from its producer */
        return COLLAB_OK;          /* several holders may send it */
    }
    int prod = msg->type == CL_MSG_RESULT ? from : (int)aux;
    if (msg->type == CL_MSG_RELAY && !s_may_produce(self, j, c, prod)) {
        cl_debug(
            "collective #%llu: a relay of (%d, %zu) names producer %d, which may not produce it",
            (unsigned long long)self->a.seq, j, c, prod);
        return COLLAB_ERR_ARG;
    }
    if (!sig && self->sig) {
        cl_debug("collective #%llu: %s of (%d, %zu) carries tags where its producer %d signs",
                 (unsigned long long)self->a.seq,
                 msg->type == CL_MSG_RESULT ? "a result" : "a relay", j, c, prod);
        return COLLAB_ERR_ARG;
    }
    if (!sig && msg->type == CL_MSG_RELAY &&
        !cl_coll_tags_check(self, (uint32_t)j, (uint32_t)c, prod, bm, self->nb, data, dlen,
                            proof)) {
        cl_debug("collective #%llu: a relay of (%d, %zu) from producer %d fails its tag (n %d, "
                 "bitmap %02x)",
                 (unsigned long long)self->a.seq, j, c, prod, self->n, bm[0]);
        return COLLAB_ERR_ARG; /* not what its producer made */
    }
    uint8_t *val = bf_value(self, j, c, true);
    if (val == NULL)
        return COLLAB_ERR_NO_MEM;
    if (coded) {
        /* Decoded in place: the chunk is not held until its proof passes,
           and a valid copy or a repair writes it again. */
        if (cl_compress_decode(codec, self->a.dtype, data, dlen, cnt, val) != COLLAB_OK)
            return COLLAB_ERR_ARG;
    }
    if (sig && !cl_coll_sig_check(self, (uint32_t)j, (uint32_t)c, prod, bm, self->nb,
                                  coded ? val : data, cnt * self->esize, proof)) {
        cl_debug("collective #%llu: %s of (%d, %zu) fails producer %d's signature",
                 (unsigned long long)self->a.seq,
                 msg->type == CL_MSG_RESULT ? "a result" : "a relay", j, c, prod);
        return COLLAB_ERR_ARG; /* its producer did not sign it: never held, never relayed */
    }
    if (!coded)
        memcpy(val, data, dlen);
    if (msg->type == CL_MSG_RESULT)
        st->rfrom[j][c] = from;
    st->vprod[j][c] = prod;
    uint8_t *slot = st->tags[j] + c * bf_slot(self);
    slot[0] = sig ? 1 : 0;
    memcpy(slot + 1, proof, prb);
    bf_hold(self, j, c, bm);
    if (cl_relay_repairing(st->rl, j))
        cl_relay_poke(st->rl, j);
    return s_check(self);
}

static int s_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    bf_t *st = bf_st(self);
    int rc;
    switch (msg->type) {
    case CL_MSG_DATA:
        if (msg->part >= (uint32_t)st->nparts || msg->aux != 0 ||
            msg->chunk >= cl_relay_nchunks(st->rl, (int)msg->part))
            return COLLAB_ERR_ARG;
        rc = bf_contribute(self, (int)msg->part, msg->chunk, from, msg->data, msg->len);
        if (rc != COLLAB_OK)
            return rc;
        rc = bf_try_finalize(self, (int)msg->part, msg->chunk);
        if (rc != COLLAB_OK)
            return rc;
        return s_check(self);
    case CL_MSG_RESULT:
    case CL_MSG_RELAY:
        return s_on_value(self, from, msg);
    case CL_MSG_STATUS:
        rc = cl_relay_on_status(st->rl, from, msg);
        if (rc != COLLAB_OK)
            return rc;
        return s_check(self);
    case CL_MSG_DONE:
        return s_check(self);
    case CL_MSG_VREQ:
    case CL_MSG_VDATA:
    case CL_MSG_VDIG:
        rc = bf_verify_on_msg(self, from, msg);
        if (rc != COLLAB_OK)
            return rc;
        return s_check(self);
    default:
        return COLLAB_ERR_ARG;
    }
}

static void s_on_fail(cl_coll_t *self, int idx)
{
    bf_t *st = bf_st(self);
    cl_relay_on_fail(st->rl, idx);
    /* Chunks waiting for the failed member can now be finished without it. */
    for (int j = 0; j < st->nparts; j++) {
        if (st->acc[j] == NULL)
            continue;
        size_t nch = cl_relay_nchunks(st->rl, j);
        for (size_t c = 0; c < nch; c++)
            if (st->acc[j][c].arrived != NULL)
                bf_try_finalize(self, j, c);
    }
    s_check(self);
}

static void s_expect(cl_coll_t *self, size_t *bytes)
{
    bf_t *st = bf_st(self);
    if (bf_verify_expect(self, bytes)) {
        s_check(self); /* the check was given up: DONE may go now */
        if (self->done)
            return;
    }
    size_t cb = st->ce * self->esize;
    for (int j = 0; j < st->nparts; j++) {
        if (!s_needed(self, j))
            continue;
        size_t nch = cl_relay_nchunks(st->rl, j);
        bool mine = s_consumes(self, j) && !cl_relay_repairing(st->rl, j);
        for (size_t c = 0; c < nch; c++) {
            if (cl_relay_held(st->rl, j, c))
                continue;
            int up = cl_relay_up(st->rl, j, c);
            if (mine && up >= 0 && up != self->me)
                bytes[up] += cb;
            if (!cl_relay_producing(st->rl, j, c))
                continue;
            bf_acc_t *a = bf_acc(self, j, c, false);
            for (int m = 0; m < self->n; m++)
                if (m != self->me && (a == NULL || !cl_bit(a->arrived, (size_t)m)))
                    bytes[m] += cb;
        }
    }
    size_t total = self->a.count * self->esize / (size_t)self->n + 1;
    if (self->a.kind == CL_COLL_ALLREDUCE && st->done_sent) {
        for (int m = 0; m < self->n; m++)
            if (m != self->me && !cl_bit(self->done_from, (size_t)m))
                bytes[m] += total;
    } else if (self->a.kind == CL_COLL_REDUCE && self->me != self->root && self->root >= 0) {
        bytes[self->root] += self->a.count * self->esize + 1;
    }
    cl_relay_expect(st->rl, bytes);
}

/* Staged input (a.stage): sends the DATA and counts the own contributions
   that waited for their chunk's copy from the device, chunk-major as
   s_start sends them. */
static int s_pump(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    size_t maxc = 0;
    for (int j = 0; j < st->nparts; j++) {
        size_t nch = cl_relay_nchunks(st->rl, j);
        maxc = nch > maxc ? nch : maxc;
    }
    /* In the order the copies were queued: past the first chunk not ready
       yet, none is (bf_in_ready). */
    for (size_t c = 0; c < maxc && !self->done && !self->in_wait; c++)
        for (int j = 0; j < st->nparts && !self->done && !self->in_wait; j++) {
            if (c >= cl_relay_nchunks(st->rl, j))
                continue;
            const uint8_t *pend = st->pend[j] + c * self->nb;
            for (int m = 0; m < self->n; m++) {
                if (!cl_bit(pend, (size_t)m))
                    continue;
                if (!cl_coll_alive(self, m)) {
                    cl_bit_clr(st->pend[j] + c * self->nb, (size_t)m);
                    continue;
                }
                int rc = s_contribute_to(self, j, c, m);
                if (rc == COLLAB_ERR_NO_MEM || rc == COLLAB_ERR_INTERNAL)
                    return rc;
            }
            int rc = bf_own_ready(self, j, c);
            if (rc != COLLAB_OK)
                return rc;
        }
    return s_check(self);
}

static int s_release(cl_coll_t *self)
{
    /* An all-reduce that completed before every DONE copies its result
       (s_early took the memory) for the relays it may still owe; once
       every live member holds everything nothing can be asked for.
       Reduce completes when the root holds everything; reduce_scatter_block
       works on a private copy of its input and keeps the blocks it
       reduces for others in private stores. */
    bf_t *st = bf_st(self);
    if (st->kept == NULL)
        return COLLAB_OK;
    if (self->status != COLLAB_OK || cl_coll_all_done(self) || self->a.recvbuf == NULL) {
        free(st->kept);
        st->kept = NULL;
        return COLLAB_OK;
    }
    memcpy(st->kept, self->a.recvbuf, self->a.count * self->esize);
    return COLLAB_OK;
}

static bool s_owes(const cl_coll_t *self)
{
    const bf_t *st = self->st;
    return st->kept != NULL;
}

const cl_algo_t cl_algo_butterfly = {
    .name = "butterfly",
    .start = s_start,
    .on_msg = s_on_msg,
    .on_fail = s_on_fail,
    .expect = s_expect,
    .release = s_release,
    .destroy = s_destroy,
    .pump = s_pump,
    .owes = s_owes,
    .recheck = s_check,
};
