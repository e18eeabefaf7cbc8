/*  cl_held.h - data messages kept until their sender is a member here.

    A peer that was just admitted sends its first collective and
    point-to-point messages at once, while the view that admits it is
    still on its way from the coordinator on another connection; a member
    that receives them first keeps them here and hands them on at the next
    view change (docs/membership.md).  A hostile peer can send as many as
    it likes, so the queue is bounded three ways (docs/security-bounds.md
    §5): messages in all (COLLAB_MAX_HELD_MSGS, each scan walks them),
    messages per sender (COLLAB_MAX_HELD_PER_PEER), and bytes
    (COLLAB_MAX_HELD, an empty message counting its record).  Messages
    past a bound are refused and counted.

    One sender's messages keep their order: the engine holds a sender's
    message while an earlier one of it waits (cl_held_from), and a replay
    keeps what it does not hand on in place, ahead of anything held
    during the replay.

    Pure logic: no sockets, no clock (arrival times are passed in), one
    thread.
*/
#ifndef CL_HELD_H_INCLUDED
#define CL_HELD_H_INCLUDED

#include "engine/cl_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cl_held cl_held_t;

typedef struct {
    size_t max_msgs;     /* messages in all */
    size_t max_per_peer; /* messages from one sender */
    size_t max_bytes;    /* bytes, records included (cl_held_cost) */
} cl_held_limits_t;

typedef enum {
    CL_HELD_KEPT = 0,
    CL_HELD_FULL_MSGS = 1,  /* refused: max_msgs or max_per_peer reached */
    CL_HELD_FULL_BYTES = 2, /* refused: max_bytes would be passed */
    CL_HELD_NO_MEM = 3,     /* refused: out of memory */
} cl_held_put_t;

/* A queue with those bounds, or NULL when out of memory. */
cl_held_t *cl_held_new(const cl_held_limits_t *limits);

/* Frees every kept message and the queue; sets *self_p to NULL. */
void cl_held_destroy(cl_held_t **self_p);

/* What keeping a message of len payload bytes costs against max_bytes. */
size_t cl_held_cost(size_t len);

/* Keeps a copy of m (its header fields and payload: a COLL, P2P or
   P2P_CTL message) from sender key, arrived at time now.  Refusals past
   a bound are counted (cl_held_refused). */
cl_held_put_t cl_held_put(cl_held_t *self, const uint8_t key[32], const cl_wire_msg_t *m,
                          double now);

/* Whether a message from key is kept. */
bool cl_held_from(const cl_held_t *self, const uint8_t key[32]);

/* Messages kept in all, and from key. */
size_t cl_held_count(const cl_held_t *self);
size_t cl_held_count_from(const cl_held_t *self, const uint8_t key[32]);

/* Bytes kept (cl_held_cost of each message), and refusals so far. */
size_t cl_held_bytes(const cl_held_t *self);
uint64_t cl_held_refused(const cl_held_t *self);

/* Called for each kept message, oldest first, with its sender, the
   message (its payload valid during the call only) and its arrival time:
   true to keep it (in place), false when it was handed on or is to be
   dropped. */
typedef bool cl_held_visit_fn(void *arg, const uint8_t key[32], const cl_wire_msg_t *m,
                              double arrived);

/* Offers every kept message to fn once, oldest first.  fn may hold new
   messages (cl_held_put): they are not offered in this replay, and they
   go behind the ones kept. */
void cl_held_replay(cl_held_t *self, cl_held_visit_fn *fn, void *arg);

#endif
