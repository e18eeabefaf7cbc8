/*  cl_coll_bfverify.c - COLLAB_VERIFY: validators recompute one part of
    a butterfly all-reduce and name a reducer whose result is wrong
    (BTARD-SGD's validators, Gorbunov et al., ICML 2022; docs/security.md
    §6c).

    Schedule.  A member that holds every chunk of the result, and before
    it sends DONE, decides with its own randomness whether it checks a
    part: with probability 1/P (P parts) it picks one of the parts that
    another member reduced, uniformly; so about one part is checked per
    collective, and a reducer learns whether its part is checked, and by
    whom, only after every chunk it sent has reached the validator.  (The
    coordinator checks, in addition, the part of a member reported to it:
    args.verify_target.)  The validator sends VREQ (part p) to the part's
    contributors and its reducer, and holds its DONE back; since everybody
    waits for that DONE, everybody is still in the collective and answers:

      VDATA (p, chunk c)  the member's own input of chunk c of part p
      VDIG  (p)           the reducer only: the BLAKE2b-128 digest of every
                          contribution it folded (nchunks x n x 16 bytes,
                          member-major within a chunk), taken as each
                          arrived

    The validator then checks, per contributor m and chunk c, that m's
    input is what the reducer folded (its digest), and recomputes each
    chunk with the same fold (bf_recompute) from those inputs.  A digest
    of the validator's own input that differs, or a recomputed chunk that
    differs from the RESULT it holds, convicts the reducer: it is named in
    the log and reported through env->convict.  A digest of another
    member's input that differs is a dispute between two members, one of
    which lies; both are named, nobody is convicted (unsigned inputs
    cannot tell which).  A check whose answers are overdue (half the
    deadline of the part's bytes) or whose contributor failed is given up.

    Cost: the validator receives each contributor's input of one part
    (S/P each, S bytes in all) and recomputes it; every reducer hashes what
    it folds (S bytes per collective in all); one extra round trip for the
    validator's DONE.  Checks run only on butterfly all-reduces without
    compression whose checked part came from its first reducer (no repair).
*/
#include "cl_coll_butterfly.h"

#include "util/cl_log.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define DIG 16 /* bytes of a digest */

typedef struct bf_verify {
    uint8_t **dig;     /* per part this member produces: nchunks x n x DIG, else NULL */
    uint8_t *answered; /* members whose VREQ was answered */
    bool decided;      /* this member chose whether to check */
    bool pending;      /* the check waits for answers */
    int part;          /* part checked, -1 none */
    int reducer;       /* its reducer (member index) */
    size_t nch;        /* its chunks */
    uint8_t *bm;       /* its contributors (as the RESULT says) */
    uint8_t **in;      /* per member: its input of the part */
    uint8_t *got;      /* per member and chunk (m * nch + c): the VDATA arrived */
    uint8_t *rdig;     /* the reducer's digests, NULL until VDIG */
    double since;      /* when the requests went out */
    double patience;   /* seconds to wait for the answers */
} bf_verify_t;

static bool s_done_chunk(const bf_verify_t *v, int m, size_t c)
{
    return cl_bit(v->got, (size_t)m * v->nch + c);
}

int bf_verify_setup(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    if (!self->a.verify || self->a.kind != CL_COLL_ALLREDUCE || cl_coll_any_codec(self) ||
        self->n < 3)
        return COLLAB_OK; /* with two members nobody could tell who lies */
    bf_verify_t *v = calloc(1, sizeof *v);
    if (v == NULL)
        return COLLAB_ERR_NO_MEM;
    st->vf = v;
    v->part = -1;
    v->reducer = -1;
    v->dig = calloc((size_t)st->nparts, sizeof *v->dig);
    v->answered = calloc(self->nb, 1);
    if (v->dig == NULL || v->answered == NULL)
        return COLLAB_ERR_NO_MEM;
    /* In place, results overwrite the input that validators may ask for
       (the engine passes a snapshot instead; a direct caller may not). */
    if (self->a.sendbuf == NULL && st->input_copy == NULL && st->input != NULL) {
        size_t bytes = self->a.count * self->esize;
        if ((st->input_copy = malloc(bytes > 0 ? bytes : 1)) == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(st->input_copy, st->input, bytes);
        st->input = st->input_copy;
    }
    for (int j = 0; j < st->nparts; j++)
        if (st->prod0[j] == self->me) {
            size_t nch = cl_relay_nchunks(st->rl, j);
            if ((v->dig[j] = calloc(nch * (size_t)self->n, DIG)) == NULL)
                return COLLAB_ERR_NO_MEM;
        }
    return COLLAB_OK;
}

void bf_verify_free(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    if (v == NULL)
        return;
    CL_FREE_ROWS(v->dig, st->nparts);
    CL_FREE_ROWS(v->in, self->n);
    free(v->answered);
    free(v->bm);
    free(v->got);
    free(v->rdig);
    free(v);
    st->vf = NULL;
}

void bf_verify_note(cl_coll_t *self, int j, size_t c, int m, const void *data, size_t len)
{
    bf_verify_t *v = bf_st(self)->vf;
    if (v == NULL || v->dig[j] == NULL || c >= cl_relay_nchunks(bf_st(self)->rl, j))
        return;
    crypto_generichash(v->dig[j] + (c * (size_t)self->n + (size_t)m) * DIG, DIG, data, len, NULL,
                       0);
}

/* A part this member may check: another member reduced it, every chunk
   came from that reducer with the same contributors, all still alive. */
static bool s_checkable(cl_coll_t *self, int j)
{
    bf_t *st = bf_st(self);
    int r = st->prod0[j];
    if (r == self->me || !cl_coll_alive(self, r))
        return false;
    size_t nch = cl_relay_nchunks(st->rl, j);
    const uint8_t *bm0 = st->cbm[j];
    for (size_t c = 0; c < nch; c++) {
        if (!cl_relay_held(st->rl, j, c) || st->rfrom[j][c] != r ||
            memcmp(st->cbm[j] + c * self->nb, bm0, self->nb) != 0)
            return false;
    }
    for (int m = 0; m < self->n; m++)
        if (cl_bit(bm0, (size_t)m) && !cl_coll_alive(self, m))
            return false;
    return true;
}

/* Chooses the part to check (see the top comment); -1 for none. */
static int s_choose(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    int t = self->a.verify_target - 1;
    if (t >= 0)
        for (int j = 0; j < st->nparts; j++)
            if (self->members[st->prod0[j]] == t && s_checkable(self, j))
                return j;
    if (randombytes_uniform((uint32_t)st->nparts) != 0)
        return -1;
    int ncand = 0;
    for (int j = 0; j < st->nparts; j++)
        ncand += s_checkable(self, j);
    if (ncand == 0)
        return -1;
    int pick = (int)randombytes_uniform((uint32_t)ncand);
    for (int j = 0; j < st->nparts; j++)
        if (s_checkable(self, j) && pick-- == 0)
            return j;
    return -1;
}

/* Asks the contributors of part p and its reducer for their inputs. */
static int s_request(cl_coll_t *self, int p)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    v->part = p;
    v->reducer = st->prod0[p];
    v->nch = cl_relay_nchunks(st->rl, p);
    v->bm = malloc(self->nb);
    v->in = calloc((size_t)self->n, sizeof *v->in);
    v->got = calloc(cl_bm_bytes((size_t)self->n * v->nch), 1);
    if (v->bm == NULL || v->in == NULL || v->got == NULL)
        return COLLAB_ERR_NO_MEM;
    memcpy(v->bm, st->cbm[p], self->nb);
    size_t bytes = st->len[p] * self->esize;
    for (int m = 0; m < self->n; m++)
        if (m != self->me && cl_bit(v->bm, (size_t)m) &&
            (v->in[m] = malloc(bytes > 0 ? bytes : 1)) == NULL)
            return COLLAB_ERR_NO_MEM;
    v->since = cl_coll_now(self);
    v->patience = 0.5 * self->env.deadline(self->env.eng, self->members[v->reducer], bytes);
    v->pending = true;
    for (int m = 0; m < self->n; m++)
        if (m != self->me && (cl_bit(v->bm, (size_t)m) || m == v->reducer))
            (void)cl_coll_send(self, m, CL_MSG_VREQ, (uint32_t)p, 0, 0, NULL, 0, NULL, 0);
    return COLLAB_OK;
}

/* Ends the check: the verdict, if any, is logged and reported. */
static void s_conclude(cl_coll_t *self)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    int p = v->part, r = v->reducer;
    v->pending = false;
    size_t first, cnt;
    bf_chunk(self, p, 0, &first, &cnt);
    const uint8_t **x = calloc((size_t)self->n, sizeof *x);
    uint8_t *out = malloc(st->ce * self->esize + 1);
    uint8_t d[DIG];
    if (x == NULL || out == NULL) {
        free(x);
        free(out);
        return;
    }
    bool wrong = false, disputed = false;
    int lying = -1;
    for (size_t c = 0; c < v->nch && !wrong && !disputed; c++) {
        size_t off = c * st->ce * self->esize;
        bf_chunk(self, p, c, &first, &cnt);
        for (int m = 0; m < self->n; m++) {
            if (!cl_bit(v->bm, (size_t)m))
                continue;
            x[m] = m == self->me ? st->input + first * self->esize : v->in[m] + off;
            if (m == r)
                continue; /* the reducer's claim about itself */
            crypto_generichash(d, DIG, x[m], cnt * self->esize, NULL, 0);
            if (sodium_memcmp(d, v->rdig + (c * (size_t)self->n + (size_t)m) * DIG, DIG) != 0) {
                /* This member knows its own input: the reducer folded
                   something else.  Another member's: one of two lies. */
                if (m == self->me)
                    wrong = true;
                else {
                    disputed = true;
                    lying = m;
                }
                break;
            }
        }
        if (wrong || disputed)
            break;
        const uint8_t *held = bf_value(self, p, c, false);
        if (held == NULL)
            break;
        if (bf_recompute(self, p, c, v->bm, x, out) != COLLAB_OK)
            break;
        if (memcmp(out, held, cnt * self->esize) != 0)
            wrong = true;
    }
    free(x);
    free(out);
    if (disputed) {
        cl_warn("all-reduce #%llu on comm %llx: rank %d (reducer of part %d) and rank %d disagree "
                "about rank %d's input (COLLAB_VERIFY); one of them lies, nobody is removed",
                (unsigned long long)self->a.seq, (unsigned long long)self->a.comm_id,
                self->members[r], p, self->members[lying], self->members[lying]);
    } else if (wrong) {
        cl_warn("all-reduce #%llu on comm %llx: rank %d returned a wrong result for part %d "
                "(COLLAB_VERIFY: recomputed here from the inputs it folded); reporting it",
                (unsigned long long)self->a.seq, (unsigned long long)self->a.comm_id,
                self->members[r], p);
        if (self->env.convict != NULL)
            self->env.convict(self->env.eng, self->members[r]);
    } else {
        cl_debug("all-reduce #%llu: part %d of rank %d verified in %.1f ms",
                 (unsigned long long)self->a.seq, p, self->members[r],
                 1e3 * (cl_coll_now(self) - v->since));
    }
}

/* True once every answer is in. */
static bool s_complete(cl_coll_t *self)
{
    bf_verify_t *v = bf_st(self)->vf;
    if (v->rdig == NULL)
        return false;
    for (int m = 0; m < self->n; m++)
        if (m != self->me && cl_bit(v->bm, (size_t)m))
            for (size_t c = 0; c < v->nch; c++)
                if (!s_done_chunk(v, m, c))
                    return false;
    return true;
}

/* Gives the check up when a contributor or the reducer failed. */
static bool s_lost(cl_coll_t *self)
{
    bf_verify_t *v = bf_st(self)->vf;
    if (!cl_coll_alive(self, v->reducer))
        return true;
    for (int m = 0; m < self->n; m++)
        if (cl_bit(v->bm, (size_t)m) && !cl_coll_alive(self, m))
            return true;
    return false;
}

bool bf_verify_hold(cl_coll_t *self)
{
    bf_verify_t *v = bf_st(self)->vf;
    if (v == NULL)
        return false;
    if (!v->decided) {
        v->decided = true;
        int p = s_choose(self);
        if (p >= 0 && s_request(self, p) != COLLAB_OK) {
            v->pending = false; /* out of memory: no check this time */
            return false;
        }
    }
    if (!v->pending)
        return false;
    if (s_lost(self)) {
        v->pending = false;
        return false;
    }
    if (s_complete(self))
        s_conclude(self);
    return v->pending;
}

bool bf_verify_expect(cl_coll_t *self, size_t *bytes)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    if (v == NULL || !v->pending)
        return false;
    if (cl_coll_now(self) - v->since > v->patience) {
        for (int m = 0; m < self->n; m++) {
            bool missing = m == v->reducer && v->rdig == NULL && m != self->me;
            for (size_t c = 0; c < v->nch && !missing; c++)
                missing = m != self->me && cl_bit(v->bm, (size_t)m) && !s_done_chunk(v, m, c);
            if (missing)
                cl_warn("all-reduce #%llu: rank %d did not answer the check of part %d "
                        "(COLLAB_VERIFY) within %.1f s; the check is given up",
                        (unsigned long long)self->a.seq, self->members[m], v->part, v->patience);
        }
        v->pending = false;
        return true;
    }
    size_t cb = st->ce * self->esize;
    for (int m = 0; m < self->n; m++) {
        if (m == self->me || !cl_bit(v->bm, (size_t)m))
            continue;
        for (size_t c = 0; c < v->nch; c++)
            if (!s_done_chunk(v, m, c))
                bytes[m] += cb;
    }
    return false;
}

/* Answers a validator's VREQ for part p: this member's input of each
   chunk, and its digests when it reduced the part. */
static int s_answer(cl_coll_t *self, int from, int p)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    if (cl_bit(v->answered, (size_t)from) || st->input == NULL || self->released)
        return COLLAB_ERR_ARG; /* one check per validator and collective */
    cl_bit_set(v->answered, (size_t)from);
    size_t nch = cl_relay_nchunks(st->rl, p);
    for (size_t c = 0; c < nch; c++) {
        size_t first, cnt;
        bf_chunk(self, p, c, &first, &cnt);
        int rc = cl_coll_send(self, from, CL_MSG_VDATA, (uint32_t)p, (uint32_t)c, 0, NULL, 0,
                              st->input + first * self->esize, cnt * self->esize);
        if (rc == COLLAB_ERR_NO_MEM)
            return rc;
    }
    if (v->dig[p] != NULL)
        return cl_coll_send(self, from, CL_MSG_VDIG, (uint32_t)p, 0, 0, NULL, 0, v->dig[p],
                            nch * (size_t)self->n * DIG);
    return COLLAB_OK;
}

int bf_verify_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg)
{
    bf_t *st = bf_st(self);
    bf_verify_t *v = st->vf;
    if (v == NULL || msg->part >= (uint32_t)st->nparts || msg->aux != 0)
        return COLLAB_ERR_ARG;
    int p = (int)msg->part;
    if (msg->type == CL_MSG_VREQ) {
        if (msg->len != 0 || msg->chunk != 0)
            return COLLAB_ERR_ARG;
        return s_answer(self, from, p);
    }
    /* Answers: only to this member's own check; late ones, after it was
       given up or concluded, are dropped quietly. */
    if (p != v->part)
        return COLLAB_ERR_ARG;
    if (!v->pending)
        return COLLAB_OK;
    if (msg->type == CL_MSG_VDIG) {
        if (from != v->reducer || v->rdig != NULL || msg->chunk != 0 ||
            msg->len != v->nch * (size_t)self->n * DIG)
            return COLLAB_ERR_ARG;
        if ((v->rdig = malloc(msg->len)) == NULL)
            return COLLAB_ERR_NO_MEM;
        memcpy(v->rdig, msg->data, msg->len);
        return COLLAB_OK;
    }
    size_t c = msg->chunk, first, cnt;
    if (!cl_bit(v->bm, (size_t)from) || c >= v->nch || s_done_chunk(v, from, c))
        return COLLAB_ERR_ARG;
    bf_chunk(self, p, c, &first, &cnt);
    if (msg->len != cnt * self->esize)
        return COLLAB_ERR_ARG;
    memcpy(v->in[from] + c * st->ce * self->esize, msg->data, msg->len);
    cl_bit_set(v->got, (size_t)from * v->nch + c);
    return COLLAB_OK;
}
