/*  cl_coll_bfacc.c - the reducer's side of the butterfly: contributions to
    one chunk are folded in rank order into the chunk's result.

    Two modes.  Eager (every op but weighted SUM): contributions are folded
    as soon as the next one in rank order is there; one that arrives early
    waits in its own buffer.  A member that failed before its contribution
    arrived is skipped; one whose contribution arrived stays in.  For a
    plain SUM missing some ranks, the folded sum S is then scaled to
    size x mean (size / k x S, k contributions) by cl_reduce_weighted_sum.
    Weighted SUM (ranks absent or weights set): every contribution is kept
    until the last one is in, then cl_coll_combine computes
    size x sum(w x) / sum(w) in rank order.

    For built-in ops the eager fold is acc = x0, then acc = x_i (op) acc,
    exactly what cl_reduce_fold computes, so the small and the butterfly
    algorithm give the same bits.  A user op computes inout = in (op)
    inout, so the fold keeps MPI's order with acc = acc (op) x_i.

    With compression the contributions arrive encoded and are decoded
    here; the result is encoded once, and the reducer keeps the decoded
    value of what it sent, so every member holds the same bits.
*/
#include "cl_coll_butterfly.h"
#include "util/cl_log.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

void bf_chunk(cl_coll_t *self, int j, size_t c, size_t *first, size_t *cnt)
{
    bf_t *st = bf_st(self);
    size_t off = c * st->ce;
    *first = st->in_lo[j] + off;
    *cnt = off >= st->len[j] ? 0 : (st->len[j] - off < st->ce ? st->len[j] - off : st->ce);
}

static bool s_consumes(cl_coll_t *self, int j)
{
    int c = bf_st(self)->consumer[j];
    return c < 0 || c == self->me;
}

uint8_t *bf_value(cl_coll_t *self, int j, size_t c, bool create)
{
    bf_t *st = bf_st(self);
    size_t off = c * st->ce * self->esize;
    if (s_consumes(self, j)) {
        if (self->released)
            return st->kept != NULL ? st->kept + st->out_lo[j] * self->esize + off : NULL;
        if (self->a.recvbuf == NULL)
            return NULL;
        return (uint8_t *)self->a.recvbuf + st->out_lo[j] * self->esize + off;
    }
    if (st->store[j] == NULL) {
        if (!create)
            return NULL;
        st->store[j] = malloc(st->len[j] * self->esize);
        if (st->store[j] == NULL)
            return NULL;
    }
    return st->store[j] + off;
}

static void s_acc_clear(cl_coll_t *self, bf_acc_t *a)
{
    CL_FREE_ROWS(a->buf, self->n);
    free(a->acc);
    free(a->arrived);
    free(a->folded);
    memset(a, 0, sizeof *a);
}

void bf_acc_free_all(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    if (st->acc == NULL)
        return;
    for (int j = 0; j < st->nparts; j++) {
        if (st->acc[j] == NULL)
            continue;
        size_t nch = cl_relay_nchunks(st->rl, j);
        for (size_t c = 0; c < nch; c++)
            s_acc_clear(self, &st->acc[j][c]);
        free(st->acc[j]);
        st->acc[j] = NULL;
    }
}

bf_acc_t *bf_acc(cl_coll_t *self, int j, size_t c, bool create)
{
    bf_t *st = bf_st(self);
    if (st->acc[j] == NULL) {
        if (!create)
            return NULL;
        st->acc[j] = calloc(cl_relay_nchunks(st->rl, j), sizeof(bf_acc_t));
        if (st->acc[j] == NULL)
            return NULL;
    }
    bf_acc_t *a = &st->acc[j][c];
    if (a->arrived == NULL) {
        if (!create)
            return NULL;
        a->arrived = calloc(self->nb, 1);
        a->folded = calloc(self->nb, 1);
        a->buf = calloc((size_t)self->n, sizeof *a->buf);
        if (a->arrived == NULL || a->folded == NULL || a->buf == NULL) {
            s_acc_clear(self, a);
            return NULL;
        }
        /* This member's own input is at hand while it may reduce, once
           staging has copied it (bf_own_ready counts it then). */
        if (st->input != NULL && bf_in_ready(self, j, c) == 1)
            cl_bit_set(a->arrived, (size_t)self->me);
    }
    return a;
}

/* This member's own contribution to (j, c). */
static const uint8_t *s_own(cl_coll_t *self, int j, size_t c)
{
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    return bf_st(self)->input + first * self->esize;
}

/* Folds x (member m's contribution) into a->acc. */
static int s_fold_one(cl_coll_t *self, bf_acc_t *a, int j, size_t c, int m)
{
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    size_t bytes = cnt * self->esize;
    const uint8_t *x = m == self->me ? s_own(self, j, c) : a->buf[m];
    int rc = COLLAB_OK;
    if (a->acc == NULL) {
        if (a->buf[m] != NULL) {
            a->acc = a->buf[m];
            a->buf[m] = NULL;
        } else {
            if ((a->acc = malloc(bytes > 0 ? bytes : 1)) == NULL)
                return COLLAB_ERR_NO_MEM;
            memcpy(a->acc, x, bytes);
        }
    } else if (self->a.op.kind == COLLAB_OP_USER) {
        uint8_t *y = a->buf[m];
        if (y == NULL) {
            if ((y = malloc(bytes > 0 ? bytes : 1)) == NULL)
                return COLLAB_ERR_NO_MEM;
            memcpy(y, x, bytes);
        }
        rc = cl_reduce(&self->a.op, self->a.dtype, a->acc, y, cnt); /* y = acc (op) y */
        free(a->acc);
        a->acc = y;
        a->buf[m] = NULL;
    } else {
        rc = cl_reduce(&self->a.op, self->a.dtype, x, a->acc, cnt); /* acc = x (op) acc */
        free(a->buf[m]);
        a->buf[m] = NULL;
    }
    cl_bit_set(a->folded, (size_t)m);
    return rc;
}

/* Eager mode: folds every contribution whose turn has come. */
static int s_fold(cl_coll_t *self, bf_acc_t *a, int j, size_t c)
{
    while (a->next < self->n) {
        int m = a->next;
        if (cl_bit(a->arrived, (size_t)m)) {
            int rc = s_fold_one(self, a, j, c, m);
            if (rc != COLLAB_OK)
                return rc;
        } else if (cl_coll_alive(self, m)) {
            break;
        }
        a->next++;
    }
    return COLLAB_OK;
}

int bf_contribute(cl_coll_t *self, int j, size_t c, int m, const void *data, size_t len)
{
    bf_t *st = bf_st(self);
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    size_t bytes = cnt * self->esize;
    cl_compress_t codec = cl_coll_codec(self, m, self->me); /* m's contribution to this reducer */
    if (cl_relay_held(st->rl, j, c)) {
        /* Finished already (a contribution sent to a reducer that has been
           replaced and is back): nothing to add. */
        bf_acc_t *a = bf_acc(self, j, c, false);
        if (a != NULL && cl_bit(a->arrived, (size_t)m))
            return COLLAB_ERR_ARG;
        return codec == CL_COMPRESS_NONE && len != bytes ? COLLAB_ERR_ARG : COLLAB_OK;
    }
    bf_acc_t *a = bf_acc(self, j, c, true);
    if (a == NULL)
        return COLLAB_ERR_NO_MEM;
    if (cl_bit(a->arrived, (size_t)m))
        return COLLAB_ERR_ARG; /* the same contribution twice */
    if (st->vf != NULL)
        bf_verify_note(self, j, c, m, data, len);
    if (st->eager && a->next == m && a->acc != NULL && self->a.op.kind != COLLAB_OP_USER) {
        /* Its turn has come (the usual case): fold it straight from the
           message, or from the scratch chunk it decodes into. */
        const void *x = data;
        if (codec != CL_COMPRESS_NONE) {
            if (st->scratch == NULL && (st->scratch = malloc(st->ce * self->esize)) == NULL)
                return COLLAB_ERR_NO_MEM;
            if (cl_compress_decode(codec, self->a.dtype, data, len, cnt, st->scratch) !=
                COLLAB_OK)
                return COLLAB_ERR_ARG;
            x = st->scratch;
        } else if (len != bytes) {
            return COLLAB_ERR_ARG;
        }
        int rc = cl_reduce(&self->a.op, self->a.dtype, x, a->acc, cnt); /* acc = x (op) acc */
        if (rc != COLLAB_OK)
            return rc;
        cl_bit_set(a->arrived, (size_t)m);
        cl_bit_set(a->folded, (size_t)m);
        a->next++;
        return s_fold(self, a, j, c);
    }
    uint8_t *buf = malloc(bytes > 0 ? bytes : 1);
    if (buf == NULL)
        return COLLAB_ERR_NO_MEM;
    if (codec != CL_COMPRESS_NONE) {
        if (cl_compress_decode(codec, self->a.dtype, data, len, cnt, buf) != COLLAB_OK) {
            free(buf);
            return COLLAB_ERR_ARG;
        }
    } else {
        if (len != bytes) {
            free(buf);
            return COLLAB_ERR_ARG;
        }
        memcpy(buf, data, bytes);
    }
    a->buf[m] = buf;
    cl_bit_set(a->arrived, (size_t)m);
    return st->eager ? s_fold(self, a, j, c) : COLLAB_OK;
}

void bf_hold(cl_coll_t *self, int j, size_t c, const uint8_t *bm)
{
    bf_t *st = bf_st(self);
    cl_relay_hold(st->rl, j, c);
    memcpy(st->cbm[j] + c * self->nb, bm, self->nb);
    const cl_coll_stage_t *sg = self->a.stage;
    if (sg != NULL && !self->released && (st->consumer[j] < 0 || st->consumer[j] == self->me)) {
        /* The chunk is final in the output buffer: its copy back may go. */
        size_t first, cnt;
        bf_chunk(self, j, c, &first, &cnt);
        size_t off = (st->out_lo[j] + c * st->ce) * self->esize;
        if (sg->out_done(sg->arg, off, cnt * self->esize) != COLLAB_OK)
            cl_error("collective #%llu: the copy of a result chunk back to the device failed",
                     (unsigned long long)self->a.seq);
    }
}

int bf_in_ready(cl_coll_t *self, int j, size_t c)
{
    const cl_coll_stage_t *sg = self->a.stage;
    if (sg == NULL)
        return 1;
    /* A chunk was found not ready since the last pump: the copies land in
       the order the butterfly asks for them, so the later ones wait for
       the next pump too (one event query per pump, not one per chunk). */
    if (self->in_wait)
        return 0;
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    int r = sg->in_ready(sg->arg, first * self->esize, cnt * self->esize);
    if (r == 0)
        self->in_wait = true;
    return r;
}

int bf_own_ready(cl_coll_t *self, int j, size_t c)
{
    bf_t *st = bf_st(self);
    bf_acc_t *a = bf_acc(self, j, c, false);
    if (a == NULL || st->input == NULL || cl_bit(a->arrived, (size_t)self->me) ||
        cl_relay_held(st->rl, j, c))
        return COLLAB_OK;
    int r = bf_in_ready(self, j, c);
    if (r <= 0)
        return r;
    cl_bit_set(a->arrived, (size_t)self->me);
    if (st->eager) {
        int rc = s_fold(self, a, j, c);
        if (rc != COLLAB_OK)
            return rc;
    }
    return bf_try_finalize(self, j, c);
}

/* Computes the result of (j, c) into out (cnt elements); *included gets
   the contributors. */
static int s_compute(cl_coll_t *self, bf_acc_t *a, int j, size_t c, uint8_t *out,
                     const uint8_t **included)
{
    bf_t *st = bf_st(self);
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    if (st->eager) {
        *included = a->folded;
        int k = (int)cl_bm_count(a->folded, (size_t)self->n);
        if (a->acc == NULL)
            return COLLAB_ERR_INTERNAL;
        if (self->a.op.kind == COLLAB_OP_SUM && k < self->a.comm_size) {
            const void *in[1] = {a->acc};
            return cl_reduce_weighted_sum(self->a.dtype, out, in, NULL, 1, cnt,
                                          (double)self->a.comm_size / k);
        }
        memcpy(out, a->acc, cnt * self->esize);
        return COLLAB_OK;
    }
    *included = a->arrived;
    const void **in = malloc((size_t)self->n * sizeof *in);
    int *idx = malloc((size_t)self->n * sizeof *idx);
    int rc = COLLAB_ERR_NO_MEM;
    if (in != NULL && idx != NULL) {
        int k = 0;
        for (int m = 0; m < self->n; m++)
            if (cl_bit(a->arrived, (size_t)m)) {
                in[k] = m == self->me ? s_own(self, j, c) : a->buf[m];
                idx[k++] = m;
            }
        rc = cl_coll_combine(self, out, in, idx, k, cnt);
    }
    free(in);
    free(idx);
    return rc;
}

int bf_try_finalize(cl_coll_t *self, int j, size_t c)
{
    bf_t *st = bf_st(self);
    if (cl_relay_held(st->rl, j, c) || !cl_relay_producing(st->rl, j, c))
        return COLLAB_OK;
    bf_acc_t *a = bf_acc(self, j, c, true);
    if (a == NULL)
        return COLLAB_ERR_NO_MEM;
    if (st->eager) {
        int rc = s_fold(self, a, j, c);
        if (rc != COLLAB_OK)
            return rc;
        if (a->next < self->n)
            return COLLAB_OK;
    } else {
        for (int m = 0; m < self->n; m++)
            if (!cl_bit(a->arrived, (size_t)m) && cl_coll_alive(self, m))
                return COLLAB_OK;
    }
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    size_t bytes = cnt * self->esize;
    uint8_t *val = bf_value(self, j, c, true);
    if (val == NULL && self->released)
        return COLLAB_OK; /* nobody can need it any more */
    /* Scratch buffers of the collective, sized for its largest chunk. */
    size_t nb = self->nb, tb = cl_coll_proof_bytes(self, self->sig);
    size_t full = st->ce * self->esize;
    cl_compress_t codec = cl_coll_codec(self, self->me, -1); /* results: this member's own */
    size_t vmax =
        codec != CL_COMPRESS_NONE ? cl_compress_bound(codec, self->a.dtype, st->ce) : full;
    if (st->res == NULL)
        st->res = malloc(full);
    if (st->wire == NULL)
        st->wire = malloc(nb + tb + vmax + 1);
    uint8_t *res = st->res;
    uint8_t *wire = st->wire; /* contributor bitmap, relay proof, then the value as sent */
    if (val == NULL || res == NULL || wire == NULL)
        return COLLAB_ERR_NO_MEM;
    const uint8_t *included = NULL;
    int rc = s_compute(self, a, j, c, res, &included);
    if (rc != COLLAB_OK)
        return rc;
    size_t wlen, h = nb + tb;
    memcpy(wire, included, nb);
    if (codec != CL_COMPRESS_NONE) {
        wlen = h + cl_compress_encode(codec, self->a.dtype, res, cnt, wire + h);
        /* Keep what the others will decode, not what was computed. */
        if (cl_compress_decode(codec, self->a.dtype, wire + h, wlen - h, cnt, val) !=
            COLLAB_OK)
            return COLLAB_ERR_INTERNAL;
    } else {
        memcpy(val, res, bytes);
        memcpy(wire + h, res, bytes);
        wlen = h + bytes;
    }
    /* The proof (signed, or tags) over the bits every member holds, so
       that a holder can relay the chunk to a member that lacks it
       (docs/security.md §6). */
    if ((rc = cl_coll_proof_make(self, (uint32_t)j, (uint32_t)c, included, nb, val, bytes,
                                 wire + nb)) != COLLAB_OK)
        return rc;
    uint8_t *slot = st->tags[j] + c * bf_slot(self);
    slot[0] = self->sig ? 1 : 0;
    memcpy(slot + 1, wire + nb, tb);
    st->vprod[j][c] = self->me;
    bf_hold(self, j, c, included);
    /* One framed buffer for every consumer. */
    for (int m = 0; m < self->n; m++) {
        if (st->consumer[j] >= 0 && st->consumer[j] != m)
            continue;
        int r = cl_coll_send(self, m, CL_MSG_RESULT, (uint32_t)j, (uint32_t)c,
                             self->sig ? CL_AUX_SIGNED : 0, wire, wlen, NULL, 0);
        if (r == COLLAB_ERR_NO_MEM)
            rc = r;
    }
    s_acc_clear(self, a);
    return rc;
}

int bf_recompute(cl_coll_t *self, int j, size_t c, const uint8_t *bm, const uint8_t *const *x,
                 uint8_t *out)
{
    bf_t *st = bf_st(self);
    size_t first, cnt;
    bf_chunk(self, j, c, &first, &cnt);
    size_t bytes = cnt * self->esize;
    int k = (int)cl_bm_count(bm, (size_t)self->n);
    if (k == 0)
        return COLLAB_ERR_ARG;
    if (!st->eager) {
        const void **in = malloc((size_t)k * sizeof *in);
        int *idx = malloc((size_t)k * sizeof *idx);
        int rc = COLLAB_ERR_NO_MEM;
        if (in != NULL && idx != NULL) {
            int i = 0;
            for (int m = 0; m < self->n; m++)
                if (cl_bit(bm, (size_t)m)) {
                    in[i] = x[m];
                    idx[i++] = m;
                }
            rc = cl_coll_combine(self, out, in, idx, k, cnt);
        }
        free(in);
        free(idx);
        return rc;
    }
    /* The eager fold of s_fold_one, in rank order. */
    uint8_t *acc = malloc(bytes > 0 ? bytes : 1), *y = malloc(bytes > 0 ? bytes : 1);
    int rc = acc != NULL && y != NULL ? COLLAB_OK : COLLAB_ERR_NO_MEM;
    bool first_in = true;
    for (int m = 0; m < self->n && rc == COLLAB_OK; m++) {
        if (!cl_bit(bm, (size_t)m))
            continue;
        if (first_in) {
            memcpy(acc, x[m], bytes);
            first_in = false;
        } else if (self->a.op.kind == COLLAB_OP_USER) {
            memcpy(y, x[m], bytes);
            rc = cl_reduce(&self->a.op, self->a.dtype, acc, y, cnt); /* y = acc (op) y */
            uint8_t *t = acc;
            acc = y;
            y = t;
        } else {
            rc = cl_reduce(&self->a.op, self->a.dtype, x[m], acc, cnt); /* acc = x (op) acc */
        }
    }
    if (rc == COLLAB_OK) {
        if (self->a.op.kind == COLLAB_OP_SUM && k < self->a.comm_size) {
            const void *in[1] = {acc};
            rc = cl_reduce_weighted_sum(self->a.dtype, out, in, NULL, 1, cnt,
                                        (double)self->a.comm_size / k);
        } else {
            memcpy(out, acc, bytes);
        }
    }
    free(acc);
    free(y);
    return rc;
}
