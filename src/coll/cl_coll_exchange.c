/*  cl_coll_exchange.c - every member sends its input to every other one:
    small allreduce, barrier, allgatherv.

    Schedule (one round): member i cuts its input (part i) into chunks of
    chunk_bytes and sends every chunk to every other member as RESULT
    (part = i, chunk = c, aux = the part's length, clipped to 32 bits).
    When a member holds every part it is done: allreduce folds the parts
    chunk by chunk in rank order (cl_coll_combine), allgatherv has them in
    place, barrier has nothing to compute.  Everyone folds the same inputs
    in the same order, so the results agree bit for bit; with compression
    the parts travel encoded and each member, its own part included, folds
    the decoded values.

    Cost: one round (latency alpha); each member sends and receives
    (n-1) x size.  Meant for sizes below args->small_bytes.

    Failures (relay rule, cl_relay.c): part i is produced by member i only.
    When i fails, a member lacking some of its chunks starts a repair:
    members that hold them relay them (RELAY, raw decoded bytes); when no
    survivor holds a chunk it becomes absent on every survivor (the input
    is left out of the fold, the allgatherv slot is zero-filled).  A relay
    counts only for the part of a member the receiver itself knows failed:
    nobody can speak for a live member (docs/security.md §6).

    In a collective that signs (self->sig: a swarm that signs, 3 members or
    more) every chunk of a piece is signed by its member (cl_coll_sign.c,
    "mpicollab piece v1", over the decoded bytes and the announced
    length); RESULT and RELAY carry the 96 bytes before the value, every
    member checks them when it first takes a chunk, and a relay counts
    from any holder when the producer signed it.  A sender of a value its
    producer did not sign is disowned (cl_coll_disown).  Absences are not
    relayed there (cl_relay_hold_silent: every member decides them), and
    a piece of the wrong length is relayed with its producer's signed
    chunk as the evidence (EX_MIS_HEAD).  After
    completion the parts stay in private memory (allreduce: always;
    allgatherv: copied at release) so that a retained collective can still
    relay them.
*/
#include "cl_coll_impl.h"
#include "cl_relay.h"
#include "cl_robust.h"
#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

#define CL_AUX_MISMATCH 2u /* allgatherv: the part's length differed from its slot */

typedef struct {
    cl_relay_t *rl;
    size_t cb;        /* chunk bytes (element-aligned) */
    size_t *plen;     /* per part: length in bytes of the decoded value */
    uint8_t **val;    /* per part: private value (allreduce; allgatherv after release) */
    uint8_t **absent; /* per part: absent chunks */
    uint8_t **orig;   /* per part: chunks received from the part's own member */
    uint8_t *bad;     /* parts whose length did not match (allgatherv) */
    bool priv;        /* allgatherv: values live in val[] (released) */
    bool finished;
    /* In a collective that signs (self->sig): */
    uint8_t **proof; /* per part: nchunks x CL_COLL_SIG, its producer's signature of each chunk */
    uint8_t **mis;   /* per part: evidence of a length mismatch (EX_MIS_HEAD, then the chunk) */
    size_t *mislen;  /* bytes of mis[i] */
} ex_t;

/* Evidence of a mismatch: u32 announced length, u32 chunk, the proof. */
#define EX_MIS_HEAD (8 + CL_COLL_SIG)

static ex_t *s_st(cl_coll_t *self)
{
    return self->st;
}

/* Where the decoded value of part i lives, NULL for empty parts. */
static uint8_t *s_value(cl_coll_t *self, int i)
{
    ex_t *st = s_st(self);
    if (self->a.kind == CL_COLL_ALLGATHERV && !st->priv)
        return (uint8_t *)self->a.recvbuf + self->displs[self->members[i]];
    return st->val[i];
}

static void s_destroy(cl_coll_t *self)
{
    ex_t *st = s_st(self);
    cl_relay_destroy(&st->rl);
    CL_FREE_ROWS(st->val, self->n);
    CL_FREE_ROWS(st->absent, self->n);
    CL_FREE_ROWS(st->orig, self->n);
    CL_FREE_ROWS(st->proof, self->n);
    CL_FREE_ROWS(st->mis, self->n);
    free(st->mislen);
    free(st->plen);
    free(st->bad);
    free(st);
    self->st = NULL;
}

/* Robust aggregation (args.aggregation != 0): every member holds every
   whole contribution, so every member leaves out the same ones and gets
   the same bits.  A part with an absent chunk is left out whole.  Clears
   the present bit of contributions left out for non-finite values. */
static int s_robust(cl_coll_t *self, uint8_t *present)
{
    ex_t *st = s_st(self);
    const void **in = malloc((size_t)self->n * sizeof *in);
    double *w = malloc((size_t)self->n * sizeof *w);
    int *idx = malloc((size_t)self->n * sizeof *idx);
    uint8_t *kept = malloc((size_t)self->n);
    int rc = COLLAB_ERR_NO_MEM;
    if (in == NULL || w == NULL || idx == NULL || kept == NULL)
        goto out;
    int k = 0;
    for (int i = 0; i < self->n; i++)
        if (cl_bit(present, (size_t)i)) {
            in[k] = st->val[i];
            w[k] = self->weights[i];
            idx[k++] = i;
        }
    if (k == 0) {
        memset(self->a.recvbuf, 0, self->a.count * self->esize);
        rc = COLLAB_OK;
        goto out;
    }
    rc = cl_robust_aggregate((cl_agg_t)self->a.aggregation, self->a.dtype, self->a.recvbuf, in, w,
                             k, self->a.count, (double)self->a.comm_size, self->a.max_weight_ratio,
                             kept);
    for (int j = 0; j < k && rc == COLLAB_OK; j++) {
        if (kept[j])
            continue;
        cl_bit_clr(present, (size_t)idx[j]);
        cl_warn("all-reduce #%llu on comm %016llx: rank %d sent non-finite values; its "
                "contribution is left out (COLLAB_AGGREGATION)",
                (unsigned long long)self->a.seq, (unsigned long long)self->a.comm_id,
                self->members[idx[j]]);
    }
out:
    free(in);
    free(w);
    free(idx);
    free(kept);
    return rc;
}

/* Folds (allreduce) or just concludes, once every part is held. */
static int s_finish(cl_coll_t *self)
{
    ex_t *st = s_st(self);
    if (st->finished || self->done)
        return COLLAB_OK;
    for (int i = 0; i < self->n; i++)
        if (cl_relay_missing(st->rl, i) > 0)
            return COLLAB_OK;
    st->finished = true;
    uint8_t *present = calloc(self->nb, 1);
    if (present == NULL)
        return COLLAB_ERR_NO_MEM;
    for (int i = 0; i < self->n; i++)
        if (cl_bm_count(st->absent[i], cl_relay_nchunks(st->rl, i)) == 0)
            cl_bit_set(present, (size_t)i);
    int rc = COLLAB_OK;
    if (self->a.kind == CL_COLL_ALLREDUCE && self->a.count > 0 && self->a.aggregation != 0) {
        rc = s_robust(self, present);
    } else if (self->a.kind == CL_COLL_ALLREDUCE && self->a.count > 0) {
        const void **in = malloc((size_t)self->n * sizeof *in);
        int *idx = malloc((size_t)self->n * sizeof *idx);
        size_t nch = cl_relay_nchunks(st->rl, self->me);
        for (size_t c = 0; c < nch && rc == COLLAB_OK && in != NULL && idx != NULL; c++) {
            size_t off, len;
            cl_coll_chunk(st->plen[self->me], st->cb, c, &off, &len);
            int k = 0;
            for (int i = 0; i < self->n; i++)
                if (!cl_bit(st->absent[i], c)) {
                    in[k] = st->val[i] + off;
                    idx[k++] = i;
                }
            rc = cl_coll_combine(self, (uint8_t *)self->a.recvbuf + off, in, idx, k,
                                 len / self->esize);
        }
        if (in == NULL || idx == NULL)
            rc = COLLAB_ERR_NO_MEM;
        free(in);
        free(idx);
    }
    rc = cl_coll_finish_pieces(self, rc, present, st->bad);
    free(present);
    return rc;
}

/* Marks part i as mismatched: zero slot, every chunk held. */
static void s_mismatch(cl_coll_t *self, int i)
{
    ex_t *st = s_st(self);
    cl_bit_set(st->bad, (size_t)i);
    uint8_t *v = s_value(self, i);
    if (v != NULL && st->plen[i] > 0)
        memset(v, 0, st->plen[i]);
    for (size_t c = 0; c < cl_relay_nchunks(st->rl, i); c++)
        cl_relay_hold(st->rl, i, c);
}

/* The signed context of a piece: its announced length (u32 LE). */
static void s_ctx(uint32_t aux, uint8_t ctx[4])
{
    for (int k = 0; k < 4; k++)
        ctx[k] = (uint8_t)(aux >> (8 * k));
}

/* The length part i announces when it fits its slot. */
static uint32_t s_want(const cl_coll_t *self, int i)
{
    if (self->a.kind != CL_COLL_ALLGATHERV)
        return 0;
    size_t pl = s_st((cl_coll_t *)self)->plen[i];
    return pl > UINT32_MAX ? UINT32_MAX : (uint32_t)pl;
}

/* Keeps the evidence that part i's length differs from its slot: its
   producer's signed chunk c of announced length aux (the first one). */
static int s_keep_evidence(cl_coll_t *self, int i, uint32_t aux, size_t c, const uint8_t *proof,
                           const void *data, size_t len)
{
    ex_t *st = s_st(self);
    if (st->mis[i] != NULL)
        return COLLAB_OK;
    uint8_t *e = malloc(EX_MIS_HEAD + len + 1);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    s_ctx(aux, e);
    s_ctx((uint32_t)c, e + 4);
    memcpy(e + 8, proof, CL_COLL_SIG);
    if (len > 0)
        memcpy(e + EX_MIS_HEAD, data, len);
    st->mis[i] = e;
    st->mislen[i] = EX_MIS_HEAD + len;
    return COLLAB_OK;
}

/* A relay in a collective that signs: the producer's signature, then the
   value; a mismatched part sends the evidence instead.  Absences are
   never relayed there (cl_relay_hold_silent). */
static int s_relay_signed(cl_coll_t *self, int part, int chunk, int to)
{
    ex_t *st = s_st(self);
    if (cl_bit(st->bad, (size_t)part))
        return st->mis[part] == NULL ? COLLAB_OK
                                     : cl_coll_send(self, to, CL_MSG_RELAY, (uint32_t)part,
                                                    (uint32_t)chunk, CL_AUX_MISMATCH, NULL, 0,
                                                    st->mis[part], st->mislen[part]);
    if (cl_bit(st->absent[part], (size_t)chunk))
        return COLLAB_OK;
    size_t off, len;
    cl_coll_chunk(st->plen[part], st->cb, (size_t)chunk, &off, &len);
    uint8_t *v = s_value(self, part);
    return cl_coll_send(self, to, CL_MSG_RELAY, (uint32_t)part, (uint32_t)chunk, 0,
                        st->proof[part] + (size_t)chunk * CL_COLL_SIG, CL_COLL_SIG,
                        len > 0 ? v + off : NULL, len);
}

static int s_relay(cl_coll_t *self, int part, int chunk, int to)
{
    ex_t *st = s_st(self);
    if (self->sig)
        return s_relay_signed(self, part, chunk, to);
    uint32_t aux = cl_bit(st->bad, (size_t)part) ? CL_AUX_MISMATCH : 0;
    if (cl_bit(st->absent[part], (size_t)chunk))
        return cl_coll_send(self, to, CL_MSG_RELAY, (uint32_t)part, (uint32_t)chunk,
                            aux | CL_AUX_ABSENT, NULL, 0, NULL, 0);
    size_t off, len;
    cl_coll_chunk(st->plen[part], st->cb, (size_t)chunk, &off, &len);
    uint8_t *v = s_value(self, part);
    return cl_coll_send(self, to, CL_MSG_RELAY, (uint32_t)part, (uint32_t)chunk, aux, NULL, 0,
                        len > 0 ? v + off : NULL, len);
}

static int s_decide(cl_coll_t *self, int part, int chunk, int producer)
{
    (void)producer;
    ex_t *st = s_st(self);
    size_t off, len;
    cl_coll_chunk(st->plen[part], st->cb, (size_t)chunk, &off, &len);
    uint8_t *v = s_value(self, part);
    if (len > 0 && v != NULL)
        memset(v + off, 0, len);
    cl_bit_set(st->absent[part], (size_t)chunk);
    if (self->sig)
        return cl_relay_hold_silent(st->rl, part, (size_t)chunk);
    cl_relay_hold(st->rl, part, (size_t)chunk);
    return COLLAB_OK;
}

static const cl_relay_ops_t s_ops = {.relay = s_relay, .decide = s_decide};

/* Allocates the state; values of allreduce parts are allocated here. */
static int s_setup(cl_coll_t *self)
{
    ex_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return COLLAB_ERR_NO_MEM;
    self->st = st;
    size_t n = (size_t)self->n;
    st->cb = cl_coll_chunk_bytes(self);
    st->rl = cl_relay_new(self, self->n, &s_ops);
    st->plen = calloc(n, sizeof *st->plen);
    st->val = calloc(n, sizeof *st->val);
    st->absent = calloc(n, sizeof *st->absent);
    st->orig = calloc(n, sizeof *st->orig);
    st->bad = calloc(self->nb, 1);
    if (st->rl == NULL || st->plen == NULL || st->val == NULL || st->absent == NULL ||
        st->orig == NULL || st->bad == NULL)
        return COLLAB_ERR_NO_MEM;
    if (self->sig && ((st->proof = calloc(n, sizeof *st->proof)) == NULL ||
                      (st->mis = calloc(n, sizeof *st->mis)) == NULL ||
                      (st->mislen = calloc(n, sizeof *st->mislen)) == NULL))
        return COLLAB_ERR_NO_MEM;
    for (int i = 0; i < self->n; i++) {
        if (self->a.kind == CL_COLL_ALLREDUCE)
            st->plen[i] = self->a.count * self->esize;
        else if (self->a.kind == CL_COLL_ALLGATHERV)
            st->plen[i] = self->counts[self->members[i]];
        size_t nch = cl_coll_nchunks(st->plen[i], st->cb);
        int rc = cl_relay_part(st->rl, i, nch, st->cb, -1, CL_FB_ABSENT, i == self->me ? -1 : i);
        if (rc != COLLAB_OK)
            return rc;
        st->absent[i] = calloc(cl_bm_bytes(nch), 1);
        st->orig[i] = calloc(cl_bm_bytes(nch), 1);
        if (st->absent[i] == NULL || st->orig[i] == NULL)
            return COLLAB_ERR_NO_MEM;
        if (self->sig && (st->proof[i] = malloc(nch * CL_COLL_SIG)) == NULL)
            return COLLAB_ERR_NO_MEM;
        if (self->a.kind == CL_COLL_ALLREDUCE &&
            (st->val[i] = malloc(st->plen[i] > 0 ? st->plen[i] : 1)) == NULL)
            return COLLAB_ERR_NO_MEM;
    }
    return COLLAB_OK;
}

/* Sends chunk c of this member's part to every live member. */
static int s_send_own(cl_coll_t *self, size_t c, uint32_t aux, const uint8_t *src)
{
    ex_t *st = s_st(self);
    size_t off, len;
    cl_coll_chunk(st->plen[self->me], st->cb, c, &off, &len);
    const void *data = src != NULL && len > 0 ? src + off : NULL;
    void *enc = NULL;
    size_t elen = len;
    /* Every member folds this input: one encoding for all of them. */
    cl_compress_t codec = cl_coll_codec(self, self->me, -1);
    if (codec != CL_COMPRESS_NONE && len > 0) {
        size_t cnt = len / self->esize;
        enc = malloc(cl_compress_bound(codec, self->a.dtype, cnt));
        if (enc == NULL)
            return COLLAB_ERR_NO_MEM;
        elen = cl_compress_encode(codec, self->a.dtype, data, cnt, enc);
        /* This member folds what the others will decode. */
        int rc = cl_compress_decode(codec, self->a.dtype, enc, elen, cnt, st->val[self->me] + off);
        if (rc != COLLAB_OK) {
            free(enc);
            return COLLAB_ERR_INTERNAL;
        }
        data = enc;
    }
    int rc = COLLAB_OK;
    uint8_t proof[CL_COLL_SIG], ctx[4];
    if (self->sig) {
        /* Signed over the decoded bits, which every member folds and
           relays; one signature serves every member. */
        const void *bits = codec != CL_COMPRESS_NONE && len > 0 ? st->val[self->me] + off : data;
        s_ctx(aux, ctx);
        rc = cl_coll_sig_make(self, CL_PROOF_PIECE, (uint32_t)self->me, (uint32_t)c, ctx, 4, bits,
                              len, proof);
        if (rc == COLLAB_OK && cl_bit(st->bad, (size_t)self->me))
            rc = s_keep_evidence(self, self->me, aux, c, proof, bits, len);
        else if (rc == COLLAB_OK)
            memcpy(st->proof[self->me] + c * CL_COLL_SIG, proof, CL_COLL_SIG);
        if (rc != COLLAB_OK) {
            free(enc);
            return rc;
        }
    }
    for (int m = 0; m < self->n; m++) {
        int r = cl_coll_send(self, m, CL_MSG_RESULT, (uint32_t)self->me, (uint32_t)c, aux,
                             self->sig ? proof : NULL, self->sig ? CL_COLL_SIG : 0, data, elen);
        if (r == COLLAB_ERR_NO_MEM)
            rc = r;
    }
    free(enc);
    return rc;
}

static int s_start(cl_coll_t *self)
{
    int rc = s_setup(self);
    if (rc != COLLAB_OK)
        return rc;
    ex_t *st = s_st(self);
    int me = self->me;
    const uint8_t *src = NULL;
    uint32_t aux = 0;
    if (self->a.kind == CL_COLL_ALLREDUCE) {
        src = self->a.sendbuf != NULL ? self->a.sendbuf : self->a.recvbuf;
        if (st->plen[me] > 0)
            memcpy(st->val[me], src, st->plen[me]);
    } else if (self->a.kind == CL_COLL_ALLGATHERV) {
        uint8_t *rb = self->a.recvbuf;
        /* Slots of ranks outside the group are zero-filled. */
        for (int r = 0, i = 0; r < self->a.comm_size; r++) {
            while (i < self->n && self->members[i] < r)
                i++;
            if ((i >= self->n || self->members[i] != r) && self->counts[r] > 0)
                memset(rb + self->displs[r], 0, self->counts[r]);
        }
        size_t sb = self->a.sendbuf != NULL ? self->a.sbytes : st->plen[me];
        src = self->a.sendbuf != NULL ? self->a.sendbuf : rb + self->displs[self->a.self];
        aux = sb > UINT32_MAX ? UINT32_MAX : (uint32_t)sb;
        if (sb != st->plen[me]) {
            /* Our own length differs from our slot: everybody zero-fills it. */
            cl_bit_set(st->bad, (size_t)me);
            if (st->plen[me] > 0)
                memset(rb + self->displs[self->a.self], 0, st->plen[me]);
            size_t keep = st->plen[me];
            st->plen[me] = sb;
            for (size_t c = 0; c < cl_coll_nchunks(sb, st->cb); c++)
                if ((rc = s_send_own(self, c, aux, src)) != COLLAB_OK)
                    break;
            st->plen[me] = keep;
            src = NULL;
        } else if (self->a.sendbuf != NULL && sb > 0) {
            memcpy(rb + self->displs[self->a.self], src, sb);
        }
    }
    for (size_t c = 0; c < cl_relay_nchunks(st->rl, me); c++) {
        if (src != NULL || self->a.kind == CL_COLL_BARRIER) {
            int r = s_send_own(self, c, aux, src);
            if (r != COLLAB_OK)
                rc = r;
        }
        cl_relay_hold(st->rl, me, c);
    }
    if (rc != COLLAB_OK)
        return rc;
    if (self->nfailed > 0 && (rc = cl_relay_on_fail(st->rl, -1)) != COLLAB_OK)
        return rc;
    return s_finish(self);
}

/* A RESULT: the piece's chunk from its own member (in a collective that
   signs: its signature, then the value as sent).  Every chunk is checked
   when first taken; a member that signed what it sent badly is disowned
   here (cl_coll_disown), and its piece comes from the other holders. */
static int s_on_result(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    ex_t *st = s_st(self);
    int i = (int)msg->part;
    size_t c = msg->chunk;
    if (msg->part >= (uint32_t)self->n || i != from)
        return COLLAB_ERR_ARG;
    const uint8_t *proof = NULL, *mdata = msg->data;
    size_t mlen = msg->len;
    uint8_t ctx[4];
    s_ctx(msg->aux, ctx);
    if (self->sig) {
        if (mlen < CL_COLL_SIG)
            return COLLAB_ERR_ARG;
        proof = mdata;
        mdata += CL_COLL_SIG;
        mlen -= CL_COLL_SIG;
    }
    if (self->a.kind == CL_COLL_ALLGATHERV) {
        size_t want = st->plen[i] > UINT32_MAX ? UINT32_MAX : st->plen[i];
        if (msg->aux != want) {
            /* The sender's length differs from its slot: zeros and
               COLLAB_ERR_TRUNCATE on every member; the rest is ignored.
               Only a chunk that agrees with the length it announces counts
               as such; anything else is malformed. */
            size_t off, len;
            cl_coll_chunk(msg->aux, st->cb, c, &off, &len);
            if (c >= cl_coll_nchunks(msg->aux, st->cb) || mlen != len)
                return COLLAB_ERR_ARG;
            if (self->sig) {
                if (!cl_coll_sig_valid(self, CL_PROOF_PIECE, (uint32_t)i, (uint32_t)c, i, ctx, 4,
                                       mdata, mlen, proof)) {
                    cl_coll_disown(self, from, "a result", i, c, i);
                    return COLLAB_ERR_ARG;
                }
                if (s_keep_evidence(self, i, msg->aux, c, proof, mdata, mlen) != COLLAB_OK)
                    return COLLAB_ERR_NO_MEM;
            }
            if (!cl_bit(st->bad, (size_t)i) && cl_relay_missing(st->rl, i) > 0)
                s_mismatch(self, i);
            return s_finish(self);
        }
    } else if (msg->aux != 0) {
        return COLLAB_ERR_ARG;
    }
    if (c >= cl_relay_nchunks(st->rl, i))
        return COLLAB_ERR_ARG;
    if (cl_bit(st->orig[i], c))
        return COLLAB_ERR_ARG; /* the same chunk twice from its owner */
    size_t off, len;
    cl_coll_chunk(st->plen[i], st->cb, c, &off, &len);
    if (cl_relay_held(st->rl, i, c)) {
        /* Already relayed by someone else: same bytes, nothing to do. */
        if (cl_coll_codec(self, i, -1) == CL_COMPRESS_NONE && mlen != len)
            return COLLAB_ERR_ARG;
        cl_bit_set(st->orig[i], c);
        return COLLAB_OK;
    }
    uint8_t *v = s_value(self, i);
    cl_compress_t codec = cl_coll_codec(self, i, -1);
    bool coded = codec != CL_COMPRESS_NONE && len > 0;
    if (coded) {
        /* Decoded in place: not held until its signature passes. */
        if (cl_compress_decode(codec, self->a.dtype, mdata, mlen, len / self->esize, v + off) !=
            COLLAB_OK)
            return COLLAB_ERR_ARG;
    } else if (mlen != len) {
        return COLLAB_ERR_ARG;
    }
    if (self->sig) {
        if (!cl_coll_sig_valid(self, CL_PROOF_PIECE, (uint32_t)i, (uint32_t)c, i, ctx, 4,
                               coded ? v + off : mdata, len, proof)) {
            cl_coll_disown(self, from, "a result", i, c, i);
            return COLLAB_ERR_ARG;
        }
        memcpy(st->proof[i] + c * CL_COLL_SIG, proof, CL_COLL_SIG);
    }
    if (!coded && len > 0)
        memcpy(v + off, mdata, len);
    cl_bit_set(st->orig[i], c);
    cl_relay_hold(st->rl, i, c);
    if (cl_relay_repairing(st->rl, i))
        cl_relay_poke(st->rl, i);
    return s_finish(self);
}

/* A RELAY in a collective that signs: the producer's signature and the
   value, or (CL_AUX_MISMATCH) the evidence that the piece's length
   differs from its slot.  It counts from any holder when the signature
   is the producer's, whether or not this member knows the producer
   failed; an absence is never relayed there (every member decides it by
   the rule), so a claimed one is a forgery like a bad signature. */
static int s_on_relay_signed(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    ex_t *st = s_st(self);
    int i = (int)msg->part;
    size_t c = msg->chunk;
    if (msg->part >= (uint32_t)self->n || i == self->me || c >= cl_relay_nchunks(st->rl, i) ||
        (msg->aux & ~(CL_AUX_ABSENT | CL_AUX_MISMATCH)) != 0)
        return COLLAB_ERR_ARG;
    if (msg->aux & CL_AUX_ABSENT) {
        cl_coll_disown(self, from, "an absence claim", i, c, i);
        return COLLAB_ERR_ARG;
    }
    const uint8_t *d = msg->data;
    if (msg->aux & CL_AUX_MISMATCH) {
        if (msg->len < EX_MIS_HEAD)
            return COLLAB_ERR_ARG;
        uint32_t aux = 0, ec = 0;
        for (int k = 0; k < 4; k++) {
            aux |= (uint32_t)d[k] << (8 * k);
            ec |= (uint32_t)d[4 + k] << (8 * k);
        }
        size_t off, len, dlen = msg->len - EX_MIS_HEAD;
        cl_coll_chunk(aux, st->cb, ec, &off, &len);
        if (self->a.kind != CL_COLL_ALLGATHERV || ec >= cl_coll_nchunks(aux, st->cb) ||
            dlen != len)
            return COLLAB_ERR_ARG;
        if (aux == s_want(self, i) ||
            !cl_coll_sig_valid(self, CL_PROOF_PIECE, (uint32_t)i, ec, i, d, 4, d + EX_MIS_HEAD,
                               dlen, d + 8)) {
            cl_coll_disown(self, from, "a mismatch claim", i, c, i);
            return COLLAB_ERR_ARG;
        }
        if (cl_bit(st->bad, (size_t)i))
            return COLLAB_OK;
        if (s_keep_evidence(self, i, aux, ec, d + 8, d + EX_MIS_HEAD, dlen) != COLLAB_OK)
            return COLLAB_ERR_NO_MEM;
        s_mismatch(self, i);
        cl_relay_poke(st->rl, i);
        return s_finish(self);
    }
    size_t off, len;
    cl_coll_chunk(st->plen[i], st->cb, c, &off, &len);
    if (msg->len != CL_COLL_SIG + len)
        return COLLAB_ERR_ARG;
    uint8_t ctx[4];
    s_ctx(s_want(self, i), ctx);
    /* Checked even when held: a forgery is named whenever it comes. */
    if (!cl_coll_sig_valid(self, CL_PROOF_PIECE, (uint32_t)i, (uint32_t)c, i, ctx, 4,
                           d + CL_COLL_SIG, len, d)) {
        cl_coll_disown(self, from, "a relay", i, c, i);
        return COLLAB_ERR_ARG;
    }
    if (cl_relay_held(st->rl, i, c))
        return COLLAB_OK; /* several holders may relay the same chunk */
    if (len > 0)
        memcpy(s_value(self, i) + off, d + CL_COLL_SIG, len);
    memcpy(st->proof[i] + c * CL_COLL_SIG, d, CL_COLL_SIG);
    cl_relay_hold(st->rl, i, c);
    cl_relay_poke(st->rl, i);
    return s_finish(self);
}

static int s_on_relay(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    ex_t *st = s_st(self);
    if (self->sig)
        return s_on_relay_signed(self, from, msg);
    int i = (int)msg->part;
    size_t c = msg->chunk;
    /* Relays repair the part of a member that failed: one this member
       still counts alive is nobody else's to send (a member's STATUS,
       which asks for relays, goes out only once it learned the failure). */
    if (msg->part >= (uint32_t)self->n || cl_coll_alive(self, i) ||
        c >= cl_relay_nchunks(st->rl, i) || (msg->aux & ~(CL_AUX_ABSENT | CL_AUX_MISMATCH)) != 0)
        return COLLAB_ERR_ARG;
    size_t off, len;
    cl_coll_chunk(st->plen[i], st->cb, c, &off, &len);
    bool absent = (msg->aux & CL_AUX_ABSENT) != 0;
    if (absent ? msg->len != 0 : msg->len != len)
        return COLLAB_ERR_ARG;
    if (cl_relay_held(st->rl, i, c))
        return COLLAB_OK; /* several holders may relay the same chunk */
    uint8_t *v = s_value(self, i);
    if (absent) {
        s_decide(self, i, (int)c, -1);
    } else {
        if (len > 0)
            memcpy(v + off, msg->data, len);
        cl_relay_hold(st->rl, i, c);
    }
    if (msg->aux & CL_AUX_MISMATCH)
        cl_bit_set(st->bad, (size_t)i);
    cl_relay_poke(st->rl, i);
    return s_finish(self);
}

static int s_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    ex_t *st = s_st(self);
    switch (msg->type) {
    case CL_MSG_RESULT:
        return s_on_result(self, from, msg);
    case CL_MSG_RELAY:
        return s_on_relay(self, from, msg);
    case CL_MSG_STATUS: {
        int rc = cl_relay_on_status(st->rl, from, msg);
        if (rc != COLLAB_OK)
            return rc;
        return s_finish(self);
    }
    default:
        return COLLAB_ERR_ARG;
    }
}

static void s_on_fail(cl_coll_t *self, int idx)
{
    ex_t *st = s_st(self);
    cl_relay_on_fail(st->rl, idx);
    s_finish(self);
}

static void s_expect(cl_coll_t *self, size_t *bytes)
{
    ex_t *st = s_st(self);
    for (int i = 0; i < self->n; i++) {
        size_t miss = cl_relay_missing(st->rl, i);
        if (i != self->me && miss > 0 && !cl_relay_repairing(st->rl, i))
            bytes[i] += miss * st->cb + 1;
    }
    cl_relay_expect(st->rl, bytes);
}

static int s_release(cl_coll_t *self)
{
    ex_t *st = s_st(self);
    if (self->a.kind != CL_COLL_ALLGATHERV || st->priv)
        return COLLAB_OK;
    /* Keep the parts for relays; the retained collective may still be
       asked for them until the next collective completes. */
    for (int i = 0; i < self->n; i++) {
        if (st->plen[i] == 0)
            continue;
        st->val[i] = malloc(st->plen[i]);
        if (st->val[i] == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(st->val[i], (uint8_t *)self->a.recvbuf + self->displs[self->members[i]],
               st->plen[i]);
    }
    st->priv = true;
    return COLLAB_OK;
}

const cl_algo_t cl_algo_exchange = {
    .name = "exchange",
    .start = s_start,
    .on_msg = s_on_msg,
    .on_fail = s_on_fail,
    .expect = s_expect,
    .release = s_release,
    .destroy = s_destroy,
};
