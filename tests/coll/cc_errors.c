/*  cc_errors.c - the error path under MPI_ERRORS_RETURN.

    Each erroneous call is made identically on every rank (an argument
    error seen by some ranks only would leave the others waiting in the
    collective), and must return a code of the error class the MPI
    standard names, except for op/datatype pairs, where the MPICH face
    answers as MPICH does (docs/abi.md section 4.1).  Checks that Debian's
    MPICH itself fails (it accepts a negative count for reductions, and
    reports a null datatype as an op error) run only with --std.  Afterwards the communicator must
    still work, and a user error handler must be called with the code.
*/
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS:
        return "MPI_SUCCESS";
    case MPI_ERR_BUFFER:
        return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT:
        return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE:
        return "MPI_ERR_TYPE";
    case MPI_ERR_TAG:
        return "MPI_ERR_TAG";
    case MPI_ERR_COMM:
        return "MPI_ERR_COMM";
    case MPI_ERR_RANK:
        return "MPI_ERR_RANK";
    case MPI_ERR_ROOT:
        return "MPI_ERR_ROOT";
    case MPI_ERR_OP:
        return "MPI_ERR_OP";
    case MPI_ERR_ARG:
        return "MPI_ERR_ARG";
    case MPI_ERR_TRUNCATE:
        return "MPI_ERR_TRUNCATE";
    case MPI_ERR_REQUEST:
        return "MPI_ERR_REQUEST";
    case MPI_ERR_OTHER:
        return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN:
        return "MPI_ERR_INTERN";
    default:
        return "another class";
    }
}

static void expect_class(cc_ctx_t *c, int rc, int want, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS)
        cls = -1;
    cc_check(c, cls == want, "%s: class %d (%s), expected %d (%s)", what, cls, class_name(cls),
             want, class_name(want));
}

#define EXPECT(call, cls) expect_class(c, (call), (cls), #call)

/* Checks that MPI_COMM_WORLD still carries a correct collective. */
static void still_works(cc_ctx_t *c, const char *after)
{
    long one = 1, sum = 0;
    int rc = MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!cc_call_failed(c, rc, "Allreduce after errors"))
        cc_check(c, sum == c->size, "Allreduce after %s errors: %ld", after, sum);
}

static int handler_calls, handler_code;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static void user_handler(cc_ctx_t *c)
{
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (cc_call_failed(c, MPI_Comm_dup(MPI_COMM_WORLD, &dup), "Comm_dup") ||
        cc_call_failed(c, MPI_Comm_create_errhandler(count_errors, &eh),
                       "Comm_create_errhandler") ||
        cc_call_failed(c, MPI_Comm_set_errhandler(dup, eh), "Comm_set_errhandler"))
        return;
    handler_calls = 0;
    int x = 0;
    int rc = MPI_Bcast(&x, 1, MPI_INT, c->size + 2, dup);
    int cls = -1;
    MPI_Error_class(handler_code, &cls);
    cc_check(c, handler_calls == 1 && cls == MPI_ERR_ROOT && rc == handler_code,
             "user error handler: %d call(s), class %d, call returned the handler's code (%d)",
             handler_calls, cls, rc == handler_code);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
}

static void error_strings(cc_ctx_t *c)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = -1;
    int rc = MPI_Error_string(MPI_ERR_ROOT, s, &len);
    cc_check(c, rc == MPI_SUCCESS && len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(s) == len,
             "Error_string of MPI_ERR_ROOT is a non-empty string (length %d)", len);
    int cls = -1;
    rc = MPI_Error_class(MPI_ERR_OP, &cls);
    cc_check(c, rc == MPI_SUCCESS && cls == MPI_ERR_OP, "Error_class of a class is itself");
}

void cc_run_errors(cc_ctx_t *c)
{
    cc_group_begin(c, "errors");
    char a[256], b[256];
    int size = c->size;
    MPI_Request req = MPI_REQUEST_NULL;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);

    /* Invalid communicator (reported through MPI_COMM_WORLD's handler). */
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(a, 1, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send(a, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    int r;
    EXPECT(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM);

    /* Invalid root. */
    EXPECT(MPI_Bcast(a, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(a, 1, MPI_INT, -7, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, size + 3, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, -7, MPI_COMM_WORLD), MPI_ERR_ROOT);

    /* Invalid op, or an op not defined for the datatype. */
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Reduce(a, b, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Reduce_scatter_block(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Iallreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &req), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_C_BOOL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_C_FLOAT_COMPLEX, MPI_MAX, MPI_COMM_WORLD), MPI_ERR_OP);
    /* Outside the standard's op table but accepted by MPICH, so by the
       MPICH face too (docs/abi.md section 4.1). */
    memset(a, 0, sizeof a);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_AINT, MPI_LAND, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT(MPI_Allreduce(a, b, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD), MPI_ERR_OP);

    /* Negative counts, where MPICH checks them too. */
    EXPECT(MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Send(a, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Gather(a, -1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Allgather(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Alltoall(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);

    /* Aliased send and receive buffers (not MPI_IN_PLACE). */
    EXPECT(MPI_Allreduce(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Iallreduce(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER);
    /* Allgather: the send buffer is this rank's own block of the receive
       buffer, so that every rank sees the overlap. */
    {
        int *blocks = cc_alloc(sizeof(int) * (size_t)size);
        EXPECT(MPI_Allgather(blocks + c->rank, 1, MPI_INT, blocks, 1, MPI_INT, MPI_COMM_WORLD),
               MPI_ERR_BUFFER);
        free(blocks);
    }
    EXPECT(MPI_Alltoall(a, 1, MPI_INT, a, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce_scatter_block(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    if (size == 1) {
        /* The receive buffer of rooted calls matters at the root only: with
           more ranks the others would enter a valid collective. */
        EXPECT(MPI_Reduce(a, a, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        EXPECT(MPI_Gather(a, 1, MPI_INT, a, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        EXPECT(MPI_Scatter(a, 1, MPI_INT, a, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    }

    /* Point-to-point arguments. */
    EXPECT(MPI_Send(a, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Recv(a, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    EXPECT(MPI_Send(a, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send(a, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);

    /* A message longer than the receive buffer. */
    {
        int out[10] = {0}, in[5];
        MPI_Request sreq;
        int rc = MPI_Isend(out, 10, MPI_INT, c->rank, 77, MPI_COMM_WORLD, &sreq);
        if (!cc_call_failed(c, rc, "Isend to self")) {
            EXPECT(MPI_Recv(in, 5, MPI_INT, c->rank, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                   MPI_ERR_TRUNCATE);
            cc_call_failed(c, MPI_Wait(&sreq, MPI_STATUS_IGNORE), "Wait for the Isend");
        }
    }

    if (c->std) {
        /* Required by the standard; Debian's MPICH does not report them. */
        EXPECT(MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
        EXPECT(MPI_Reduce(a, b, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
        EXPECT(MPI_Reduce_scatter_block(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
        EXPECT(MPI_Iallreduce(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req), MPI_ERR_COUNT);
        EXPECT(MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
    }

    still_works(c, "argument");
    user_handler(c);
    error_strings(c);
    still_works(c, "handler");
    cc_group_end(c);
}
