/*  cl_p2p.h - point-to-point matching: posted receives and unexpected messages.

    MPI's matching rules, kept per engine for every communicator: a message
    goes to the first posted receive (in posting order) whose communicator,
    source and tag match; a receive takes the oldest matching unexpected
    message.  Blocking probes wait in the posted list too, so they see
    messages in the same order as receives.  Source and tag may be
    wildcards (COLLAB_ANY_SOURCE, COLLAB_ANY_TAG).

    Pure logic, engine thread only.  Payloads of unexpected messages are
    copied in and owned by the queue until taken.

    Limits (docs/security.md section 5): messages queued through
    cl_p2p_store_from count against their sending peer (its world rank)
    and against the whole queue, each at its payload plus the fixed
    overhead CL_P2P_MSG_COST; one over a limit is refused and counted
    (a message larger than a byte limit is kept when nothing is held
    against that limit, so that every legal message can wait).
    Messages a peer sends itself (cl_p2p_store, cl_p2p_store_sync) are
    the program's own memory and count against nothing.
*/
#ifndef CL_P2P_H_INCLUDED
#define CL_P2P_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CL_P2P_RECV = 0,   /* consumes the message */
    CL_P2P_PROBE = 1,  /* only looks at it (blocking MPI_Probe) */
    CL_P2P_MPROBE = 2, /* takes it off the queue (blocking MPI_Mprobe) */
} cl_p2p_kind_t;

/* An unexpected (or probed) message.  The public collab_message_t of
   mpi_collab.h is this struct. */
typedef struct cl_p2p_msg {
    struct cl_p2p_msg *next; /* queue link */
    uint64_t comm;           /* communicator id */
    int src;                 /* sender's comm rank */
    int tag;                 /* tag >= 0 */
    size_t len;              /* payload bytes */
    uint8_t *data;           /* payload (NULL when len == 0) */
    uint64_t sync;           /* synchronous-send id of the sender, 0 = standard send */
    int from;                /* sender's world rank (answers to synchronous sends) */
    bool limited;            /* counted against the limits (cl_p2p_store_from) */
} cl_p2p_msg_t;

/* What one queued message costs besides its payload: an empty message is
   not free. */
#define CL_P2P_MSG_COST (sizeof(cl_p2p_msg_t) + 32)

/* Limits on messages queued by cl_p2p_store_from; 0 = none. */
typedef struct {
    size_t peer_bytes;  /* one sender's payloads and overheads */
    size_t peer_msgs;   /* one sender's messages */
    size_t total_bytes; /* every limited sender's */
    size_t total_msgs;
} cl_p2p_limits_t;

/* cl_p2p_store_from's refusals (positive: not errors of the caller). */
enum { CL_P2P_OVER_PEER = 1, CL_P2P_OVER_TOTAL = 2 };

/* A posted receive or probe. */
typedef struct {
    uint64_t comm;      /* communicator id */
    int src;            /* comm rank or COLLAB_ANY_SOURCE */
    int tag;            /* tag or COLLAB_ANY_TAG */
    cl_p2p_kind_t kind; /* what waits */
    void *req;          /* the owner's request */
} cl_p2p_posted_t;

typedef struct cl_p2p cl_p2p_t;

/* Creates empty queues; NULL on allocation failure.  Caller owns. */
cl_p2p_t *cl_p2p_new(void);

/* Destroys and nulls *self_p (frees queued messages; posted requests are
   the caller's and are not touched); accepts NULL. */
void cl_p2p_destroy(cl_p2p_t **self_p);

/* True when a message (comm, src, tag) matches a receive pattern. */
bool cl_p2p_matches(uint64_t comm, int src, int tag, uint64_t pcomm, int psrc, int ptag);

/* Removes and returns into *out the first posted entry (posting order)
   that matches an arriving message.  Returns true if there was one. */
bool cl_p2p_match_posted(cl_p2p_t *self, uint64_t comm, int src, int tag, cl_p2p_posted_t *out);

/* Appends a posted entry.  Returns 0 or COLLAB_ERR_NO_MEM. */
int cl_p2p_post(cl_p2p_t *self, const cl_p2p_posted_t *entry);

/* Removes the posted entry of req.  Returns true if it was there. */
bool cl_p2p_cancel(cl_p2p_t *self, const void *req);

/* Removes every posted entry for which pred returns true and hands each to
   fn (e.g. to fail receives from a dead rank).  Returns how many. */
size_t cl_p2p_remove_posted_if(cl_p2p_t *self, bool (*pred)(void *ctx, const cl_p2p_posted_t *e),
                               void (*fn)(void *ctx, const cl_p2p_posted_t *e), void *ctx);

/* Queues an unexpected message, copying len bytes.  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int cl_p2p_store(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len);

/* As cl_p2p_store, for a synchronous send: the message remembers the
   sender's id `sync` (>= 1) and world rank `from`, so that its matching
   can be answered and its sender can withdraw it. */
int cl_p2p_store_sync(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                      uint64_t sync, int from);

/* Sets the limits of cl_p2p_store_from (messages queued already stay). */
void cl_p2p_set_limits(cl_p2p_t *self, const cl_p2p_limits_t *limits);

/* As cl_p2p_store_sync, for a message from another peer (world rank
   from >= 0): returns 0, COLLAB_ERR_NO_MEM, or CL_P2P_OVER_PEER /
   CL_P2P_OVER_TOTAL when queueing it would pass a limit; the message is
   then not queued, and counted as dropped for from. */
int cl_p2p_store_from(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data, size_t len,
                      uint64_t sync, int from);

/* As cl_p2p_store_from for a message its sender had credit for (flow
   control, docs/wire.md section 10): counted against from like the
   others, but never refused by the limits, which the grants respect.
   Returns 0 or COLLAB_ERR_NO_MEM. */
int cl_p2p_store_granted(cl_p2p_t *self, uint64_t comm, int src, int tag, const void *data,
                         size_t len, uint64_t sync, int from);

/* Receives and probes posted now (waiting for a message). */
size_t cl_p2p_posted(const cl_p2p_t *self);

/* Messages of world rank from refused by the limits so far. */
uint64_t cl_p2p_dropped(const cl_p2p_t *self, int from);

/* Limited messages and bytes (with overheads) queued now from world rank
   from; from < 0: from every sender. */
size_t cl_p2p_queued_from(const cl_p2p_t *self, int from, size_t *bytes);

/* Removes and frees the unexpected synchronous message (comm, from, sync)
   that its sender cancels.  True if it was still there (unmatched). */
bool cl_p2p_withdraw(cl_p2p_t *self, uint64_t comm, int from, uint64_t sync);

/* The oldest unexpected message matching the pattern, or NULL.  With take,
   it is removed from the queue and the caller owns it (cl_p2p_msg_free). */
cl_p2p_msg_t *cl_p2p_find(cl_p2p_t *self, uint64_t comm, int src, int tag, bool take);

/* Frees a message taken from the queue; accepts NULL. */
void cl_p2p_msg_free(cl_p2p_msg_t *msg);

/* Drops every unexpected message of a communicator (freed). */
void cl_p2p_drop_comm(cl_p2p_t *self, uint64_t comm);

/* Number of unexpected messages and their payload bytes. */
size_t cl_p2p_unexpected(const cl_p2p_t *self, size_t *bytes);

#endif
