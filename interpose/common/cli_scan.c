/*  cli_scan.c - prefix reductions (MPI_Scan, MPI_Exscan).

    The core has no prefix reduction, so the face gathers every rank's
    contribution with an all-gather and reduces the prefix locally, in
    rank order (so non-commutative user ops are honoured):
    x0 op (x1 op (... op x_me)).  Each member moves (n-1) x count
    elements, so this suits the small scans programs use for offsets.
    A prefix is only defined when every rank contributed: if the swarm ran
    the all-gather without some ranks, the call fails with
    MPIX_ERR_PROC_FAILED instead of returning a wrong prefix.
*/
#include "cli_coll.h"
#include "cli_impl.h"

#include <stdlib.h>
#include <string.h>

/* inout = in (op) inout, with the face's user-op trampoline for user ops. */
static int cli_fold(const void *in, void *inout, size_t elems, collab_dtype_t t,
                    const collab_op_t *op)
{
    if (op->kind == COLLAB_OP_USER) {
        op->user_fn(in, inout, elems, op->user_ctx);
        return COLLAB_OK;
    }
    return collab_reduce_local(in, inout, elems, t, op);
}

static int cli_scan(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, int exclusive)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_type_t *t = cli_type_lookup(datatype, &why);
    cli_op_t *o = cli_op_lookup(op, &why);
    collab_op_t cop = {0};
    cli_user_op_ctx_t uctx;
    collab_dtype_t ctype;
    MPI_Count cmult, e;
    if ((rc = cli_op_prepare(call, o, t, &cop, &uctx, &ctype, &cmult)) != MPI_SUCCESS)
        return rc;
    MPI_Count b = cli_type_bytes(t, count);
    if (__builtin_mul_overflow(count, cmult, &e) || b < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    size_t elems = (size_t)e, bytes = (size_t)b;
    if (sendbuf != MPI_IN_PLACE && bytes > 0 && sendbuf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", bytes);
    if ((rc = cli_coll_buf(call, recvbuf, bytes, "recvbuf")) != MPI_SUCCESS)
        return rc;
    if (cli_overlap(sendbuf, bytes, recvbuf, bytes))
        return cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    if (bytes == 0)
        return MPI_SUCCESS;

    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    size_t *counts = malloc((size_t)n * sizeof *counts),
           *displs = malloc((size_t)n * sizeof *displs);
    char *all = (size_t)n <= SIZE_MAX / bytes ? malloc((size_t)n * bytes) : NULL;
    if (counts == NULL || displs == NULL || all == NULL) {
        free(counts);
        free(displs);
        free(all);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for %d x %zu bytes", n, bytes);
    }
    for (int k = 0; k < n; k++) {
        counts[k] = bytes;
        displs[k] = (size_t)k * bytes;
    }
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    int st = collab_allgatherv(call->comm->core, mine, bytes, all, counts, displs, NULL);
    free(counts);
    free(displs);
    if (st == COLLAB_OK) {
        collab_info_t info;
        if (collab_last_info(&info) == COLLAB_OK && info.group_size < n) {
            free(all);
            return cli_err(call, CLI_ABI_ERR_PROC_FAILED, NULL,
                           "a prefix reduction needs every rank, but only %d of %d took part",
                           info.group_size, n);
        }
        cli_collab_note(call->comm);
    }
    if (st != COLLAB_OK) {
        free(all);
        return cli_err_core(call, st, "gathering the contributions");
    }
    int last = exclusive ? me - 1 : me;
    if (last >= 0) {
        char *acc = all + (size_t)last * bytes; /* fold right to left into rank last's slot */
        for (int r = last - 1; r >= 0 && st == COLLAB_OK; r--)
            st = cli_fold(all + (size_t)r * bytes, acc, elems, ctype, &cop);
        if (st == COLLAB_OK)
            st = collab_memcpy(recvbuf, acc, bytes); /* recvbuf may be device memory */
    }
    free(all);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "the prefix reduction");
    return MPI_SUCCESS;
}

int cli_impl_Scan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 0);
}

int cli_impl_Exscan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 1);
}
