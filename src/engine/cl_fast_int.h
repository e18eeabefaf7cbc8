/*  cl_fast_int.h - what the two protocols of the same-host fast path
    share (cl_fast.h): the class's state, the outcome words and the one
    arrive / wait / abort machinery.  cl_fast.c holds the class, the grant
    and the two-member protocol; cl_fast_group.c the protocol of three to
    CL_FAST_GROUP_MAX members on one host.  Not for other files.
*/
#ifndef CL_FAST_INT_H_INCLUDED
#define CL_FAST_INT_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_fast.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define FAST_OUTCOMES 4   /* outcome words, by sequence number modulo 4 */
#define SPIN_US 30.0      /* spinning before sleeping */
#define SLEEP_NS 2000000L /* one futex sleep at most (the grant is checked after) */
#define WAIT_LIMIT 0.5    /* seconds without progress of the others before the engine path */
#define F_ARR(m) (1u << (m)) /* member m arrived (m < CL_FAST_GROUP_MAX) */
#define F_COMPLETE (1u << 8)
#define F_ABORTED (1u << 9)
#define CTL(q, f) (((q) << 10) | (f))
#define CTL_SEQ(v) ((v) >> 10)
#define CTL_FL(v) ((unsigned)((v)&1023u))
#define SEQ_NONE UINT64_MAX
#define PK(q, k) (((q) << 24) | (uint64_t)(k)) /* progress word: sequence, chunks */
#define PK_MAX ((1u << 24) - 1)                /* chunks of one big all-reduce at most */
#define SCRATCH_KEEP ((size_t)64 << 20)        /* in-place scratch kept between calls */

/* The outcome words of one channel and the futex its members sleep on
   (128 bytes, in the shared area). */
typedef struct {
    _Atomic uint64_t ctl[FAST_OUTCOMES]; /* outcome words: CTL(sequence, flags) at seq % 4 */
    char pad1[32];
    _Atomic uint32_t futex;    /* bumped at every outcome, progress and revocation */
    _Atomic uint32_t sleepers; /* members sleeping on futex */
    char pad2[56];
} fsync_t;

typedef struct fchan fchan_t;   /* a two-member channel (cl_fast.c) */
typedef struct fgroup fgroup_t; /* a group area (cl_fast_group.c) */

struct cl_fast {
    _Atomic uint64_t grant;    /* 0: revoked; else the grant's number */
    _Atomic uint64_t lapse;    /* a grant number that ends before the next call */
    _Atomic int inside;        /* an application thread uses the area */
    _Atomic uint64_t next_seq; /* the sequence the next fast collective runs as */
    _Atomic(fchan_t *) ch;     /* two members: the channel, NULL when detached */
    _Atomic(fgroup_t *) grp;   /* a group: its area, NULL when detached */
    void *area;                /* the mapping (engine side) */
    size_t area_bytes;         /* its length */
    uint64_t link_id;
    uint8_t peer[32]; /* the other member's key (engine side; two members) */
    uint64_t grants;  /* grant numbers given so far */
    uint64_t engaged; /* a group: the epoch of the decision this member engaged in */
    int me;           /* this member's index (comm rank) */
    int k;            /* members: 2, or 3 .. CL_FAST_GROUP_MAX for a group */
    int chan;         /* two members: the channel's index in the area */
    uint8_t *scratch; /* in-place big all-reduce: the result until COMPLETE */
    size_t scratch_cap;
    uint64_t last[2]; /* 1 + the last sequence of each parity completed here */
    _Atomic uint64_t completed;
    pthread_mutex_t lock; /* guards the reports */
    cl_fast_report_t rep[CL_FAST_REPORTS];
    size_t nrep;
};

/* Progress of the others that keeps a waiter waiting: the words w[0..n-1]
   (PK form), each counted only within lo .. hi (this call's chunks), so a
   member writing nonsense cannot hold the others for long. */
typedef struct {
    const _Atomic uint64_t *w[3 * CL_FAST_GROUP_MAX];
    int n;
    uint64_t lo, hi;
} fast_prog_t;

/* What an arrival found. */
typedef enum {
    ARR_ENDED = -1,   /* q ended without this member (aborted, or nonsense): engine path */
    ARR_WAIT = 0,     /* arrived; others still to come: fast_wait */
    ARR_COMPLETE = 1, /* the last arriver: COMPLETE is set */
} fast_arr_t;

double fast_now(void);
void fast_pause(void);

/* Bumps s's futex word; wakes its sleepers when there are some (or
   always, for a waiter of this process whose grant was revoked). */
void fast_wake(fsync_t *s, bool always);

/* Member me (of those in mask all) arrives at sequence q on s: one
   compare-and-swap.  The last arriver asks same(ctx) (NULL: true) whether
   every member's call is this one, and sets COMPLETE, or ABORTED. */
fast_arr_t fast_arrive(fsync_t *s, uint64_t q, int me, unsigned all,
                       bool (*same)(const void *ctx), const void *ctx);

/* Waits for the outcome of q, at which this member arrived: a brief spin,
   then futex sleeps.  Aborts q when the grant g is revoked or neither pr
   (NULL: none) grew nor another member arrived for WAIT_LIMIT.  Returns
   true when COMPLETE. */
bool fast_wait(cl_fast_t *self, fsync_t *s, uint64_t q, uint64_t g, unsigned all,
               const fast_prog_t *pr);

/* The sum of pr's words within its range (0 for NULL). */
uint64_t fast_prog(const fast_prog_t *pr);

/* The clock of a loop that waits for the others: now, their last
   progress, when this wait began; spins since. */
typedef struct {
    double t, t0, tw;
    unsigned spins;
} fast_clock_t;

/* This member moved: a new wait begins. */
static inline void fast_clock_moved(fast_clock_t *ck)
{
    ck->spins = 0;
    ck->tw = ck->t = fast_now();
}

/* One more round of waiting (the clock is read every 32). */
static inline void fast_clock_tick(fast_clock_t *ck)
{
    if ((++ck->spins & 31) == 0)
        ck->t = fast_now();
}

/* One idle round of a wait on s, whose outcome word ctl held v: false
   when the grant g was revoked or the others made no progress for
   WAIT_LIMIT (the caller aborts).  Otherwise spins briefly, then sleeps
   on s's futex while ctl, the grant and same(ctx) (the others' progress
   unchanged) still hold once the sleep is announced; true. */
bool fast_idle(cl_fast_t *self, fsync_t *s, uint64_t g, const _Atomic uint64_t *ctl, uint64_t v,
               fast_clock_t *ck, bool (*same)(const void *ctx), const void *ctx);

/* For fast_idle: pr's sum is still p. */
typedef struct {
    const fast_prog_t *pr;
    uint64_t p;
} fast_prog_at_t;
bool fast_prog_same(const void *ctx);

/* Ends sequence q as ABORTED unless it has an outcome already. */
void fast_abort_seq(fsync_t *s, uint64_t q);

/* Where an all-reduce of bytes writes its result: recvbuf, or (in place,
   sendbuf NULL) the scratch, so the input stays whole until COMPLETE.
   NULL when the scratch cannot be had. */
uint8_t *fast_out_buf(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t bytes);

/* After an all-reduce: copies the scratch into recvbuf when complete and
   in place, and frees a scratch larger than SCRATCH_KEEP. */
void fast_out_done(cl_fast_t *self, bool complete, const void *sendbuf, void *recvbuf,
                   size_t bytes);

/* One call of either protocol: an all-reduce, a reduction to root, a
   broadcast (count bytes of COLLAB_BYTE, op NULL) or a barrier (count 0,
   no result). */
typedef struct {
    int kind, root; /* cl_coll_kind_t; a reduction's or broadcast's root, else 0 */
    size_t count;
    collab_dtype_t dtype;
    const collab_op_t *op;
    bool result; /* member me gets a result: every member of an all-reduce, a
                    reduction's root, a broadcast's other members (a barrier: none) */
} fast_call_t;

/* The bytes of a call's buffer (0 for a barrier). */
static inline size_t fast_call_bytes(const fast_call_t *c)
{
    return c->count * collab_dtype_extent(c->dtype);
}

static inline fast_call_t fast_call(int me, int kind, int root, size_t count,
                                    collab_dtype_t dtype, const collab_op_t *op)
{
    const bool rooted = kind == CL_COLL_REDUCE || kind == CL_COLL_BCAST;
    fast_call_t c = {kind, rooted ? root : 0, count, dtype, op, kind != CL_COLL_BARRIER};
    if (kind == CL_COLL_REDUCE)
        c.result = me == root;
    else if (kind == CL_COLL_BCAST)
        c.result = me != root;
    return c;
}

/* The group protocol (cl_fast_group.c). */
/* Runs sequence q of a group under grant g: an all-reduce, a reduction
   to a root or a broadcast (call c; sendbuf NULL: in place).  True when
   COMPLETE (recvbuf holds this member's result, if it gets one). */
bool fast_group_run(cl_fast_t *self, fgroup_t *G, uint64_t g, uint64_t q, const void *sendbuf,
                    void *recvbuf, const fast_call_t *c);
/* The group's outcome words. */
fsync_t *fast_group_sync(fgroup_t *G);
/* Every member's engine attached (claims this member's place first). */
bool fast_group_present(fgroup_t *G, int k);
void fast_group_set_present(fgroup_t *G, int me);
/* Claims the area for comm_id and k members; false when another holds it. */
bool fast_group_claim(fgroup_t *G, uint64_t comm_id, int k);
/* Another member arrived at a sequence and waits. */
bool fast_group_waits(fgroup_t *G, int me);
/* The group's one grant (docs/collectives.md §5b).  Member me's engine
   publishes its stream's next sequence and whether it would run fast. */
void fast_group_publish(fgroup_t *G, int me, uint64_t next, bool willing);
/* Comm rank 0's engine: a new decision (epoch, fast from one past every
   sequence any member numbered) once every member left the last one and
   is willing.  Returns its first sequence, 0 when none was taken. */
uint64_t fast_group_decide(fgroup_t *G, int k);
/* Where member me (next sequence next, engaged in epoch engaged) stands
   with the decision (*epoch, *from); past it without engaging, it
   leaves and aborts the agreed sequence. */
typedef enum { AG_NONE, AG_BEFORE, AG_AT, AG_LEFT } fast_agree_t;
fast_agree_t fast_group_step(fgroup_t *G, int me, uint64_t next, uint64_t engaged,
                             uint64_t *epoch, uint64_t *from);
/* Member me's engine numbers seq on the engine path: publishes it, and
   when seq is at or past the decision's sequence, aborts seq (and the
   agreed one unless engaged) and leaves.  True when it left. */
bool fast_group_post(fgroup_t *G, int me, uint64_t seq, uint64_t engaged);
/* Aborts every sequence another member runs or waits on (this member
   goes to the engine path). */
void fast_group_release(fgroup_t *G, int me, int k);

#endif
