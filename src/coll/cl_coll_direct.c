/*  cl_coll_direct.c - collectives where every piece has one sender and one
    receiver: gatherv, scatterv, alltoall, and reduce below small_bytes.

    Schedule (one round).  Each sender cuts each piece into chunks of
    chunk_bytes and sends them as RESULT (part = the sender's member index
    for the receiver to file it, chunk c, aux = the piece's length clipped
    to 32 bits):
      gatherv   member i -> root: its sbytes, into slot i of the root's buffer
      scatterv  root -> member i: slot i of the root's buffer
      alltoall  member i -> member j: block j of i's buffer, into block i of j's
      reduce    member i -> root: its input (encoded when compressing); the
                root folds the inputs in rank order (cl_coll_combine)
    A member completes when it has sent everything and received every piece
    addressed to it.  Slots of ranks outside the group are zero-filled.

    Cost: one round.  gatherv/reduce: the root receives (n-1) pieces;
    scatterv: the root sends them; alltoall: each member sends and receives
    (n-1) blocks.

    Failures: nobody but its sender and its receiver ever holds a piece,
    so when the sender fails the receiver alone decides: the chunks still
    missing are absent (zero-filled, or left out of the fold).  Root
    absent: gatherv and reduce complete with no result; scatterv fills the
    receive buffer with zeros.  A piece whose length differs from the slot
    waiting for it fills the slot with zeros and the call ends with
    COLLAB_ERR_TRUNCATE.
*/
#include "cl_coll_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t cb;        /* chunk bytes */
    size_t *plen;     /* per sender: bytes of the piece this member receives */
    size_t *nch;      /* per sender: chunks */
    uint8_t **got;    /* per sender: chunks received or decided */
    uint8_t **absent; /* per sender: chunks decided absent */
    size_t *missing;  /* per sender: chunks neither received nor decided */
    uint8_t **val;    /* reduce: decoded inputs */
    uint8_t *bad;     /* senders whose piece did not fit its slot */
    bool recv;        /* this member receives anything */
} dr_t;

static dr_t *s_st(cl_coll_t *self)
{
    return self->st;
}

static void s_destroy(cl_coll_t *self)
{
    dr_t *st = s_st(self);
    CL_FREE_ROWS(st->got, self->n);
    CL_FREE_ROWS(st->absent, self->n);
    CL_FREE_ROWS(st->val, self->n);
    free(st->plen);
    free(st->nch);
    free(st->missing);
    free(st->bad);
    free(st);
    self->st = NULL;
}

static uint32_t s_aux(size_t len)
{
    return len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

/* Where the piece from sender i lands at this member. */
static uint8_t *s_slot(cl_coll_t *self, int i)
{
    uint8_t *rb = self->a.recvbuf;
    int r = self->members[i];
    switch (self->a.kind) {
    case CL_COLL_GATHERV:
        return rb != NULL ? rb + self->displs[r] : NULL;
    case CL_COLL_SCATTERV:
        return rb;
    case CL_COLL_ALLTOALL:
        return rb != NULL ? rb + (size_t)r * self->a.count : NULL;
    default:
        return s_st(self)->val[i];
    }
}

/* True when this member expects a piece from member i. */
static bool s_from(cl_coll_t *self, int i)
{
    if (i == self->me)
        return false;
    switch (self->a.kind) {
    case CL_COLL_SCATTERV:
        return i == self->root;
    case CL_COLL_ALLTOALL:
        return true;
    default: /* gatherv, reduce */
        return self->me == self->root;
    }
}

static int s_finish(cl_coll_t *self)
{
    dr_t *st = s_st(self);
    if (self->done)
        return COLLAB_OK;
    for (int i = 0; i < self->n; i++)
        if (st->missing[i] > 0)
            return COLLAB_OK;
    uint8_t *bm = calloc(self->nb, 1);
    if (bm == NULL)
        return COLLAB_ERR_NO_MEM;
    int rc = COLLAB_OK;
    if (!st->recv) {
        for (int m = 0; m < self->n; m++)
            if (cl_coll_alive(self, m))
                cl_bit_set(bm, (size_t)m);
    } else {
        for (int i = 0; i < self->n; i++)
            if ((s_from(self, i) || i == self->me) && cl_bm_count(st->absent[i], st->nch[i]) == 0)
                cl_bit_set(bm, (size_t)i);
        if (self->a.kind == CL_COLL_SCATTERV)
            for (int i = 0; i < self->n; i++)
                if (i != self->root)
                    cl_bit_clr(bm, (size_t)i);
    }
    if (self->a.kind == CL_COLL_REDUCE && st->recv && self->a.count > 0) {
        const void **in = malloc((size_t)self->n * sizeof *in);
        int *idx = malloc((size_t)self->n * sizeof *idx);
        if (in == NULL || idx == NULL)
            rc = COLLAB_ERR_NO_MEM;
        size_t plen = self->a.count * self->esize;
        for (size_t c = 0; c < st->nch[self->me] && rc == COLLAB_OK; c++) {
            size_t off, len;
            cl_coll_chunk(plen, st->cb, c, &off, &len);
            int k = 0;
            for (int i = 0; i < self->n; i++)
                if (!cl_bit(st->absent[i], c)) {
                    in[k] = st->val[i] + off;
                    idx[k++] = i;
                }
            rc = cl_coll_combine(self, (uint8_t *)self->a.recvbuf + off, in, idx, k,
                                 len / self->esize);
        }
        free(in);
        free(idx);
    }
    rc = cl_coll_finish_pieces(self, rc, bm, st->bad);
    free(bm);
    return rc;
}

/* Marks the chunks of sender i still missing as absent. */
static void s_give_up(cl_coll_t *self, int i)
{
    dr_t *st = s_st(self);
    uint8_t *slot = s_slot(self, i);
    for (size_t c = 0; c < st->nch[i]; c++) {
        if (cl_bit(st->got[i], c))
            continue;
        size_t off, len;
        cl_coll_chunk(st->plen[i], st->cb, c, &off, &len);
        if (slot != NULL && len > 0)
            memset(slot + off, 0, len);
        cl_bit_set(st->got[i], c);
        cl_bit_set(st->absent[i], c);
        st->missing[i]--;
    }
}

/* Sends `len` bytes at src to member `to` in chunks (encoded for reduce). */
static int s_send_piece(cl_coll_t *self, int to, const uint8_t *src, size_t len)
{
    dr_t *st = s_st(self);
    size_t nch = cl_coll_nchunks(len, st->cb);
    for (size_t c = 0; c < nch; c++) {
        size_t off, clen;
        cl_coll_chunk(len, st->cb, c, &off, &clen);
        const void *data = clen > 0 ? src + off : NULL;
        void *enc = NULL;
        cl_compress_t codec = cl_coll_codec(self, self->me, to); /* reduce: to the root alone */
        if (codec != CL_COMPRESS_NONE && clen > 0) {
            size_t cnt = clen / self->esize;
            if ((enc = malloc(cl_compress_bound(codec, self->a.dtype, cnt) + 1)) == NULL)
                return COLLAB_ERR_NO_MEM;
            clen = cl_compress_encode(codec, self->a.dtype, data, cnt, enc);
            data = enc;
        }
        int rc = cl_coll_send(self, to, CL_MSG_RESULT, (uint32_t)self->me, (uint32_t)c, s_aux(len),
                              NULL, 0, data, clen);
        free(enc);
        if (rc == COLLAB_ERR_NO_MEM)
            return rc;
    }
    return COLLAB_OK;
}

static int s_setup(cl_coll_t *self)
{
    dr_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return COLLAB_ERR_NO_MEM;
    self->st = st;
    size_t n = (size_t)self->n;
    st->cb = cl_coll_chunk_bytes(self);
    st->plen = calloc(n, sizeof *st->plen);
    st->nch = calloc(n, sizeof *st->nch);
    st->missing = calloc(n, sizeof *st->missing);
    st->got = calloc(n, sizeof *st->got);
    st->absent = calloc(n, sizeof *st->absent);
    st->val = calloc(n, sizeof *st->val);
    st->bad = calloc(self->nb, 1);
    if (st->plen == NULL || st->nch == NULL || st->missing == NULL || st->got == NULL ||
        st->absent == NULL || st->val == NULL || st->bad == NULL)
        return COLLAB_ERR_NO_MEM;
    for (int i = 0; i < self->n; i++) {
        int r = self->members[i];
        switch (self->a.kind) {
        case CL_COLL_GATHERV:
            st->plen[i] = self->me == self->root ? self->counts[r] : 0;
            break;
        case CL_COLL_SCATTERV:
            st->plen[i] = i == self->root || i == self->me ? self->a.rbytes : 0;
            break;
        case CL_COLL_ALLTOALL:
            st->plen[i] = self->a.count;
            break;
        default:
            st->plen[i] = self->a.count * self->esize;
            break;
        }
        st->nch[i] = cl_coll_nchunks(st->plen[i], st->cb);
        st->got[i] = calloc(cl_bm_bytes(st->nch[i]), 1);
        st->absent[i] = calloc(cl_bm_bytes(st->nch[i]), 1);
        if (st->got[i] == NULL || st->absent[i] == NULL)
            return COLLAB_ERR_NO_MEM;
        if (s_from(self, i)) {
            st->missing[i] = st->nch[i];
            st->recv = true;
        }
        if (self->a.kind == CL_COLL_REDUCE && self->me == self->root &&
            (st->val[i] = malloc(st->plen[i] > 0 ? st->plen[i] : 1)) == NULL)
            return COLLAB_ERR_NO_MEM;
    }
    if (self->a.kind != CL_COLL_SCATTERV && self->me == self->root)
        st->recv = true; /* the root's own piece */
    if (self->a.kind == CL_COLL_ALLTOALL)
        st->recv = true;
    return COLLAB_OK;
}

/* Zero-fills the slots of ranks outside the group (gatherv at the root,
   alltoall). */
static void s_zero_absent(cl_coll_t *self)
{
    uint8_t *rb = self->a.recvbuf;
    if (rb == NULL)
        return;
    for (int r = 0, i = 0; r < self->a.comm_size; r++) {
        while (i < self->n && self->members[i] < r)
            i++;
        if (i < self->n && self->members[i] == r)
            continue;
        if (self->a.kind == CL_COLL_GATHERV && self->counts[r] > 0)
            memset(rb + self->displs[r], 0, self->counts[r]);
        else if (self->a.kind == CL_COLL_ALLTOALL && self->a.count > 0)
            memset(rb + (size_t)r * self->a.count, 0, self->a.count);
    }
}

static int s_start(cl_coll_t *self)
{
    bool rooted = self->a.kind != CL_COLL_ALLTOALL;
    if (rooted && self->root < 0) {
        /* Root absent: gatherv and reduce deliver nothing; scatterv zeros. */
        if (self->a.kind == CL_COLL_SCATTERV && self->a.rbytes > 0)
            memset(self->a.recvbuf, 0, self->a.rbytes);
        uint8_t *bm = calloc(self->nb, 1);
        if (bm == NULL)
            return COLLAB_ERR_NO_MEM;
        int rc = cl_coll_set_contrib(self, bm);
        free(bm);
        cl_coll_complete(self, rc);
        return rc;
    }
    int rc = s_setup(self);
    if (rc != COLLAB_OK)
        return rc;
    dr_t *st = s_st(self);
    int me = self->me, myrank = self->a.self;
    const uint8_t *sb = self->a.sendbuf;
    uint8_t *rb = self->a.recvbuf;
    switch (self->a.kind) {
    case CL_COLL_GATHERV:
        if (me == self->root) {
            s_zero_absent(self);
            size_t want = self->counts[myrank];
            if (sb != NULL && self->a.sbytes != want) {
                cl_bit_set(st->bad, (size_t)me);
                memset(rb + self->displs[myrank], 0, want);
            } else if (sb != NULL && want > 0) {
                memcpy(rb + self->displs[myrank], sb, want);
            }
        } else {
            rc = s_send_piece(self, self->root, sb, self->a.sbytes);
        }
        break;
    case CL_COLL_SCATTERV:
        if (me == self->root) {
            for (int i = 0; i < self->n && rc == COLLAB_OK; i++) {
                int r = self->members[i];
                if (i != me)
                    rc = s_send_piece(self, i, sb + self->displs[r], self->counts[r]);
            }
            if (rb != NULL && self->counts[myrank] != self->a.rbytes) {
                cl_bit_set(st->bad, (size_t)me);
                memset(rb, 0, self->a.rbytes);
            } else if (rb != NULL && self->a.rbytes > 0) {
                memcpy(rb, sb + self->displs[myrank], self->a.rbytes);
            }
        }
        break;
    case CL_COLL_ALLTOALL: {
        size_t bs = self->a.count;
        const uint8_t *src = sb != NULL ? sb : rb;
        for (int i = 0; i < self->n && rc == COLLAB_OK; i++)
            if (i != me)
                rc = s_send_piece(self, i, src + (size_t)self->members[i] * bs, bs);
        s_zero_absent(self);
        if (sb != NULL && bs > 0)
            memcpy(rb + (size_t)myrank * bs, sb + (size_t)myrank * bs, bs);
        break;
    }
    default: { /* reduce */
        const uint8_t *src = sb != NULL ? sb : rb;
        if (me == self->root) {
            if (st->plen[me] > 0)
                memcpy(st->val[me], src, st->plen[me]);
        } else {
            rc = s_send_piece(self, self->root, src, self->a.count * self->esize);
        }
        break;
    }
    }
    if (rc != COLLAB_OK)
        return rc;
    for (int i = 0; i < self->n; i++)
        if (st->missing[i] > 0 && !cl_coll_alive(self, i))
            s_give_up(self, i);
    return s_finish(self);
}

static int s_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    dr_t *st = s_st(self);
    if (msg->type != CL_MSG_RESULT || msg->part != (uint32_t)from || !s_from(self, from))
        return COLLAB_ERR_ARG;
    int i = from;
    size_t c = msg->chunk;
    if (msg->aux != s_aux(st->plen[i])) {
        /* The piece does not fit its slot (the counts of the call differ):
           zeros and COLLAB_ERR_TRUNCATE; the rest of it is ignored.  Only a
           chunk that agrees with the length it announces counts as such;
           anything else is malformed. */
        size_t off, len;
        cl_coll_chunk(msg->aux, st->cb, c, &off, &len);
        if (c >= cl_coll_nchunks(msg->aux, st->cb) ||
            (cl_coll_codec(self, i, self->me) == CL_COMPRESS_NONE && msg->len != len))
            return COLLAB_ERR_ARG;
        if (cl_bit(st->bad, (size_t)i) || st->missing[i] == 0)
            return COLLAB_OK;
        cl_bit_set(st->bad, (size_t)i);
        uint8_t *slot = s_slot(self, i);
        if (slot != NULL && st->plen[i] > 0)
            memset(slot, 0, st->plen[i]);
        for (size_t k = 0; k < st->nch[i]; k++)
            cl_bit_set(st->got[i], k);
        st->missing[i] = 0;
        return s_finish(self);
    }
    if (c >= st->nch[i] || cl_bit(st->got[i], c))
        return COLLAB_ERR_ARG;
    size_t off, len;
    cl_coll_chunk(st->plen[i], st->cb, c, &off, &len);
    uint8_t *slot = s_slot(self, i);
    cl_compress_t codec = cl_coll_codec(self, i, self->me);
    if (codec != CL_COMPRESS_NONE && len > 0) {
        if (cl_compress_decode(codec, self->a.dtype, msg->data, msg->len, len / self->esize,
                               slot + off) != COLLAB_OK)
            return COLLAB_ERR_ARG;
    } else {
        if (msg->len != len)
            return COLLAB_ERR_ARG;
        if (len > 0)
            memcpy(slot + off, msg->data, len);
    }
    cl_bit_set(st->got[i], c);
    st->missing[i]--;
    return s_finish(self);
}

static void s_on_fail(cl_coll_t *self, int idx)
{
    dr_t *st = s_st(self);
    if (st->missing[idx] > 0)
        s_give_up(self, idx);
    s_finish(self);
}

static void s_expect(cl_coll_t *self, size_t *bytes)
{
    dr_t *st = s_st(self);
    for (int i = 0; i < self->n; i++)
        if (st->missing[i] > 0)
            bytes[i] += st->missing[i] * st->cb;
}

static int s_release(cl_coll_t *self)
{
    (void)self; /* nobody but the receiver ever asks for a piece */
    return COLLAB_OK;
}

const cl_algo_t cl_algo_direct = {
    .name = "direct",
    .start = s_start,
    .on_msg = s_on_msg,
    .on_fail = s_on_fail,
    .expect = s_expect,
    .release = s_release,
    .destroy = s_destroy,
};
