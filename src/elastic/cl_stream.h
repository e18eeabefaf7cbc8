/*  cl_stream.h - learns where the training steps of a collective stream
    begin (DESIGN §4 "Admission at step boundaries", docs/elastic.md §2).

    The engine records every collective posted on a communicator, in the
    order the program posts them: its signature and the addresses of its
    buffers.  The class finds the start-up prefix P and the period T of the
    stream, the smallest T such that from P on entry i equals entry i + T
    (signature and both addresses), confirmed over two full repetitions
    (at least P + max(3T, 8) entries).  The boundaries of steps are then
    phase + m·T, where the phase is P at the first lock.

    Explicit boundaries win over what is learned: once cl_stream_mark_step
    has been called (MPIX_Collab_step), only marked collectives are
    boundaries; with a configured number of collectives per step
    (COLLAB_COLLECTIVES_PER_STEP = K) the period is K and only P is learned,
    from signatures alone (addresses may change from step to step), over
    one full repetition (P + max(2K, 8) entries).

    States: LEARNING until a lock, AMBIGUOUS after 64 collectives without
    one (warned once, naming COLLAB_COLLECTIVES_PER_STEP; learning goes on
    and a later lock is taken), LOCKED.  A locked pattern that changes
    (entry i no longer equals entry i - T) is logged, the stream becomes
    AMBIGUOUS and learns again; a new lock keeps the step's first
    collective as its first collective when that collective still occurs.
    The start-up prefix P told to joiners is fixed by the first lock and
    only ever lowered.  At most CL_STREAM_HISTORY entries are kept (a ring
    of the latest ones plus the signatures of the first ones): a start-up
    prefix longer than that cannot be served to joiners and leaves the
    stream AMBIGUOUS (warned once).

    Indices are this process's local positions on the communicator (0 is
    its first collective there).  Pure logic: no sockets, no clock; used by
    one thread at a time (the engine thread).
*/
#ifndef CL_STREAM_H_INCLUDED
#define CL_STREAM_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

#define CL_STREAM_HISTORY 4096                       /* entries kept */
#define CL_STREAM_MAX_PERIOD (CL_STREAM_HISTORY / 3) /* longest learnable period */
#define CL_STREAM_AMBIGUOUS_AFTER 64                 /* collectives without a lock */
#define CL_STREAM_MIN_CONFIRM 8                      /* fewest entries confirming a lock */
#define CL_STREAM_NONE UINT64_MAX                    /* "no such index" */

typedef enum {
    CL_STREAM_LEARNING = 0,  /* no period yet, fewer than 64 collectives */
    CL_STREAM_LOCKED = 1,    /* boundaries known (learned, configured or marked) */
    CL_STREAM_AMBIGUOUS = 2, /* no boundary can be trusted; only explicit ones count */
} cl_stream_state_t;

typedef struct cl_stream cl_stream_t;

/* Creates the learner of one communicator's stream.  label names the
   communicator in log lines (copied, cut at 63 bytes; NULL: "a
   communicator").  collectives_per_step is COLLAB_COLLECTIVES_PER_STEP, 0
   to learn the period.  Returns NULL when collectives_per_step < 0 or on
   allocation failure.  Caller owns the result. */
cl_stream_t *cl_stream_new(const char *label, int collectives_per_step);

/* Destroys the stream and nulls *self_p; accepts NULL. */
void cl_stream_destroy(cl_stream_t **self_p);

/* Records the next collective posted on the communicator: its signature
   and up to two buffer addresses (NULL where the call has none).  The
   addresses are compared, never dereferenced.  Returns the entry's index
   (CL_STREAM_NONE when self is NULL). */
uint64_t cl_stream_record(cl_stream_t *self, uint32_t signature, const void *addr1,
                          const void *addr2);

/* MPIX_Collab_step was called: the next recorded collective begins a
   step.  From then on only marked collectives are boundaries. */
void cl_stream_mark_step(cl_stream_t *self);

/* Current state (CL_STREAM_AMBIGUOUS for NULL). */
cl_stream_state_t cl_stream_state(const cl_stream_t *self);

/* Static English name of a state ("learning", "locked", "ambiguous"). */
const char *cl_stream_state_name(cl_stream_state_t state);

/* Collectives recorded so far (0 for NULL). */
uint64_t cl_stream_count(const cl_stream_t *self);

/* The start-up prefix P (collectives before the first step), or
   CL_STREAM_NONE while unknown. */
uint64_t cl_stream_prefix(const cl_stream_t *self);

/* Collectives per step while LOCKED: the learned or configured period, or
   with explicit marks the distance between the last three marks when it
   is regular.  0 when unknown or irregular. */
uint64_t cl_stream_period(const cl_stream_t *self);

/* Times a locked pattern was seen to change. */
uint64_t cl_stream_changes(const cl_stream_t *self);

/* The first step boundary at or after index: a marked entry, or
   phase + m·T.  Boundaries after the last recorded entry are predicted
   (with marks only when they are regular).  CL_STREAM_NONE when none is
   known: LEARNING, AMBIGUOUS, irregular marks in the future, or with
   marks an index older than the last CL_STREAM_HISTORY entries. */
uint64_t cl_stream_next_boundary(const cl_stream_t *self, uint64_t index);

/* True when collective `index` begins a step: next_boundary(index) ==
   index.  The engine asks this right after recording the collective. */
bool cl_stream_is_boundary(const cl_stream_t *self, uint64_t index);

/* Signature of entry `index` for index below both the count and
   CL_STREAM_HISTORY (the start-up collectives a joiner must match).
   Returns 0 and sets *signature, or COLLAB_ERR_ARG. */
int cl_stream_signature(const cl_stream_t *self, uint64_t index, uint32_t *signature);

#endif
