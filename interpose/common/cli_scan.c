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

/* The state of one prefix reduction, until the all-gather completes. */
typedef struct {
    cli_comm_t *comm;
    collab_op_t cop;
    cli_user_op_ctx_t uctx; /* cop.user_ctx points here */
    collab_dtype_t ctype;
    size_t elems, bytes;
    int n, me, exclusive;
    size_t *counts, *displs;
    size_t slot;   /* CLI_SCAN_HDR + bytes: one rank's contribution, flagged */
    char *mine;    /* this rank's slot */
    char *all;     /* n slots: every rank's contribution */
    void *recvbuf; /* the program's */
} cli_scan_t;

static void cli_scan_free(cli_scan_t *s)
{
    free(s->counts);
    free(s->displs);
    free(s->all);
    free(s->mine);
    free(s);
}

/* Each contribution travels behind a header whose first byte is 1: an
   absent rank's slot arrives zero-filled, so a missing contribution is
   seen in the data itself (not in the swarm's record of the last
   collective, which other collectives in flight may have overwritten).
   16 bytes keep the data aligned for the reduction kernels. */
#define CLI_SCAN_HDR 16

/* Folds the prefix once every contribution is here; returns a core
   status, or COLLAB_ERR_PROC_FAILED when a rank was absent. */
static int cli_scan_fold(cli_scan_t *s, int st)
{
    if (st != COLLAB_OK)
        return st;
    for (int r = 0; r < s->n; r++)
        if (s->all[(size_t)r * s->slot] != 1)
            return COLLAB_ERR_PROC_FAILED;
    cli_collab_note(s->comm);
    int last = s->exclusive ? s->me - 1 : s->me;
    if (last < 0)
        return COLLAB_OK;
    char *acc = s->all + (size_t)last * s->slot + CLI_SCAN_HDR; /* fold right to left into it */
    s->cop.user_ctx = &s->uctx;
    for (int r = last - 1; r >= 0 && st == COLLAB_OK; r--)
        st =
            cli_fold(s->all + (size_t)r * s->slot + CLI_SCAN_HDR, acc, s->elems, s->ctype, &s->cop);
    if (st == COLLAB_OK)
        st = collab_memcpy(s->recvbuf, acc, s->bytes); /* recvbuf may be device memory */
    return st;
}

static int cli_scan_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_scan_t *s = r->aux;
    r->aux = NULL;
    status = cli_scan_fold(s, status);
    if (status == COLLAB_ERR_PROC_FAILED)
        cli_log_line("a nonblocking prefix reduction needs every rank, but not all took part");
    cli_scan_free(s);
    return status;
}

static int cli_scan(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, int exclusive, MPI_Request *request)
{
    if (cli_fold_needed(op, datatype)) /* elements the core cannot carry */
        return cli_fold_scan(call, sendbuf, recvbuf, count, datatype, op, exclusive, request);
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    cli_type_t *t = cli_type_lookup(datatype, &why);
    cli_op_t *o = cli_op_lookup(op, &why);
    cli_scan_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    MPI_Count cmult, e;
    if ((rc = cli_op_prepare(call, o, t, &s->cop, &s->uctx, &s->ctype, &cmult)) != MPI_SUCCESS) {
        cli_scan_free(s);
        return rc;
    }
    MPI_Count b = cli_type_bytes(t, count);
    if (__builtin_mul_overflow(count, cmult, &e) || b < 0) {
        cli_scan_free(s);
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    }
    size_t elems = (size_t)e, bytes = (size_t)b;
    if (sendbuf != MPI_IN_PLACE && bytes > 0 && sendbuf == NULL)
        rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", bytes);
    else if ((rc = cli_coll_buf(call, recvbuf, bytes, "recvbuf")) == MPI_SUCCESS &&
             cli_overlap(sendbuf, bytes, recvbuf, bytes))
        rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    if (rc != MPI_SUCCESS || bytes == 0) {
        cli_scan_free(s);
        if (rc == MPI_SUCCESS && request != NULL)
            return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, NULL, request);
        return rc;
    }

    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    s->comm = call->comm;
    s->elems = elems, s->bytes = bytes, s->n = n, s->me = me, s->exclusive = exclusive;
    s->recvbuf = recvbuf;
    s->counts = malloc((size_t)n * sizeof *s->counts);
    s->displs = malloc((size_t)n * sizeof *s->displs);
    s->slot = bytes + CLI_SCAN_HDR;
    s->all = bytes < SIZE_MAX / 2 && (size_t)n <= SIZE_MAX / s->slot ? malloc((size_t)n * s->slot)
                                                                     : NULL;
    s->mine = s->all != NULL ? calloc(1, s->slot) : NULL;
    if (s->counts == NULL || s->displs == NULL || s->all == NULL || s->mine == NULL) {
        cli_scan_free(s);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for %d x %zu bytes", n, bytes);
    }
    for (int k = 0; k < n; k++) {
        s->counts[k] = s->slot;
        s->displs[k] = (size_t)k * s->slot;
    }
    s->mine[0] = 1;
    int st = collab_memcpy(s->mine + CLI_SCAN_HDR, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                           bytes); /* the buffer may be device memory */
    if (st != COLLAB_OK) {
        cli_scan_free(s);
        return cli_err_core(call, st, "copying the contribution");
    }
    collab_request_t *req = NULL;
    st = collab_allgatherv(call->comm->core, s->mine, s->slot, s->all, s->counts, s->displs,
                               request ? &req : NULL);
    if (request != NULL && st == COLLAB_OK)
        return cli_req_start(call, CLI_REQ_COLL, call->comm, req, cli_scan_finish, s, request);
    if (st != COLLAB_OK) {
        cli_scan_free(s);
        return cli_err_core(call, st, "gathering the contributions");
    }
    st = cli_scan_fold(s, st);
    cli_scan_free(s);
    if (st == COLLAB_ERR_PROC_FAILED)
        return cli_err(call, CLI_ABI_ERR_PROC_FAILED, NULL,
                       "a prefix reduction needs every rank, but not all took part");
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "the prefix reduction");
    return MPI_SUCCESS;
}

int cli_impl_Scan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 0, NULL);
}

int cli_impl_Exscan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 1, NULL);
}

int cli_impl_Iscan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 0, request);
}

int cli_impl_Iexscan_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_scan(call, sendbuf, recvbuf, count, datatype, op, 1, request);
}
