/*  cl_engine_groups.c - world all-reduces in several groups beyond
    COLLAB_TARGET_GROUP (docs/elastic.md §9).

    A world all-reduce whose member list holds more than the swarm's
    COLLAB_TARGET_GROUP members runs only with this peer's part of it: the
    list is split by cl_moshpit_split, a pure function of the list, the
    weights, the client flags and the sequence number, so every member
    computes the same parts and regroups at every collective.  Every other
    kind and communicator, and strict mode, keep the whole list.
*/
#include "elastic/cl_moshpit.h"
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <stdlib.h>

static int target(struct cl_engine *e)
{
    return cl_member_settings(e->mb)->target_group;
}

/* Logs when world all-reduces start or stop running in several groups. */
static void note_groups(struct cl_engine *e, int n, int ngroups)
{
    int t = target(e);
    if (ngroups > 1 && e->moshpit_groups <= 1)
        cl_info("%d members over COLLAB_TARGET_GROUP=%d: all-reduces run in %d groups, "
                "regrouped every collective",
                n, t, ngroups);
    else if (ngroups <= 1 && e->moshpit_groups > 1)
        cl_info("%d member%s, at most COLLAB_TARGET_GROUP=%d: all-reduces run in one group "
                "again",
                n, n == 1 ? "" : "s", t);
    e->moshpit_groups = ngroups;
}

bool eng_groups_split_applies(struct cl_engine *e, const collab_comm_t *comm,
                              cl_coll_kind_t kind, int k)
{
    if (kind != CL_COLL_ALLREDUCE || comm->kind != CL_COMM_WORLD ||
        cl_member_settings(e->mb)->strict)
        return false;
    int ngroups = cl_moshpit_ngroups(k, target(e));
    note_groups(e, k, ngroups);
    return ngroups > 1;
}

int eng_groups_mine(struct cl_engine *e, int self, uint64_t seq, int k, int *rank,
                    const double *weight, const int *client)
{
    int me = -1;
    for (int i = 0; i < k && me < 0; i++)
        if (rank[i] == self)
            me = i;
    if (me < 0)
        return k; /* not a member: nothing to pick (the caller does not run it) */
    int *grp = malloc((size_t)k * sizeof *grp);
    if (grp == NULL)
        return COLLAB_ERR_NO_MEM;
    int n = COLLAB_ERR_INTERNAL;
    if (cl_moshpit_split(k, target(e), seq, weight, client, grp) >= 0) {
        int mine = grp[me];
        n = 0;
        for (int i = 0; i < k; i++)
            if (grp[i] == mine)
                rank[n++] = rank[i];
    }
    free(grp);
    return n;
}
