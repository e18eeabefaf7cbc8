/*  cli_gather.c - data-movement collectives: allgather(v), gather(v),
    scatter(v), alltoall, blocking and nonblocking.

    The core moves bytes: counts and displacements are scaled by the
    datatype extent into per-rank byte arrays (owned by the call's
    cli_coll_aux_t until completion).  Arguments significant only at the
    root are checked only there, as the standard says; MPI_IN_PLACE is
    accepted where the standard allows it (every rank for allgather and
    alltoall, the root for gather and scatter) and becomes a NULL buffer
    for the core.  The send and receive sizes of a rank's own block must
    agree (MPI_ERR_TRUNCATE when the send is larger, MPI_ERR_ARG when
    smaller: type signatures must match in collectives).
*/
#include "cli_coll.h"
#include "cli_impl.h"

#include <stdlib.h>

static int cli_sizes_match(cli_call_t *call, size_t sbytes, size_t rbytes)
{
    if (sbytes > rbytes)
        return cli_err(call, MPI_ERR_TRUNCATE, "sendcount",
                       "%zu bytes sent but only %zu expected per rank", sbytes, rbytes);
    if (sbytes < rbytes)
        return cli_err(call, MPI_ERR_ARG, "sendcount",
                       "%zu bytes sent but %zu expected per rank (type signatures must match)",
                       sbytes, rbytes);
    return MPI_SUCCESS;
}

/* The send side of a rank that does not use MPI_IN_PLACE. */
static int cli_send_side(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, size_t *sbytes)
{
    cli_type_t *st;
    int rc = cli_coll_type(call, sendtype, "sendtype", &st);
    if (rc == MPI_SUCCESS)
        rc = cli_coll_bytes(call, st, sendcount, "sendcount", sbytes);
    if (rc == MPI_SUCCESS && *sbytes > 0 && sendbuf == NULL)
        rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", *sbytes);
    return rc;
}

static int cli_uniform(cli_call_t *call, cli_coll_aux_t *a, int n, size_t block)
{
    a->counts = malloc((size_t)n * sizeof(size_t) + 1);
    a->displs = malloc((size_t)n * sizeof(size_t) + 1);
    if (a->counts == NULL || a->displs == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    for (int k = 0; k < n; k++) {
        a->counts[k] = block;
        a->displs[k] = (size_t)k * block;
    }
    return MPI_SUCCESS;
}

/* Largest end of any block: the receive buffer must be at least this. */
static size_t cli_span(const cli_coll_aux_t *a, int n)
{
    size_t m = 0;
    for (int k = 0; k < n; k++)
        if (a->counts[k] > 0 && a->displs[k] + a->counts[k] > m)
            m = a->displs[k] + a->counts[k];
    return m;
}

/* The per-rank byte layout of the side that holds every rank's block (the
   receive side of allgather and gather, the send side of scatter): count
   elements of type per rank when uniform, else the counts and displs
   vectors scaled by the type's extent.  Fills a->counts and a->displs;
   argument names in errors are those of the receive side when recv. */
static int cli_layout(cli_call_t *call, cli_coll_aux_t *a, int n, MPI_Datatype type,
                      MPI_Count count, cli_vec_t counts, cli_vec_t displs, int uniform, int recv)
{
    cli_type_t *t;
    size_t block = 0;
    int rc = cli_coll_type(call, type, recv ? "recvtype" : "sendtype", &t);
    if (rc == MPI_SUCCESS && uniform) {
        rc = cli_coll_bytes(call, t, count, recv ? "recvcount" : "sendcount", &block);
        if (rc == MPI_SUCCESS)
            rc = cli_uniform(call, a, n, block);
    } else if (rc == MPI_SUCCESS) {
        rc = cli_coll_vectors(call, a, n, counts, displs, t->extent,
                              recv ? "recvcounts" : "sendcounts", "displs");
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Allgather / Allgatherv. */

static int cli_allgatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          cli_vec_t rcounts, cli_vec_t displs, MPI_Datatype recvtype, int uniform,
                          MPI_Request *request)
{
    if ((sendbuf != MPI_IN_PLACE && cli_sparse_type(sendtype)) || cli_sparse_type(recvtype))
        return cli_sparse_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                     rcounts, displs, recvtype, uniform, request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    size_t sbytes = 0;
    rc = cli_layout(call, a, n, recvtype, recvcount, rcounts, displs, uniform, 1);
    if (rc == MPI_SUCCESS)
        rc = cli_coll_buf(call, recvbuf, cli_span(a, n), "recvbuf");
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE) {
        rc = cli_send_side(call, sendbuf, sendcount, sendtype, &sbytes);
        if (rc == MPI_SUCCESS)
            rc = cli_sizes_match(call, sbytes, a->counts[me]);
        if (rc == MPI_SUCCESS && cli_overlap(sendbuf, sbytes, recvbuf, cli_span(a, n)))
            rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    }
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (cli_span(a, n) == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_allgatherv(call->comm->core, sendbuf == MPI_IN_PLACE ? NULL : sendbuf,
                               sendbuf == MPI_IN_PLACE ? a->counts[me] : sbytes, recvbuf, a->counts,
                               a->displs, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the all-gather");
}

static const cli_vec_t cli_novec = {0};

int cli_impl_Allgather_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, cli_novec,
                          cli_novec, recvtype, 1, NULL);
}

int cli_impl_Iallgather_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, cli_novec,
                          cli_novec, recvtype, 1, request);
}

int cli_impl_Allgatherv(cli_call_t *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const int recvcounts[], const int displs[],
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0,
                          (cli_vec_t){.i = recvcounts}, (cli_vec_t){.i = displs}, recvtype, 0,
                          NULL);
}

int cli_impl_Allgatherv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                          const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0,
                          (cli_vec_t){.c = recvcounts}, (cli_vec_t){.a = displs}, recvtype, 0,
                          NULL);
}

int cli_impl_Iallgatherv(cli_call_t *call, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                         const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0,
                          (cli_vec_t){.i = recvcounts}, (cli_vec_t){.i = displs}, recvtype, 0,
                          request);
}

int cli_impl_Iallgatherv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                           const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request)
{
    (void)comm;
    return cli_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0,
                          (cli_vec_t){.c = recvcounts}, (cli_vec_t){.a = displs}, recvtype, 0,
                          request);
}

/* ---------------------------------------------------------------------- */
/* Gather / Gatherv. */

static int cli_gatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, cli_vec_t rcounts,
                       cli_vec_t displs, MPI_Datatype recvtype, int root, int uniform,
                       MPI_Request *request)
{
    if ((sendbuf != MPI_IN_PLACE && cli_sparse_type(sendtype)) ||
        (collab_comm_rank(call->comm->core) == root && cli_sparse_type(recvtype)))
        return cli_sparse_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, rcounts,
                                  displs, recvtype, root, uniform, request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    int at_root = me == root;
    size_t sbytes = 0, span = 0;
    if (at_root) {
        rc = cli_layout(call, a, n, recvtype, recvcount, rcounts, displs, uniform, 1);
        if (rc == MPI_SUCCESS)
            rc = cli_coll_buf(call, recvbuf, span = cli_span(a, n), "recvbuf");
    } else if (sendbuf == MPI_IN_PLACE) {
        rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "MPI_IN_PLACE is allowed only at the root");
    }
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE) {
        rc = cli_send_side(call, sendbuf, sendcount, sendtype, &sbytes);
        if (rc == MPI_SUCCESS && at_root)
            rc = cli_sizes_match(call, sbytes, a->counts[me]);
        if (rc == MPI_SUCCESS && at_root && cli_overlap(sendbuf, sbytes, recvbuf, span))
            rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    }
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (uniform && at_root && span == 0)
        return cli_coll_nothing(call, a, request); /* every rank sends 0 bytes too */
    if (uniform && !at_root && sbytes == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_gatherv(call->comm->core, sendbuf == MPI_IN_PLACE ? NULL : sendbuf,
                            sendbuf == MPI_IN_PLACE ? a->counts[me] : sbytes, recvbuf, a->counts,
                            a->displs, root, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the gather");
}

int cli_impl_Gather_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                      MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, cli_novec, cli_novec,
                       recvtype, root, 1, NULL);
}

int cli_impl_Igather_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, cli_novec, cli_novec,
                       recvtype, root, 1, request);
}

int cli_impl_Gatherv(cli_call_t *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const int recvcounts[], const int displs[],
                     MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0, (cli_vec_t){.i = recvcounts},
                       (cli_vec_t){.i = displs}, recvtype, root, 0, NULL);
}

int cli_impl_Gatherv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                       const MPI_Aint displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0, (cli_vec_t){.c = recvcounts},
                       (cli_vec_t){.a = displs}, recvtype, root, 0, NULL);
}

int cli_impl_Igatherv(cli_call_t *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const int recvcounts[], const int displs[],
                      MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0, (cli_vec_t){.i = recvcounts},
                       (cli_vec_t){.i = displs}, recvtype, root, 0, request);
}

int cli_impl_Igatherv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                        const MPI_Aint displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                        MPI_Request *request)
{
    (void)comm;
    return cli_gatherv(call, sendbuf, sendcount, sendtype, recvbuf, 0, (cli_vec_t){.c = recvcounts},
                       (cli_vec_t){.a = displs}, recvtype, root, 0, request);
}

/* ---------------------------------------------------------------------- */
/* Scatter / Scatterv. */

static int cli_scatterv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        cli_vec_t scounts, cli_vec_t displs, MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, int uniform,
                        MPI_Request *request)
{
    if ((recvbuf != MPI_IN_PLACE && cli_sparse_type(recvtype)) ||
        (collab_comm_rank(call->comm->core) == root && cli_sparse_type(sendtype)))
        return cli_sparse_scatterv(call, sendbuf, sendcount, scounts, displs, sendtype, recvbuf,
                                   recvcount, recvtype, root, uniform, request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    int at_root = me == root;
    size_t rbytes = 0, span = 0;
    if (at_root) {
        rc = cli_layout(call, a, n, sendtype, sendcount, scounts, displs, uniform, 0);
        span = rc == MPI_SUCCESS ? cli_span(a, n) : 0;
        if (rc == MPI_SUCCESS && span > 0 && sendbuf == NULL)
            rc = cli_err(call, MPI_ERR_BUFFER, "sendbuf", "NULL buffer for %zu bytes", span);
        if (rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE)
            rc =
                cli_err(call, MPI_ERR_BUFFER, "sendbuf", "MPI_IN_PLACE is allowed only as recvbuf");
    } else if (recvbuf == MPI_IN_PLACE) {
        rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "MPI_IN_PLACE is allowed only at the root");
    }
    if (rc == MPI_SUCCESS && recvbuf != MPI_IN_PLACE) {
        cli_type_t *rt;
        rc = cli_coll_type(call, recvtype, "recvtype", &rt);
        if (rc == MPI_SUCCESS)
            rc = cli_coll_bytes(call, rt, recvcount, "recvcount", &rbytes);
        if (rc == MPI_SUCCESS)
            rc = cli_coll_buf(call, recvbuf, rbytes, "recvbuf");
        if (rc == MPI_SUCCESS && at_root && a->counts[me] > rbytes)
            rc = cli_err(call, MPI_ERR_TRUNCATE, "recvcount",
                         "the root's own block (%zu bytes) exceeds the receive buffer (%zu)",
                         a->counts[me], rbytes);
        if (rc == MPI_SUCCESS && at_root && cli_overlap(sendbuf, span, recvbuf, rbytes))
            rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    }
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (uniform && ((at_root && span == 0) || (!at_root && rbytes == 0)))
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_scatterv(call->comm->core, sendbuf, a->counts, a->displs,
                             recvbuf == MPI_IN_PLACE ? NULL : recvbuf, rbytes, root,
                             request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the scatter");
}

int cli_impl_Scatter_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, sendcount, cli_novec, cli_novec, sendtype, recvbuf,
                        recvcount, recvtype, root, 1, NULL);
}

int cli_impl_Iscatter_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, sendcount, cli_novec, cli_novec, sendtype, recvbuf,
                        recvcount, recvtype, root, 1, request);
}

int cli_impl_Scatterv(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                      const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, 0, (cli_vec_t){.i = sendcounts}, (cli_vec_t){.i = displs},
                        sendtype, recvbuf, recvcount, recvtype, root, 0, NULL);
}

int cli_impl_Scatterv_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                        const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, 0, (cli_vec_t){.c = sendcounts}, (cli_vec_t){.a = displs},
                        sendtype, recvbuf, recvcount, recvtype, root, 0, NULL);
}

int cli_impl_Iscatterv(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                       const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, 0, (cli_vec_t){.i = sendcounts}, (cli_vec_t){.i = displs},
                        sendtype, recvbuf, recvcount, recvtype, root, 0, request);
}

int cli_impl_Iscatterv_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                         MPI_Request *request)
{
    (void)comm;
    return cli_scatterv(call, sendbuf, 0, (cli_vec_t){.c = sendcounts}, (cli_vec_t){.a = displs},
                        sendtype, recvbuf, recvcount, recvtype, root, 0, request);
}

/* ---------------------------------------------------------------------- */
/* Alltoall. */

static int cli_alltoall(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, MPI_Request *request)
{
    if ((sendbuf != MPI_IN_PLACE && cli_sparse_type(sendtype)) || cli_sparse_type(recvtype))
        return cli_sparse_alltoall(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                   request);
    int rc = MPI_SUCCESS;
    cli_coll_aux_t *a = cli_coll_begin(call, &rc);
    if (a == NULL)
        return rc;
    int n = collab_comm_size(call->comm->core);
    cli_type_t *rt;
    size_t block = 0, sbytes = 0;
    rc = cli_coll_type(call, recvtype, "recvtype", &rt);
    if (rc == MPI_SUCCESS)
        rc = cli_coll_bytes(call, rt, recvcount, "recvcount", &block);
    if (rc == MPI_SUCCESS)
        rc = cli_coll_buf(call, recvbuf, block * (size_t)n, "recvbuf");
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE) {
        rc = cli_send_side(call, sendbuf, sendcount, sendtype, &sbytes);
        if (rc == MPI_SUCCESS)
            rc = cli_sizes_match(call, sbytes, block);
        if (rc == MPI_SUCCESS &&
            cli_overlap(sendbuf, sbytes * (size_t)n, recvbuf, block * (size_t)n))
            rc = cli_err(call, MPI_ERR_BUFFER, "recvbuf", "overlaps sendbuf (use MPI_IN_PLACE)");
    }
    if (rc != MPI_SUCCESS)
        return cli_coll_abort(a, rc);
    if (block == 0)
        return cli_coll_nothing(call, a, request);
    collab_request_t *req = NULL;
    int st = collab_alltoall(call->comm->core, sendbuf == MPI_IN_PLACE ? NULL : sendbuf, recvbuf,
                             block, request ? &req : NULL);
    return cli_coll_end(call, a, st, req, request, "the all-to-all");
}

int cli_impl_Alltoall_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    (void)comm;
    return cli_alltoall(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, NULL);
}

int cli_impl_Ialltoall_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_alltoall(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, request);
}
