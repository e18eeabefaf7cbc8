/*  cli_coll.c - reductions, broadcast, barrier (and the shared helpers).

    Each binding validates what the table could not (arguments significant
    only at the root, MPI_IN_PLACE rules, aliasing of send and receive
    buffers, the op against the datatype), translates to core units
    (elements of the core type for reductions, bytes for data movement)
    and calls the core, blocking or with a request.  Swarm semantics
    (absent ranks, weights) are the core's; the face adds none.
    MPI_Reduce_scatter (varying counts) runs as an all-reduce of the whole
    vector in a scratch buffer followed by a copy of this rank's block, so
    an in-place call writes nothing but that block.
*/
#include "cli_coll.h"
#include "cli_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Helpers. */

static void cli_coll_free(cli_coll_aux_t *a)
{
    free(a->counts);
    free(a->displs);
    free(a->tmp);
    free(a);
}

static int cli_coll_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_coll_aux_t *a = r->aux;
    if (a == NULL)
        return status;
    if (status == COLLAB_OK && a->dst != NULL && a->len > 0)
        status = collab_memcpy(a->dst, (const char *)a->src + a->off, a->len); /* device too */
    if (status == COLLAB_OK)
        cli_collab_note(a->comm);
    cli_coll_free(a);
    r->aux = NULL;
    return status;
}

cli_coll_aux_t *cli_coll_begin(cli_call_t *call, int *rc)
{
    int st = cli_comm_check_live(call, call->comm);
    if (st != MPI_SUCCESS) {
        *rc = st;
        return NULL;
    }
    cli_coll_aux_t *a = calloc(1, sizeof *a);
    if (a == NULL) {
        *rc = cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        return NULL;
    }
    a->comm = call->comm;
    return a;
}

int cli_coll_abort(cli_coll_aux_t *a, int rc)
{
    cli_coll_free(a);
    return rc;
}

int cli_coll_end(cli_call_t *call, cli_coll_aux_t *a, int st, collab_request_t *req,
                 MPI_Request *request, const char *what)
{
    if (request == NULL || st != COLLAB_OK) {
        cli_req_t tmp = {.aux = a};
        st = cli_coll_finish(&tmp, st, NULL);
        if (st != COLLAB_OK)
            return cli_err_core(call, st, what);
        return MPI_SUCCESS;
    }
    return cli_req_start(call, CLI_REQ_COLL, call->comm, req, cli_coll_finish, a, request);
}

int cli_coll_nothing(cli_call_t *call, cli_coll_aux_t *a, MPI_Request *request)
{
    cli_coll_free(a);
    if (request == NULL)
        return MPI_SUCCESS;
    return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, NULL, request);
}

int cli_coll_type(cli_call_t *call, MPI_Datatype h, const char *arg, cli_type_t **out)
{
    int rc = cli_check_type(call, h, arg);
    if (rc != MPI_SUCCESS)
        return rc;
    int why = 0;
    *out = cli_type_lookup(h, &why);
    return MPI_SUCCESS;
}

int cli_coll_bytes(cli_call_t *call, cli_type_t *t, MPI_Count count, const char *arg, size_t *out)
{
    if (count < 0)
        return cli_err(call, MPI_ERR_COUNT, arg, "%lld is negative", (long long)count);
    MPI_Count b = cli_type_bytes(t, count);
    if (b < 0)
        return cli_err(call, MPI_ERR_COUNT, arg, "%lld elements overflow the buffer size",
                       (long long)count);
    *out = (size_t)b;
    return MPI_SUCCESS;
}

int cli_coll_buf(cli_call_t *call, const void *buf, size_t bytes, const char *arg)
{
    if (bytes > 0 && buf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, arg, "NULL buffer for %zu bytes", bytes);
    if (buf == MPI_IN_PLACE)
        return cli_err(call, MPI_ERR_BUFFER, arg, "MPI_IN_PLACE is not allowed here");
    return MPI_SUCCESS;
}

int cli_coll_vectors(cli_call_t *call, cli_coll_aux_t *a, int n, cli_vec_t counts, cli_vec_t displs,
                     MPI_Count extent, const char *cname, const char *dname)
{
    if (counts.i == NULL && counts.c == NULL)
        return cli_err(call, MPI_ERR_ARG, cname, "must not be NULL");
    if (displs.i == NULL && displs.a == NULL)
        return cli_err(call, MPI_ERR_ARG, dname, "must not be NULL");
    a->counts = malloc((size_t)n * sizeof(size_t) + 1);
    a->displs = malloc((size_t)n * sizeof(size_t) + 1);
    if (a->counts == NULL || a->displs == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    for (int k = 0; k < n; k++) {
        MPI_Count c = cli_vec_at(counts, k), d = cli_vec_at(displs, k), cb, db;
        if (c < 0)
            return cli_err(call, MPI_ERR_COUNT, cname, "%s[%d] = %lld is negative", cname, k,
                           (long long)c);
        if (d < 0)
            return cli_err(call, MPI_ERR_ARG, dname, "%s[%d] = %lld is negative (not supported)",
                           dname, k, (long long)d);
        if (__builtin_mul_overflow(c, extent, &cb) || __builtin_mul_overflow(d, extent, &db))
            return cli_err(call, MPI_ERR_COUNT, cname, "entry %d overflows", k);
        a->counts[k] = (size_t)cb;
        a->displs[k] = (size_t)db;
    }
    return MPI_SUCCESS;
}

static cli_type_t *cli_dt(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

static cli_op_t *cli_opof(MPI_Op h)
{
    int why = 0;
    return cli_op_lookup(h, &why);
}

/* Checks send/receive buffers of a reduction over `bytes` bytes. */
static int cli_red_bufs(cli_call_t *call, const void *sendbuf, const void *recvbuf, size_t bytes,
                        int in_place_ok, int recv_significant)
{
    if (sendbuf == MPI_IN_PLACE && !in_place_ok)
        return cli_err(call, MPI_ERR_BUFFER, "sendbuf", "MPI_IN_PLACE is allowed only at the root");
    if (sendbuf != MPI_IN_PLACE && bytes > 0 && sendbuf == NULL)
        return cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", bytes);
    if (!recv_significant)
        return MPI_SUCCESS;
    int rc = cli_coll_buf(call, recvbuf, bytes, "recvbuf");
    if (rc != MPI_SUCCESS)
        return rc;
    if (cli_overlap(sendbuf, bytes, recvbuf, bytes))
        return cli_err(call, MPI_ERR_BUFFER, "recvbuf",
                       "overlaps sendbuf (use MPI_IN_PLACE for an in-place operation)");
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */

static int cli_barrier(cli_call_t *call, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    collab_request_t *req = NULL;
    int st = collab_barrier(call->comm->core, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the barrier");
}

int cli_impl_Barrier(cli_call_t *call, MPI_Comm comm)
{
    (void)comm;
    return cli_barrier(call, NULL);
}

int cli_impl_Ibarrier(cli_call_t *call, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_barrier(call, request);
}

static int cli_bcast(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                     int root, MPI_Request *request)
{
    if (cli_sparse_type(datatype))
        return cli_sparse_bcast(call, buffer, count, datatype, root, request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    size_t bytes = 0;
    if ((rc = cli_coll_bytes(call, cli_dt(datatype), count, "count", &bytes)) != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (bytes == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_bcast(call->comm->core, buffer, bytes, root, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the broadcast");
}

int cli_impl_Bcast_c(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                     int root, MPI_Comm comm)
{
    (void)comm;
    return cli_bcast(call, buffer, count, datatype, root, NULL);
}

int cli_impl_Ibcast_c(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                      int root, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_bcast(call, buffer, count, datatype, root, request);
}

/* Prepares the op and the element count of a reduction. */
static int cli_red_prep(cli_call_t *call, cli_coll_aux_t *a, MPI_Count count, MPI_Datatype datatype,
                        MPI_Op op, collab_op_t *cop, size_t *elems, size_t *bytes,
                        collab_dtype_t *ctype)
{
    cli_type_t *t = cli_dt(datatype);
    MPI_Count cmult, e;
    int rc = cli_op_prepare(call, cli_opof(op), t, cop, &a->uctx, ctype, &cmult);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count b = cli_type_bytes(t, count);
    if (__builtin_mul_overflow(count, cmult, &e) || b < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow", (long long)count);
    *elems = (size_t)e;
    *bytes = (size_t)b;
    return MPI_SUCCESS;
}

/* Allreduce (root CLI_ALL_RANKS) and reduce: the same checks, with the
   receive buffer significant at every rank or at the root only. */
#define CLI_ALL_RANKS (-1)

static int cli_reduce(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, MPI_Op op, int root, MPI_Request *request)
{
    if (cli_fold_needed(op, datatype))
        return cli_fold_reduce(call, sendbuf, recvbuf, count, datatype, op, root, request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int all = root == CLI_ALL_RANKS;
    int at_root = all || collab_comm_rank(call->comm->core) == root;
    collab_op_t cop = {0};
    collab_dtype_t ctype = COLLAB_BYTE;
    size_t elems = 0, bytes = 0;
    if ((rc = cli_red_prep(call, a, count, datatype, op, &cop, &elems, &bytes, &ctype)) !=
            MPI_SUCCESS ||
        (rc = cli_red_bufs(call, sendbuf, recvbuf, bytes, at_root, at_root)) != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (elems == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    const void *sb = sendbuf == MPI_IN_PLACE ? NULL : sendbuf;
    int st = all ? collab_allreduce(call->comm->core, sb, recvbuf, elems, ctype, &cop,
                                    request ? &req : NULL)
                 : collab_reduce(call->comm->core, sb, recvbuf, elems, ctype, &cop, root,
                                 request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, all ? "the all-reduce" : "the reduction");
}

int cli_impl_Allreduce_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_reduce(call, sendbuf, recvbuf, count, datatype, op, CLI_ALL_RANKS, NULL);
}

int cli_impl_Iallreduce_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_reduce(call, sendbuf, recvbuf, count, datatype, op, CLI_ALL_RANKS, request);
}

int cli_impl_Reduce_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_reduce(call, sendbuf, recvbuf, count, datatype, op, root, NULL);
}

int cli_impl_Ireduce_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                       MPI_Request *request)
{
    (void)comm;
    return cli_reduce(call, sendbuf, recvbuf, count, datatype, op, root, request);
}

static int cli_rsb(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                   MPI_Datatype datatype, MPI_Op op, MPI_Request *request)
{
    if (cli_fold_needed(op, datatype)) {
        int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
        MPI_Count total;
        if (__builtin_mul_overflow(recvcount, (MPI_Count)n, &total))
            return cli_err(call, MPI_ERR_COUNT, "recvcount", "the vector size overflows");
        return cli_fold_rs(call, sendbuf, recvbuf, total, recvcount * me, recvcount, datatype, op,
                           request);
    }
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int n = collab_comm_size(call->comm->core);
    collab_op_t cop = {0};
    collab_dtype_t ctype = COLLAB_BYTE;
    size_t elems = 0, bytes = 0;
    if ((rc = cli_red_prep(call, a, recvcount, datatype, op, &cop, &elems, &bytes, &ctype)) !=
        MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (sendbuf != MPI_IN_PLACE && bytes > 0 && sendbuf == NULL)
        rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", bytes * n);
    else if ((rc = cli_coll_buf(call, recvbuf, bytes, "recvbuf")) == MPI_SUCCESS &&
             cli_overlap(sendbuf, bytes * (size_t)n, recvbuf, bytes))
        rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (elems == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_reduce_scatter_block(call->comm->core, sendbuf == MPI_IN_PLACE ? NULL : sendbuf,
                                         recvbuf, elems, ctype, &cop, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the reduce-scatter");
}

int cli_impl_Reduce_scatter_block_c(cli_call_t *call, const void *sendbuf, void *recvbuf,
                                    MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm)
{
    (void)comm;
    return cli_rsb(call, sendbuf, recvbuf, recvcount, datatype, op, NULL);
}

int cli_impl_Ireduce_scatter_block_c(cli_call_t *call, const void *sendbuf, void *recvbuf,
                                     MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                     MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_rsb(call, sendbuf, recvbuf, recvcount, datatype, op, request);
}

/* Reduce_scatter: all-reduce of the whole vector, then this rank's block. */
static int cli_rs(cli_call_t *call, const void *sendbuf, void *recvbuf, cli_vec_t recvcounts,
                  MPI_Datatype datatype, MPI_Op op, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    cli_type_t *t = cli_dt(datatype);
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    MPI_Count total = 0, before = 0, mine = 0;
    for (int k = 0; k < n; k++) {
        MPI_Count c = cli_vec_at(recvcounts, k);
        if (c < 0)
            return cli_coll_abort(a, cli_err(call, MPI_ERR_COUNT, "recvcounts",
                                             "recvcounts[%d] = %lld is negative", k, (long long)c));
        if (k < me)
            before += c;
        if (k == me)
            mine = c;
        if (__builtin_add_overflow(total, c, &total))
            return cli_coll_abort(a, cli_err(call, MPI_ERR_COUNT, "recvcounts", "sum overflows"));
    }
    if (cli_fold_needed(op, datatype)) {
        cli_coll_abort(a, MPI_SUCCESS);
        return cli_fold_rs(call, sendbuf, recvbuf, total, before, mine, datatype, op, request);
    }
    collab_op_t cop = {0};
    collab_dtype_t ctype = COLLAB_BYTE;
    size_t elems = 0, bytes = 0;
    if ((rc = cli_red_prep(call, a, total, datatype, op, &cop, &elems, &bytes, &ctype)) !=
        MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    size_t mybytes = (size_t)cli_type_bytes(t, mine), off = (size_t)cli_type_bytes(t, before);
    if (sendbuf != MPI_IN_PLACE && bytes > 0 && sendbuf == NULL)
        rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", bytes);
    else if (sendbuf == MPI_IN_PLACE && bytes > 0 && recvbuf == NULL)
        rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "NULL buffer with MPI_IN_PLACE");
    else if (sendbuf != MPI_IN_PLACE)
        rc = cli_coll_buf(call, recvbuf, mybytes, "recvbuf");
    if (rc == MPI_SUCCESS && cli_overlap(sendbuf, bytes, recvbuf, mybytes))
        rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (elems == 0)
        return cli_coll_nothing(call, a, request);
    /* The whole vector is reduced in a scratch copy and only this rank's
       block is copied out: in place, the rest of recvbuf stays untouched
       (as MPICH and Open MPI leave it). */
    if ((a->tmp = malloc(bytes)) == NULL)
        return cli_coll_abort(
            a, cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for a %zu-byte vector", bytes));
    void *work = a->tmp;
    if (sendbuf == MPI_IN_PLACE)
        memcpy(work, recvbuf, bytes);
    a->src = work;
    a->dst = recvbuf;
    a->off = off;
    a->len = mybytes;
    collab_request_t *req = NULL;
    int st = collab_allreduce(call->comm->core, sendbuf == MPI_IN_PLACE ? NULL : sendbuf, work,
                              elems, ctype, &cop, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the reduce-scatter");
}

int cli_impl_Reduce_scatter(cli_call_t *call, const void *sendbuf, void *recvbuf,
                            const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    (void)comm;
    return cli_rs(call, sendbuf, recvbuf, (cli_vec_t){.i = recvcounts}, datatype, op, NULL);
}

int cli_impl_Reduce_scatter_c(cli_call_t *call, const void *sendbuf, void *recvbuf,
                              const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm)
{
    (void)comm;
    return cli_rs(call, sendbuf, recvbuf, (cli_vec_t){.c = recvcounts}, datatype, op, NULL);
}

int cli_impl_Ireduce_scatter(cli_call_t *call, const void *sendbuf, void *recvbuf,
                             const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_rs(call, sendbuf, recvbuf, (cli_vec_t){.i = recvcounts}, datatype, op, request);
}

int cli_impl_Ireduce_scatter_c(cli_call_t *call, const void *sendbuf, void *recvbuf,
                               const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_rs(call, sendbuf, recvbuf, (cli_vec_t){.c = recvcounts}, datatype, op, request);
}
