/*  mpi_collab.h - the ABI-neutral core API of mpicollab.

    Both MPI faces (MPICH ABI, Open MPI ABI) translate their handles and
    call only what is declared here.  Nothing in this header depends on
    mpi.h or on ZeroMQ.  Every function is safe to call from any thread
    once collab_init() has returned, unless its comment says otherwise.

    Buffers passed to collectives and point-to-point calls belong to the
    caller; the core reads/writes them only until the call (or, for
    nonblocking calls, the request) completes.
*/
#ifndef MPI_COLLAB_H_INCLUDED
#define MPI_COLLAB_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COLLAB_EXPORT __attribute__((visibility("default")))
#else
#define COLLAB_EXPORT
#endif

/* ---------------------------------------------------------------------- */
/* Status codes.  0 is success, every error is negative.  Only the ABI
   faces map these to MPI error classes. */
typedef enum {
    COLLAB_OK = 0,
    COLLAB_ERR_ARG = -1,          /* bad argument (generic) */
    COLLAB_ERR_NO_MEM = -2,       /* allocation failed */
    COLLAB_ERR_PROC_FAILED = -3,  /* a peer needed by the call failed (strict, p2p) */
    COLLAB_ERR_REVOKED = -4,      /* communicator revoked */
    COLLAB_ERR_CONFIG = -5,       /* invalid COLLAB_* configuration (already logged) */
    COLLAB_ERR_NOT_INIT = -6,     /* collab_init() not called / already finalized */
    COLLAB_ERR_INTERNAL = -7,     /* invariant broken or engine gone (logged) */
    COLLAB_ERR_UNSUPPORTED = -8,  /* operation out of scope */
    COLLAB_ERR_TRUNCATE = -9,     /* message longer than the receive buffer */
    COLLAB_ERR_RANK = -10,        /* rank argument out of range */
    COLLAB_ERR_ROOT = -11,        /* root argument out of range */
    COLLAB_ERR_COUNT = -12,       /* count argument invalid */
    COLLAB_ERR_TYPE = -13,        /* datatype unsupported for this call */
    COLLAB_ERR_OP = -14,          /* operation undefined for this datatype */
    COLLAB_ERR_TAG = -15,         /* tag out of range */
    COLLAB_ERR_COMM = -16,        /* invalid communicator */
    COLLAB_ERR_REQUEST = -17,     /* invalid request */
    COLLAB_ERR_NETWORK = -18,     /* could not reach the swarm (logged) */
    COLLAB_ERR_TIMEOUT = -19,     /* a deadline passed (logged) */
    COLLAB_ERR_MISMATCH = -20,    /* this program differs from the swarm's (logged) */
    COLLAB_ERR_LEFT = -21,        /* this peer left the swarm (collab_leave, COLLAB_LEAVE_ON) */
} collab_status_t;

/* Returns a short static English description of a status code. */
COLLAB_EXPORT const char *collab_strerror(int status);

/* ---------------------------------------------------------------------- */
/* Basic datatypes the core can reduce.  Derived (contiguous) types are
   flattened by the faces into a basic type and a count.  Pair types keep
   the C layout of MPI's struct {value; int index;} (with padding). */
typedef enum {
    COLLAB_INT8,
    COLLAB_INT16,
    COLLAB_INT32,
    COLLAB_INT64,
    COLLAB_UINT8,
    COLLAB_UINT16,
    COLLAB_UINT32,
    COLLAB_UINT64,
    COLLAB_FLOAT16,     /* IEEE binary16 (MPIX_C_FLOAT16) */
    COLLAB_FLOAT,
    COLLAB_DOUBLE,
    COLLAB_LONG_DOUBLE, /* x86-64 80-bit in 16 bytes */
    COLLAB_C_BOOL,      /* 1 byte, logical ops only */
    COLLAB_C_FLOAT_COMPLEX,
    COLLAB_C_DOUBLE_COMPLEX,
    COLLAB_C_LONG_DOUBLE_COMPLEX,
    COLLAB_FLOAT_INT,       /* struct {float; int;}        size 8  extent 8  */
    COLLAB_DOUBLE_INT,      /* struct {double; int;}       size 12 extent 16 */
    COLLAB_LONG_INT,        /* struct {long; int;}         size 12 extent 16 */
    COLLAB_SHORT_INT,       /* struct {short; int;}        size 6  extent 8  */
    COLLAB_2INT,            /* struct {int; int;}          size 8  extent 8  */
    COLLAB_LONG_DOUBLE_INT, /* struct {long double; int;}  size 20 extent 32 */
    COLLAB_BYTE,            /* opaque bytes: no arithmetic (bcast/gather only) */
    COLLAB_DTYPE_COUNT
} collab_dtype_t;

/* Extent in bytes of one element of a basic datatype (0 if invalid). */
COLLAB_EXPORT size_t collab_dtype_extent(collab_dtype_t t);

typedef enum {
    COLLAB_OP_SUM,
    COLLAB_OP_PROD,
    COLLAB_OP_MAX,
    COLLAB_OP_MIN,
    COLLAB_OP_LAND,
    COLLAB_OP_LOR,
    COLLAB_OP_LXOR,
    COLLAB_OP_BAND,
    COLLAB_OP_BOR,
    COLLAB_OP_BXOR,
    COLLAB_OP_MAXLOC,
    COLLAB_OP_MINLOC,
    COLLAB_OP_REPLACE,
    COLLAB_OP_NO_OP,
    COLLAB_OP_USER, /* see collab_op_t.user_fn */
    COLLAB_OP_COUNT
} collab_op_kind_t;

/* A user reduction: computes inout[i] = in[i] (op) inout[i] for count
   elements, like MPI's user functions.  The face wraps the MPI callback
   (which takes ABI handles) into this signature.  It runs on the engine
   thread; it must not call back into collab_*. */
typedef void(collab_user_fn_t)(const void *in, void *inout, size_t count, void *ctx);

typedef struct {
    collab_op_kind_t kind;
    collab_user_fn_t *user_fn; /* only for COLLAB_OP_USER */
    void *user_ctx;            /* passed to user_fn */
    int commutative;           /* only for COLLAB_OP_USER */
} collab_op_t;

/* Returns 1 if op is defined for datatype t (MPI's table), else 0. */
COLLAB_EXPORT int collab_op_valid(collab_op_kind_t op, collab_dtype_t t);

/* Reduces count elements: inout[i] = in[i] (op) inout[i].  Used by the
   faces for MPI_Reduce_local; the engine uses the same kernels. */
COLLAB_EXPORT int collab_reduce_local(const void *in, void *inout, size_t count,
                                      collab_dtype_t t, const collab_op_t *op);

/* ---------------------------------------------------------------------- */
/* Life cycle. */

typedef struct {
    int requested_thread_level; /* 0..3 = SINGLE..MULTIPLE (MPI order) */
    const char *abi_name;       /* "mpich" or "ompi", for logs and checks */
} collab_init_args_t;

/* Reads and validates every COLLAB_* variable, starts the engine thread,
   joins (or founds) the swarm and returns once this peer holds a rank.
   On a configuration or network error it logs one clear line and returns
   a negative status; the face then ends the program. */
COLLAB_EXPORT int collab_init(const collab_init_args_t *args);

/* 1 after a successful collab_init() (and until the process ends). */
COLLAB_EXPORT int collab_initialized(void);
/* 1 once collab_finalize() has run. */
COLLAB_EXPORT int collab_finalized(void);

/* For a second face in the same process (the NCCL face beside an MPI
   face): when the core is running, takes one more hold on it and returns
   COLLAB_OK; COLLAB_ERR_NOT_INIT before collab_init() or after the core
   finalized.  collab_init() takes the first hold. */
COLLAB_EXPORT int collab_retain(void);

/* Gives one hold back (collab_init, collab_retain); with holds left it
   returns COLLAB_OK at once.  The last one leaves the swarm gracefully
   (others are told at once) and stops the engine.  Pending nonblocking
   operations are completed or cancelled first.  It returns once what this
   peer sent is on the wire (at most 0.5 s more for peers that no longer
   read), so the process may end at once, even with _exit. */
COLLAB_EXPORT int collab_finalize(void);

/* Leaves the swarm at once (best effort goodbye) and ends this process
   with exit status `code`.  Never returns. */
COLLAB_EXPORT void collab_abort(int code) __attribute__((noreturn));

/* Nominal world size (COLLAB_WORLD_SIZE) and this peer's world rank. */
COLLAB_EXPORT int collab_world_size(void);
COLLAB_EXPORT int collab_world_rank(void);

/* Wall clock in seconds (monotonic, arbitrary origin) and its tick. */
COLLAB_EXPORT double collab_wtime(void);
COLLAB_EXPORT double collab_wtick(void);

/* Host name of this peer, NUL-terminated, truncated to len-1 bytes. */
COLLAB_EXPORT int collab_processor_name(char *name, size_t len);

/* Library version string ("mpicollab X.Y.Z ..."), static. */
COLLAB_EXPORT const char *collab_version_string(void);

/* Copies n bytes from src to dst, each host or device memory (like
   memmove for host memory; overlapping device ranges are handled).  For
   the faces' own copies of user buffers.  Returns 0, COLLAB_ERR_ARG when a
   pointer is NULL with n > 0 or its memory cannot be told, or
   COLLAB_ERR_INTERNAL / COLLAB_ERR_NO_MEM when the device copy fails. */
COLLAB_EXPORT int collab_memcpy(void *dst, const void *src, size_t n);

/* 1 when device (CUDA) buffers are accepted: the device plugin is loaded
   (COLLAB_CUDA, docs/cuda.md); 0 otherwise, also before collab_init(). */
COLLAB_EXPORT int collab_device_support(void);

/* 1 when p points into device (CUDA) memory, 0 for host memory (always 0
   without the device plugin). */
COLLAB_EXPORT int collab_is_device_buffer(const void *p);

/* For the NCCL face: from now on the caller orders device work itself
   (each operation starts once events on the program's streams have
   fired) and the program's streams may wait on the library, so the core
   stops synchronising whole device contexts before it reads or writes
   device buffers (that could wait forever).  Process-wide, cannot be
   undone. */
COLLAB_EXPORT void collab_device_ordered(void);

/* For the NCCL face: allocates in the calling thread the pinned staging
   buffers that operations on buffers of sizes[0..n) bytes will take, so
   that the thread running them allocates nothing (docs/nccl.md §3).
   Returns 0 (also without device support) or COLLAB_ERR_NO_MEM. */
COLLAB_EXPORT int collab_device_reserve(const size_t *sizes, int n);

/* A copy the program made out of a start-up broadcast buffer: `bytes`
   bytes at `src` (inside the buffer) went to `dst`. */
typedef struct {
    const void *src;
    void *dst;
    size_t bytes;
} collab_follow_t;

/* For the NCCL face: from now on the registered start-up broadcast
   buffers are read and written, for joiners, resyncs and audits, at the
   destinations of these copies instead of their own addresses
   (docs/state-sync.md §2, docs/nccl.md §5).  A trainer that broadcasts a
   temporary bucket and copies it into its parameters (PyTorch DDP) then
   serves its parameters' live values.  Must come after the broadcasts it
   names were posted, from the thread that posted them.  Returns 0,
   COLLAB_ERR_ARG (v NULL with n > 0), COLLAB_ERR_NO_MEM or
   COLLAB_ERR_NOT_INIT. */
COLLAB_EXPORT int collab_state_follow(const collab_follow_t *v, size_t n);

/* ---------------------------------------------------------------------- */
/* Communicators.  The world communicator exists after collab_init().
   Ids of derived communicators are computed locally from the parent id,
   the creation index and the colour, so that every peer (and a late
   joiner running the same program) names them the same way. */

typedef struct collab_comm collab_comm_t;

COLLAB_EXPORT collab_comm_t *collab_comm_world(void);
/* A communicator holding only this peer (MPI_COMM_SELF). */
COLLAB_EXPORT collab_comm_t *collab_comm_self(void);

/* Nominal size and this peer's rank in comm. */
COLLAB_EXPORT int collab_comm_size(const collab_comm_t *comm);
COLLAB_EXPORT int collab_comm_rank(const collab_comm_t *comm);
/* World rank of comm rank r (or -1 when out of range). */
COLLAB_EXPORT int collab_comm_world_rank_of(const collab_comm_t *comm, int r);
/* 64-bit id of the communicator (for logs and comparisons). */
COLLAB_EXPORT uint64_t collab_comm_id(const collab_comm_t *comm);

/* Collective over comm: creates a duplicate.  Caller owns *out. */
COLLAB_EXPORT int collab_comm_dup(collab_comm_t *comm, collab_comm_t **out);

/* Collective over comm: MPI_Comm_split.  color < 0 means MPI_UNDEFINED and
   yields *out == NULL.  Caller owns *out. */
COLLAB_EXPORT int collab_comm_split(collab_comm_t *comm, int color, int key,
                                    collab_comm_t **out);

/* Local (no exchange): MPI_Comm_create_group.  ranks[0..n-1] are the comm
   ranks of the members in their new order, this peer among them; every
   member calls it with the same ranks and tag, in the same order as its
   other calls with those ranks and tag on comm, and nobody else calls it.
   COLLAB_ERR_ARG for a bad or repeated rank or when this peer is not a
   member.  Caller owns *out. */
COLLAB_EXPORT int collab_comm_create_group(collab_comm_t *comm, const int *ranks, int n, int tag,
                                           collab_comm_t **out);

/* Frees a communicator made by dup/split; nulls *comm_p.  World and self
   cannot be freed (COLLAB_ERR_COMM). */
COLLAB_EXPORT int collab_comm_free(collab_comm_t **comm_p);

/* ---------------------------------------------------------------------- */
/* Requests for nonblocking calls.  A NULL `req` argument makes a call
   blocking.  A request is completed by collab_wait/collab_test, which
   free it and null the caller's pointer. */

typedef struct collab_request collab_request_t;

typedef struct {
    int source;     /* comm rank of the sender (p2p) or -1 */
    int tag;        /* tag of the message (p2p) or -1 */
    int error;      /* collab_status_t of this operation */
    int cancelled;  /* 1 if cancelled */
    size_t bytes;   /* bytes received (p2p) or 0 */
} collab_status_info_t;

/* Blocks until req completes; fills *st if st != NULL; frees the request
   and sets *req_p = NULL.  Returns the operation's status. */
COLLAB_EXPORT int collab_wait(collab_request_t **req_p, collab_status_info_t *st);

/* Non-blocking check.  *flag = 1 when complete (then as collab_wait). */
COLLAB_EXPORT int collab_test(collab_request_t **req_p, int *flag, collab_status_info_t *st);

/* Blocks until at least one of reqs[0..n) (NULL entries ignored) is
   complete; sets *index (or -1 if all entries are NULL).  Does not free
   anything: the caller then calls collab_wait on that entry. */
COLLAB_EXPORT int collab_wait_any(collab_request_t *const *reqs, int n, int *index);

/* Lets the request complete on its own; the core frees it when done. */
COLLAB_EXPORT int collab_request_free(collab_request_t **req_p);

/* Cancels a pending receive (sends and collectives cannot be cancelled). */
COLLAB_EXPORT int collab_cancel(collab_request_t *req);

/* ---------------------------------------------------------------------- */
/* Collectives.  Counts are in elements of `dtype` for reductions and in
   bytes for data-movement collectives.  sendbuf == NULL means in place
   (MPI_IN_PLACE).  Results follow DESIGN's swarm semantics: with ranks
   absent, SUM returns size x weighted mean of present contributions,
   gather-type slots of absent ranks are zero-filled. */

COLLAB_EXPORT int collab_barrier(collab_comm_t *comm, collab_request_t **req);

COLLAB_EXPORT int collab_bcast(collab_comm_t *comm, void *buf, size_t bytes, int root,
                               collab_request_t **req);

COLLAB_EXPORT int collab_allreduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf,
                                   size_t count, collab_dtype_t dtype, const collab_op_t *op,
                                   collab_request_t **req);

/* recvbuf is only used at root.  sendbuf == NULL (in place) only at root. */
COLLAB_EXPORT int collab_reduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t count, collab_dtype_t dtype, const collab_op_t *op,
                                int root, collab_request_t **req);

/* Each rank receives recvcount elements: block r of the reduced vector. */
COLLAB_EXPORT int collab_reduce_scatter_block(collab_comm_t *comm, const void *sendbuf,
                                              void *recvbuf, size_t recvcount,
                                              collab_dtype_t dtype, const collab_op_t *op,
                                              collab_request_t **req);

/* rcounts/displs in bytes, one per comm rank.  sendbuf == NULL: own block
   is already in place in recvbuf. */
COLLAB_EXPORT int collab_allgatherv(collab_comm_t *comm, const void *sendbuf, size_t sbytes,
                                    void *recvbuf, const size_t *rcounts, const size_t *displs,
                                    collab_request_t **req);

/* rcounts/displs used only at root. */
COLLAB_EXPORT int collab_gatherv(collab_comm_t *comm, const void *sendbuf, size_t sbytes,
                                 void *recvbuf, const size_t *rcounts, const size_t *displs,
                                 int root, collab_request_t **req);

/* scounts/sdispls used only at root.  recvbuf == NULL at root: in place. */
COLLAB_EXPORT int collab_scatterv(collab_comm_t *comm, const void *sendbuf,
                                  const size_t *scounts, const size_t *sdispls, void *recvbuf,
                                  size_t rbytes, int root, collab_request_t **req);

/* Every rank sends `bytes` to every rank (block r of sendbuf to rank r).
   sendbuf == NULL: in place. */
COLLAB_EXPORT int collab_alltoall(collab_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t bytes, collab_request_t **req);

/* ---------------------------------------------------------------------- */
/* Point-to-point between live ranks.  src may be COLLAB_ANY_SOURCE, tag
   COLLAB_ANY_TAG.  A send to an absent rank, or a receive from a rank
   that dies, completes with COLLAB_ERR_PROC_FAILED. */

#define COLLAB_ANY_SOURCE (-1)
#define COLLAB_ANY_TAG (-1)

COLLAB_EXPORT int collab_send(collab_comm_t *comm, const void *buf, size_t bytes, int dest,
                              int tag, collab_request_t **req);
COLLAB_EXPORT int collab_recv(collab_comm_t *comm, void *buf, size_t bytes, int src, int tag,
                              collab_status_info_t *st, collab_request_t **req);

/* Synchronous send (MPI_Ssend / MPI_Issend): as collab_send, but it
   completes only once the receiver has matched the message with a
   receive (or a matched probe).  buf may be reused as soon as the call
   returns (the data is copied). */
COLLAB_EXPORT int collab_ssend(collab_comm_t *comm, const void *buf, size_t bytes, int dest,
                               int tag, collab_request_t **req);

/* A matched message taken off the queue by collab_probe(..., msg_p). */
typedef struct collab_message collab_message_t;

/* Waits (blocking != 0) or checks for a matching message.  *flag = 1 and
   *st filled when one is there.  With msg_p != NULL the message is removed
   from the queue and handed to the caller (MPI_Mprobe). */
COLLAB_EXPORT int collab_probe(collab_comm_t *comm, int src, int tag, int blocking, int *flag,
                               collab_status_info_t *st, collab_message_t **msg_p);

/* Receives a message obtained by collab_probe into buf; frees it. */
COLLAB_EXPORT int collab_mrecv(collab_message_t **msg_p, void *buf, size_t bytes,
                               collab_status_info_t *st);

/* ---------------------------------------------------------------------- */
/* Swarm extensions (MPIX_Collab_*). */

/* Marks the start of a training step (explicit admission boundary). */
COLLAB_EXPORT int collab_step(void);

/* Sets a named value of this peer's reports to the swarm's monitors
   (docs/monitor.md): name 1 to 32 characters of [A-Za-z0-9_.], value
   finite.  Returns COLLAB_OK, COLLAB_ERR_ARG, or COLLAB_ERR_NOT_INIT. */
COLLAB_EXPORT int collab_report(const char *name, double value);

/* Sets this peer's averaging weight (> 0, at most 1e9 like COLLAB_WEIGHT;
   COLLAB_ERR_ARG otherwise). */
COLLAB_EXPORT int collab_set_weight(double weight);

/* Leaves the swarm gracefully while the program runs on, as finalize
   does: running collectives get COLLAB_TIMEOUT to finish, then the peer
   says goodbye (its contributions count in every collective it entered)
   and waits for the members' acknowledgements.  Afterwards every call but
   collab_finalize fails with COLLAB_ERR_LEFT.  Async-signal-safe: a
   signal handler may call it.  Returns COLLAB_OK once left,
   COLLAB_ERR_TIMEOUT if that took longer than 2 x COLLAB_TIMEOUT + 2 s
   (the leave goes on), COLLAB_ERR_NOT_INIT outside init..finalize. */
COLLAB_EXPORT int collab_leave(void);

#define COLLAB_MAX_INFO_RANKS 1024

typedef struct {
    int group_size;           /* members that took part */
    int world_size;           /* nominal size of the communicator */
    uint64_t sequence;        /* collective sequence number on its communicator */
    uint64_t bytes_sent;      /* payload bytes this peer sent */
    uint64_t bytes_received;  /* payload bytes this peer received */
    double seconds;           /* wall time spent in the call */
    int nranks;               /* entries used in ranks[] (min(group_size, MAX)) */
    int ranks[COLLAB_MAX_INFO_RANKS]; /* comm ranks that took part, ascending */
} collab_info_t;

/* Fills *info about the last collective this peer completed. */
COLLAB_EXPORT int collab_last_info(collab_info_t *info);

#ifdef __cplusplus
}
#endif
#endif
