/*  cl_viewack.h - the majority-acknowledgement tally of a peer back from a
    pause (docs/security.md §4): which members of its last view it asked
    (PROBE) and which view (epoch and digest) each last answered with.  A
    view counts once more than half of the members of that view, the
    receiver not counted, answered with it.  Pure: no sockets, no clock.
*/
#ifndef CL_VIEWACK_H_INCLUDED
#define CL_VIEWACK_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cl_wire.h"

typedef struct cl_viewack cl_viewack_t;

/* A tally with no round open, or NULL without memory.  Caller owns the
   result (cl_viewack_destroy). */
cl_viewack_t *cl_viewack_new(void);
/* Frees *self_p and nulls it; accepts NULL. */
void cl_viewack_destroy(cl_viewack_t **self_p);

/* Opens a new round for a last view of view_size members (the receiver
   included): the answers of the previous round are forgotten.  Returns
   0, or -1 without memory (no round is open then). */
int cl_viewack_start(cl_viewack_t *self, size_t view_size);
/* Ends the round (proof found, or given up): nothing is tallied until the
   next cl_viewack_start. */
void cl_viewack_close(cl_viewack_t *self);
/* True while a round is open. */
bool cl_viewack_open(const cl_viewack_t *self);

/* The receiver asked key (a member of its last view, not itself); asking
   a key again keeps its answer.  Past view_size keys, ignored. */
void cl_viewack_asked(cl_viewack_t *self, const uint8_t key[32]);
/* True when the open round asked key. */
bool cl_viewack_was_asked(const cl_viewack_t *self, const uint8_t key[32]);

/* key answered with the view (epoch, digest): it replaces key's earlier
   answer.  Returns how many keys asked in this round last answered with
   that same view (0 when no round is open or key was not asked). */
size_t cl_viewack_answer(cl_viewack_t *self, const uint8_t key[32], uint64_t epoch,
                         const uint8_t digest[32]);
/* Answers that make a proof: more than half of the last view. */
size_t cl_viewack_need(const cl_viewack_t *self);
/* Keys asked in the open round, and those that answered at all. */
size_t cl_viewack_nasked(const cl_viewack_t *self);
size_t cl_viewack_nanswered(const cl_viewack_t *self);
/* The i-th key asked (i < cl_viewack_nasked); *epoch receives its last
   answer's epoch (0: no answer yet). */
const uint8_t *cl_viewack_key(const cl_viewack_t *self, size_t i, uint64_t *epoch);

/* The digest answers are tallied by: BLAKE2b of view message m's encoded
   body, so two answers agree only when every field of the view does.
   False when m does not encode. */
bool cl_viewack_digest(const cl_wire_msg_t *m, uint8_t out[32]);

#endif
