/*  cl_admission.h - the coordinator's bookkeeping of joiners and
    re-admissions (docs/elastic.md §3 and §6).

    Peers that ask to join (JOIN) or to be re-admitted (a straggler that
    was taken out of the group) wait in a queue.  Each gets a rank as soon
    as one is free, reserved until it is admitted: COLLAB_RANK when free,
    else the rank its key held last in a view this class saw, else the
    rank the peer says it held, else the lowest free one.  When no rank is
    free the peer waits as a standby, in arrival order, and is given the
    first rank that frees up.  An ungrouped member (still in the view, out
    of the group) keeps its own rank.

    The engine calls cl_admission_poll each time the coordinator's program
    posts a collective on the world communicator: when that collective
    begins a step (cl_stream_is_boundary) and peers with a rank wait, it
    returns a batch: the admission sequence s (that collective), the
    start-up prefix P the joiners skip, the joiners, and the members of
    the next view.  The engine publishes that view; when it installs it
    (cl_admission_set_view), the admitted peers leave the queue.  If it
    cannot publish, cl_admission_requeue puts them back.

    Every peer may feed its views to cl_admission_set_view, so that a
    successor coordinator knows which rank each key held before.  Pending
    requests are soft state: peers repeat JOIN, and requests not repeated
    within a deadline expire (cl_admission_expire).

    Pure logic: no sockets, no clock (times are passed in); one thread.
*/
#ifndef CL_ADMISSION_H_INCLUDED
#define CL_ADMISSION_H_INCLUDED

#include "elastic/cl_stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_ADMISSION_MAX_QUEUE 1024  /* waiting peers (pending and standby) at most */
#define CL_ADMISSION_MAX_WORLD 65536 /* largest world size */

/* Where a peer stands. */
typedef enum {
    CL_ADM_NONE = 0,      /* unknown to the queue and not a member */
    CL_ADM_PENDING = 1,   /* holds a reserved rank; waits for a step boundary */
    CL_ADM_IN_FLIGHT = 2, /* in a batch whose view is being published */
    CL_ADM_STANDBY = 3,   /* no rank free; waits for one */
    CL_ADM_MEMBER = 4,    /* a member of the group already */
} cl_adm_state_t;

/* A member of a view, as the engine knows it. */
typedef struct {
    uint8_t key[32]; /* Curve25519 public key */
    int rank;        /* world rank */
    bool in_group;   /* member of the world group (false: out until re-admitted) */
} cl_adm_member_t;

/* A peer admitted by a batch. */
typedef struct {
    uint8_t key[32]; /* public key */
    int rank;        /* its rank */
    bool readmit;    /* a straggler to resync (weight 0 in its first step), not a new peer */
} cl_adm_joiner_t;

/* One admission, produced by cl_admission_poll / cl_admission_take. */
typedef struct {
    uint64_t s;               /* sequence (stream index) at which the view takes effect,
                                 CL_STREAM_NONE for "at once" */
    uint64_t prefix;          /* start-up collectives the joiners skip, or CL_STREAM_NONE */
    cl_adm_joiner_t *joiners; /* admitted peers, in arrival order (malloc'ed) */
    size_t njoiners;
    cl_adm_member_t *members; /* the next view: members and joiners, by rank (malloc'ed) */
    size_t nmembers;
} cl_adm_batch_t;

typedef struct cl_admission cl_admission_t;

/* Creates the bookkeeping for a swarm of world_size ranks (1 ..
   CL_ADMISSION_MAX_WORLD).  Returns NULL on a bad size or allocation
   failure.  Caller owns the result. */
cl_admission_t *cl_admission_new(int world_size);

/* Destroys and nulls *self_p; accepts NULL. */
void cl_admission_destroy(cl_admission_t **self_p);

/* Installs the current view (members in any order).  Queued peers that
   are now in the group leave the queue; an ungrouped member in the queue
   takes its own rank; a reservation now held by another member is given
   up and that peer gets a new rank or becomes a standby; standbys are
   promoted to freed ranks in arrival order.  Every member's rank is
   remembered for its key.  Returns 0, or COLLAB_ERR_ARG (nothing changed)
   when a rank is out of range or two members share a rank or a key;
   COLLAB_ERR_NO_MEM. */
int cl_admission_set_view(cl_admission_t *self, const cl_adm_member_t *members, size_t n);

/* A peer asks to join (readmit false) or to be re-admitted (true).
   preferred is its COLLAB_RANK (-1: none), prev_rank the rank it says it
   held before (-1: none; only a hint, out of range is ignored), now the
   local time.  A repeated request refreshes the entry (and may turn it
   into a re-admission).  Returns the peer's state (>= 0) and its rank in
   *rank (-1 for a standby), or a negative status: COLLAB_ERR_RANK when
   preferred is outside [-1, world_size), COLLAB_ERR_NO_MEM when the queue
   is full (CL_ADMISSION_MAX_QUEUE) or allocation fails. */
int cl_admission_request(cl_admission_t *self, const uint8_t key[32], int preferred, int prev_rank,
                         bool readmit, double now, int *rank);

/* Where a peer stands (CL_ADM_NONE when unknown); *rank (may be NULL)
   receives its reserved or held rank, or -1. */
cl_adm_state_t cl_admission_state(const cl_admission_t *self, const uint8_t key[32], int *rank);

/* The peer gave up or vanished: removes it from the queue (its reserved
   rank frees and may go to a standby).  Returns 0, or COLLAB_ERR_ARG when
   it was not queued. */
int cl_admission_cancel(cl_admission_t *self, const uint8_t key[32]);

/* Removes pending and standby peers not heard from since now - max_age
   (peers in flight stay).  Returns the number removed. */
size_t cl_admission_expire(cl_admission_t *self, double now, double max_age);

/* Peers holding a reserved rank and waiting, and standbys. */
size_t cl_admission_pending(const cl_admission_t *self);
size_t cl_admission_standby(const cl_admission_t *self);

/* The coordinator's program posted collective `index` on the stream.  When
   it begins a step and peers wait with a rank, moves up to max of them
   (0: all) in flight, fills *batch (s = index, prefix from the stream)
   and returns 1; otherwise returns 0 with *batch zeroed.  A stream whose
   start-up prefix is unknown admits nobody.  s is a stream index: a
   coordinator whose wire sequence numbers differ from its local indices
   (it joined late itself) converts it.  Returns COLLAB_ERR_ARG on a
   NULL argument, COLLAB_ERR_NO_MEM (nothing moved). */
int cl_admission_poll(cl_admission_t *self, const cl_stream_t *stream, uint64_t index, size_t max,
                      cl_adm_batch_t *batch);

/* As cl_admission_poll without a stream: admits the waiting peers with a
   rank at sequence s (CL_STREAM_NONE: at once, e.g. before the group has
   run any collective) with the given prefix.  Returns 1 with a batch, 0
   when nobody waits, or a negative status. */
int cl_admission_take(cl_admission_t *self, uint64_t s, uint64_t prefix, size_t max,
                      cl_adm_batch_t *batch);

/* The view of a batch could not be published: its joiners that are still
   in flight wait again (with their ranks).  Returns the number requeued. */
size_t cl_admission_requeue(cl_admission_t *self, const cl_adm_batch_t *batch);

/* Frees the arrays of a batch and zeroes it; accepts NULL. */
void cl_adm_batch_clear(cl_adm_batch_t *batch);

/* Static English name of a state ("pending", "standby", ...). */
const char *cl_adm_state_name(cl_adm_state_t state);

#endif
