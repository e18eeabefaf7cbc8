/*  cl_coll_butterfly.h - state shared by the butterfly's two files:
    cl_coll_butterfly.c (layout, messages, completion) and
    cl_coll_bfacc.c (the reducer's side: contributions folded in rank
    order into one chunk of the result).  Internal to src/coll.
*/
#ifndef CL_COLL_BUTTERFLY_H_INCLUDED
#define CL_COLL_BUTTERFLY_H_INCLUDED

#include "cl_coll_impl.h"
#include "cl_relay.h"

#define BF_TAG CL_COLL_TAG

/* The reducer's state for one chunk. */
typedef struct {
    uint8_t *acc;     /* eager mode: fold of the contributions folded so far */
    uint8_t **buf;    /* per member: a contribution waiting for its turn (decoded) */
    uint8_t *arrived; /* members whose contribution is here (buffered or folded) */
    uint8_t *folded;  /* members folded into acc (eager) */
    int next;         /* eager: next member index in rank order */
} bf_acc_t;

typedef struct {
    cl_relay_t *rl;
    int nparts;
    size_t ce;       /* elements per chunk */
    size_t *in_lo;   /* per part: first element in the input vector */
    size_t *out_lo;  /* per part: first element in the output buffer */
    size_t *len;     /* per part: elements */
    int *consumer;   /* per part: consuming member, -1 for all */
    int *prod0;      /* per part: first producer */
    bf_acc_t **acc;  /* per part: per chunk, or NULL until needed */
    uint8_t **sent;  /* per part: nchunks x nb, producers this member sent to */
    uint8_t **pend;  /* per part: nchunks x nb, producers waiting for staged input (a.stage) */
    uint8_t **cbm;   /* per part: nchunks x nb, contributors of each held chunk */
    uint8_t **tags;  /* per part: nchunks x bf_slot, its producer's proof of each held chunk */
    int **rfrom;     /* per part: per chunk, member that delivered the RESULT (-1) */
    int **vprod;     /* per part: per chunk, producer of the held value, whose tags are in tags */
    uint8_t **store; /* per part: private result (parts this member reduces but does not consume) */
    uint8_t *kept;   /* all-reduce completed before every DONE: the result, copied at release
                        for the relays still owed (freed once every live member sent DONE) */
    const uint8_t *input; /* where this member's input vector is read */
    uint8_t *input_copy;  /* private copy of the input (reduce_scatter_block) */
    uint8_t *scratch;     /* one chunk: a decoded contribution folded at once */
    uint8_t *res;         /* one chunk: a result being finished */
    uint8_t *wire;        /* a RESULT being framed: bitmap, then the (encoded) chunk */
    struct bf_verify *vf; /* COLLAB_VERIFY state (cl_coll_bfverify.c), NULL when off */
    bool eager;           /* fold contributions as they come (not weighted SUM) */
    bool done_sent;
} bf_t;

static inline bf_t *bf_st(cl_coll_t *self)
{
    return self->st;
}

/* Bytes of the proof kept with a held chunk: a flag (1: signed, else
   tags), then the proof (cl_coll_proof_bytes of its kind). */
static inline size_t bf_slot(const cl_coll_t *self)
{
    size_t t = (size_t)self->n * BF_TAG;
    return 1 + (t > CL_COLL_SIG ? t : CL_COLL_SIG);
}

/* Chunk c of part j: first element (input), element count. */
void bf_chunk(cl_coll_t *self, int j, size_t c, size_t *first, size_t *cnt);

/* Where the value of (j, c) lives in this member: the output buffer when
   it consumes part j (after release: the kept copy, if any), else the
   private store (allocated on demand).  NULL on allocation failure or
   after release without a store or copy. */
uint8_t *bf_value(cl_coll_t *self, int j, size_t c, bool create);

/* The reducer's accumulator of (j, c), created (with this member's own
   contribution marked as arrived) when `create`.  NULL when absent. */
bf_acc_t *bf_acc(cl_coll_t *self, int j, size_t c, bool create);

/* A contribution of member m to (j, c), len bytes as on the wire.
   Returns 0, or COLLAB_ERR_ARG when malformed or duplicated. */
int bf_contribute(cl_coll_t *self, int j, size_t c, int m, const void *data, size_t len);

/* Finishes (j, c) when this member produces it and every live member's
   contribution is in: computes, holds and sends the result.  Returns 0
   or a negative status. */
int bf_try_finalize(cl_coll_t *self, int j, size_t c);

/* Whether this member's input of (j, c) may be read: 1 (always without
   a.stage), 0 not yet (self->in_wait is set: cl_coll_pump asks again, and
   until then every chunk answers 0), or a negative status. */
int bf_in_ready(cl_coll_t *self, int j, size_t c);

/* Staged input: counts this member's own contribution to (j, c), which it
   produces, once its input is ready, and finishes the chunk when it can.
   Returns 0 or a negative status. */
int bf_own_ready(cl_coll_t *self, int j, size_t c);

/* Records (j, c) as held with contributor bitmap bm; with a.stage, a chunk
   of the output buffer is reported final. */
void bf_hold(cl_coll_t *self, int j, size_t c, const uint8_t *bm);

/* Frees the accumulators. */
void bf_acc_free_all(cl_coll_t *self);

/* Recomputes (j, c) as its reducer must have: the contributions of the
   members in bm, x[m] pointing at member m's chunk (cnt elements as on
   the wire), folded as bf_try_finalize folds them.  out gets cnt
   elements.  Returns 0 or a negative status. */
int bf_recompute(cl_coll_t *self, int j, size_t c, const uint8_t *bm, const uint8_t *const *x,
                 uint8_t *out);

/* --- COLLAB_VERIFY (cl_coll_bfverify.c, docs/security.md §6c) --------- */

/* Sets up verification when the collective asks for it (an all-reduce
   without compression); leaves st->vf NULL otherwise.  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int bf_verify_setup(cl_coll_t *self);

/* The reducer side: member m's contribution to (j, c), as it arrived,
   is about to be folded; its digest is kept for validators. */
void bf_verify_note(cl_coll_t *self, int j, size_t c, int m, const void *data, size_t len);

/* Called when this member holds every chunk, before it sends DONE: decides
   (once) whether it checks a part, asks for the inputs, and concludes once
   they are in.  Returns true while DONE must wait for the check. */
bool bf_verify_hold(cl_coll_t *self);

/* A VREQ, VDATA or VDIG from member `from`.  Returns 0 or COLLAB_ERR_ARG
   for a message to drop. */
int bf_verify_on_msg(cl_coll_t *self, int from, const cl_coll_msg_t *msg);

/* What a pending check still waits for (adds to bytes[m]); gives the check
   up when its answers are overdue.  Returns true when it gave up (the
   caller re-checks completion). */
bool bf_verify_expect(cl_coll_t *self, size_t *bytes);

/* Frees st->vf. */
void bf_verify_free(cl_coll_t *self);

#endif
