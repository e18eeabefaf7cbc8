/*  cl_engine_groups.c - world all-reduces in several groups beyond
    COLLAB_TARGET_GROUP (docs/elastic.md §9).

    A world all-reduce whose member list holds more than the swarm's
    COLLAB_TARGET_GROUP members runs only with this peer's part of it: the
    list is split by cl_moshpit_split, a pure function of the list, the
    weights, the client flags and the sequence number, so every member
    computes the same parts and regroups at every collective.  Every other
    kind and communicator, and strict mode, keep the whole list.

    The component holds only the number of groups of the last split, to
    log when world all-reduces start or stop running in several groups;
    the swarm's settings come from its context (cl_engine_groups.h).
*/
#include "engine/cl_engine_groups.h"

#include "elastic/cl_moshpit.h"
#include "engine/cl_comm.h"
#include "util/cl_log.h"

#include <stdlib.h>

struct eng_groups {
    eng_groups_ctx_t ctx;
    int ngroups; /* groups of the last world all-reduce (before merges) */
};

eng_groups_t *eng_groups_new(const eng_groups_ctx_t *ctx)
{
    eng_groups_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->ctx = *ctx;
    return g;
}

void eng_groups_destroy(eng_groups_t **g_p)
{
    if (g_p == NULL || *g_p == NULL)
        return;
    free(*g_p);
    *g_p = NULL;
}

int eng_groups_count(const eng_groups_t *g)
{
    return g->ngroups;
}

static int target(eng_groups_t *g)
{
    return g->ctx.settings(g->ctx.arg)->target_group;
}

/* Logs when world all-reduces start or stop running in several groups. */
static void note_groups(eng_groups_t *g, int n, int ngroups)
{
    int t = target(g);
    if (ngroups > 1 && g->ngroups <= 1)
        cl_info("%d members over COLLAB_TARGET_GROUP=%d: all-reduces run in %d groups, "
                "regrouped every collective",
                n, t, ngroups);
    else if (ngroups <= 1 && g->ngroups > 1)
        cl_info("%d member%s, at most COLLAB_TARGET_GROUP=%d: all-reduces run in one group "
                "again",
                n, n == 1 ? "" : "s", t);
    g->ngroups = ngroups;
}

bool eng_groups_split_applies(eng_groups_t *g, const collab_comm_t *comm, cl_coll_kind_t kind,
                              int k)
{
    if (kind != CL_COLL_ALLREDUCE || comm->kind != CL_COMM_WORLD ||
        g->ctx.settings(g->ctx.arg)->strict)
        return false;
    int ngroups = cl_moshpit_ngroups(k, target(g));
    note_groups(g, k, ngroups);
    return ngroups > 1;
}

int eng_groups_mine(eng_groups_t *g, int self, uint64_t seq, int k, int *rank, const double *weight,
                    const int *client)
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
    if (cl_moshpit_split(k, target(g), seq, weight, client, grp) >= 0) {
        int mine = grp[me];
        n = 0;
        for (int i = 0; i < k; i++)
            if (grp[i] == mine)
                rank[n++] = rank[i];
    }
    free(grp);
    return n;
}
