/*  cl_rank.c - the swarm's one rank policy (see cl_rank.h).

    A member keeps its rank; a newcomer gets what it asks for, else what
    it held before, else the lowest free rank.  Keeping old ranks keeps a
    restarted trainer on its data shard; the lowest free rank keeps the
    world dense so that collectives need no holes.
*/
#include "elastic/cl_rank.h"

int cl_rank_pick(const cl_rank_ask_t *ask, cl_rank_free_fn is_free, const void *ctx)
{
    if (ask->member)
        return ask->current;
    if (ask->preferred >= 0 && is_free(ctx, ask->preferred))
        return ask->preferred;
    if (ask->required)
        return -1;
    for (int i = 0; i < CL_RANK_REMEMBERED; i++)
        if (ask->remembered[i] >= 0 && is_free(ctx, ask->remembered[i]))
            return ask->remembered[i];
    return ask->lowest_free >= 0 ? ask->lowest_free : -1;
}
