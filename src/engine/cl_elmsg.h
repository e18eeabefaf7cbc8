/*  cl_elmsg.h - bodies of the elastic swarm's messages (docs/wire.md §7).

    Admission of joiners at step boundaries and state sync travel as wire
    messages of type ELASTIC; the header's `sub` byte says which of the
    messages below the body holds.  cl_wire.c checks the header and hands
    the body over verbatim; this codec is the only code that reads those
    bodies.  Like cl_wire.c it checks every length before reading, every
    field's range after, and accepts a body only when it ends exactly after
    its last field: anything else is COLLAB_ERR_ARG, and the engine drops
    the message and bans its sender.  Pure logic, no sockets.
*/
#ifndef CL_ELMSG_H_INCLUDED
#define CL_ELMSG_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_ELMSG_MAX_JOINERS 1024 /* joiners in one ADMIT at most */
#define CL_ELMSG_MAX_PREFIX 4096  /* start-up signatures in one ADMIT at most */
#define CL_ELMSG_MAX_ITEMS 4096   /* buffers (or results) in one HASHES or DROP at most */
#define CL_ELMSG_HASH 32          /* BLAKE2b-256 */

/* The `sub` byte of an ELASTIC message. */
typedef enum {
    CL_EL_ADMIT_REQ = 1, /* joiner or straggler -> coordinator: admit me to the group */
    CL_EL_ADMIT = 2,     /* coordinator -> members and joiners: who enters at which sequence */
    CL_EL_QUERY = 3,     /* joiner -> donor: report the hashes of your state at s */
    CL_EL_HASHES = 4,    /* donor -> joiner: (index, size, hash) of each registered buffer */
    CL_EL_FETCH = 5,     /* joiner -> donor: send bytes [offset, offset+len) of an item */
    CL_EL_DATA = 6,      /* donor -> joiner: a piece of an item */
    CL_EL_DROP = 7,      /* joiner -> donors: these buffers differ between you; forget them */
    CL_EL_NACK = 8,      /* donor -> joiner: cannot serve a FETCH or QUERY */
    CL_EL_PROBE = 9,     /* a peer that was paused -> members: am I still in the view? */
    CL_EL_CKPT = 10,     /* checkpoints (docs/monitor.md §7): request, notice or resume */
} cl_el_type_t;

/* What a CKPT says (its `ckpt` field). */
enum {
    CL_EL_CKPT_REQUEST = 1, /* monitor -> admitter: take a checkpoint `every` steps after `step` */
    CL_EL_CKPT_NOTICE = 2,  /* admitter -> members, monitor: copy your state at s for `key` */
    CL_EL_CKPT_RESUME = 3,  /* monitor -> a new first peer: start from its checkpoint at s */
};

/* What a FETCH, DATA or NACK is about. */
enum { CL_EL_ITEM_BUFFER = 0, CL_EL_ITEM_RESULT = 1 };

/* NACK reasons. */
enum {
    CL_EL_NACK_MOVED = 1,   /* the donor is past s (its program went on) or not in it */
    CL_EL_NACK_UNKNOWN = 2, /* no such buffer or result (dropped, trimmed) */
    CL_EL_NACK_READ = 3,    /* the buffer could not be read (freed, unmapped) */
};

#define CL_EL_JOINER_READMIT 0x01u /* a straggler to resync, weight 0 in its first step */

typedef struct {
    uint8_t key[32]; /* public key */
    int32_t rank;    /* world rank, 0 .. 2^20-1 */
    uint8_t flags;   /* CL_EL_JOINER_* */
} cl_el_joiner_t;

/* One registered buffer (HASHES). */
typedef struct {
    uint64_t index;              /* start-up index of the broadcast */
    uint64_t size;               /* bytes */
    uint8_t hash[CL_ELMSG_HASH]; /* BLAKE2b-256 of size (u64 LE) || contents */
} cl_el_buf_t;

/* One kept start-up result (HASHES). */
typedef struct {
    uint64_t index;              /* start-up index of the collective */
    uint32_t signature;          /* its stream signature */
    uint64_t len;                /* result bytes */
    uint8_t hash[CL_ELMSG_HASH]; /* BLAKE2b-256 of len (u64 LE) || bytes */
} cl_el_res_t;

/* A decoded body.  Arrays are malloc'ed by the decoder (cl_elmsg_clear);
   DATA's bytes point into the caller's body buffer. */
typedef struct {
    uint8_t type; /* cl_el_type_t */
    uint64_t s;   /* admission sequence (every type but ADMIT_REQ and PROBE) */
    /* ADMIT_REQ */
    uint8_t readmit; /* 1: a straggler asks to come back */
    uint64_t posted; /* collectives it posted on the world communicator */
    /* ADMIT */
    uint64_t prefix; /* start-up collectives the joiners skip */
    uint64_t w0_end; /* readmitted stragglers weigh 0 in sequences [s, w0_end) */
    uint64_t gen;    /* group generation (view epoch) that admits them */
    cl_el_joiner_t *joiners;
    uint32_t njoiners;
    uint32_t *sigs; /* stream signatures of start-up collectives 0 .. nsigs-1 */
    uint32_t nsigs;
    /* HASHES */
    cl_el_buf_t *bufs;
    uint32_t nbufs;
    cl_el_res_t *res;
    uint32_t nres;
    /* FETCH, DATA, NACK */
    uint8_t what; /* CL_EL_ITEM_* */
    uint64_t index;
    uint64_t offset;
    uint64_t len;        /* FETCH, NACK: bytes asked; DATA: bytes carried */
    uint8_t reason;      /* NACK */
    const uint8_t *data; /* DATA */
    /* DROP */
    uint64_t *drops;
    uint32_t ndrops;
    /* PROBE */
    uint64_t epoch; /* the sender's view epoch */
    /* CKPT (also s; prefix and sigs for NOTICE and RESUME) */
    uint8_t ckpt;    /* CL_EL_CKPT_* */
    uint64_t step;   /* REQUEST: the last step checkpointed; else the step s begins */
    uint64_t every;  /* REQUEST: steps between checkpoints, 1 .. 2^30 */
    uint8_t key[32]; /* NOTICE: the monitor that fetches; else zero */
} cl_elmsg_t;

/* Decodes the body of an ELASTIC message whose header `sub` is `type`.
   Returns 0 with *out filled (release with cl_elmsg_clear), COLLAB_ERR_ARG
   for a malformed body (an unknown type included), COLLAB_ERR_NO_MEM.
   Never reads outside body[0 .. len). */
int cl_elmsg_decode(uint8_t type, const uint8_t *body, size_t len, cl_elmsg_t *out);

/* Encodes m into a malloc'ed body the caller owns (*out may be NULL when
   *outlen is 0).  Refuses (COLLAB_ERR_ARG) what the decoder would reject;
   COLLAB_ERR_NO_MEM. */
int cl_elmsg_encode(const cl_elmsg_t *m, uint8_t **out, size_t *outlen);

/* Frees the arrays the decoder allocated and zeroes *m. */
void cl_elmsg_clear(cl_elmsg_t *m);

/* Name of a type ("ADMIT", ...) or "unknown". */
const char *cl_elmsg_name(int type);

/* The hash of a buffer or result in HASHES and of what DATA delivers:
   BLAKE2b-256 over len (u64 LE) || bytes. */
void cl_elmsg_hash(const void *data, uint64_t len, uint8_t out[CL_ELMSG_HASH]);

#endif
