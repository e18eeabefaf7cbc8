/*  cl_rank.h - the swarm's one rank policy.

    Which rank a joiner gets, asked by the coordinator's membership
    (cl_member_pick_rank) and by its admission queue (cl_admission): what
    it holds now if it is a member; else the rank it asks for
    (COLLAB_RANK) if free; else the ranks it held before, most recent
    first, if free; else the lowest free rank; else none (a standby).  A
    peer that rejoins asks for the rank its program holds, and gets that
    or none: an MPI program's rank never changes.
    Pure: the caller says which ranks are free.
*/
#ifndef CL_RANK_H_INCLUDED
#define CL_RANK_H_INCLUDED

#include <stdbool.h>

#define CL_RANK_REMEMBERED 2 /* earlier ranks a request may name */

/* What is known of the peer that asks for a rank; -1 for "none". */
typedef struct {
    bool member;                        /* it is a member (or monitor) now */
    bool required;                      /* preferred or nothing (a peer rejoining) */
    int current;                        /* the rank it holds then (a monitor: -1) */
    int preferred;                      /* the rank it asks for */
    int remembered[CL_RANK_REMEMBERED]; /* ranks it held before, most recent first */
    int lowest_free;                    /* the lowest free rank of the world */
} cl_rank_ask_t;

/* Whether rank r is free for a newcomer (false outside the world). */
typedef bool (*cl_rank_free_fn)(const void *ctx, int r);

/* Applies the policy: returns the rank, or -1 when none is free.
   is_free(ctx, r) is asked about the preferred and remembered ranks only
   (ranks out of range included: it must say false). */
int cl_rank_pick(const cl_rank_ask_t *ask, cl_rank_free_fn is_free, const void *ctx);

#endif
