/*  cl_relay.h - the relay rule: how survivors agree on every chunk of a
    collective's result when the member that produced it fails.

    A collective's result is cut into parts and chunks.  Each chunk has one
    producer at a time (its reducer, the bcast root, the member whose input
    it is) and is consumed by all members or by one.  This class tracks,
    for one member, which chunks it holds, who it expects each one from
    (the chunk's upstream) and runs the repair protocol of
    docs/collectives.md §3 when an upstream fails:

    - a member in repair for a part sends, at every view (set of failed
      members it knows) a STATUS naming the view and the chunks it holds;
    - the lowest holder of a chunk, among the statuses of that view,
      relays it to each consumer whose status says it lacks it;
    - a member that has the statuses of every live member for its current
      view, all saying "not held" for a chunk, decides that chunk: it is
      then absent, or produced anew by the lowest eligible live member.

    The algorithm supplies two callbacks (relay and decide) and tells the
    class what it holds.  Runs on the engine thread only.
*/
#ifndef CL_RELAY_H_INCLUDED
#define CL_RELAY_H_INCLUDED

#include "cl_coll_impl.h"

typedef struct cl_relay cl_relay_t;

/* What a chunk becomes when no survivor holds it. */
typedef enum {
    CL_FB_ABSENT, /* absent (zero slot, input left out): decided locally by everyone */
    CL_FB_SELF,   /* the lowest live member produces it from its own buffer (bcast) */
    CL_FB_REDUCE  /* the lowest live non-client member reduces it anew from the survivors */
} cl_fallback_t;

typedef struct {
    /* Sends the chunk (part, chunk) this member holds to member `to` as a
       RELAY message.  Returns 0 or a negative status. */
    int (*relay)(cl_coll_t *coll, int part, int chunk, int to);
    /* No live member holds (part, chunk).  For CL_FB_ABSENT producer is -1
       and the chunk must become absent (and held); otherwise producer is
       the member index of the chunk's new producer. */
    int (*decide)(cl_coll_t *coll, int part, int chunk, int producer);
} cl_relay_ops_t;

/* Creates the tracker for nparts parts (each set up with cl_relay_part).
   Returns NULL on allocation failure.  Caller owns. */
cl_relay_t *cl_relay_new(cl_coll_t *coll, int nparts, const cl_relay_ops_t *ops);

/* Destroys and nulls *self_p; accepts NULL. */
void cl_relay_destroy(cl_relay_t **self_p);

/* Sets up part `part`: nchunks chunks (>= 1) of about chunk_bytes bytes,
   consumed by member `consumer` (-1: by every member), falling back to
   fb, expected from member `up` (-1: from nobody).  Returns 0 or
   COLLAB_ERR_NO_MEM. */
int cl_relay_part(cl_relay_t *self, int part, size_t nchunks, size_t chunk_bytes, int consumer,
                  cl_fallback_t fb, int up);

/* Number of chunks of part. */
size_t cl_relay_nchunks(const cl_relay_t *self, int part);

/* Records that this member now holds (part, chunk). */
void cl_relay_hold(cl_relay_t *self, int part, size_t chunk);

/* Records that this member holds (part, chunk) but never reports it held
   in a STATUS nor relays it: a chunk decided absent in a collective that
   signs, where nobody can prove an absence, so that every member decides
   it by the rule itself.  Returns 0 or COLLAB_ERR_NO_MEM. */
int cl_relay_hold_silent(cl_relay_t *self, int part, size_t chunk);

/* True when this member holds (part, chunk). */
bool cl_relay_held(const cl_relay_t *self, int part, size_t chunk);

/* Chunks of part this member does not hold. */
size_t cl_relay_missing(const cl_relay_t *self, int part);

/* Upstream of (part, chunk): the member it is expected from, or -1. */
int cl_relay_up(const cl_relay_t *self, int part, size_t chunk);
void cl_relay_set_up(cl_relay_t *self, int part, size_t chunk, int up);

/* Production permission of (part, chunk) for this member: set when it is
   the chunk's producer, cleared by the class when this member reports
   the chunk as not held (from then on it must not finish it unless a
   decision makes it the producer again). */
void cl_relay_set_producing(cl_relay_t *self, int part, size_t chunk, bool on);
bool cl_relay_producing(const cl_relay_t *self, int part, size_t chunk);

/* A STATUS message from member `from`.  Returns 0, or COLLAB_ERR_ARG when
   malformed (dropped). */
int cl_relay_on_status(cl_relay_t *self, int from, const cl_coll_msg_t *msg);

/* Member idx was added to the view's failed set: re-sends statuses of the
   parts in repair, enters repair where a missing chunk's upstream failed,
   and takes the decisions that became possible.  Returns 0 or a status. */
int cl_relay_on_fail(cl_relay_t *self, int idx);

/* Re-examines part after a local change (a chunk acquired, a member's
   DONE): relays owed and decisions now possible.  Returns 0 or a status. */
int cl_relay_poke(cl_relay_t *self, int part);

/* Adds to bytes[i] (n entries) what this member waits for from member i
   because of repairs: a status of the current view, or a relay from the
   lowest holder of a chunk it lacks. */
void cl_relay_expect(const cl_relay_t *self, size_t *bytes);

/* True when part is in repair at this member. */
bool cl_relay_repairing(const cl_relay_t *self, int part);

#endif
