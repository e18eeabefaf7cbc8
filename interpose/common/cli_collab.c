/*  cli_collab.c - the swarm extensions MPIX_Collab_*.

    The core reports on the last collective this peer completed
    (collab_last_info) without saying on which communicator it ran; the
    face remembers that itself (cli_collab_note, called when a collective
    completes) so that MPIX_Collab_group(comm, ...) can refuse to answer
    about another communicator's collective instead of answering wrongly.
*/
#include "cli.h"
#include "cli_impl.h"

#include <math.h>
#include <string.h>

static int cli_last_valid;       /* a collective completed */
static MPI_Comm cli_last_handle; /* on this communicator */
static uint64_t cli_last_id;     /* with this core id */
static int cli_last_size;        /* nominal size */

void cli_collab_note(cli_comm_t *c)
{
    MPI_Comm h = cli_comm_handle(c);
    uint64_t id = collab_comm_id(c->core);
    int size = collab_comm_size(c->core);
    cli_lock();
    cli_last_valid = 1;
    cli_last_handle = h;
    cli_last_id = id;
    cli_last_size = size;
    cli_unlock();
}

int cli_impl_Collab_step(cli_call_t *call)
{
    int st = collab_step();
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "marking the step boundary");
    return MPI_SUCCESS;
}

int cli_impl_Collab_set_weight(cli_call_t *call, double weight)
{
    if (!isfinite(weight) || weight <= 0)
        return cli_err(call, MPI_ERR_ARG, "weight", "%g is not a finite number > 0", weight);
    int st = collab_set_weight(weight);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "setting the weight");
    return MPI_SUCCESS;
}

int cli_impl_Collab_leave(cli_call_t *call)
{
    /* Async-signal-safe when it succeeds (a handler may call it): the
       core sets a flag, wakes its engine and polls. */
    int st = collab_leave();
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "leaving the swarm");
    return MPI_SUCCESS;
}

int cli_impl_Collab_report(cli_call_t *call, const char *name, double value)
{
    if (!isfinite(value))
        return cli_err(call, MPI_ERR_ARG, "value", "%g is not a finite number", value);
    int st = collab_report(name, value);
    if (st == COLLAB_ERR_ARG)
        return cli_err(call, MPI_ERR_ARG, "name",
                       "expected 1 to 32 characters of A-Z a-z 0-9 _ . (a value name)");
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "reporting a value");
    return MPI_SUCCESS;
}

/* Reads the core's record of the last collective; 0 if there is none. */
static int cli_last(cli_call_t *call, collab_info_t *info, MPI_Comm *h, int *size, int *rc)
{
    cli_lock();
    int valid = cli_last_valid;
    *h = cli_last_handle;
    uint64_t id = cli_last_id;
    *size = cli_last_size;
    cli_unlock();
    if (!valid) {
        *rc = cli_err(call, MPI_ERR_OTHER, NULL, "no collective has completed yet");
        return 0;
    }
    int st = collab_last_info(info);
    if (st != COLLAB_OK) {
        *rc = cli_err_core(call, st, "reading the last collective's record");
        return 0;
    }
    (void)id;
    return 1;
}

int cli_impl_Collab_group(cli_call_t *call, MPI_Comm comm, int maxranks, int ranks[], int *nranks)
{
    collab_info_t info;
    MPI_Comm h;
    int size, rc = MPI_SUCCESS;
    if (!cli_last(call, &info, &h, &size, &rc))
        return rc;
    if (h != cli_comm_handle(call->comm) || collab_comm_id(call->comm->core) != cli_last_id)
        return cli_err(call, MPI_ERR_OTHER, "comm",
                       "the last collective this peer completed ran on another communicator");
    (void)comm;
    if (maxranks > 0 && ranks == NULL)
        return cli_err(call, MPI_ERR_ARG, "ranks", "must not be NULL when maxranks > 0");
    int n = info.nranks < COLLAB_MAX_INFO_RANKS ? info.nranks : COLLAB_MAX_INFO_RANKS;
    for (int i = 0; i < n && i < maxranks; i++)
        ranks[i] = info.ranks[i];
    *nranks = n;
    return MPI_SUCCESS;
}

int cli_impl_Collab_last_info(cli_call_t *call, MPIX_Collab_info *out)
{
    collab_info_t info;
    MPI_Comm h;
    int size, rc = MPI_SUCCESS;
    if (!cli_last(call, &info, &h, &size, &rc))
        return rc;
    memset(out, 0, sizeof *out);
    out->comm = h;
    out->comm_size = info.world_size > 0 ? info.world_size : size;
    out->group_size = info.group_size;
    out->nranks =
        info.nranks < MPIX_COLLAB_MAX_INFO_RANKS ? info.nranks : MPIX_COLLAB_MAX_INFO_RANKS;
    out->sequence = (MPI_Count)info.sequence;
    out->bytes_sent = (MPI_Count)info.bytes_sent;
    out->bytes_received = (MPI_Count)info.bytes_received;
    out->seconds = info.seconds;
    for (int i = 0; i < out->nranks; i++)
        out->ranks[i] = info.ranks[i];
    return MPI_SUCCESS;
}
