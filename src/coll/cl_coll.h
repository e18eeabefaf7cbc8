/*  cl_coll.h - interface between the engine and the collective algorithms.

    A collective in progress is a cl_coll_t: an event-driven state machine
    that runs only on the engine thread.  The engine creates it when the
    program calls a collective, gives it the group (the live members that
    take part, in ascending comm-rank order), delivers to it every message
    addressed to (comm id, sequence number), tells it about members that
    fail, and ticks it for deadlines.  The algorithm sends through the small
    table in cl_coll_env_t and never touches a socket.  See
    docs/collectives.md for every algorithm's schedule and the failure
    (relay) protocol that keeps results bitwise identical on all survivors.

    After completion the engine keeps the last completed cl_coll_t of each
    communicator alive (retained) until the next one on that communicator
    completes, so that members still inside it can ask it for relays.
*/
#ifndef CL_COLL_H_INCLUDED
#define CL_COLL_H_INCLUDED

#include "mpi_collab.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CL_COLL_BARRIER,
    CL_COLL_BCAST,
    CL_COLL_ALLREDUCE,
    CL_COLL_REDUCE,
    CL_COLL_REDUCE_SCATTER_BLOCK,
    CL_COLL_ALLGATHERV,
    CL_COLL_GATHERV,
    CL_COLL_SCATTERV,
    CL_COLL_ALLTOALL,
    CL_COLL_KIND_COUNT
} cl_coll_kind_t;

/* A collective message as algorithms see it.  The engine frames it on the
   wire (docs/wire.md) with comm id, sequence number, epoch and signature
   and fills `from` on receipt. */
typedef struct {
    uint8_t type;   /* algorithm-defined message type (DATA, RESULT, RELAY, ...) */
    uint32_t part;  /* part index (butterfly) or member index */
    uint32_t chunk; /* chunk index within the part */
    uint32_t aux;   /* algorithm-defined small field (docs/collectives.md) */
    int from;       /* comm rank of the sender (set by the engine on receive) */
    const void *data;
    size_t len;
} cl_coll_msg_t;

/* What the engine offers to an algorithm. */
typedef struct {
    void *eng; /* opaque engine pointer passed back to every callback */
    /* Queues msg for comm rank `to`.  The payload is copied; never blocks.
       Returns 0, or a negative collab_status_t (e.g. peer already gone). */
    int (*send)(void *eng, int to, const cl_coll_msg_t *msg);
    /* Monotonic seconds. */
    double (*now)(void *eng);
    /* Seconds to wait for `bytes` from comm rank `from` before declaring it
       failed: COLLAB_TIMEOUT floor, grown with size over measured bandwidth. */
    double (*deadline)(void *eng, int from, size_t bytes);
    /* Tells the engine that comm rank r missed its deadline in this
       collective; the engine decides (heartbeats, leader) and, if r is
       declared failed, calls cl_coll_on_fail for every affected cl_coll_t. */
    void (*suspect)(void *eng, int r);
    /* COLLAB_VERIFY: this member recomputed the part that comm rank r
       reduced from the inputs every contributor sent it, found the inputs
       to be those r folded (by r's digests) and r's result different.
       The collective has logged what it found; the engine acts on the
       verdict (docs/security.md §6c).  NULL: verdicts are only logged. */
    void (*convict)(void *eng, int r);
    /* The 32-byte key this member shares with comm rank r (X25519 of
       their identity keys, hashed with both public keys), for the tags
       that let a relayed chunk be checked against its producer
       (docs/security.md §6).  Returns 0 or a negative status.  NULL:
       tags are zero and relays are not checked. */
    int (*pair_key)(void *eng, int r, uint8_t key[32]);
    /* Whether this member's engine has its own evidence that comm rank r
       failed (gone from the view, suspected, its link closed, or it left).
       A STATUS's view counts toward this member's only for members this
       confirms: no member can declare another failed (docs/security.md
       §3).  NULL: every failure a STATUS names is taken over. */
    bool (*confirms_failed)(void *eng, int r);
    /* Relay proofs signed by their producer (docs/security.md §6, wire
       version 9).  sign: signs msg (len bytes) with this peer's identity
       key (cl_xsign; the engine binds the run id in) and writes the
       signing key and the signature, CL_COLL_SIG bytes, into proof;
       returns 0 or a negative status.  verify: true when proof holds the
       signing key of comm rank r's identity as the collective started
       and its valid signature of msg.  signs: false when comm rank r is
       known not to read signed proofs (the engine: in a swarm that does
       not sign); every member must answer alike.  Any NULL: the collective uses the
       tags of pair_key. */
    int (*sign)(void *eng, const uint8_t *msg, size_t len, uint8_t *proof);
    bool (*verify)(void *eng, int r, const uint8_t *msg, size_t len, const uint8_t *proof);
    bool (*signs)(void *eng, int r);
} cl_coll_env_t;

/* Staging's side of a collective whose buffers live in device memory
   (src/engine/cl_stage.c, docs/cuda.md "Chunk pipeline"): the collective
   asks before it reads a range of its input and says when a range of its
   output is final, so that copies over PCIe overlap the network.  Offsets
   are bytes from the start of sendbuf and recvbuf.  Runs on the engine
   thread; none of the entries waits for the device.  Owned by the caller
   of the collective; the collective drops it in
   cl_coll_release_user_buffers. */
typedef struct {
    void *arg; /* passed back to every entry */
    /* The collective starts (again, after a restart): output ranges
       reported before are forgotten. */
    void (*begin)(void *arg);
    /* Input bytes [off, off + len) will be read; the copies are queued in
       the order of these calls.  Returns 0 or a negative status. */
    int (*in_need)(void *arg, size_t off, size_t len);
    /* 1 when input bytes [off, off + len) may be read now, 0 not yet (the
       collective asks again from cl_coll_pump), negative on error. */
    int (*in_ready)(void *arg, size_t off, size_t len);
    /* Output bytes [off, off + len) of recvbuf are final: their copy back
       may start.  Returns 0 or a negative status. */
    int (*out_done)(void *arg, size_t off, size_t len);
} cl_coll_stage_t;

/* Everything a collective needs, copied by cl_coll_new (arrays too).
   Per kind (counts in bytes for data movement, dtype COLLAB_BYTE):
     barrier               nothing else
     bcast                 recvbuf: the buffer (read at the root, written
                           elsewhere), count bytes; sendbuf unused
     allreduce             sendbuf (NULL: in place), recvbuf, count, dtype, op
     reduce                as allreduce; recvbuf used at the root only, and
                           sendbuf may be NULL (in place) only there
     reduce_scatter_block  count = recvcount; sendbuf holds comm_size blocks
                           (NULL: in place, in recvbuf); block r -> rank r
     allgatherv            sendbuf/sbytes (NULL: own block already in
                           place), recvbuf, counts/displs per comm rank
     gatherv               sendbuf/sbytes; root: recvbuf, counts/displs
                           (sendbuf NULL at the root: in place)
     scatterv              root: sendbuf, counts/displs; recvbuf/rbytes
                           (recvbuf NULL at the root: in place)
     alltoall              count = bytes per block; sendbuf (NULL: in
                           place), recvbuf: comm_size blocks each
   small_bytes and chunk_bytes choose the algorithm and the message layout,
   so every member must get the same values (they are in the signature). */
/* cl_coll_args_t.compression: each member's uploads encoded by the speed of
   its link (docs/collectives.md §2.2c). */
#define CL_COLL_COMPRESSION_ADAPTIVE 3

typedef struct {
    cl_coll_kind_t kind;
    uint64_t comm_id;
    uint64_t seq;
    int comm_size;         /* nominal size of the communicator */
    int nmembers;          /* members taking part (>= 1, includes self) */
    const int *members;    /* their comm ranks, ascending */
    const double *weights; /* their averaging weights (>= 0, finite), or NULL = all 1 */
    const int *clients;    /* 1 if member i is in client mode (never a reducer), or NULL */
    const uint32_t *bandwidths; /* their agreed link figures in kbit/s (0 unknown), or NULL:
                                   a butterfly all-reduce sizes its parts by them
                                   (cl_coll_split_bw), so every member must get the same */
    int self;              /* this peer's comm rank */
    int root;              /* comm rank of the root (rooted kinds), else -1 */
    /* Reductions: element type, count and op.  Data movement: dtype ==
       COLLAB_BYTE and counts in bytes. */
    collab_dtype_t dtype;
    collab_op_t op;
    size_t count;
    const void *sendbuf; /* NULL = in place */
    void *recvbuf;
    size_t sbytes;        /* gatherv/allgatherv: bytes this rank sends */
    const size_t *counts; /* per comm rank, bytes (v-variants), comm_size entries */
    const size_t *displs; /* per comm rank, bytes (v-variants) */
    size_t rbytes;        /* scatterv: bytes this rank receives */
    int strict;           /* COLLAB_STRICT: a failure fails the call */
    int compression;      /* 0 none, 1 fp16, 2 int8, CL_COLL_COMPRESSION_ADAPTIVE (float SUM
                             only); adaptive picks each member's codec from `bandwidths` */
    int aggregation;      /* allreduce of FLOAT/DOUBLE with SUM only: 0 the sum (DESIGN's mean
                             rule), 1 trimmed mean, 2 centered clip (cl_robust.h); the robust
                             modes run the one-round exchange whatever the size */
    double max_weight_ratio; /* robust modes: weight cap relative to the median (0 = none) */
    int verify;           /* COLLAB_VERIFY: a butterfly all-reduce's parts may be checked here
                             (docs/security.md §6c); 0 off */
    int verify_target;    /* with verify: 1 + the comm rank whose part this member checks in
                             any case (the coordinator's follow-up of a report), 0 none */
    size_t chunk_bytes;   /* pipelining chunk size */
    size_t small_bytes;   /* below this, allreduce uses the one-round algorithm */
    double early_rate;    /* butterfly all-reduce (not strict, no verify): a member holding
                             every chunk completes before the others' DONE, paying a copy of
                             the result, once the call has run result bytes / early_rate
                             seconds (docs/collectives.md §3 "Retention"); 0 never,
                             INFINITY at once */
    const cl_coll_stage_t *stage; /* input and output staged chunk by chunk (device
                                     buffers), or NULL: both are ready host memory.  Only
                                     where cl_coll_stage_aware says so */
} cl_coll_args_t;

typedef struct cl_coll cl_coll_t;

/* Checks args as cl_coll_new does, without allocating: 0, or the status
   naming what is wrong (COLLAB_ERR_OP for an op undefined on the datatype,
   REPLACE and NO_OP included; COLLAB_ERR_ROOT, _RANK, _COUNT, _TYPE, _ARG). */
int cl_coll_args_check(const cl_coll_args_t *args);

/* Creates the state machine (copies args and the arrays it points to).
   Returns NULL on allocation failure or invalid arguments (logged; see
   cl_coll_args_check).  Caller owns. */
cl_coll_t *cl_coll_new(const cl_coll_args_t *args, const cl_coll_env_t *env);

/* Destroys and nulls *self_p; accepts NULL. */
void cl_coll_destroy(cl_coll_t **self_p);

/* Sends the first messages; may complete at once (group of one, nothing
   to move, root absent).  cl_coll_on_msg starts a collective that was not
   started yet.  Returns 0 or a negative status (the collective is then
   complete with that status). */
int cl_coll_start(cl_coll_t *self);

/* Delivers one message from the group.  Messages from non-members or with
   out-of-range fields are dropped (returns COLLAB_ERR_ARG, counted by the
   engine); never crashes.  A retained (completed) collective answers relay
   requests from here. */
int cl_coll_on_msg(cl_coll_t *self, const cl_coll_msg_t *msg);

/* Tells the algorithm that comm rank r has failed (or left). */
int cl_coll_on_fail(cl_coll_t *self, int r);

/* Called at least every 100 ms and after every event; checks deadlines
   (calls env->suspect for members that are late). */
int cl_coll_on_tick(cl_coll_t *self);

/* True when the algorithm cl_coll_new would pick for args reads its input
   and reports its output through args->stage (the butterfly all-reduce
   without COLLAB_VERIFY); other collectives need the whole input ready
   before they start, and report no output. */
bool cl_coll_stage_aware(const cl_coll_args_t *args);

/* True while the collective waits for staged input (args->stage answered
   "not yet"); the engine then calls cl_coll_pump on a short timer.
   cl_coll_pump sends what has become ready.  Returns 0 or a negative
   status (the collective is then complete with it). */
bool cl_coll_waits_input(const cl_coll_t *self);
int cl_coll_pump(cl_coll_t *self);

/* true once the result is final and written to the caller's buffers. */
bool cl_coll_done(const cl_coll_t *self);

/* Status of a completed collective: 0, or COLLAB_ERR_PROC_FAILED in strict
   mode when a member failed. */
int cl_coll_status(const cl_coll_t *self);

/* Once done: the comm ranks whose contribution is in the result
   (ascending), their number in *n.  Pointer valid while self lives. */
const int *cl_coll_contributors(const cl_coll_t *self, int *n);

/* Once done: payload bytes sent and received by this member. */
void cl_coll_traffic(const cl_coll_t *self, uint64_t *sent, uint64_t *received);

/* Drops references to the caller's buffers after completion (the engine
   calls it before completing the request), keeping private copies of what
   relays may still need.  Returns 0 or COLLAB_ERR_NO_MEM. */
int cl_coll_release_user_buffers(cl_coll_t *self);

/* True while this completed collective may still owe relays to members
   that have not completed (an all-reduce that completed before every
   DONE, docs/collectives.md §3 "Retention"): the engine tells it of
   failures as it tells the running one, and a finalize waits for it. */
bool cl_coll_owes(const cl_coll_t *self);

/* When the running collective wants to be looked at again although no
   message may come (a butterfly all-reduce member holding every chunk
   before its transfer ran long enough to complete before the others'
   DONE, docs/collectives.md §3 "Retention"); INFINITY when it does not.
   The engine arms a timer for it and calls cl_coll_recheck then, which
   does nothing before that time.  Returns 0 or a negative status (the
   collective then completed with it). */
double cl_coll_wake_at(const cl_coll_t *self);
int cl_coll_recheck(cl_coll_t *self);

/* Signature of a collective (kind, count, dtype, op, root, comm): members
   whose signatures differ are not averaged together. */
uint32_t cl_coll_signature(const cl_coll_args_t *args);

/* The pipelining chunk of an all-reduce among n members whose agreed
   link figures are fig[0 .. n-1] (kbit/s, 0 unknown): `cb` when a figure
   is unknown or all are equal, else the largest power of two in
   [CL_CHUNK_BW_MIN, cb] at which the slowest link carries a chunk from
   each of the n - 1 others within 20 ms (cl_coll_layout.c). */
#define CL_CHUNK_BW_MIN ((size_t)32 * 1024)
size_t cl_coll_chunk_bw(size_t cb, int n, const uint32_t *fig);

#endif
