/*  cl_coll_impl.h - what the collective algorithms share (internal).

    cl_coll.c owns the common part of every collective: the copied
    arguments, the member list and its failed set (this member's *view*),
    traffic counters, deadlines, the DONE bookkeeping and completion.  Each
    algorithm file (cl_coll_exchange.c, cl_coll_butterfly.c,
    cl_coll_bcast.c, cl_coll_direct.c) fills a cl_algo_t and keeps its own
    state behind `st`.  Members are named by their index in args.members
    (0 .. n-1, ascending comm rank) everywhere inside the area; only the
    public entry points in cl_coll.c translate comm ranks.

    Message types on the wire (the `sub` byte of a COLL message, see
    docs/collectives.md for every algorithm's use of part, chunk and aux).
*/
#ifndef CL_COLL_IMPL_H_INCLUDED
#define CL_COLL_IMPL_H_INCLUDED

#include "cl_coll.h"
#include "cl_reduce.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum {
    CL_MSG_DATA = 1,   /* a contribution, sent to the part's reducer */
    CL_MSG_RESULT = 2, /* a finished chunk, from its producer (or a bcast forwarder) */
    CL_MSG_STATUS = 3, /* relay rule: which chunks of a part the sender holds */
    CL_MSG_RELAY = 4,  /* relay rule: a held chunk sent to a member that lacks it */
    CL_MSG_DONE = 5,   /* the sender holds everything it needs */
    CL_MSG_VREQ = 6,   /* COLLAB_VERIFY: a validator asks for the sender's input of a part */
    CL_MSG_VDATA = 7,  /* COLLAB_VERIFY: one chunk of that input, to the validator */
    CL_MSG_VDIG = 8,   /* COLLAB_VERIFY: the part's reducer's digests of what it folded */
    CL_MSG_MAX = 8
};

/* Bits of `aux` in RESULT and RELAY messages. */
#define CL_AUX_ABSENT 1u /* the chunk is absent (its owner failed and nobody held it) */

/* Default pipelining chunk when args->chunk_bytes is 0. */
#define CL_COLL_DEFAULT_CHUNK ((size_t)256 * 1024)

/* Minimum interval between two deadline scans in cl_coll_on_tick. */
#define CL_COLL_TICK_MIN 0.02

typedef struct cl_algo {
    const char *name;
    /* Sends the first messages; may complete at once. */
    int (*start)(cl_coll_t *self);
    /* A message from member `from` (validated: a live member, not self,
       known type).  Returns 0 or COLLAB_ERR_ARG for a message to drop. */
    int (*on_msg)(cl_coll_t *self, int from, const cl_coll_msg_t *msg);
    /* Member idx has just been added to the failed set. */
    void (*on_fail)(cl_coll_t *self, int idx);
    /* Adds to bytes[i] what this member still waits for from member i
       (bytes has n entries, zeroed by the caller). */
    void (*expect)(cl_coll_t *self, size_t *bytes);
    /* Drops references to user buffers, keeping private copies of what
       relays may need.  Returns 0 or COLLAB_ERR_NO_MEM. */
    int (*release)(cl_coll_t *self);
    /* Frees `st`. */
    void (*destroy)(cl_coll_t *self);
    /* Optional (algorithms that read a staged input, cl_coll_stage_aware):
       retries what waited for input; sets self->in_wait again when
       something still waits.  Returns 0 or a negative status. */
    int (*pump)(cl_coll_t *self);
    /* Optional: true while a completed collective may still owe relays
       to members that have not completed (a butterfly all-reduce that
       completed before every DONE keeps its result for them). */
    bool (*owes)(const cl_coll_t *self);
    /* Optional: looks again at whether this member can complete, at the
       time it asked for (self->wake_at, cl_coll_recheck).  Returns 0 or a
       negative status. */
    int (*recheck)(cl_coll_t *self);
} cl_algo_t;

struct cl_coll {
    cl_coll_args_t a;      /* copy of the arguments; arrays point to the owned copies below */
    cl_coll_env_t env;     /* the engine's table */
    const cl_algo_t *algo; /* the algorithm chosen by cl_coll_new */
    void *st;              /* the algorithm's state */
    int n;                 /* members */
    int me;                /* index of this member */
    int root;              /* member index of the root, -1 when absent or not rooted */
    size_t esize;          /* extent of one element of a.dtype */
    cl_compress_t codec;   /* swarm-wide wire codec (NONE unless float/double SUM, and with
                              adaptive compression); read it through cl_coll_codec */
    cl_compress_t *codecs; /* adaptive compression: each member's upload codec, else NULL */
    int *members;          /* owned copy of a.members */
    double *weights;       /* owned weights (all 1 when none were given) */
    int *clients;          /* owned client flags (all 0 when none were given) */
    uint32_t *bandwidths;  /* owned bandwidth figures (all 0 when none were given) */
    size_t *counts;        /* owned copy of a.counts, or NULL */
    size_t *displs;        /* owned copy of a.displs, or NULL */
    size_t nb;             /* bytes of a member bitmap */
    uint8_t *failed;       /* members this member knows to have failed (its view) */
    int nfailed;           /* popcount of failed; identifies the view over time */
    uint8_t *done_from;    /* members that sent DONE */
    bool started;          /* cl_coll_start ran */
    bool done;             /* completed */
    bool released;         /* user buffers dropped */
    bool in_wait;          /* waits for staged input (a.stage): cl_coll_pump retries */
    int status;            /* completion status */
    int *contrib;          /* comm ranks whose contribution is in the result */
    int ncontrib;
    uint64_t sent;     /* payload bytes sent */
    uint64_t received; /* payload bytes received */
    double *heard;     /* per member: last time a valid message came from it */
    double *waiting;   /* per member: since when this member waits for it, < 0 none */
    double last_check; /* time of the last deadline scan */
    double t_start;    /* when cl_coll_start ran */
    double *first;     /* per member: when its first valid message came, < 0 none yet */
    double wake_at;    /* when the algorithm wants cl_coll_recheck without a message coming
                          (INFINITY: never) */
    bool sig;          /* proofs are signed: every other member reads them (env->signs) and
                          there are 3 members or more; a proof of tags is then refused */
    int forged;        /* members that sent this member a value its producer did not sign */
    uint8_t *disowned; /* those members (counted failed here, cl_coll_disown), or NULL */
};

/* The codec member m encodes what it sends to member `to` with
   (docs/collectives.md §2.2c): the swarm's codec, or, with adaptive
   compression, m's own codec (results and the exchange's inputs, which
   several members decode: pass to = -1) or, for a contribution sent to
   one reducer, the stronger of the sender's and the reducer's. */
static inline cl_compress_t cl_coll_codec(const cl_coll_t *self, int m, int to)
{
    if (self->codecs == NULL)
        return self->codec;
    cl_compress_t c = self->codecs[m];
    if (to >= 0 && self->codecs[to] > c)
        c = self->codecs[to];
    return c;
}

/* True when some member of the collective sends encoded values. */
bool cl_coll_any_codec(const cl_coll_t *self);

/* Adaptive compression: each member's upload codec from the agreed
   bandwidth figures of all n members (kbit/s): INT8 for a figure at most
   a quarter of the median, FP16 at most half of it, NONE otherwise; every
   member NONE when a figure is unknown (0) or n < 2.  Returns COLLAB_OK
   or COLLAB_ERR_NO_MEM (out then undefined). */
int cl_coll_adaptive_codecs(const uint32_t *fig, int n, cl_compress_t *out);

/* --- bitmaps -------------------------------------------------------- */

static inline size_t cl_bm_bytes(size_t bits)
{
    return (bits + 7) / 8;
}
static inline bool cl_bit(const uint8_t *bm, size_t i)
{
    return (bm[i >> 3] >> (i & 7)) & 1u;
}
static inline void cl_bit_set(uint8_t *bm, size_t i)
{
    bm[i >> 3] = (uint8_t)(bm[i >> 3] | (1u << (i & 7)));
}
static inline void cl_bit_clr(uint8_t *bm, size_t i)
{
    bm[i >> 3] = (uint8_t)(bm[i >> 3] & ~(1u << (i & 7)));
}
/* Number of bits set among the first `bits` bits. */
size_t cl_bm_count(const uint8_t *bm, size_t bits);

/* --- per-member and per-part tables ---------------------------------- */

/* Frees rows[0..n-1] and then the table rows itself, for a table of n
   heap rows (any pointer type); rows may be NULL, rows[i] too. */
#define CL_FREE_ROWS(rows, n)                                                                      \
    do {                                                                                           \
        if ((rows) != NULL)                                                                        \
            for (int r_ = 0; r_ < (n); r_++)                                                       \
                free((rows)[r_]);                                                                  \
        free(rows);                                                                                \
    } while (0)

/* --- services shared by the algorithms (cl_coll.c) ------------------ */

/* True when member idx is in range and not known to have failed. */
static inline bool cl_coll_alive(const cl_coll_t *self, int idx)
{
    return idx >= 0 && idx < self->n && !cl_bit(self->failed, (size_t)idx);
}

/* True when member idx is counted failed here only because it sent a
   forgery (cl_coll_disown): it lives for everybody else, so this member
   still sends it what the algorithm owes every live member (its DONE,
   relays it asks for), and reads its statuses and relays (checked like
   anyone's), but takes nothing else from it. */
static inline bool cl_coll_disowned(const cl_coll_t *self, int idx)
{
    return self->disowned != NULL && idx >= 0 && idx < self->n &&
           cl_bit(self->disowned, (size_t)idx);
}

/* Monotonic seconds from the engine. */
double cl_coll_now(cl_coll_t *self);

/* Sends one message to member idx (skipped, returning 0, when idx is this
   member or known failed).  The payload is the concatenation of head
   (hlen bytes) and data (dlen bytes); either may be empty.  Counts the
   payload in the traffic.  Returns 0 or a negative status. */
int cl_coll_send(cl_coll_t *self, int idx, int type, uint32_t part, uint32_t chunk, uint32_t aux,
                 const void *head, size_t hlen, const void *data, size_t dlen);

/* Relay tags (docs/security.md §6): the producer of a chunk gives every
   member its own tag, so that a copy relayed by a third member counts
   only if it is the producer's.  Bytes of one tag: */
#define CL_COLL_TAG 16

/* Tags of chunk (part, chunk) of this collective with value val (the
   bits every member holds) and context ctx (the butterfly: its
   contributor bitmap; else empty), as this member produces them: for each
   live member m but this one, BLAKE2b-128 keyed with the key this member
   and m share (env->pair_key) over comm id, seq, part, chunk, ctx and the
   BLAKE2b-256 digest of val.  out gets n x CL_COLL_TAG bytes (zero where
   no key, and all zero with two members, where no third can relay).
   Returns 0 or a negative status. */
int cl_coll_tags_make(cl_coll_t *self, uint32_t part, uint32_t chunk, const uint8_t *ctx,
                      size_t ctxlen, const void *val, size_t bytes, uint8_t *out);

/* True when tags (n x CL_COLL_TAG, as relayed) hold this member's valid
   tag of that chunk from member `producer`; true without keys
   (env->pair_key NULL); false with two members (nobody relays). */
bool cl_coll_tags_check(cl_coll_t *self, uint32_t part, uint32_t chunk, int producer,
                        const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes,
                        const uint8_t *tags);

/* Signed proofs (docs/security.md §6, wire version 9): the producer's
   signing key (cl_xsign, bound to its identity) and its Ed25519
   signature over the domain "mpicollab chunk v1", comm id, seq (u64
   each), part, chunk and the producer's comm rank (u32 each, all
   little-endian), ctx and the BLAKE2b-256 digest of the value; the
   engine puts the run id first.  One proof serves every member.  Bytes: */
#define CL_COLL_SIG 96

/* aux bit of a RESULT or RELAY whose proof is signed (else: tags). */
#define CL_AUX_SIGNED 0x40000000u

/* Bytes of a proof: signed (CL_COLL_SIG) or tags (n x CL_COLL_TAG). */
static inline size_t cl_coll_proof_bytes(const cl_coll_t *self, bool sig)
{
    return sig ? CL_COLL_SIG : (size_t)self->n * CL_COLL_TAG;
}

/* The proof of chunk (part, chunk) with value val and context ctx that
   this member produces: signed when the collective signs (self->sig),
   else tags (cl_coll_tags_make).  out gets cl_coll_proof_bytes bytes.
   Returns 0 or a negative status. */
int cl_coll_proof_make(cl_coll_t *self, uint32_t part, uint32_t chunk, const uint8_t *ctx,
                       size_t ctxlen, const void *val, size_t bytes, uint8_t *out);

/* The kind of value a signature covers: one domain each (cl_coll_sign.c). */
typedef enum {
    CL_PROOF_CHUNK, /* butterfly RESULT chunk: ctx is the contributor bitmap */
    CL_PROOF_PIECE, /* exchange piece (a member's input): ctx is its length (u32 LE) */
    CL_PROOF_BCAST  /* broadcast chunk of the root or a stand-in: ctx is the length (u64 LE) */
} cl_proof_kind_t;

/* Signs the value val (bytes) of (part, chunk) of kind `kind`, produced by
   this member, with context ctx: CL_COLL_SIG bytes into out (env->sign).
   Returns 0 or a negative status. */
int cl_coll_sig_make(cl_coll_t *self, cl_proof_kind_t kind, uint32_t part, uint32_t chunk,
                     const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes, uint8_t *out);

/* True when proof (CL_COLL_SIG bytes) is member producer's valid
   signature of that value of kind `kind` (env->verify: the key of its
   identity as the collective started).  False for this member itself. */
bool cl_coll_sig_valid(cl_coll_t *self, cl_proof_kind_t kind, uint32_t part, uint32_t chunk,
                       int producer, const uint8_t *ctx, size_t ctxlen, const void *val,
                       size_t bytes, const uint8_t *proof);

/* Member `from` sent `what` ("a relay", "a result") of (part, chunk)
   whose signature is not its producer's: only a hostile member does
   that.  Names it in the log (once: it is out of the collective here
   afterwards), counts it in self->forged and counts it failed in this
   collective at this member (cl_coll_on_fail), so that the repair asks
   the other holders. */
void cl_coll_disown(cl_coll_t *self, int from, const char *what, int part, size_t chunk,
                    int producer);

/* True when the signed proof (CL_COLL_SIG bytes) is member producer's
   valid signature of chunk (part, chunk) with that value and context.
   Costs one digest of val, one check of the key's binding (cached by the
   engine) and one verification. */
bool cl_coll_sig_check(cl_coll_t *self, uint32_t part, uint32_t chunk, int producer,
                       const uint8_t *ctx, size_t ctxlen, const void *val, size_t bytes,
                       const uint8_t *proof);

/* Sends DONE to every live member but this one. */
void cl_coll_send_done(cl_coll_t *self);

/* True when every live member but this one has sent DONE. */
bool cl_coll_all_done(const cl_coll_t *self);

/* Marks the collective complete with `status`; later calls are ignored. */
void cl_coll_complete(cl_coll_t *self, int status);

/* Sets the contributor list from a member bitmap.  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int cl_coll_set_contrib(cl_coll_t *self, const uint8_t *bm);

/* Ends a collective whose pieces were gathered per member: on rc == 0 sets
   the contributors from bm, then completes with rc, or with
   COLLAB_ERR_TRUNCATE when a member's piece had the wrong length (a bit
   set in bad).  Returns the status the collective completed with, or rc. */
int cl_coll_finish_pieces(cl_coll_t *self, int rc, const uint8_t *bm, const uint8_t *bad);

/* Reduces k inputs of the members listed in idx[] (ascending) into out
   with the collective's op, following DESIGN §2: SUM is the plain sum in
   rank order when every rank is present with equal weights, otherwise
   size x weighted mean.  out aliases no input.  Returns 0 or a status. */
int cl_coll_combine(cl_coll_t *self, void *out, const void *const *in, const int *idx, int k,
                    size_t count);

/* True when SUM takes the plain form for a full group of n members with
   these weights (computed once per collective). */
bool cl_coll_plain_sum(const cl_coll_t *self);

/* Lowest live member that may produce (not in client mode), or the lowest
   live member when every live one is a client; -1 when none is alive. */
int cl_coll_lowest_producer(const cl_coll_t *self);

/* Lowest live member, -1 when none. */
int cl_coll_lowest_alive(const cl_coll_t *self);

/* Element range [lo, lo+len) of piece i when `count` elements are cut in
   k pieces as evenly as possible (the first count % k pieces get one more). */
void cl_coll_split(size_t count, size_t k, size_t i, size_t *lo, size_t *len);

/* True when cl_coll_split_bw sizes parts by bandwidth: an all-reduce of
   `count` elements in k >= 2 parts among n >= 3 members, every figure
   known (> 0), not all equal, and at least 64 elements per part. */
bool cl_coll_split_weighted(size_t count, size_t k, int n, const uint32_t *fig);

/* Element ranges [lo[i], lo[i]+len[i]) of the k parts of a butterfly
   all-reduce of `count` elements among n members (clients included),
   part i reduced by a member whose agreed bandwidth figure is fig[i]
   (kbit/s, 0 unknown): the time-optimal split of cl_coll_layout.c, each
   part between 1/16 and 2 equal shares; exactly cl_coll_split's layout
   when cl_coll_split_weighted is false.  Integer arithmetic only, so
   every member computes the same layout. */
void cl_coll_split_bw(size_t count, size_t k, int n, const uint32_t *fig, size_t *lo, size_t *len);

/* Number of chunks of a piece of `bytes` bytes (at least 1) and the
   offset/length of chunk c, with chunk size `cb` (a multiple of the
   element size for reductions). */
size_t cl_coll_nchunks(size_t bytes, size_t cb);
void cl_coll_chunk(size_t bytes, size_t cb, size_t c, size_t *off, size_t *len);

/* True when the vector must not be cut: a user op may work on elements
   of a derived datatype that the face flattened into `mult` basic
   elements (and MINLOC on Fortran pairs works on two), which the core
   cannot see.  The reduction then runs on the whole vector (one part, one
   chunk; reduce_scatter_block: one chunk per block, whole by design). */
bool cl_coll_whole(const cl_coll_t *self);

/* Chunk size in bytes for this collective (element-aligned, > 0). */
size_t cl_coll_chunk_bytes(const cl_coll_t *self);

/* The algorithms. */
extern const cl_algo_t cl_algo_exchange;  /* small allreduce, barrier, allgatherv */
extern const cl_algo_t cl_algo_butterfly; /* allreduce, reduce, reduce_scatter_block */
extern const cl_algo_t cl_algo_bcast;     /* bcast: pipelined chain or binomial tree */
extern const cl_algo_t cl_algo_direct;    /* gatherv, scatterv, alltoall, small reduce */

#endif
