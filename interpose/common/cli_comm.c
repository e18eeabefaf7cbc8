/*  cli_comm.c - communicators and the ULFM calls.

    A face communicator wraps a core collab_comm_t and adds what MPI hangs
    on it: the error handler (inherited by dup/split), attributes, a name,
    info hints and the revoked flag.  Creating a communicator exchanges
    nothing in the face: the core derives ids locally (DESIGN section 4).
    In a swarm a communicator's nominal size never changes; absent ranks
    simply do not take part, so MPIX_Comm_shrink returns a duplicate and
    MPIX_Comm_agree is a bitwise-AND all-reduce over the live members.
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdlib.h>
#include <string.h>

cli_comm_t cli_world = {.predef = CLI_COMM_WORLD,
                        .index = -1,
                        .errh = &cli_errh_predef[CLI_ERRH_FATAL],
                        .name = "MPI_COMM_WORLD"};
cli_comm_t cli_self = {.predef = CLI_COMM_SELF,
                       .index = -1,
                       .errh = &cli_errh_predef[CLI_ERRH_FATAL],
                       .name = "MPI_COMM_SELF"};

int cli_comm_wrap(cli_call_t *call, cli_comm_t *parent, collab_comm_t *core, MPI_Comm *out)
{
    cli_comm_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
        collab_comm_free(&core);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    c->predef = -1;
    c->core = core;
    cli_lock();
    c->errh = parent->errh;
    cli_errh_ref(c->errh);
    cli_unlock();
    if (cli_comm_register(c, out) != MPI_SUCCESS) {
        cli_lock();
        cli_errh_unref(c->errh);
        cli_unlock();
        collab_comm_free(&c->core);
        free(c);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of communicator handles");
    }
    return MPI_SUCCESS;
}

/* Releases a run-time communicator (attributes already deleted). */
static void cli_comm_destroy(cli_comm_t *c)
{
    cli_lock();
    cli_table_remove(&cli.comms, c->index);
    cli_errh_unref(c->errh);
    cli_unlock();
    collab_comm_free(&c->core);
    cli_info_free(c->hints);
    free(c);
}

int cli_comm_check_live(cli_call_t *call, cli_comm_t *c)
{
    if (__atomic_load_n(&c->revoked, __ATOMIC_ACQUIRE))
        return cli_err(call, CLI_ABI_ERR_REVOKED, "comm", "the communicator was revoked");
    return MPI_SUCCESS;
}

int cli_impl_Comm_rank(cli_call_t *call, MPI_Comm comm, int *rank)
{
    (void)comm;
    *rank = collab_comm_rank(call->comm->core);
    return MPI_SUCCESS;
}

int cli_impl_Comm_size(cli_call_t *call, MPI_Comm comm, int *size)
{
    (void)comm;
    *size = collab_comm_size(call->comm->core);
    return MPI_SUCCESS;
}

static int cli_dup(cli_call_t *call, cli_comm_t *parent, const cli_info_t *hints, MPI_Comm *out)
{
    collab_comm_t *core = NULL;
    int st = collab_comm_dup(parent->core, &core);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "duplicating the communicator");
    MPI_Comm h;
    int rc = cli_comm_wrap(call, parent, core, &h);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_comm_t *c = cli_comm_lookup(h, &why);
    if (hints != NULL && (c->hints = cli_info_copy(hints)) == NULL) {
        cli_comm_destroy(c);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    rc = cli_attr_copy_comm(call, parent, c);
    if (rc != MPI_SUCCESS) {
        cli_attr_delete_all_comm(call, c);
        cli_comm_destroy(c);
        return rc;
    }
    *out = h;
    return MPI_SUCCESS;
}

int cli_impl_Comm_dup(cli_call_t *call, MPI_Comm comm, MPI_Comm *newcomm)
{
    (void)comm;
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_info_t *hints = call->comm->hints ? cli_info_copy(call->comm->hints) : NULL;
    int nomem = call->comm->hints != NULL && hints == NULL;
    cli_unlock();
    if (nomem)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    rc = cli_dup(call, call->comm, hints, newcomm);
    cli_info_free(hints);
    return rc;
}

static int cli_info_arg(cli_call_t *call, MPI_Info info, cli_info_t **out)
{
    int why = 0;
    *out = cli_info_lookup(info, &why);
    if (*out == NULL && why != CLI_H_NULL)
        return cli_err(call, MPI_ERR_INFO, "info", "not an info handle");
    return MPI_SUCCESS;
}

int cli_impl_Comm_dup_with_info(cli_call_t *call, MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    (void)comm;
    cli_info_t *i;
    int rc = cli_info_arg(call, info, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    return cli_dup(call, call->comm, i, newcomm);
}

int cli_impl_Comm_idup(cli_call_t *call, MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    int rc = cli_impl_Comm_dup(call, comm, newcomm);
    if (rc != MPI_SUCCESS)
        return rc;
    collab_status_info_t st = {.source = -1, .tag = -1};
    return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, &st, request);
}

int cli_impl_Comm_idup_with_info(cli_call_t *call, MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                 MPI_Request *request)
{
    int rc = cli_impl_Comm_dup_with_info(call, comm, info, newcomm);
    if (rc != MPI_SUCCESS)
        return rc;
    collab_status_info_t st = {.source = -1, .tag = -1};
    return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, &st, request);
}

static int cli_split(cli_call_t *call, int color, int key, MPI_Comm *newcomm)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    collab_comm_t *core = NULL;
    int st = collab_comm_split(call->comm->core, color, key, &core);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "splitting the communicator");
    if (core == NULL) {
        *newcomm = cli_abi_comm_null();
        return MPI_SUCCESS;
    }
    return cli_comm_wrap(call, call->comm, core, newcomm);
}

int cli_impl_Comm_split(cli_call_t *call, MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    (void)comm;
    if (color < 0 && color != MPI_UNDEFINED)
        return cli_err(call, MPI_ERR_ARG, "color", "%d is negative and not MPI_UNDEFINED", color);
    return cli_split(call, color == MPI_UNDEFINED ? -1 : color, key, newcomm);
}

int cli_impl_Comm_split_type(cli_call_t *call, MPI_Comm comm, int split_type, int key,
                             MPI_Info info, MPI_Comm *newcomm)
{
    (void)comm;
    cli_info_t *i;
    int rc = cli_info_arg(call, info, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    if (split_type == MPI_UNDEFINED)
        return cli_split(call, -1, key, newcomm);
    int one_host = split_type == MPI_COMM_TYPE_SHARED;
#ifdef MPI_COMM_TYPE_HW_GUIDED
    one_host |= split_type == MPI_COMM_TYPE_HW_GUIDED;
#endif
#ifdef OMPI_COMM_TYPE_HOST
    one_host |= split_type == OMPI_COMM_TYPE_HOST;
#endif
    if (!one_host)
        return cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, "split_type",
                       "%d is not supported (only the split types meaning one host: "
                       "MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED)",
                       split_type);
    /* Peers on one host share a colour: a hash of the host name. */
    char host[256] = "";
    collab_processor_name(host, sizeof host);
    unsigned h = 2166136261u;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return cli_split(call, (int)(h & 0x7fffffff), key, newcomm);
}

int cli_impl_Comm_create(cli_call_t *call, MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    (void)comm;
    int why = 0;
    cli_group_t *g = cli_group_lookup(group, &why);
    if (g == NULL)
        return cli_err(call, MPI_ERR_GROUP, "group", "%s",
                       why == CLI_H_NULL ? "MPI_GROUP_NULL is not a valid group"
                                         : "not a group handle");
    /* Members must belong to comm; the new ranks follow the group order. */
    cli_group_t *cg = cli_group_of_comm(call->comm);
    if (cg == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    int bad = -1, mine = -1, me = collab_world_rank();
    for (int i = 0; i < g->size && bad < 0; i++) {
        int found = 0;
        for (int j = 0; j < cg->size; j++)
            found |= cg->wranks[j] == g->wranks[i];
        if (!found)
            bad = i;
        if (g->wranks[i] == me)
            mine = i;
    }
    cli_lock();
    cli_group_unref(cg);
    cli_unlock();
    if (bad >= 0)
        return cli_err(call, MPI_ERR_GROUP, "group",
                       "member %d (world rank %d) is not in the communicator", bad, g->wranks[bad]);
    return cli_split(call, mine >= 0 ? 0 : -1, mine, newcomm);
}

/* Collective over the group's members only: the core makes the
   communicator locally from the member list and the tag, so ranks of comm
   outside the group take no part (and may be busy elsewhere). */
int cli_impl_Comm_create_group(cli_call_t *call, MPI_Comm comm, MPI_Group group, int tag,
                               MPI_Comm *newcomm)
{
    (void)comm;
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_group_t *g = cli_group_lookup(group, &why);
    if (g == NULL)
        return cli_err(call, MPI_ERR_GROUP, "group", "%s",
                       why == CLI_H_NULL ? "MPI_GROUP_NULL is not a valid group"
                                         : "not a group handle");
    int me = collab_world_rank(), mine = -1;
    for (int i = 0; i < g->size; i++)
        if (g->wranks[i] == me)
            mine = i;
    if (mine < 0) {
        *newcomm = cli_abi_comm_null(); /* as MPI says for a non-member */
        return MPI_SUCCESS;
    }
    int *ranks = malloc((size_t)g->size * sizeof(int));
    if (ranks == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    /* The group names world ranks; the core wants ranks of comm. */
    cli_comm_t *c = call->comm;
    int n = collab_comm_size(c->core), bad = -1;
    for (int i = 0; i < g->size && bad < 0; i++) {
        ranks[i] = -1;
        for (int r = 0; r < n && ranks[i] < 0; r++)
            if (collab_comm_world_rank_of(c->core, r) == g->wranks[i])
                ranks[i] = r;
        if (ranks[i] < 0)
            bad = i;
    }
    if (bad >= 0) {
        int w = g->wranks[bad];
        free(ranks);
        return cli_err(call, MPI_ERR_GROUP, "group",
                       "member %d (world rank %d) is not in the communicator", bad, w);
    }
    collab_comm_t *core = NULL;
    int st = collab_comm_create_group(c->core, ranks, g->size, tag, &core);
    free(ranks);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "creating the communicator over the group");
    return cli_comm_wrap(call, c, core, newcomm);
}

int cli_impl_Comm_free(cli_call_t *call, MPI_Comm *comm)
{
    int rc = cli_check_comm(call, *comm, "comm");
    if (rc != MPI_SUCCESS)
        return rc;
    cli_comm_t *c = call->comm;
    if (c->predef >= 0)
        return cli_err(call, MPI_ERR_COMM, "comm", "%s cannot be freed",
                       c->predef == CLI_COMM_WORLD ? "MPI_COMM_WORLD" : "MPI_COMM_SELF");
    rc = cli_attr_delete_all_comm(call, c);
    if (rc != MPI_SUCCESS)
        return rc;
    call->comm = NULL; /* later errors of this call go to world */
    cli_comm_destroy(c);
    *comm = cli_abi_comm_null();
    return MPI_SUCCESS;
}

int cli_impl_Comm_disconnect(cli_call_t *call, MPI_Comm *comm)
{
    return cli_impl_Comm_free(call, comm);
}

int cli_impl_Comm_compare(cli_call_t *call, MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    int rc = cli_check_comm(call, comm1, "comm1");
    if (rc != MPI_SUCCESS)
        return rc;
    cli_comm_t *a = call->comm;
    rc = cli_check_comm(call, comm2, "comm2");
    if (rc != MPI_SUCCESS)
        return rc;
    cli_comm_t *b = call->comm;
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    cli_group_t *ga = cli_group_of_comm(a), *gb = cli_group_of_comm(b);
    if (ga != NULL && gb != NULL) {
        int rel = cli_group_relation(ga, gb);
        *result = rel == MPI_IDENT ? MPI_CONGRUENT : rel;
    }
    cli_lock();
    cli_group_unref(ga);
    cli_group_unref(gb);
    cli_unlock();
    if (ga == NULL || gb == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    return MPI_SUCCESS;
}

int cli_impl_Comm_test_inter(cli_call_t *call, MPI_Comm comm, int *flag)
{
    (void)call;
    (void)comm;
    *flag = 0; /* inter-communicators do not exist here */
    return MPI_SUCCESS;
}

/* No communicator carries a process topology here (topologies are out of
   scope), so the exact answer for every valid communicator is
   MPI_UNDEFINED.  mpi4py calls this for every communicator it wraps. */
int cli_impl_Topo_test(cli_call_t *call, MPI_Comm comm, int *status)
{
    (void)call;
    (void)comm;
    *status = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int cli_impl_Comm_get_name(cli_call_t *call, MPI_Comm comm, char *comm_name, int *resultlen)
{
    (void)comm;
    cli_lock();
    size_t n = strnlen(call->comm->name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(comm_name, call->comm->name, n);
    cli_unlock();
    comm_name[n] = '\0';
    *resultlen = (int)n;
    return MPI_SUCCESS;
}

int cli_impl_Comm_set_name(cli_call_t *call, MPI_Comm comm, const char *comm_name)
{
    (void)comm;
    cli_lock();
    size_t n = strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(call->comm->name, comm_name, n);
    call->comm->name[n] = '\0';
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Comm_get_parent(cli_call_t *call, MPI_Comm *parent)
{
    if (parent == NULL)
        return cli_err(call, MPI_ERR_ARG, "parent", "must not be NULL");
    *parent = cli_abi_comm_null(); /* never spawned */
    return MPI_SUCCESS;
}

int cli_impl_Comm_set_info(cli_call_t *call, MPI_Comm comm, MPI_Info info)
{
    (void)comm;
    cli_info_t *i;
    int rc = cli_info_arg(call, info, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_info_t *copy = NULL;
    if (i != NULL && (copy = cli_info_copy(i)) == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    cli_lock();
    cli_info_t *old = call->comm->hints;
    call->comm->hints = copy;
    cli_unlock();
    cli_info_free(old);
    return MPI_SUCCESS;
}

int cli_impl_Comm_get_info(cli_call_t *call, MPI_Comm comm, MPI_Info *info_used)
{
    (void)comm;
    static const cli_info_t empty = {.predef = -1, .index = -1};
    cli_lock();
    cli_info_t *copy = cli_info_copy(call->comm->hints ? call->comm->hints : &empty);
    cli_unlock();
    if (copy == NULL || cli_info_register(copy, info_used) != MPI_SUCCESS) {
        cli_info_free(copy);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* ULFM. */

int cli_impl_Comm_revoke(cli_call_t *call, MPI_Comm comm)
{
    (void)comm;
    __atomic_store_n(&call->comm->revoked, 1, __ATOMIC_RELEASE);
    return MPI_SUCCESS;
}

int cli_impl_Comm_shrink(cli_call_t *call, MPI_Comm comm, MPI_Comm *newcomm)
{
    (void)comm;
    /* Absent ranks never take part in a swarm communicator, so the live
       members of a duplicate are exactly the survivors. */
    return cli_dup(call, call->comm, NULL, newcomm);
}

int cli_impl_Comm_agree(cli_call_t *call, MPI_Comm comm, int *flag)
{
    (void)comm;
    int32_t in = *flag, out = 0;
    collab_op_t band = {.kind = COLLAB_OP_BAND};
    int st = collab_allreduce(call->comm->core, &in, &out, 1, COLLAB_INT32, &band, NULL);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "agreement");
    *flag = out;
    return MPI_SUCCESS;
}

int cli_impl_Comm_failure_ack(cli_call_t *call, MPI_Comm comm)
{
    (void)call;
    (void)comm;
    return MPI_SUCCESS;
}

int cli_impl_Comm_failure_get_acked(cli_call_t *call, MPI_Comm comm, MPI_Group *failedgrp)
{
    (void)call;
    (void)comm;
    /* Departed peers are not failures in a swarm; strict-mode failures are
       reported per call (MPIX_ERR_PROC_FAILED). */
    *failedgrp = cli_abi_group_predef(CLI_GROUP_EMPTY);
    return MPI_SUCCESS;
}
