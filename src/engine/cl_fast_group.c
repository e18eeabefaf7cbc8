/*  cl_fast_group.c - the fast path's all-reduce, reduction to a root,
    broadcast and barrier among k = 3 .. CL_FAST_GROUP_MAX members of a
    communicator that all share one host (cl_fast.h), run by the application threads
    through one shared area.

    The area (cl_fast_group_bytes(k)).  A 4 KiB header: the communicator
    and k that claimed it, each member's presence, the outcome words and
    futex (fsync_t, as a two-member channel), and per member a side: its
    call (sequence, type, op, length, kind, root) and three progress words PK(q, c):
    in (chunks of its input published), red (chunks whose slice it
    reduced), out (chunks of the result it copied out).  Then per member
    an input ring of G_DEPTH chunks of G_CHUNK bytes, then one result ring
    of G_DEPTH chunks: (k + 1) x 1 MiB.

    Schedule of sequence q, chunk c (elements c*per .., element
    boundaries; slot c % G_DEPTH), member i:
      1. writes chunk c of its input into its input ring, once every
         member reduced chunk c - G_DEPTH (all red >= c - G_DEPTH + 1),
         and publishes in = c + 1;
      2. once every member's in covers c (the calls checked equal at the
         first chunk) and every member copied out chunk c - G_DEPTH,
         folds slice i of chunk c (elements L*i/k .. L*(i+1)/k of its L)
         of all k inputs, in comm-rank order 0 .. k-1 (cl_reduce_fold: a
         left fold, the same operand order whoever computes it), into
         slice i of the result slot, and publishes red = c + 1;
      3. once every member's red covers c, copies the whole result chunk
         into its own result and publishes out = c + 1.
    Each slice is computed by one member only, so every member copies the
    same bits.  A member works one stage as soon as its condition holds
    (writes run up to G_DEPTH chunks ahead of its folds), so the copies,
    folds and copies out of different chunks overlap across members.

    Outcome.  When it copied out every chunk a member needs nothing more
    from the area and arrives on the outcome word (fast_arrive, as the
    two-member path): the last of the k arrivers sets COMPLETE; the
    others wait (fast_wait).  A member that waits anywhere (a stage's
    condition, or the outcome) briefly spins, then sleeps on the futex;
    when its grant is revoked, or no other member made progress (the sum
    of their progress words within this call's chunks did not grow) for
    WAIT_LIMIT, it sets ABORTED (fast_abort_seq, from any state of q but
    COMPLETE).  COMPLETE needs every member's arrival, ABORTED forbids it:
    either every member completes q here, or every member runs q on the
    engine path (a member that finds ABORTED, a later sequence in any
    member's words, or differing calls).  A member stopped or killed
    mid-call therefore makes the others abort after WAIT_LIMIT at most;
    continued, it finds ABORTED.  Its input is intact: an in-place call
    copies out into a private scratch, copied to the buffer only on
    COMPLETE.  Stale writes: a member still amid an aborted sequence
    writes only its own ring and slice, which the others read only once
    its progress words name their (later) sequence.

    The grant (fast_group_decide, _step, _post; docs/collectives.md
    §5b).  One decision for the whole group, in the header: each member's
    engine publishes its stream's next sequence and whether it is
    willing; comm rank 0's engine, once all are willing and every member
    left the last decision, writes epoch e: fast from N, N one past every
    sequence any member numbered.  A member is granted at exactly N; one
    that numbers a sequence q >= N for the engine path (or passes N)
    aborts q (and N unless it engaged) and leaves, so that every member
    falls back at the same sequence and none waits for a member on the
    engine path.  A member numbering N while rank 0 decides: each stores
    its word, then loads the other's (sequentially consistent), so one
    of them sees the other and aborts N.

    Reductions to a root and broadcasts (see transfer).  A reduction runs
    as an all-reduce whose members other than the root copy nothing out.
    A broadcast: the root alone writes its input, nobody folds, the
    others copy out of the root's input ring, whose slots are free once
    every member copied them out.

    Barriers.  A call of no chunks: each member publishes its call and
    arrives at once; the last arriver checks every member's call (as it
    does for every call, since a call of no chunks was not checked in
    stage 2) and sets COMPLETE, so no member leaves before every member
    arrived.  A waiting member counts another's arrival as progress.

    Trust.  Every length and offset is this member's own; the others'
    words only gate reads of whole slots inside the area.  A member
    writing nonsense can make the group take the engine path, or (like
    any member) contribute a wrong input.

    Cost per member and chunk of C bytes: one copy in (C), the fold of its
    slice (reads k x C/k, writes C/k), one copy out (C); three progress
    stores; futex calls only when someone sleeps.
*/
#define _GNU_SOURCE
#include "engine/cl_fast_int.h"

#include "coll/cl_coll.h"
#include "coll/cl_reduce.h"

#include <stddef.h>
#include <string.h>

#define G_HDR ((size_t)4096)
#define G_CHUNK ((size_t)256 << 10) /* bytes of one chunk */
#define G_DEPTH 4                   /* chunks in flight */
#define G_RING (G_CHUNK * G_DEPTH)
#define W_IN 0
#define W_RED 1
#define W_OUT 2

/* One member's side (one cache line, written by it). */
typedef struct {
    _Atomic uint64_t w[3];  /* PK(sequence, chunks): in, red, out */
    _Atomic uint64_t seq;   /* the sequence its call below is for; SEQ_NONE while written */
    uint32_t dtype, op;
    uint64_t bytes;
    uint32_t kind, root; /* cl_coll_kind_t; a reduction's or broadcast's root, else 0 */
    char pad[8];
} gside_t;

/* The group's one grant (see the top): comm rank 0's decision and each
   member's engine's words, written by their engines only. */
#define DEC(e, n) (((uint64_t)(n) << 24) | (uint64_t)(e)) /* epoch e: fast from sequence n */
#define DEC_EPOCH(d) ((d) & ((1u << 24) - 1))
#define DEC_FROM(d) ((d) >> 24)
#define DEC_FROM_MAX (((uint64_t)1 << 40) - 1)
#define HW(n, w) (((uint64_t)(n) << 1) | (uint64_t)((w) ? 1 : 0)) /* next sequence, willing */
typedef struct {
    _Atomic uint64_t dec;                     /* DEC(epoch, from); 0: none yet */
    char pad[56];
    _Atomic uint64_t hw[CL_FAST_GROUP_MAX];   /* member j: HW(its stream's next sequence, willing) */
    _Atomic uint64_t left[CL_FAST_GROUP_MAX]; /* member j: the last epoch it left */
} gagree_t;

struct fgroup {
    _Atomic uint64_t comm_id; /* the communicator holding the area, 0: free */
    _Atomic uint32_t k;       /* its members */
    _Atomic uint32_t present[CL_FAST_GROUP_MAX]; /* member m's engine attached */
    char pad0[20];
    fsync_t sy;
    gside_t side[CL_FAST_GROUP_MAX];
    gagree_t ag; /* the grant (fast_group_decide, _step, _post) */
};

_Static_assert(sizeof(struct fgroup) <= G_HDR, "the header fits its page");
_Static_assert(offsetof(struct fgroup, sy) == 64 && offsetof(struct fgroup, side) == 192 &&
                   sizeof(gside_t) == 64 && offsetof(struct fgroup, ag) == 704 &&
                   sizeof(gagree_t) == 192,
               "the layout of docs/wire.md §9");

size_t cl_fast_group_bytes(int k)
{
    if (k < 3 || k > CL_FAST_GROUP_MAX)
        return 0;
    return G_HDR + (size_t)(k + 1) * G_RING;
}

fsync_t *fast_group_sync(fgroup_t *G)
{
    return &G->sy;
}

bool fast_group_claim(fgroup_t *G, uint64_t comm_id, int k)
{
    uint64_t want = 0;
    if (comm_id == 0 ||
        (!atomic_compare_exchange_strong(&G->comm_id, &want, comm_id) && want != comm_id))
        return false;
    uint32_t kk = 0;
    return atomic_compare_exchange_strong(&G->k, &kk, (uint32_t)k) || kk == (uint32_t)k;
}

void fast_group_set_present(fgroup_t *G, int me)
{
    atomic_store(&G->present[me], 1);
}

bool fast_group_present(fgroup_t *G, int k)
{
    for (int j = 0; j < k; j++)
        if (atomic_load(&G->present[j]) == 0)
            return false;
    return true;
}

bool fast_group_waits(fgroup_t *G, int me)
{
    for (int i = 0; i < FAST_OUTCOMES; i++) {
        unsigned f = CTL_FL(atomic_load(&G->sy.ctl[i]));
        if ((f & (F_COMPLETE | F_ABORTED | F_ARR(me))) == 0 && f != 0)
            return true;
    }
    return false;
}

void fast_group_release(fgroup_t *G, int me, int k)
{
    /* Sequences others arrived at, and those others run (no outcome yet). */
    for (int i = 0; i < FAST_OUTCOMES; i++) {
        uint64_t v = atomic_load(&G->sy.ctl[i]);
        unsigned f = CTL_FL(v);
        if (f != 0 && (f & (F_COMPLETE | F_ABORTED | F_ARR(me))) == 0)
            fast_abort_seq(&G->sy, CTL_SEQ(v));
    }
    for (int j = 0; j < k; j++) {
        uint64_t hq = atomic_load(&G->side[j].seq);
        if (j != me && hq != SEQ_NONE && CTL_SEQ(atomic_load(&G->sy.ctl[hq % FAST_OUTCOMES])) < hq)
            fast_abort_seq(&G->sy, hq);
    }
}

void fast_group_publish(fgroup_t *G, int me, uint64_t next, bool willing)
{
    atomic_store(&G->ag.hw[me], HW(next, willing));
}

uint64_t fast_group_decide(fgroup_t *G, int k)
{
    uint64_t d = atomic_load(&G->ag.dec), cur = DEC_EPOCH(d), max = 0;
    for (int j = 0; j < k; j++) {
        uint64_t h = atomic_load(&G->ag.hw[j]);
        if ((h & 1) == 0 || (cur != 0 && atomic_load(&G->ag.left[j]) != cur))
            return 0; /* a member unwilling, or still in the last decision */
        max = h >> 1 > max ? h >> 1 : max;
    }
    /* One past every sequence any member numbered: each member still
       posts one on the engine path, by which time it saw the decision. */
    uint64_t n = max + 1, e = cur % ((1u << 24) - 1) + 1;
    if (n > DEC_FROM_MAX)
        return 0;
    atomic_store(&G->ag.dec, DEC(e, n)); /* sequentially consistent: see fast_group_post */
    for (int j = 0; j < k; j++)
        if (atomic_load(&G->ag.hw[j]) >> 1 > n) {
            /* j numbered n before it could see the decision: n is ended
               for all, and j leaves at its next turn (fast_group_step). */
            fast_abort_seq(&G->sy, n);
            break;
        }
    return n;
}

fast_agree_t fast_group_step(fgroup_t *G, int me, uint64_t next, uint64_t engaged,
                             uint64_t *epoch, uint64_t *from)
{
    uint64_t d = atomic_load(&G->ag.dec), e = DEC_EPOCH(d), n = DEC_FROM(d);
    *epoch = e;
    *from = n;
    if (e == 0 || engaged == e || atomic_load(&G->ag.left[me]) == e)
        return AG_NONE;
    if (next <= n)
        return next == n ? AG_AT : AG_BEFORE;
    /* Passed n without engaging: nobody can complete n without this
       member; it is ended for all, who fall back from it. */
    fast_abort_seq(&G->sy, n);
    atomic_store(&G->ag.left[me], e);
    return AG_LEFT;
}

bool fast_group_post(fgroup_t *G, int me, uint64_t seq, uint64_t engaged)
{
    uint64_t h = atomic_load(&G->ag.hw[me]);
    uint64_t next = seq + 1 > h >> 1 ? seq + 1 : h >> 1;
    /* Stored, then the decision loaded (both sequentially consistent);
       fast_group_decide stores the decision, then loads these words: one
       of the two sees the other. */
    atomic_store(&G->ag.hw[me], HW(next, (h & 1) != 0));
    uint64_t d = atomic_load(&G->ag.dec), e = DEC_EPOCH(d), n = DEC_FROM(d);
    if (e == 0 || n > seq || atomic_load(&G->ag.left[me]) == e)
        return false;
    /* seq goes to the engine path at or after the agreed sequence: every
       member runs it there (those on the fast path find it ABORTED). */
    fast_abort_seq(&G->sy, seq);
    if (engaged != e)
        fast_abort_seq(&G->sy, n);
    atomic_store(&G->ag.left[me], e);
    return true;
}

/* Chunks of q that word w counts; -1 when w is of a later sequence. */
static long chunks(uint64_t w, uint64_t q)
{
    uint64_t s = w >> 24;
    return s == q ? (long)(w & PK_MAX) : s < q ? 0 : -1;
}

/* The least count of word x over the k members; -1 when one is ahead. */
static long least(const fgroup_t *G, int k, int x, uint64_t q)
{
    long m = PK_MAX;
    for (int j = 0; j < k; j++) {
        long c = chunks(atomic_load(&G->side[j].w[x]), q);
        if (c < 0)
            return -1;
        m = c < m ? c : m;
    }
    return m;
}

/* Every member's call is this one (read once their first chunk is out,
   which each published after its call). */
static bool same_calls(const fgroup_t *G, int k, uint64_t q, const gside_t *mine)
{
    for (int j = 0; j < k; j++) {
        const gside_t *o = &G->side[j];
        if (atomic_load(&o->seq) != q || o->dtype != mine->dtype || o->op != mine->op ||
            o->bytes != mine->bytes || o->kind != mine->kind || o->root != mine->root)
            return false;
    }
    return true;
}

/* same_calls as fast_arrive asks it: every member arrived, so each one's
   call is written (a barrier, or any call of no chunks, checks here
   only). */
typedef struct {
    const fgroup_t *G;
    int k;
    uint64_t q;
    const gside_t *mine;
} calls_t;

static bool same_calls_at(const void *ctx)
{
    const calls_t *c = ctx;
    return same_calls(c->G, c->k, c->q, c->mine);
}

/* The transfer of sequence q, call fc: count elements of in, the result
   into out (which aliases nothing; a member without a result: NULL).  A
   reduction to a root runs as an all-reduce whose other members copy
   nothing out.  A broadcast: only the root writes its input (the others
   publish every chunk written at once), nobody folds, the others copy
   each chunk out of the root's input ring, and the root reuses a slot
   once every member copied it out.  Returns true when every chunk is
   copied out (the caller then arrives), false when q takes the engine
   path (q was aborted here or by another member). */
static bool transfer(cl_fast_t *self, fgroup_t *G, uint64_t g, uint64_t q, const uint8_t *in,
                     uint8_t *out, const fast_call_t *fc)
{
    const int me = self->me, k = self->k;
    const size_t count = fc->count;
    const collab_dtype_t dtype = fc->dtype;
    const collab_op_t *op = fc->op;
    const bool bcast = fc->kind == CL_COLL_BCAST;
    /* A broadcast's ring slot is free once copied out, else once reduced. */
    const int w_free = bcast ? W_OUT : W_RED;
    const unsigned all = (1u << k) - 1;
    const size_t ext = collab_dtype_extent(dtype), per = G_CHUNK / ext;
    const size_t n = per > 0 ? (count + per - 1) / per : 0;
    _Atomic uint64_t *ctl = &G->sy.ctl[q % FAST_OUTCOMES];
    uint64_t v = atomic_load(ctl);
    if (per == 0 || n > PK_MAX || CTL_SEQ(v) > q ||
        (CTL_SEQ(v) == q && (CTL_FL(v) & (~all | F_ARR(me))) != 0))
        return false; /* too big, or q was ended (the others went ahead) */
    uint8_t *rings = (uint8_t *)G + G_HDR, *res = rings + (size_t)k * G_RING;
    gside_t *sm = &G->side[me];
    atomic_store(&sm->seq, SEQ_NONE);
    sm->dtype = (uint32_t)dtype;
    sm->op = op != NULL ? (uint32_t)op->kind : 0;
    sm->bytes = count * ext;
    sm->kind = (uint32_t)fc->kind;
    sm->root = (uint32_t)fc->root;
    atomic_store(&sm->seq, q);
    /* A broadcast's other members send nothing: every chunk is "written". */
    size_t w = bcast && me != fc->root ? n : 0, r = 0, o = 0; /* written, reduced, copied out */
    for (int x = 0; x < 3; x++)
        atomic_store(&sm->w[x], PK(q, x == W_IN ? w : 0));
    fast_prog_t pr = {.n = 0, .lo = PK(q, 0), .hi = PK(q, n)};
    for (int j = 0; j < k; j++)
        for (int x = 0; j != me && x < 3; x++)
            pr.w[pr.n++] = &G->side[j].w[x];
    bool checked = false;
    const double t = fast_now(); /* now, the others' last progress, wait start */
    fast_clock_t ck = {.t = t, .t0 = t, .tw = t, .spins = 0};
    uint64_t seen = fast_prog(&pr);
    while (o < n) {
        bool moved = false;
        long mf = least(G, k, w_free, q);
        if (mf < 0)
            goto abort; /* a member is ahead: q ended for it */
        /* 1. Inputs, each once its slot is free (reduced by every member;
           a broadcast: copied out by every member). */
        while (w < n && w < r + G_DEPTH && (w < G_DEPTH || (size_t)mf >= w - G_DEPTH + 1)) {
            size_t k0 = w * per, len = count - k0 < per ? count - k0 : per;
            memcpy(rings + (size_t)me * G_RING + (w % G_DEPTH) * G_CHUNK, in + k0 * ext, len * ext);
            atomic_store(&sm->w[W_IN], PK(q, w + 1));
            fast_wake(&G->sy, false);
            w++;
            moved = true;
        }
        /* 2. This member's slice of the next chunk, in rank order. */
        long mi = least(G, k, W_IN, q), mo = least(G, k, W_OUT, q);
        if (mi < 0 || mo < 0)
            goto abort;
        if (r < w && (size_t)mi >= r + 1 && (r < G_DEPTH || (size_t)mo >= r - G_DEPTH + 1)) {
            if (!checked) {
                if (!same_calls(G, k, q, sm))
                    goto abort;
                checked = true;
            }
            size_t len = count - r * per < per ? count - r * per : per;
            size_t a = len * (size_t)me / (size_t)k, b = len * (size_t)(me + 1) / (size_t)k;
            if (b > a && !bcast) {
                const void *ins[CL_FAST_GROUP_MAX];
                for (int j = 0; j < k; j++)
                    ins[j] = rings + (size_t)j * G_RING + (r % G_DEPTH) * G_CHUNK + a * ext;
                (void)cl_reduce_fold(op, dtype, res + (r % G_DEPTH) * G_CHUNK + a * ext, ins, k,
                                     b - a);
            }
            atomic_store(&sm->w[W_RED], PK(q, r + 1));
            fast_wake(&G->sy, false);
            r++;
            moved = true;
        }
        /* 3. The next result chunk, once every slice of it is there. */
        long mr = least(G, k, W_RED, q);
        if (mr < 0)
            goto abort;
        if (o < r && (size_t)mr >= o + 1) {
            size_t k0 = o * per, len = count - k0 < per ? count - k0 : per;
            const uint8_t *from = bcast ? rings + (size_t)fc->root * G_RING : res;
            if (fc->result)
                memcpy(out + k0 * ext, from + (o % G_DEPTH) * G_CHUNK, len * ext);
            atomic_store(&sm->w[W_OUT], PK(q, o + 1));
            fast_wake(&G->sy, false);
            o++;
            moved = true;
        }
        if (moved) {
            fast_clock_moved(&ck);
            continue;
        }
        /* Nothing to do: wait for the others, briefly spinning, then asleep. */
        v = atomic_load(ctl);
        if (CTL_SEQ(v) > q || (CTL_SEQ(v) == q && (CTL_FL(v) & ~all) != 0))
            return false; /* ended (aborted by another, or nonsense) */
        fast_clock_tick(&ck);
        fast_prog_at_t at = {&pr, fast_prog(&pr)};
        if (at.p > seen) {
            seen = at.p;
            ck.t0 = ck.t;
            continue;
        }
        if (!fast_idle(self, &G->sy, g, ctl, v, &ck, fast_prog_same, &at))
            goto abort;
    }
    return true;
abort:
    fast_abort_seq(&G->sy, q);
    return false;
}

bool fast_group_run(cl_fast_t *self, fgroup_t *G, uint64_t g, uint64_t q, const void *sendbuf,
                    void *recvbuf, const fast_call_t *fc)
{
    const int k = self->k;
    const unsigned all = (1u << k) - 1;
    const size_t ext = collab_dtype_extent(fc->dtype), count = fc->count, bytes = count * ext;
    /* The result waits in scratch where the buffer must stay whole until
       COMPLETE (in place; a broadcast's receivers, as cl_fast.c's). */
    uint8_t *out = fc->result ? fast_out_buf(self, sendbuf, recvbuf, bytes) : NULL;
    if ((fc->result && out == NULL) ||
        !transfer(self, G, g, q, sendbuf != NULL ? sendbuf : recvbuf, out, fc))
        return false;
    /* Every chunk copied out: arrive; the last arriver checks the calls
       once more (a call of no chunks has not been checked yet). */
    const calls_t calls = {G, k, q, &G->side[self->me]};
    fast_arr_t a = fast_arrive(&G->sy, q, self->me, all, same_calls_at, &calls);
    bool complete = a == ARR_COMPLETE;
    if (a == ARR_WAIT) {
        const size_t per = G_CHUNK / ext;
        fast_prog_t pr = {.n = 0, .lo = PK(q, 0), .hi = PK(q, (count + per - 1) / per)};
        for (int j = 0; j < k; j++)
            if (j != self->me)
                pr.w[pr.n++] = &G->side[j].w[W_OUT];
        complete = fast_wait(self, &G->sy, q, g, all, &pr);
    }
    if (fc->result)
        fast_out_done(self, complete, sendbuf, recvbuf, bytes);
    return complete;
}
