/*  cl_fast.c - the fast path of collectives between the two members of a
    communicator on one host (see cl_fast.h).

    The area.  The segment of a same-host link (cl_shm.c) holds, after its
    header page, CL_SHM_FAST_BYTES for this path: FAST_CHANS channels, one
    per communicator (slot comm_id % FAST_CHANS, claimed by writing the
    id; a communicator whose slot another one holds takes the engine
    path).  A channel holds an outcome word `ctl`, a futex word, the
    count of sleepers, and per member two input slots (by the parity of
    the sequence number) and the last sequence whose other input it
    finished reading.

    Schedule of sequence q (every member's input to the other, then each
    folds both in comm-rank order with the kernels of the exchange
    all-reduce, cl_reduce_fold: the same bits as the engine path):
      1. Member m writes its input into slot[m][q & 1] (seq, kind, type,
         op, length, data; seq is written last).
      2. It arrives: ctl = (q, ARRIVED_m) by compare-and-swap, from any
         outcome of an earlier sequence.  If the other has arrived at q
         already, it checks the other's slot against its own call and
         sets (q, COMPLETE), or (q, ABORTED) when they differ.
      3. The first arriver waits for the outcome: a brief spin (at most
         SPIN_US with a pause instruction), then sleeps on the futex with
         a timeout, re-checking its grant.  When its grant is revoked, or
         it waited WAIT_LIMIT (the other member is slow: the engine's
         straggler rules take over), it sets (q, ABORTED) by
         compare-and-swap from (q, ARRIVED_m).
      4. COMPLETE: both fold slot[0] and slot[1] into the result and
         record that they finished reading.  ABORTED, or a ctl of another
         sequence: both run q on the engine path, which handles slow,
         stopped and dead members as on the network.
    Exactly one party ends sequence q: the last arriver (COMPLETE) or an
    aborting member (ABORTED), each by one compare-and-swap from the
    state where only the first has arrived.  So either both members
    complete q here with both inputs, or both run q on the engine path; a
    member that arrives late finds ABORTED (or a later sequence) and never
    completes with inputs the other abandoned.  A member that goes to the
    engine path while the other waits on it aborts the other's sequence
    first (cl_fast_before_engine).

    Slots.  Member m writes slot[m][q & 1] only when the other finished
    reading the last sequence of that parity that completed here (else q
    takes the engine path): a member stopped while it reads keeps its
    input intact.

    Trust.  Everything read from the area is bounded by this member's own
    call: the length it reads is its own (at most CL_FAST_MAX_BYTES); a
    member writing nonsense can make the pair take the engine path, or
    (like any member) contribute a wrong input, nothing more.

    Cost of one small all-reduce: one copy in, one compare-and-swap, the
    fold of two inputs; no system call unless a member sleeps (then one
    futex wake and one wait).

    Big all-reduces (more than CL_FAST_MAX_BYTES).  After the channels,
    the area holds per channel and member a ring of BIG_DEPTH chunks of
    BIG_CHUNK bytes, and the channel a side per member: its call (seq,
    type, op, length) and two progress words PK(q, k), chunks of its
    input written into its ring (wr) and chunks of the other's input
    folded (rd).  Member m, for chunk k (elements k*per .. on element
    boundaries): copies its chunk k into ring slot k % BIG_DEPTH once the
    other folded chunk k - BIG_DEPTH, publishes wr; once the other's wr
    covers k (its call checked against this one at the first chunk),
    folds chunk k of both inputs, in comm-rank order, straight into its
    own result (cl_reduce_fold, as the small path and the butterfly's
    reducer: the same bits), publishes rd.  It writes one chunk ahead
    before folding, so both copy while the other folds and the chunk
    just copied is still in cache when folded.  When every chunk is
    folded it needs nothing more from the other and arrives on the outcome
    word as above: the last arriver sets COMPLETE; the first waits, and
    aborts when its grant is revoked or the other made no progress
    (neither word grew) for WAIT_LIMIT, which scales the limit to the
    size.  A member waiting amid the transfer (a full ring, a chunk not
    yet there) aborts the same way; it sets (q, ABORTED) from any state
    of q but COMPLETE (abort_seq), and finds the other's ABORTED at every
    wait.  So the outcome is decided as for a small call, once, after
    both inputs went through: a member stopped or killed mid-transfer
    makes the other abort, and the member, continued, finds ABORTED and
    runs q on the engine path.  Its input is intact: an in-place call
    folds into a private scratch copied into the buffer only on COMPLETE.
    Cost per member: one copy in, one fold of two inputs (reading the own
    input once from memory, the other's from the ring, in cache); two
    progress stores per chunk.

    Reductions to a root and broadcasts.  Small ones go through the slots
    as above (the root in the slot's header; only the root folds; a
    broadcast's root alone writes its slot and the other copies it out).
    Big ones use the rings one way (fast_call_t): a reduction's non-root
    and a broadcast's root send, the other member consumes (folds with its
    own input, or copies); a member that sends nothing publishes wr = all
    chunks with its call.  The consumer's result waits in scratch where
    its buffer must stay whole until COMPLETE (a broadcast's receiver, a
    root in place), as for an in-place all-reduce.
*/
#define _GNU_SOURCE
#include "engine/cl_fast_int.h"

#include "coll/cl_coll.h"
#include "coll/cl_reduce.h"
#include "engine/cl_shm.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAST_CHANS 4
#define SMALL_AREA ((size_t)160 << 10) /* the channels; the big rings follow */
#define BIG_CHUNK ((size_t)64 << 10)   /* bytes of one chunk of a big all-reduce */
#define BIG_DEPTH 4                    /* chunks in flight per member */
#define BIG_RING (BIG_CHUNK * BIG_DEPTH)

typedef struct {
    _Atomic uint64_t seq; /* the sequence it holds; SEQ_NONE while written */
    uint32_t kind, dtype, op, root; /* root: a broadcast's or reduction's, else 0 */
    uint64_t bytes;
    char pad1[32];
    uint8_t data[CL_FAST_MAX_BYTES];
} fslot_t;

/* One member's side of a big call (one cache line, written by it). */
typedef struct {
    _Atomic uint64_t wr;  /* PK(sequence, chunks of its input in its ring) */
    _Atomic uint64_t rd;  /* PK(sequence, chunks of the other's input it consumed) */
    _Atomic uint64_t seq; /* the sequence its call below is for; SEQ_NONE while written */
    uint32_t dtype, op;
    uint64_t bytes;
    uint32_t kind, root; /* cl_coll_kind_t; a broadcast's or reduction's root, else 0 */
    char pad[16];
} bside_t;

_Static_assert(sizeof(bside_t) == 64, "a side is one cache line");

struct fchan {
    _Atomic uint64_t comm_id;    /* the communicator holding the channel, 0: free */
    _Atomic uint32_t present[2]; /* member m's engine attached (a peer with the fast
                                    path off never does: no grant then) */
    char pad0[48];
    fsync_t sy;               /* the outcome words and the futex */
    _Atomic uint64_t read[2]; /* read[m]: 1 + the last sequence whose inputs m finished reading */
    char pad3[48];
    bside_t big[2];     /* [member]: its big all-reduce */
    fslot_t slot[2][2]; /* [member][sequence & 1] */
};

_Static_assert(sizeof(fchan_t) * FAST_CHANS <= SMALL_AREA, "the channels fit their part");
_Static_assert(SMALL_AREA + FAST_CHANS * 2 * BIG_RING == CL_SHM_FAST_BYTES,
               "the big rings fill the rest of the area");

double fast_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void fast_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void fast_wake(fsync_t *s, bool always)
{
    atomic_fetch_add(&s->futex, 1);
    if (always || atomic_load(&s->sleepers) > 0)
        (void)syscall(SYS_futex, (uint32_t *)&s->futex, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

cl_fast_t *cl_fast_new(void)
{
    cl_fast_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self);
        return NULL;
    }
    return self;
}

void cl_fast_destroy(cl_fast_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_fast_t *self = *self_p;
    atomic_store(&self->grant, 0);
    if (self->area != NULL)
        munmap(self->area, self->area_bytes);
    pthread_mutex_destroy(&self->lock);
    free(self->scratch);
    free(self);
    *self_p = NULL;
}

bool cl_fast_attach(cl_fast_t *self, void *area, uint64_t comm_id, int me, uint64_t link_id,
                    const uint8_t peer[32])
{
    fchan_t *c = (fchan_t *)area + comm_id % FAST_CHANS;
    uint64_t want = 0;
    if (self->area != NULL || (me != 0 && me != 1) ||
        (!atomic_compare_exchange_strong(&c->comm_id, &want, comm_id) && want != comm_id)) {
        munmap(area, CL_SHM_FAST_BYTES);
        return false;
    }
    self->area = area;
    self->area_bytes = CL_SHM_FAST_BYTES;
    self->link_id = link_id;
    memcpy(self->peer, peer, 32);
    self->me = me;
    self->k = 2;
    self->chan = (int)(comm_id % FAST_CHANS);
    self->last[0] = self->last[1] = 0;
    atomic_store(&c->present[me], 1);
    atomic_store(&self->ch, c);
    return true;
}

bool cl_fast_attach_group(cl_fast_t *self, void *area, size_t bytes, uint64_t comm_id, int me,
                          int k, uint64_t area_id)
{
    fgroup_t *G = area;
    if (self->area != NULL || k < 3 || k > CL_FAST_GROUP_MAX || me < 0 || me >= k ||
        bytes != cl_fast_group_bytes(k) || !fast_group_claim(G, comm_id, k)) {
        munmap(area, bytes);
        return false;
    }
    self->area = area;
    self->area_bytes = bytes;
    self->link_id = area_id;
    memset(self->peer, 0, 32);
    self->me = me;
    self->k = k;
    self->chan = 0;
    self->last[0] = self->last[1] = 0;
    self->engaged = 0;
    fast_group_set_present(G, me);
    atomic_store(&self->grp, G);
    return true;
}

uint64_t cl_fast_link(const cl_fast_t *self)
{
    return self->area != NULL ? self->link_id : 0;
}

const uint8_t *cl_fast_peer_key(const cl_fast_t *self)
{
    return self->peer;
}

/* The outcome words of the attached area; NULL when detached. */
static fsync_t *sync_of(const cl_fast_t *self)
{
    fchan_t *c = atomic_load(&self->ch);
    fgroup_t *G = atomic_load(&self->grp);
    return c != NULL ? &c->sy : G != NULL ? fast_group_sync(G) : NULL;
}

void cl_fast_revoke(cl_fast_t *self)
{
    atomic_store(&self->grant, 0);
    fsync_t *s = sync_of(self);
    if (s != NULL)
        fast_wake(s, true); /* this process's waiter, if any */
}

bool cl_fast_detach(cl_fast_t *self)
{
    cl_fast_revoke(self);
    if (self->area == NULL)
        return true;
    atomic_store(&self->ch, NULL);
    atomic_store(&self->grp, NULL);
    if (atomic_load(&self->inside) != 0)
        return false; /* the application thread still uses it: next time */
    munmap(self->area, self->area_bytes);
    self->area = NULL;
    self->link_id = 0;
    return true;
}

bool cl_fast_idle(const cl_fast_t *self)
{
    return atomic_load(&self->inside) == 0;
}

bool cl_fast_grant(cl_fast_t *self, uint64_t next_seq, const _Atomic int *pending)
{
    fchan_t *c = atomic_load(&self->ch);
    fgroup_t *G = atomic_load(&self->grp);
    bool present = c != NULL   ? atomic_load(&c->present[1 - self->me]) != 0
                   : G != NULL ? fast_group_present(G, self->k)
                               : false;
    if (self->area == NULL || !present || atomic_load(pending) != 0 ||
        atomic_load(&self->inside) != 0)
        return false;
    atomic_store(&self->next_seq, next_seq);
    uint64_t g = ++self->grants;
    atomic_store(&self->grant, g);
    /* A submission that raced with us counted itself before it dropped
       the grant: one of the two sees the other. */
    if (atomic_load(pending) != 0) {
        uint64_t want = g;
        atomic_compare_exchange_strong(&self->grant, &want, 0);
        return false;
    }
    return true;
}

int cl_fast_agree(cl_fast_t *self, uint64_t next_seq, bool willing, bool idle,
                  const _Atomic int *pending)
{
    fgroup_t *G = atomic_load(&self->grp);
    if (G == NULL || self->area == NULL)
        return CL_FAST_AGREE_NONE;
    fast_group_publish(G, self->me, next_seq, willing && fast_group_present(G, self->k));
    if (self->me == 0)
        (void)fast_group_decide(G, self->k);
    uint64_t epoch, from;
    switch (fast_group_step(G, self->me, next_seq, self->engaged, &epoch, &from)) {
    case AG_NONE:
        return CL_FAST_AGREE_NONE;
    case AG_LEFT:
        return CL_FAST_AGREE_LEFT;
    case AG_BEFORE:
        return CL_FAST_AGREE_WAIT;
    case AG_AT:
        break;
    }
    if (!willing || !idle || !cl_fast_grant(self, from, pending))
        return CL_FAST_AGREE_WAIT; /* its call of `from` then goes to the engine and leaves */
    self->engaged = epoch;
    return CL_FAST_AGREE_ENGAGED;
}

bool cl_fast_agree_post(cl_fast_t *self, uint64_t seq)
{
    fgroup_t *G = atomic_load(&self->grp);
    return G != NULL && fast_group_post(G, self->me, seq, self->engaged);
}

void cl_fast_lapse(cl_fast_t *self)
{
    atomic_store(&self->lapse, atomic_load(&self->grant));
}

bool cl_fast_lapsing(const cl_fast_t *self)
{
    uint64_t g = atomic_load(&self->grant);
    return g != 0 && atomic_load(&self->lapse) == g;
}

bool cl_fast_granted(const cl_fast_t *self)
{
    return atomic_load(&self->grant) != 0;
}

bool cl_fast_partner_waits(const cl_fast_t *self)
{
    fchan_t *c = atomic_load(&self->ch);
    fgroup_t *G = atomic_load(&self->grp);
    if (G != NULL)
        return fast_group_waits(G, self->me);
    if (c == NULL)
        return false;
    for (int i = 0; i < FAST_OUTCOMES; i++)
        if (CTL_FL(atomic_load(&c->sy.ctl[i])) == F_ARR(1 - self->me))
            return true;
    return false;
}

size_t cl_fast_take(cl_fast_t *self, cl_fast_report_t *out, size_t cap)
{
    pthread_mutex_lock(&self->lock);
    size_t n = self->nrep < cap ? self->nrep : cap;
    memcpy(out, self->rep, n * sizeof *out);
    memmove(self->rep, self->rep + n, (self->nrep - n) * sizeof *out);
    self->nrep -= n;
    pthread_mutex_unlock(&self->lock);
    return n;
}

uint64_t cl_fast_next_seq(const cl_fast_t *self)
{
    return atomic_load(&self->next_seq);
}

uint64_t cl_fast_completed(const cl_fast_t *self)
{
    return atomic_load(&self->completed);
}

/* Adds sequence q to the reports; false when they are full. */
static bool report(cl_fast_t *self, const cl_fast_report_t *r)
{
    bool ok = true;
    pthread_mutex_lock(&self->lock);
    cl_fast_report_t *t = self->nrep > 0 ? &self->rep[self->nrep - 1] : NULL;
    if (t != NULL && t->first + t->n == r->first && t->kind == r->kind && t->count == r->count &&
        t->dtype == r->dtype && t->op == r->op && t->root == r->root && t->sendbuf == r->sendbuf &&
        t->recvbuf == r->recvbuf)
        t->n++;
    else if (self->nrep < CL_FAST_REPORTS)
        self->rep[self->nrep++] = *r;
    else
        ok = false;
    pthread_mutex_unlock(&self->lock);
    return ok;
}

static bool reports_full(cl_fast_t *self)
{
    pthread_mutex_lock(&self->lock);
    bool full = self->nrep + 1 >= CL_FAST_REPORTS;
    pthread_mutex_unlock(&self->lock);
    return full;
}

/* Drops this process's grant g (a sequence went to the engine path). */
static void drop_grant(cl_fast_t *self, uint64_t g)
{
    uint64_t want = g;
    atomic_compare_exchange_strong(&self->grant, &want, 0);
}

fast_arr_t fast_arrive(fsync_t *s, uint64_t q, int me, unsigned all,
                       bool (*same)(const void *ctx), const void *ctx)
{
    _Atomic uint64_t *ctl = &s->ctl[q % FAST_OUTCOMES];
    const unsigned mine = F_ARR(me);
    for (;;) {
        uint64_t v = atomic_load(ctl);
        uint64_t vs = CTL_SEQ(v);
        unsigned vf = CTL_FL(v);
        if (vs > q || (vs == q && (vf & (~all | mine)) != 0))
            return ARR_ENDED; /* aborted, the others ahead, or nonsense: engine path */
        if (vs < q) {
            /* An earlier sequence's outcome (or nobody here yet): first. */
            if (atomic_compare_exchange_strong(ctl, &v, CTL(q, mine)))
                return ARR_WAIT;
            continue;
        }
        if ((vf | mine) == all) {
            /* Every other member is here: the last arriver decides. */
            bool ok = same == NULL || same(ctx);
            uint64_t to = ok ? CTL(q, all | F_COMPLETE) : CTL(q, F_ABORTED);
            if (atomic_compare_exchange_strong(ctl, &v, to)) {
                fast_wake(s, false);
                return ok ? ARR_COMPLETE : ARR_ENDED;
            }
            continue;
        }
        if (atomic_compare_exchange_strong(ctl, &v, CTL(q, vf | mine)))
            return ARR_WAIT;
    }
}

uint64_t fast_prog(const fast_prog_t *pr)
{
    uint64_t sum = 0;
    for (int i = 0; pr != NULL && i < pr->n; i++) {
        uint64_t w = atomic_load(pr->w[i]);
        if (w >= pr->lo && w <= pr->hi)
            sum += w - pr->lo;
    }
    return sum;
}

bool fast_prog_same(const void *ctx)
{
    const fast_prog_at_t *at = ctx;
    return fast_prog(at->pr) == at->p;
}

bool fast_idle(cl_fast_t *self, fsync_t *s, uint64_t g, const _Atomic uint64_t *ctl, uint64_t v,
               fast_clock_t *ck, bool (*same)(const void *ctx), const void *ctx)
{
    if (atomic_load(&self->grant) != g || ck->t - ck->t0 > WAIT_LIMIT)
        return false;
    if (ck->t - ck->tw < SPIN_US * 1e-6) {
        fast_pause();
        return true;
    }
    atomic_fetch_add(&s->sleepers, 1);
    uint32_t f = atomic_load(&s->futex);
    if (atomic_load(ctl) == v && atomic_load(&self->grant) == g && same(ctx)) {
        struct timespec ts = {0, SLEEP_NS};
        (void)syscall(SYS_futex, (uint32_t *)&s->futex, FUTEX_WAIT, f, &ts, NULL, 0);
    }
    atomic_fetch_sub(&s->sleepers, 1);
    ck->t = fast_now();
    return true;
}

bool fast_wait(cl_fast_t *self, fsync_t *s, uint64_t q, uint64_t g, unsigned all,
               const fast_prog_t *pr)
{
    _Atomic uint64_t *ctl = &s->ctl[q % FAST_OUTCOMES];
    double t0 = fast_now();
    fast_clock_t ck = {.t = t0, .t0 = t0, .tw = t0, .spins = 0};
    uint64_t seen = fast_prog(pr);
    unsigned arrived = 0; /* the members seen arrived */
    for (;;) {
        uint64_t v = atomic_load_explicit(ctl, memory_order_acquire);
        if (CTL_SEQ(v) != q || (CTL_FL(v) & ~all) != 0)
            return v == CTL(q, all | F_COMPLETE);
        fast_clock_tick(&ck);
        fast_prog_at_t at = {pr, fast_prog(pr)};
        if (CTL_FL(v) != arrived) {
            arrived = CTL_FL(v); /* another arrival (a group's barrier): not slow */
            ck.t0 = ck.t;
        }
        if (at.p > seen) {
            seen = at.p;
            ck.t0 = ck.t; /* the others still work: not slow */
        }
        if (!fast_idle(self, s, g, ctl, v, &ck, fast_prog_same, &at))
            fast_abort_seq(s, q); /* then the outcome, ours or one that came first */
    }
}

void fast_abort_seq(fsync_t *s, uint64_t q)
{
    _Atomic uint64_t *ctl = &s->ctl[q % FAST_OUTCOMES];
    for (;;) {
        uint64_t v = atomic_load(ctl);
        if (CTL_SEQ(v) > q || (CTL_SEQ(v) == q && (CTL_FL(v) & (F_ABORTED | F_COMPLETE)) != 0))
            return;
        if (atomic_compare_exchange_strong(ctl, &v, CTL(q, F_ABORTED))) {
            fast_wake(s, false);
            return;
        }
    }
}

uint8_t *fast_out_buf(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t bytes)
{
    if (sendbuf != NULL)
        return recvbuf;
    /* In place: the input must stay whole until COMPLETE (else the
       engine path runs with it), so the result waits in scratch. */
    if (self->scratch_cap < bytes) {
        free(self->scratch);
        self->scratch_cap = 0;
        if ((self->scratch = malloc(bytes > 0 ? bytes : 1)) == NULL)
            return NULL;
        self->scratch_cap = bytes;
    }
    return self->scratch;
}

void fast_out_done(cl_fast_t *self, bool complete, const void *sendbuf, void *recvbuf,
                   size_t bytes)
{
    if (complete && sendbuf == NULL && bytes > 0)
        memcpy(recvbuf, self->scratch, bytes);
    if (self->scratch_cap > SCRATCH_KEEP) {
        free(self->scratch); /* kept across calls only up to SCRATCH_KEEP */
        self->scratch = NULL;
        self->scratch_cap = 0;
    }
}

/* Member m's big ring. */
static uint8_t *big_ring(const cl_fast_t *self, fchan_t *c, int m)
{
    uint8_t *area = (uint8_t *)(c - self->chan);
    return area + SMALL_AREA + (size_t)(self->chan * 2 + m) * BIG_RING;
}

/* For fast_idle: the other's progress words still read wr and rd. */
typedef struct {
    const bside_t *bo;
    uint64_t wr, rd;
} big_at_t;

static bool big_same(const void *ctx)
{
    const big_at_t *at = ctx;
    return atomic_load(&at->bo->wr) == at->wr && atomic_load(&at->bo->rd) == at->rd;
}

/* The transfer of a big call bc, sequence q: input in (a member that
   sends), result into out (a member that gets one; it aliases nothing).
   Chunks go one way or both: an all-reduce's members both send and fold;
   a broadcast's root only sends and the other copies; a reduction's
   non-root only sends and the root folds.  Chunk k of a sending member's
   input goes through ring slot k % BIG_DEPTH of that member; a folding
   member folds chunk k of both inputs, in comm-rank order, into out.
   Returns true when every chunk is consumed (the caller then arrives),
   false when q takes the engine path (q aborted, or left to the engine:
   the other is slow, the calls differ, the grant is revoked). */
static bool big_transfer(cl_fast_t *self, fchan_t *c, uint64_t g, uint64_t q, const uint8_t *in,
                         uint8_t *out, const fast_call_t *bc)
{
    const int me = self->me, other = 1 - me;
    /* One way: the member without a result sends. */
    const bool sends = bc->kind == CL_COLL_ALLREDUCE || !bc->result;
    const size_t count = bc->count, ext = collab_dtype_extent(bc->dtype), per = BIG_CHUNK / ext;
    const size_t n = (count + per - 1) / per;
    _Atomic uint64_t *ctl = &c->sy.ctl[q % FAST_OUTCOMES];
    uint64_t v = atomic_load(ctl);
    if (n > PK_MAX || per == 0 || CTL_SEQ(v) > q ||
        (CTL_SEQ(v) == q && (CTL_FL(v) & ~F_ARR(other)) != 0))
        return false; /* too big, or q was ended (the other went ahead) */
    bside_t *bm = &c->big[me], *bo = &c->big[other];
    uint8_t *mine = big_ring(self, c, me);
    const uint8_t *theirs = big_ring(self, c, other);
    const uint32_t opk = bc->op != NULL ? (uint32_t)bc->op->kind : 0;
    atomic_store(&bm->seq, SEQ_NONE);
    bm->dtype = (uint32_t)bc->dtype;
    bm->op = opk;
    bm->bytes = count * ext;
    bm->kind = (uint32_t)bc->kind;
    bm->root = (uint32_t)bc->root;
    atomic_store(&bm->seq, q);
    atomic_store(&bm->rd, PK(q, 0));
    /* A member that sends nothing has written every chunk it will. */
    size_t w = sends ? 0 : n, f = 0; /* chunks written, consumed */
    atomic_store(&bm->wr, PK(q, w));
    bool checked = false;
    const double t = fast_now(); /* now, the other's last progress, wait start */
    fast_clock_t ck = {.t = t, .t0 = t, .tw = t, .spins = 0};
    uint64_t seen_w = PK(q, 0), seen_r = PK(q, 0), end = PK(q, n);
    while (f < n) {
        bool moved = false;
        /* Write up to one chunk ahead of the fold, each once its ring slot
           was consumed by the other. */
        while (w < n && w < f + 2 &&
               (w < BIG_DEPTH || atomic_load(&bo->rd) >= PK(q, w - BIG_DEPTH + 1))) {
            size_t k0 = w * per, k = count - k0 < per ? count - k0 : per;
            memcpy(mine + (w % BIG_DEPTH) * BIG_CHUNK, in + k0 * ext, k * ext);
            atomic_store(&bm->wr, PK(q, w + 1));
            fast_wake(&c->sy, false);
            w++;
            moved = true;
        }
        /* Consume the next chunk when the other wrote it. */
        if (f < w && atomic_load(&bo->wr) >= PK(q, f + 1)) {
            if (!checked) {
                /* The other's call is this call (read once its first chunk
                   is out, which it published after its call). */
                if (atomic_load(&bo->seq) != q || bo->dtype != (uint32_t)bc->dtype ||
                    bo->op != opk || bo->bytes != count * ext || bo->kind != (uint32_t)bc->kind ||
                    bo->root != (uint32_t)bc->root)
                    goto abort;
                checked = true;
            }
            size_t k0 = f * per, k = count - k0 < per ? count - k0 : per;
            const uint8_t *chunk = theirs + (f % BIG_DEPTH) * BIG_CHUNK;
            if (bc->result && bc->kind == CL_COLL_BCAST) {
                memcpy(out + k0 * ext, chunk, k * ext);
            } else if (bc->result) {
                const void *ins[2];
                ins[me] = in + k0 * ext;
                ins[other] = chunk;
                (void)cl_reduce_fold(bc->op, bc->dtype, out + k0 * ext, ins, 2, k);
            }
            atomic_store(&bm->rd, PK(q, f + 1));
            fast_wake(&c->sy, false);
            f++;
            moved = true;
        }
        if (moved) {
            fast_clock_moved(&ck);
            continue;
        }
        /* Nothing to do: wait for the other, briefly spinning, then asleep. */
        v = atomic_load(ctl);
        if (CTL_SEQ(v) > q || (CTL_SEQ(v) == q && (CTL_FL(v) & ~F_ARR(other)) != 0))
            return false; /* ended (aborted by the other, or nonsense) */
        fast_clock_tick(&ck);
        /* Progress counts when it grows within this call's chunks: a
           member writing nonsense cannot hold this one for long. */
        big_at_t at = {bo, atomic_load(&bo->wr), atomic_load(&bo->rd)};
        if ((at.wr > seen_w && at.wr <= end) || (at.rd > seen_r && at.rd <= end)) {
            seen_w = at.wr > seen_w && at.wr <= end ? at.wr : seen_w;
            seen_r = at.rd > seen_r && at.rd <= end ? at.rd : seen_r;
            ck.t0 = ck.t;
            continue;
        }
        if (!fast_idle(self, &c->sy, g, ctl, v, &ck, big_same, &at))
            goto abort;
    }
    return true;
abort:
    fast_abort_seq(&c->sy, q);
    return false;
}

/* A big call (more than CL_FAST_MAX_BYTES), sequence q: the transfer,
   then the arrival as for a small one.  Returns true when COMPLETE (the
   result, where this member has one, is in recvbuf). */
static bool run_big(cl_fast_t *self, fchan_t *c, uint64_t g, uint64_t q, const void *sendbuf,
                    void *recvbuf, const fast_call_t *bc)
{
    const int me = self->me, other = 1 - me;
    const size_t bytes = fast_call_bytes(bc);
    /* The result goes to scratch where the input (or, for a broadcast,
       the member's own bytes, a stand-in root's on the engine path) must
       stay whole until COMPLETE. */
    uint8_t *out = bc->result ? fast_out_buf(self, sendbuf, recvbuf, bytes) : NULL;
    if ((bc->result && out == NULL) ||
        !big_transfer(self, c, g, q, sendbuf != NULL ? sendbuf : recvbuf, out, bc))
        return false;
    /* Every chunk consumed: arrive. */
    fast_arr_t a = fast_arrive(&c->sy, q, me, F_ARR(0) | F_ARR(1), NULL, NULL);
    bool complete = a == ARR_COMPLETE;
    if (a == ARR_WAIT) {
        const size_t per = BIG_CHUNK / collab_dtype_extent(bc->dtype);
        fast_prog_t pr = {.w = {&c->big[other].rd}, .n = 1, .lo = PK(q, 0),
                          .hi = PK(q, (bc->count + per - 1) / per)};
        complete = fast_wait(self, &c->sy, q, g, F_ARR(0) | F_ARR(1), &pr);
    }
    if (bc->result)
        fast_out_done(self, complete, sendbuf, recvbuf, bytes);
    return complete;
}

/* A small call as the last arriver sees it, against the other's slot. */
typedef struct {
    const fchan_t *c;
    uint64_t q;
    unsigned par;
    int other;
    uint32_t kind, dtype, op, root;
    size_t bytes;
} small_call_t;

static bool same_call(const void *ctx)
{
    const small_call_t *m = ctx;
    const fslot_t *os = &m->c->slot[m->other][m->par];
    return atomic_load_explicit(&os->seq, memory_order_acquire) == m->q && os->kind == m->kind &&
           os->dtype == m->dtype && os->op == m->op && os->root == m->root &&
           os->bytes == m->bytes;
}

/* The fast path of one collective: an all-reduce or a reduction to root
   (sendbuf, or recvbuf in place), a broadcast of count bytes in recvbuf
   from root, or a barrier.  Returns 1 done, 0 not taken. */
static int run(cl_fast_t *self, int kind, const void *sendbuf, void *recvbuf, size_t count,
               collab_dtype_t dtype, const collab_op_t *op, int root)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&self->inside, &expected, 1))
        return 0; /* another thread of this process (not allowed by MPI) */
    int rc = 0;
    uint64_t g = atomic_load(&self->grant);
    fchan_t *c = atomic_load(&self->ch);
    fgroup_t *G = atomic_load(&self->grp);
    if (g == 0 || (c == NULL && G == NULL) || reports_full(self) || root >= self->k)
        goto out;
    const int me = self->me, other = 1 - me;
    const uint64_t q = atomic_load(&self->next_seq);
    if (atomic_load(&self->lapse) == g)
        goto abandon; /* the lease ended (cl_fast_lapse) */
    const unsigned par = (unsigned)(q & 1);
    const fast_call_t fc = fast_call(me, kind, root, count, dtype, op);
    const size_t bytes = fast_call_bytes(&fc);
    if (G != NULL) {
        if (!fast_group_run(self, G, g, q, sendbuf, recvbuf, &fc))
            goto abandon;
        goto done;
    }
    if (bytes > CL_FAST_MAX_BYTES) {
        if (!run_big(self, c, g, q, sendbuf, recvbuf, &fc))
            goto abandon;
        goto done;
    }
    /* The other member finished reading what this member's slot of this
       parity held last. */
    if (atomic_load_explicit(&c->read[other], memory_order_acquire) < self->last[par])
        goto abandon;
    fslot_t *mine = &c->slot[me][par];
    atomic_store_explicit(&mine->seq, SEQ_NONE, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    mine->kind = (uint32_t)kind;
    mine->dtype = (uint32_t)dtype;
    mine->op = op != NULL ? (uint32_t)op->kind : 0;
    mine->root = (uint32_t)fc.root;
    mine->bytes = bytes;
    if (bytes > 0 && (kind != CL_COLL_BCAST || !fc.result)) /* all but a broadcast's receiver */
        memcpy(mine->data, sendbuf != NULL ? sendbuf : recvbuf, bytes);
    atomic_store_explicit(&mine->seq, q, memory_order_release);
    /* Arrive: the last arriver checks the other's call against its own. */
    small_call_t call = {c,        q,        par,        other, (uint32_t)kind, (uint32_t)dtype,
                         mine->op, mine->root, bytes};
    fast_arr_t a = fast_arrive(&c->sy, q, me, F_ARR(0) | F_ARR(1), same_call, &call);
    bool complete = a == ARR_COMPLETE;
    if (a == ARR_WAIT)
        complete = fast_wait(self, &c->sy, q, g, F_ARR(0) | F_ARR(1), NULL);
    if (!complete)
        goto abandon;
    if (fc.result && bytes > 0) {
        if (kind == CL_COLL_BCAST) {
            memcpy(recvbuf, c->slot[root][par].data, bytes);
        } else {
            const void *in[2] = {c->slot[0][par].data, c->slot[1][par].data};
            (void)cl_reduce_fold(op, dtype, recvbuf, in, 2, count);
        }
    }
    self->last[par] = q + 1;
done:
    if (c != NULL)
        atomic_store_explicit(&c->read[me], q + 1, memory_order_release);
    atomic_store(&self->next_seq, q + 1);
    atomic_fetch_add(&self->completed, 1);
    cl_fast_report_t r = {.first = q,
                          .n = 1,
                          .kind = kind,
                          .count = count,
                          .dtype = dtype,
                          .op = op != NULL ? op->kind : COLLAB_OP_NO_OP,
                          .root = kind == CL_COLL_BCAST || kind == CL_COLL_REDUCE ? root : -1,
                          .sendbuf = sendbuf,
                          .recvbuf = recvbuf};
    (void)report(self, &r); /* room was checked above; only this thread adds */
    rc = 1;
    goto out;
abandon:
    drop_grant(self, g);
    if (G != NULL)
        fast_abort_seq(fast_group_sync(G), q); /* a group falls back at q as one */
out:
    atomic_store(&self->inside, 0);
    return rc;
}

int cl_fast_allreduce(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t count,
                      collab_dtype_t dtype, const collab_op_t *op)
{
    size_t ext = collab_dtype_extent(dtype);
    if (self == NULL || op == NULL || op->kind == COLLAB_OP_USER || ext == 0 ||
        count > SIZE_MAX / ext)
        return 0;
    return run(self, CL_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1);
}

int cl_fast_reduce(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t count,
                   collab_dtype_t dtype, const collab_op_t *op, int root)
{
    size_t ext = collab_dtype_extent(dtype);
    if (self == NULL || op == NULL || op->kind == COLLAB_OP_USER || ext == 0 ||
        count > SIZE_MAX / ext || root < 0)
        return 0;
    return run(self, CL_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root);
}

int cl_fast_bcast(cl_fast_t *self, void *buf, size_t bytes, int root)
{
    if (self == NULL || root < 0)
        return 0;
    return run(self, CL_COLL_BCAST, NULL, buf, bytes, COLLAB_BYTE, NULL, root);
}

int cl_fast_barrier(cl_fast_t *self)
{
    if (self == NULL)
        return 0;
    return run(self, CL_COLL_BARRIER, NULL, NULL, 0, COLLAB_BYTE, NULL, -1);
}

void cl_fast_before_engine(cl_fast_t *self)
{
    if (self == NULL)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&self->inside, &expected, 1))
        return;
    uint64_t g = atomic_exchange(&self->grant, 0);
    fchan_t *c = atomic_load(&self->ch);
    fgroup_t *G = atomic_load(&self->grp);
    if (G != NULL && g != 0)
        fast_abort_seq(fast_group_sync(G), atomic_load(&self->next_seq)); /* all fall back here */
    if (G != NULL)
        fast_group_release(G, self->me, self->k);
    for (int i = 0; c != NULL && i < FAST_OUTCOMES; i++) {
        uint64_t v = atomic_load(&c->sy.ctl[i]);
        if (CTL_FL(v) == F_ARR(1 - self->me) &&
            atomic_compare_exchange_strong(&c->sy.ctl[i], &v, CTL(CTL_SEQ(v), F_ABORTED)))
            fast_wake(&c->sy, false);
    }
    /* The other amid a big transfer (its sequence has no outcome yet). */
    uint64_t hq = c != NULL ? atomic_load(&c->big[1 - self->me].seq) : SEQ_NONE;
    if (hq != SEQ_NONE && CTL_SEQ(atomic_load(&c->sy.ctl[hq % FAST_OUTCOMES])) < hq)
        fast_abort_seq(&c->sy, hq);
    atomic_store(&self->inside, 0);
}
