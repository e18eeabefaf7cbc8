/*  cl_fast.h - collectives (all-reduce, reduce, broadcast, barrier) among
    the members of a communicator on one host (two, through the fast-path
    area of their shared segment, cl_shm.h; or 3 .. CL_FAST_GROUP_MAX,
    through one group area, cl_fast_attach_group), carried out by the
    application threads themselves, with no engine round trip and no
    system call in the common case.

    A cl_fast_t belongs to one communicator of this process.  The engine
    creates it, attaches it to the pair's area (cl_fast_attach), grants it
    while nothing is changing (cl_fast_grant: the sequence number to run
    next) and revokes it (cl_fast_revoke) when anything might change; the
    application thread runs a collective on it (cl_fast_allreduce,
    cl_fast_reduce, cl_fast_bcast, cl_fast_barrier) only under a grant, and reports
    each completed sequence, which the engine takes (cl_fast_take) to keep
    its stream's numbering and records right.  The protocol and its
    guarantees are in cl_fast.c's comment and docs/collectives.md §5.
*/
#ifndef CL_FAST_H_INCLUDED
#define CL_FAST_H_INCLUDED

#include "mpi_collab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_FAST_MAX_BYTES 8192 /* largest input (bytes) of a small call; larger all-reduces
                                  go through the big rings in chunks */
#define CL_FAST_REPORTS 1024   /* reports waiting for the engine at most */
#define CL_FAST_GROUP_MAX 8    /* members of a group on one host at most */

typedef struct cl_fast cl_fast_t;

/* One run of completed fast collectives with the same arguments and
   consecutive sequence numbers (first .. first + n - 1). */
typedef struct {
    uint64_t first, n;
    int kind; /* cl_coll_kind_t: all-reduce, reduction, broadcast or barrier */
    size_t count;
    collab_dtype_t dtype;
    collab_op_kind_t op;
    int root;            /* a broadcast's or reduction's root; else -1 */
    const void *sendbuf; /* the program's buffers (only compared, never read) */
    void *recvbuf;
} cl_fast_report_t;

/* A detached, revoked channel; NULL on allocation failure.  Caller owns. */
cl_fast_t *cl_fast_new(void);

/* Frees *self_p (accepts NULL, nulls it).  Only when no application
   thread can use it any more (communicator freed, engine stopped). */
void cl_fast_destroy(cl_fast_t **self_p);

/* --- engine side ---------------------------------------------------- */

/* Attaches to area (a mapping of CL_SHM_FAST_BYTES, which self now owns)
   for communicator comm_id, this member at index me (0 or 1, its comm
   rank), link_id and peer naming the link the area belongs to.  Returns
   false (area unmapped) when the area's slot for comm_id is taken by
   another communicator. */
bool cl_fast_attach(cl_fast_t *self, void *area, uint64_t comm_id, int me, uint64_t link_id,
                    const uint8_t peer[32]);

/* Bytes of the area of a group of k members (3 .. CL_FAST_GROUP_MAX)
   on one host: a 4 KiB header, then per member a ring of 4 chunks of
   256 KiB (its input) and one such ring of results: (k + 1) MiB + 4 KiB
   (5 MiB for k = 4, 9 MiB for k = 8); 0 for another k. */
size_t cl_fast_group_bytes(int k);

/* Attaches to the area of a group (bytes = cl_fast_group_bytes(k), a
   zeroed shared mapping every member maps; self now owns it) for
   communicator comm_id with k members, this one at index me (its comm
   rank); area_id names the area as cl_fast_link reports it.  Returns
   false (area unmapped) on a bad argument or when the area holds
   another communicator or another k. */
bool cl_fast_attach_group(cl_fast_t *self, void *area, size_t bytes, uint64_t comm_id, int me,
                          int k, uint64_t area_id);

/* The link id of the attached area, 0 when detached, and its peer's key. */
uint64_t cl_fast_link(const cl_fast_t *self);
const uint8_t *cl_fast_peer_key(const cl_fast_t *self);

/* Revokes and, once no application thread is inside, unmaps the area.
   Returns true when detached (call again later otherwise). */
bool cl_fast_detach(cl_fast_t *self);

/* Grants the fast path from sequence next_seq on, unless the other
   member's engine has not attached to the area (its fast path is off),
   an application thread is inside, or *pending
   (collectives of this communicator submitted to the engine and not yet
   complete) is non-zero before or after.  Returns true when granted. */
bool cl_fast_grant(cl_fast_t *self, uint64_t next_seq, const _Atomic int *pending);

/* A group's one grant (docs/collectives.md §5b): what cl_fast_agree did. */
enum {
    CL_FAST_AGREE_NONE = 0, /* nothing (no decision, or done with it) */
    CL_FAST_AGREE_WAIT,     /* a decision from a later sequence, or not granted yet at it */
    CL_FAST_AGREE_ENGAGED,  /* granted from the agreed sequence */
    CL_FAST_AGREE_LEFT,     /* past the agreed sequence without engaging: left it, and
                               that sequence ended for every member */
};

/* One turn of a group member's engine: publishes next_seq (its stream's
   next sequence) and willing (every condition for the fast path holds
   but those of the moment); comm rank 0 takes a new decision, "fast from
   sequence N", once every member left the last one and all are willing;
   then this member engages (cl_fast_grant from N) when next_seq is N,
   it is willing and idle (nothing of the communicator queued, running
   or submitted), or leaves the decision when next_seq passed N.
   Returns CL_FAST_AGREE_*. */
int cl_fast_agree(cl_fast_t *self, uint64_t next_seq, bool willing, bool idle,
                  const _Atomic int *pending);

/* The engine numbers seq of a group on the engine path: at or past the
   agreed sequence, every member runs seq there (this member aborts it on
   the fast path) and this member leaves the decision.  True when it
   left.  No-op for two members. */
bool cl_fast_agree_post(cl_fast_t *self, uint64_t seq);

/* True when no application thread is inside the fast path: the reports
   taken after this hold every sequence it completed. */
bool cl_fast_idle(const cl_fast_t *self);

/* Revokes the grant and wakes an application thread waiting on it. */
void cl_fast_revoke(cl_fast_t *self);

/* Ends the grant before the application thread's next call, letting a
   call under way finish (the world's lease: no transfer is cut short). */
void cl_fast_lapse(cl_fast_t *self);

/* True while granted with a lapse pending. */
bool cl_fast_lapsing(const cl_fast_t *self);

/* True while granted. */
bool cl_fast_granted(const cl_fast_t *self);

/* True when the other member has arrived at a sequence and waits. */
bool cl_fast_partner_waits(const cl_fast_t *self);

/* Moves up to cap reports into out (oldest first); returns how many. */
size_t cl_fast_take(cl_fast_t *self, cl_fast_report_t *out, size_t cap);

/* --- application side ----------------------------------------------- */

/* Runs an all-reduce of any size (sendbuf NULL: in place in recvbuf) on
   the fast path; larger than CL_FAST_MAX_BYTES in chunks through the big
   rings.  Returns 1 when done (recvbuf holds the result every member
   gets), 0 when not taken: the caller runs it on the engine path at the
   same sequence number (call cl_fast_before_engine first). */
int cl_fast_allreduce(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t count,
                      collab_dtype_t dtype, const collab_op_t *op);

/* Same for a reduction to comm rank root: the other members' recvbuf is
   not touched; the root's gets the all-reduce's bits. */
int cl_fast_reduce(cl_fast_t *self, const void *sendbuf, void *recvbuf, size_t count,
                   collab_dtype_t dtype, const collab_op_t *op, int root);

/* Same for a broadcast of bytes in buf from comm rank root; larger than
   CL_FAST_MAX_BYTES in chunks through the root's big ring (a group: any
   size through the root's ring).  The other members' buf changes only
   when the call completes here. */
int cl_fast_bcast(cl_fast_t *self, void *buf, size_t bytes, int root);

/* Same for a barrier. */
int cl_fast_barrier(cl_fast_t *self);

/* Before a collective of this communicator goes to the engine: drops
   this process's grant (the engine grants again at its next sequence)
   and releases the other member if it waits on the fast path; in a
   group that held a grant, the sequence it was to run is aborted for
   every member (they all run it on the engine path). */
void cl_fast_before_engine(cl_fast_t *self);

/* The sequence number the next fast collective runs as. */
uint64_t cl_fast_next_seq(const cl_fast_t *self);

/* Fast collectives completed by this process (statistics, tests). */
uint64_t cl_fast_completed(const cl_fast_t *self);

#endif
