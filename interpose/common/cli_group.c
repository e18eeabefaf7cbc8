/*  cli_group.c - process groups.

    A group is an ordered list of world ranks.  The group of a
    communicator lists the world rank of each of its nominal ranks (the
    core's collab_comm_world_rank_of); in a swarm some of those ranks may
    be absent at any moment, which groups do not reflect: they describe
    the communicator, not who is alive.  Groups are reference counted:
    a handle holds one reference.
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdlib.h>
#include <string.h>

cli_group_t cli_group_empty = {.predef = CLI_GROUP_EMPTY, .index = -1, .refs = 1};

cli_group_t *cli_group_new(int size)
{
    cli_group_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->wranks = malloc((size_t)(size > 0 ? size : 1) * sizeof(int));
    if (g->wranks == NULL) {
        free(g);
        return NULL;
    }
    g->predef = -1;
    g->index = -1;
    g->refs = 1;
    g->size = size;
    return g;
}

void cli_group_unref(cli_group_t *g)
{
    if (g == NULL || g->predef >= 0)
        return;
    if (--g->refs == 0) {
        if (g->index >= 0)
            cli_table_remove(&cli.groups, g->index);
        free(g->wranks);
        free(g);
    }
}

cli_group_t *cli_group_of_comm(const cli_comm_t *c)
{
    int n = collab_comm_size(c->core);
    cli_group_t *g = cli_group_new(n);
    if (g == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        g->wranks[i] = collab_comm_world_rank_of(c->core, i);
    return g;
}

/* Registers g (or, if empty, returns MPI_GROUP_EMPTY and drops g). */
static int cli_group_give(cli_call_t *call, cli_group_t *g, MPI_Group *out)
{
    if (g->size == 0) {
        cli_lock();
        cli_group_unref(g);
        cli_unlock();
        *out = cli_group_handle(&cli_group_empty);
        return MPI_SUCCESS;
    }
    if (cli_group_register(g, out) != MPI_SUCCESS) {
        cli_lock();
        cli_group_unref(g);
        cli_unlock();
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of group handles");
    }
    return MPI_SUCCESS;
}

static int cli_group_arg(cli_call_t *call, MPI_Group h, const char *arg, cli_group_t **out)
{
    int why = 0;
    *out = cli_group_lookup(h, &why);
    if (*out == NULL)
        return cli_err(call, MPI_ERR_GROUP, arg, "%s",
                       why == CLI_H_NULL ? "MPI_GROUP_NULL is not a valid group"
                                         : "not a group handle");
    return MPI_SUCCESS;
}

static int cli_group_find(const cli_group_t *g, int wrank)
{
    for (int i = 0; i < g->size; i++)
        if (g->wranks[i] == wrank)
            return i;
    return -1;
}

static int cli_nomem(cli_call_t *call)
{
    return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
}

int cli_impl_Comm_group(cli_call_t *call, MPI_Comm comm, MPI_Group *group)
{
    (void)comm;
    cli_group_t *g = cli_group_of_comm(call->comm);
    if (g == NULL)
        return cli_nomem(call);
    return cli_group_give(call, g, group);
}

int cli_impl_Group_size(cli_call_t *call, MPI_Group group, int *size)
{
    cli_group_t *g;
    int rc = cli_group_arg(call, group, "group", &g);
    if (rc == MPI_SUCCESS)
        *size = g->size;
    return rc;
}

int cli_impl_Group_rank(cli_call_t *call, MPI_Group group, int *rank)
{
    cli_group_t *g;
    int rc = cli_group_arg(call, group, "group", &g);
    if (rc != MPI_SUCCESS)
        return rc;
    int r = cli_group_find(g, collab_world_rank());
    *rank = r < 0 ? MPI_UNDEFINED : r;
    return MPI_SUCCESS;
}

/* Checks a list of n ranks of g: in range and distinct. */
static int cli_check_rank_list(cli_call_t *call, const cli_group_t *g, int n, const int *ranks)
{
    if (n < 0 || n > g->size)
        return cli_err(call, MPI_ERR_ARG, "n", "%d is not in [0, %d]", n, g->size);
    if (n > 0 && ranks == NULL)
        return cli_err(call, MPI_ERR_ARG, "ranks", "must not be NULL");
    char *seen = calloc((size_t)g->size + 1, 1);
    if (seen == NULL)
        return cli_nomem(call);
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= g->size || seen[r]) {
            free(seen);
            return cli_err(call, MPI_ERR_RANK, "ranks", "ranks[%d] = %d is %s", i, r,
                           r < 0 || r >= g->size ? "out of range" : "listed twice");
        }
        seen[r] = 1;
    }
    free(seen);
    return MPI_SUCCESS;
}

int cli_impl_Group_incl(cli_call_t *call, MPI_Group group, int n, const int ranks[],
                        MPI_Group *newgroup)
{
    cli_group_t *g;
    int rc = cli_group_arg(call, group, "group", &g);
    if (rc == MPI_SUCCESS)
        rc = cli_check_rank_list(call, g, n, ranks);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_group_t *ng = cli_group_new(n);
    if (ng == NULL)
        return cli_nomem(call);
    for (int i = 0; i < n; i++)
        ng->wranks[i] = g->wranks[ranks[i]];
    return cli_group_give(call, ng, newgroup);
}

int cli_impl_Group_excl(cli_call_t *call, MPI_Group group, int n, const int ranks[],
                        MPI_Group *newgroup)
{
    cli_group_t *g;
    int rc = cli_group_arg(call, group, "group", &g);
    if (rc == MPI_SUCCESS)
        rc = cli_check_rank_list(call, g, n, ranks);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_group_t *ng = cli_group_new(g->size - n);
    char *drop = calloc((size_t)g->size + 1, 1);
    if (ng == NULL || drop == NULL) {
        free(drop);
        cli_lock();
        cli_group_unref(ng);
        cli_unlock();
        return cli_nomem(call);
    }
    for (int i = 0; i < n; i++)
        drop[ranks[i]] = 1;
    int k = 0;
    for (int i = 0; i < g->size; i++)
        if (!drop[i])
            ng->wranks[k++] = g->wranks[i];
    free(drop);
    return cli_group_give(call, ng, newgroup);
}

/* Expands MPI range triplets into a rank list (caller frees *out). */
static int cli_expand_ranges(cli_call_t *call, const cli_group_t *g, int n, int ranges[][3],
                             int **out, int *nout)
{
    if (n < 0)
        return cli_err(call, MPI_ERR_ARG, "n", "%d is negative", n);
    long total = 0;
    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || first < 0 || first >= g->size || last < 0 || last >= g->size ||
            (stride > 0 && first > last) || (stride < 0 && first < last))
            return cli_err(call, MPI_ERR_RANK, "ranges",
                           "triplet %d (%d, %d, %d) is invalid for a group of %d", i, first, last,
                           stride, g->size);
        total += (last - first) / stride + 1;
        if (total > g->size)
            return cli_err(call, MPI_ERR_RANK, "ranges", "the ranges list a rank twice");
    }
    int *list = malloc((size_t)(total > 0 ? total : 1) * sizeof(int));
    if (list == NULL)
        return cli_nomem(call);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int r = ranges[i][0]; ranges[i][2] > 0 ? r <= ranges[i][1] : r >= ranges[i][1];
             r += ranges[i][2])
            list[k++] = r;
    *out = list;
    *nout = k;
    return MPI_SUCCESS;
}

/* Group_range_incl (excl 0) and Group_range_excl (excl 1): the ranges
   expanded to a rank list, then Group_incl or Group_excl of it. */
static int cli_group_range(cli_call_t *call, MPI_Group group, int n, int ranges[][3], int excl,
                           MPI_Group *newgroup)
{
    cli_group_t *g;
    int *list = NULL, k = 0;
    int rc = cli_group_arg(call, group, "group", &g);
    if (rc == MPI_SUCCESS)
        rc = cli_expand_ranges(call, g, n, ranges, &list, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = excl ? cli_impl_Group_excl(call, group, k, list, newgroup)
              : cli_impl_Group_incl(call, group, k, list, newgroup);
    free(list);
    return rc;
}

int cli_impl_Group_range_incl(cli_call_t *call, MPI_Group group, int n, int ranges[][3],
                              MPI_Group *newgroup)
{
    return cli_group_range(call, group, n, ranges, 0, newgroup);
}

int cli_impl_Group_range_excl(cli_call_t *call, MPI_Group group, int n, int ranges[][3],
                              MPI_Group *newgroup)
{
    return cli_group_range(call, group, n, ranges, 1, newgroup);
}

/* mode 0: union, 1: intersection, 2: difference. */
static int cli_group_setop(cli_call_t *call, MPI_Group group1, MPI_Group group2, int mode,
                           MPI_Group *newgroup)
{
    cli_group_t *a, *b;
    int rc = cli_group_arg(call, group1, "group1", &a);
    if (rc == MPI_SUCCESS)
        rc = cli_group_arg(call, group2, "group2", &b);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_group_t *ng = cli_group_new(a->size + b->size);
    if (ng == NULL)
        return cli_nomem(call);
    int k = 0;
    for (int i = 0; i < a->size; i++) {
        int in_b = cli_group_find(b, a->wranks[i]) >= 0;
        if (mode == 0 || (mode == 1 && in_b) || (mode == 2 && !in_b))
            ng->wranks[k++] = a->wranks[i];
    }
    if (mode == 0)
        for (int i = 0; i < b->size; i++)
            if (cli_group_find(a, b->wranks[i]) < 0)
                ng->wranks[k++] = b->wranks[i];
    ng->size = k;
    return cli_group_give(call, ng, newgroup);
}

int cli_impl_Group_union(cli_call_t *call, MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return cli_group_setop(call, group1, group2, 0, newgroup);
}

int cli_impl_Group_intersection(cli_call_t *call, MPI_Group group1, MPI_Group group2,
                                MPI_Group *newgroup)
{
    return cli_group_setop(call, group1, group2, 1, newgroup);
}

int cli_impl_Group_difference(cli_call_t *call, MPI_Group group1, MPI_Group group2,
                              MPI_Group *newgroup)
{
    return cli_group_setop(call, group1, group2, 2, newgroup);
}

int cli_impl_Group_free(cli_call_t *call, MPI_Group *group)
{
    cli_group_t *g;
    int rc = cli_group_arg(call, *group, "group", &g);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_group_unref(g);
    cli_unlock();
    *group = cli_abi_group_null();
    return MPI_SUCCESS;
}

int cli_impl_Group_translate_ranks(cli_call_t *call, MPI_Group group1, int n, const int ranks1[],
                                   MPI_Group group2, int ranks2[])
{
    cli_group_t *a, *b;
    int rc = cli_group_arg(call, group1, "group1", &a);
    if (rc == MPI_SUCCESS)
        rc = cli_group_arg(call, group2, "group2", &b);
    if (rc != MPI_SUCCESS)
        return rc;
    if (n < 0)
        return cli_err(call, MPI_ERR_ARG, "n", "%d is negative", n);
    if (n > 0 && (ranks1 == NULL || ranks2 == NULL))
        return cli_err(call, MPI_ERR_ARG, ranks1 ? "ranks2" : "ranks1", "must not be NULL");
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];
        if (r != MPI_PROC_NULL && (r < 0 || r >= a->size))
            return cli_err(call, MPI_ERR_RANK, "ranks1", "ranks1[%d] = %d is out of range [0, %d)",
                           i, r, a->size);
    }
    for (int i = 0; i < n; i++) {
        if (ranks1[i] == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        int j = cli_group_find(b, a->wranks[ranks1[i]]);
        ranks2[i] = j < 0 ? MPI_UNDEFINED : j;
    }
    return MPI_SUCCESS;
}

/* IDENT, SIMILAR or UNEQUAL for two member lists. */
int cli_group_relation(const cli_group_t *a, const cli_group_t *b)
{
    if (a->size != b->size)
        return MPI_UNEQUAL;
    if (a->size == 0 || memcmp(a->wranks, b->wranks, (size_t)a->size * sizeof(int)) == 0)
        return MPI_IDENT;
    for (int i = 0; i < a->size; i++)
        if (cli_group_find(b, a->wranks[i]) < 0)
            return MPI_UNEQUAL;
    return MPI_SIMILAR;
}

int cli_impl_Group_compare(cli_call_t *call, MPI_Group group1, MPI_Group group2, int *result)
{
    cli_group_t *a, *b;
    int rc = cli_group_arg(call, group1, "group1", &a);
    if (rc == MPI_SUCCESS)
        rc = cli_group_arg(call, group2, "group2", &b);
    if (rc == MPI_SUCCESS)
        *result = cli_group_relation(a, b);
    return rc;
}
