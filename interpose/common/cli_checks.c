/*  cli_checks.c - the argument checks the generated bindings run.

    Each check validates one argument as the MPI standard requires (even
    where MPICH skips the check, e.g. a negative count) and reports a
    failure through cli_err() with a message naming the argument and its
    value.  The communicator check runs first and selects the error
    handler of every later error of the call; a bad communicator handle
    itself is reported through MPI_COMM_WORLD's handler.
*/
#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void cli_call_init(cli_call_t *call, const char *name)
{
    call->name = name;
    call->comm = NULL;
}

int cli_enter(cli_call_t *call, const char *name, int flags)
{
    cli_call_init(call, name);
    if (flags & CLI_PRE)
        return MPI_SUCCESS;
    int state = __atomic_load_n(&cli.state, __ATOMIC_ACQUIRE);
    if (state == CLI_STATE_INIT) {
        /* Starts in a row match by initialisation order (cli_persist.c). */
        if (cli_persist_queued() && strcmp(name, "MPI_Start") != 0 &&
            strcmp(name, "MPI_Startall") != 0)
            cli_persist_flush();
        return MPI_SUCCESS;
    }
    return cli_err(call, MPI_ERR_OTHER, NULL, "called %s",
                   state == CLI_STATE_PRE ? "before MPI_Init" : "after MPI_Finalize");
}

/* Formats a handle of any width as hex (handles are ints in one ABI and
   pointers in the other). */
static const char *cli_fmt_handle(const void *h, size_t n, char *buf, size_t len)
{
    uint64_t v = 0;
    if (n == 4) {
        uint32_t x;
        memcpy(&x, h, 4);
        v = x;
    } else if (n == 8) {
        memcpy(&v, h, 8);
    }
    snprintf(buf, len, "0x%llx", (unsigned long long)v);
    return buf;
}

int cli_check_comm(cli_call_t *call, MPI_Comm h, const char *arg)
{
    int why = 0;
    char b[32];
    cli_comm_t *c = cli_comm_lookup(h, &why);
    if (c == NULL) {
        call->comm = NULL;
        if (why == CLI_H_NULL)
            return cli_err(call, MPI_ERR_COMM, arg, "MPI_COMM_NULL is not a valid communicator");
        return cli_err(call, MPI_ERR_COMM, arg, "%s is not a communicator",
                       cli_fmt_handle(&h, sizeof h, b, sizeof b));
    }
    call->comm = c;
    return MPI_SUCCESS;
}

int cli_check_count(cli_call_t *call, MPI_Count n, const char *arg)
{
    if (n < 0)
        return cli_err(call, MPI_ERR_COUNT, arg, "%lld is negative", (long long)n);
    return MPI_SUCCESS;
}

static int cli_check_type_common(cli_call_t *call, MPI_Datatype h, const char *arg, int commit)
{
    int why = 0;
    char b[32];
    cli_type_t *t = cli_type_lookup(h, &why);
    if (t == NULL) {
        if (why == CLI_H_NULL)
            return cli_err(call, MPI_ERR_TYPE, arg, "MPI_DATATYPE_NULL is not a valid datatype");
        return cli_err(call, MPI_ERR_TYPE, arg, "%s is not a datatype",
                       cli_fmt_handle(&h, sizeof h, b, sizeof b));
    }
    if (commit && !t->committed)
        return cli_err(call, MPI_ERR_TYPE, arg,
                       "the datatype was not committed (call MPI_Type_commit first)");
    return MPI_SUCCESS;
}

int cli_check_type(cli_call_t *call, MPI_Datatype h, const char *arg)
{
    return cli_check_type_common(call, h, arg, 1);
}

int cli_check_dtype(cli_call_t *call, MPI_Datatype h, const char *arg)
{
    return cli_check_type_common(call, h, arg, 0);
}

int cli_check_op(cli_call_t *call, MPI_Op h, const char *arg)
{
    int why = 0;
    char b[32];
    if (cli_op_lookup(h, &why) != NULL)
        return MPI_SUCCESS;
    if (why == CLI_H_NULL)
        return cli_err(call, MPI_ERR_OP, arg, "MPI_OP_NULL is not a valid operation");
    return cli_err(call, MPI_ERR_OP, arg, "%s is not an operation",
                   cli_fmt_handle(&h, sizeof h, b, sizeof b));
}

static int cli_comm_size_of(const cli_call_t *call)
{
    const cli_comm_t *c = call->comm ? call->comm : &cli_world;
    return c->core ? collab_comm_size(c->core) : 0;
}

int cli_check_root(cli_call_t *call, int root, const char *arg)
{
    int size = cli_comm_size_of(call);
    if (root < 0 || root >= size)
        return cli_err(call, MPI_ERR_ROOT, arg, "root %d is out of range [0, %d)", root, size);
    return MPI_SUCCESS;
}

int cli_check_dest(cli_call_t *call, int rank, const char *arg)
{
    int size = cli_comm_size_of(call);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= size)
        return cli_err(call, MPI_ERR_RANK, arg,
                       "rank %d is out of range [0, %d) and not MPI_PROC_NULL", rank, size);
    return MPI_SUCCESS;
}

int cli_check_src(cli_call_t *call, int rank, const char *arg)
{
    int size = cli_comm_size_of(call);
    if (rank == MPI_PROC_NULL || rank == MPI_ANY_SOURCE)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= size)
        return cli_err(call, MPI_ERR_RANK, arg,
                       "rank %d is out of range [0, %d) and not MPI_ANY_SOURCE or MPI_PROC_NULL",
                       rank, size);
    return MPI_SUCCESS;
}

int cli_check_tag(cli_call_t *call, int tag, const char *arg)
{
    if (tag < 0 || tag > CLI_ABI_TAG_UB)
        return cli_err(call, MPI_ERR_TAG, arg, "tag %d is out of range [0, %d]", tag,
                       CLI_ABI_TAG_UB);
    return MPI_SUCCESS;
}

int cli_check_rtag(cli_call_t *call, int tag, const char *arg)
{
    if (tag == MPI_ANY_TAG)
        return MPI_SUCCESS;
    if (tag < 0 || tag > CLI_ABI_TAG_UB)
        return cli_err(call, MPI_ERR_TAG, arg, "tag %d is out of range [0, %d] and not MPI_ANY_TAG",
                       tag, CLI_ABI_TAG_UB);
    return MPI_SUCCESS;
}

int cli_check_buf(cli_call_t *call, const void *buf, MPI_Count n, const char *arg)
{
    if (n > 0 && buf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, arg, "NULL buffer with count %lld > 0", (long long)n);
    if (n > 0 && buf == MPI_IN_PLACE)
        return cli_err(call, MPI_ERR_BUFFER, arg, "MPI_IN_PLACE is not allowed here");
    return MPI_SUCCESS;
}

int cli_check_ptr(cli_call_t *call, const void *p, const char *arg)
{
    if (p == NULL)
        return cli_err(call, MPI_ERR_ARG, arg, "must not be NULL");
    return MPI_SUCCESS;
}
