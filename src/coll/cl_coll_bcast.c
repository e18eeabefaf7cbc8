/*  cl_coll_bcast.c - broadcast along a pipelined chain or a binomial tree.

    Schedule.  The root's buffer is cut into chunks of chunk_bytes.  Members
    are numbered by their distance p from the root (p = (i - root) mod n).
    With several chunks and n > 2 they form a chain p -> p+1: the root
    sends every chunk to p = 1, and every member forwards each chunk to the
    next one as soon as it arrives (RESULT, part 0, chunk c, aux = index of
    the member whose data it is), so the root's uplink carries the buffer
    once.  With one chunk they form a binomial tree (p's children are
    p + 2^k for 2^k > p), which takes log2(n) steps.  A member holding
    every chunk sends DONE to all and completes once every live member has
    sent DONE, so that a completed broadcast is never asked for data
    again.

    Cost (size S, C chunks): chain: every member receives S and sends S
    (the last one sends nothing); time about (n - 2 + C) chunk steps.
    Tree: latency ceil(log2 n) steps; a member with k children sends k x S.
    Plus n - 1 DONE messages per member.

    Root absent from the group: the lowest member acts as root.
    Failures (cl_relay.c): a member whose parent fails with chunks still
    missing starts a repair: holders relay the chunks (RELAY, raw bytes,
    aux = whose data), and the repaired member forwards them down its
    subtree.  A chunk no survivor holds (the root failed before sending
    it) is taken from the lowest live member's own buffer, which it sends
    to everybody: all survivors end with the same bytes.

    In a collective that signs (self->sig) the root signs each chunk, and a
    stand-in each chunk it produces (cl_coll_sign.c, "mpicollab bcast v1");
    RESULT and RELAY carry the signer's 96 bytes before the chunk, and a
    member checks them before it holds or forwards the chunk.  Per chunk,
    so that the chain still forwards each chunk as it arrives.  A forwarder
    or holder that sent an altered chunk is disowned (cl_coll_disown): the
    repair fetches the chunk from another holder, usually the root.
*/
#include "cl_coll_impl.h"
#include "cl_relay.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    cl_relay_t *rl;
    size_t cb;  /* chunk bytes */
    size_t nch; /* chunks */
    int root;   /* member index of the acting root */
    bool chain; /* chain (else binomial tree) */
    int *prod;  /* per chunk: member whose data it is, -1 until held */
    int *rfrom; /* per chunk: member the RESULT came from, -1 */
    bool done_sent;
    uint8_t *proof; /* signs (self->sig): per chunk, its producer's signature (CL_COLL_SIG) */
} bc_t;

static bc_t *s_st(cl_coll_t *self)
{
    return self->st;
}

static void s_destroy(cl_coll_t *self)
{
    bc_t *st = s_st(self);
    cl_relay_destroy(&st->rl);
    free(st->prod);
    free(st->rfrom);
    free(st->proof);
    free(st);
    self->st = NULL;
}

static int s_pos(cl_coll_t *self, int idx)
{
    return (idx - s_st(self)->root + self->n) % self->n;
}

static int s_member(cl_coll_t *self, int pos)
{
    return (pos + s_st(self)->root) % self->n;
}

/* Parent of member idx in the tree, -1 for the root. */
static int s_parent(cl_coll_t *self, int idx)
{
    int p = s_pos(self, idx);
    if (p == 0)
        return -1;
    if (s_st(self)->chain)
        return s_member(self, p - 1);
    int hb = 1;
    while (hb * 2 <= p)
        hb *= 2;
    return s_member(self, p - hb);
}

/* The signed context of a broadcast chunk: the broadcast's length. */
static void s_ctx(const cl_coll_t *self, uint8_t ctx[8])
{
    uint64_t n = self->a.count;
    for (int k = 0; k < 8; k++)
        ctx[k] = (uint8_t)(n >> (8 * k));
}

/* Signs chunk c of this member's own buffer (the root's, or a stand-in's)
   into st->proof.  Returns 0 or a negative status. */
static int s_sign(cl_coll_t *self, size_t c)
{
    bc_t *st = s_st(self);
    size_t off, len;
    cl_coll_chunk(self->a.count, st->cb, c, &off, &len);
    uint8_t ctx[8];
    s_ctx(self, ctx);
    return cl_coll_sig_make(self, CL_PROOF_BCAST, 0, (uint32_t)c, ctx, sizeof ctx,
                            (const uint8_t *)self->a.recvbuf + off, len,
                            st->proof + c * CL_COLL_SIG);
}

/* The head of a message carrying chunk c: its producer's signature in a
   collective that signs, else nothing. */
static const uint8_t *s_head(cl_coll_t *self, size_t c, size_t *hlen)
{
    bc_t *st = s_st(self);
    *hlen = self->sig ? CL_COLL_SIG : 0;
    return self->sig ? st->proof + c * CL_COLL_SIG : NULL;
}

/* Sends chunk c (data of member `prod`) to this member's children. */
static int s_forward(cl_coll_t *self, size_t c, int prod)
{
    bc_t *st = s_st(self);
    size_t off, len;
    cl_coll_chunk(self->a.count, st->cb, c, &off, &len);
    const uint8_t *data = (const uint8_t *)self->a.recvbuf + off;
    int p = s_pos(self, self->me);
    size_t hlen;
    const uint8_t *head = s_head(self, c, &hlen);
    int rc = COLLAB_OK;
    if (st->chain) {
        if (p + 1 < self->n)
            rc = cl_coll_send(self, s_member(self, p + 1), CL_MSG_RESULT, 0, (uint32_t)c,
                              (uint32_t)prod, head, hlen, data, len);
        return rc;
    }
    for (long k = 1; k < self->n; k *= 2) {
        if (k <= p || p + k >= self->n)
            continue;
        int r = cl_coll_send(self, s_member(self, (int)(p + k)), CL_MSG_RESULT, 0, (uint32_t)c,
                             (uint32_t)prod, head, hlen, data, len);
        if (r == COLLAB_ERR_NO_MEM)
            rc = r;
    }
    return rc;
}

static int s_check(cl_coll_t *self)
{
    bc_t *st = s_st(self);
    if (self->done || cl_relay_missing(st->rl, 0) > 0)
        return COLLAB_OK;
    if (!st->done_sent) {
        st->done_sent = true;
        cl_coll_send_done(self);
    }
    if (!cl_coll_all_done(self))
        return COLLAB_OK;
    uint8_t *bm = calloc(self->nb, 1);
    if (bm == NULL) {
        cl_coll_complete(self, COLLAB_ERR_NO_MEM);
        return COLLAB_ERR_NO_MEM;
    }
    for (size_t c = 0; c < st->nch; c++)
        if (st->prod[c] >= 0)
            cl_bit_set(bm, (size_t)st->prod[c]);
    int rc = cl_coll_set_contrib(self, bm);
    free(bm);
    cl_coll_complete(self, rc);
    return rc;
}

/* Takes chunk c (data of member prod) as held. */
static void s_take(cl_coll_t *self, size_t c, int prod)
{
    bc_t *st = s_st(self);
    st->prod[c] = prod;
    cl_relay_hold(st->rl, 0, c);
}

static int s_relay(cl_coll_t *self, int part, int chunk, int to)
{
    (void)part;
    bc_t *st = s_st(self);
    if (self->released)
        return COLLAB_OK; /* everybody has sent DONE */
    size_t off, len, hlen;
    cl_coll_chunk(self->a.count, st->cb, (size_t)chunk, &off, &len);
    const uint8_t *head = s_head(self, (size_t)chunk, &hlen);
    return cl_coll_send(self, to, CL_MSG_RELAY, 0, (uint32_t)chunk, (uint32_t)st->prod[chunk], head,
                        hlen, (const uint8_t *)self->a.recvbuf + off, len);
}

static int s_decide(cl_coll_t *self, int part, int chunk, int producer)
{
    (void)part;
    bc_t *st = s_st(self);
    size_t c = (size_t)chunk;
    if (producer < 0)
        return COLLAB_ERR_INTERNAL;
    if (producer != self->me) {
        cl_relay_set_up(st->rl, 0, c, producer);
        return COLLAB_OK;
    }
    /* Nobody has the root's data: this member's own bytes become it. */
    int rc = self->sig ? s_sign(self, c) : COLLAB_OK;
    if (rc != COLLAB_OK)
        return rc;
    s_take(self, c, self->me);
    size_t off, len, hlen;
    cl_coll_chunk(self->a.count, st->cb, c, &off, &len);
    const uint8_t *head = s_head(self, c, &hlen);
    for (int m = 0; m < self->n; m++) {
        int r = cl_coll_send(self, m, CL_MSG_RESULT, 0, (uint32_t)c, (uint32_t)self->me, head, hlen,
                             (const uint8_t *)self->a.recvbuf + off, len);
        if (r == COLLAB_ERR_NO_MEM)
            rc = r;
    }
    return rc;
}

static const cl_relay_ops_t s_ops = {.relay = s_relay, .decide = s_decide};

static int s_start(cl_coll_t *self)
{
    if (self->a.count == 0) {
        uint8_t *bm = calloc(self->nb, 1); /* nothing moved: no contributor */
        int rc = bm != NULL ? cl_coll_set_contrib(self, bm) : COLLAB_ERR_NO_MEM;
        free(bm);
        cl_coll_complete(self, rc);
        return rc;
    }
    bc_t *st = calloc(1, sizeof *st);
    if (st == NULL)
        return COLLAB_ERR_NO_MEM;
    self->st = st;
    st->root = self->root >= 0 ? self->root : 0;
    st->cb = cl_coll_chunk_bytes(self);
    st->nch = cl_coll_nchunks(self->a.count, st->cb);
    st->chain = st->nch > 1 && self->n > 2;
    st->rl = cl_relay_new(self, 1, &s_ops);
    st->prod = malloc(st->nch * sizeof *st->prod);
    st->rfrom = malloc(st->nch * sizeof *st->rfrom);
    if (st->rl == NULL || st->prod == NULL || st->rfrom == NULL)
        return COLLAB_ERR_NO_MEM;
    if (self->sig && (st->proof = malloc(st->nch * CL_COLL_SIG)) == NULL)
        return COLLAB_ERR_NO_MEM;
    int rc = cl_relay_part(st->rl, 0, st->nch, st->cb, -1, CL_FB_SELF, s_parent(self, self->me));
    if (rc != COLLAB_OK)
        return rc;
    for (size_t c = 0; c < st->nch; c++)
        st->prod[c] = st->rfrom[c] = -1;
    if (self->me == st->root) {
        for (size_t c = 0; c < st->nch; c++) {
            if (self->sig && (rc = s_sign(self, c)) != COLLAB_OK)
                return rc;
            s_take(self, c, self->me);
            if ((rc = s_forward(self, c, self->me)) == COLLAB_ERR_NO_MEM)
                return rc;
        }
    }
    if (self->nfailed > 0 && (rc = cl_relay_on_fail(st->rl, -1)) != COLLAB_OK)
        return rc;
    return s_check(self);
}

static int s_on_value(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    bc_t *st = s_st(self);
    size_t c = msg->chunk;
    if (msg->part != 0 || c >= st->nch || msg->aux >= (uint32_t)self->n)
        return COLLAB_ERR_ARG;
    size_t off, len, hlen = self->sig ? CL_COLL_SIG : 0;
    cl_coll_chunk(self->a.count, st->cb, c, &off, &len);
    if (msg->len != hlen + len)
        return COLLAB_ERR_ARG;
    const uint8_t *data = (const uint8_t *)msg->data + hlen;
    /* A RESULT counts only from the member this one expects the chunk
       from (its parent in the tree, or the stand-in a decision named),
       from the root sending its own bytes, or from a stand-in sending its
       own bytes once the root failed (only then can a chunk have no
       holder; the stand-in's decision may be ahead of this member's). */
    int up = cl_relay_up(st->rl, 0, c);
    if (msg->type == CL_MSG_RESULT && from != up &&
        !(from == (int)msg->aux && (from == st->root || !cl_coll_alive(self, st->root))))
        return COLLAB_ERR_ARG;
    int prod = (int)msg->aux;
    /* Data of another member than the root exists only once the root
       failed (a stand-in's own bytes). */
    if (prod != st->root && cl_coll_alive(self, st->root))
        return COLLAB_ERR_ARG;
    if (cl_relay_held(st->rl, 0, c)) {
        if (msg->type == CL_MSG_RESULT && st->rfrom[c] == from)
            return COLLAB_ERR_ARG; /* the same chunk twice from the same member */
        return COLLAB_OK;
    }
    if (self->sig) {
        /* The producer's signature, checked before the chunk is held or
           forwarded: a forwarder or holder that changed it is hostile,
           and is counted failed here, so that the repair takes the chunk
           from another holder (cl_coll_disown). */
        uint8_t ctx[8];
        s_ctx(self, ctx);
        if (!cl_coll_sig_valid(self, CL_PROOF_BCAST, 0, (uint32_t)c, prod, ctx, sizeof ctx, data,
                               len, msg->data)) {
            cl_coll_disown(self, from, msg->type == CL_MSG_RESULT ? "a forwarded chunk" : "a relay",
                           0, c, prod);
            return COLLAB_ERR_ARG;
        }
        memcpy(st->proof + c * CL_COLL_SIG, msg->data, CL_COLL_SIG);
    }
    memcpy((uint8_t *)self->a.recvbuf + off, data, len);
    if (msg->type == CL_MSG_RESULT)
        st->rfrom[c] = from;
    s_take(self, c, prod);
    /* The root's data goes down the tree; a chunk a stand-in produced was
       sent to everybody by it. */
    int rc = prod == st->root ? s_forward(self, c, prod) : COLLAB_OK;
    if (rc == COLLAB_ERR_NO_MEM)
        return rc;
    if (cl_relay_repairing(st->rl, 0))
        cl_relay_poke(st->rl, 0);
    return s_check(self);
}

static int s_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    bc_t *st = s_st(self);
    switch (msg->type) {
    case CL_MSG_RESULT:
    case CL_MSG_RELAY:
        return s_on_value(self, from, msg);
    case CL_MSG_STATUS: {
        int rc = cl_relay_on_status(st->rl, from, msg);
        return rc != COLLAB_OK ? rc : s_check(self);
    }
    case CL_MSG_DONE:
        return s_check(self);
    default:
        return COLLAB_ERR_ARG;
    }
}

static void s_on_fail(cl_coll_t *self, int idx)
{
    cl_relay_on_fail(s_st(self)->rl, idx);
    s_check(self);
}

static void s_expect(cl_coll_t *self, size_t *bytes)
{
    bc_t *st = s_st(self);
    if (!cl_relay_repairing(st->rl, 0))
        for (size_t c = 0; c < st->nch; c++) {
            int up = cl_relay_up(st->rl, 0, c);
            if (!cl_relay_held(st->rl, 0, c) && up >= 0)
                bytes[up] += st->cb;
        }
    if (st->done_sent)
        for (int m = 0; m < self->n; m++)
            if (m != self->me && !cl_bit(self->done_from, (size_t)m))
                bytes[m] += self->a.count;
    cl_relay_expect(st->rl, bytes);
}

static int s_release(cl_coll_t *self)
{
    (void)self; /* completion waited for every live member's DONE */
    return COLLAB_OK;
}

const cl_algo_t cl_algo_bcast = {
    .name = "bcast",
    .start = s_start,
    .on_msg = s_on_msg,
    .on_fail = s_on_fail,
    .expect = s_expect,
    .release = s_release,
    .destroy = s_destroy,
};
