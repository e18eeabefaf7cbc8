/*  cli_coll_sparse.c - data-movement collectives on non-contiguous
    datatypes.

    When a buffer's datatype has a type map, the collective runs on dense
    stages (cli_stage.h) with MPI_BYTE: the send side is packed first,
    the receive side lands packed in a stage laid out rank after rank and
    is unpacked into the program's buffer at completion (at once when
    blocking, from the request's completion hook when not).  The counts
    the core sees are the packed sizes, so the type-signature checks of
    cli_gather.c apply unchanged.  Broadcast, all-gather(v), gather(v)
    and scatter(v) come here; the all-to-all family has its own engine
    (cli_alltoallv.c).
*/
#include "cli_coll.h"
#include "cli_impl.h"
#include "cli_stage.h"
#include "cli_tmap.h"

#include <stdlib.h>
#include <string.h>

int cli_sparse_type(MPI_Datatype h)
{
    int why = 0;
    cli_type_t *t = cli_type_lookup(h, &why);
    return t != NULL && t->map != NULL;
}

static MPI_Datatype cli_byte(void)
{
    return cli_abi_type_predef(CLI_T_BYTE);
}

/* Finishes a staged call: blocking (request NULL) unpacks now; else the
   stages ride on the new request. */
static int cli_sparse_done(int rc, MPI_Request *request, cli_stage_t *recv, cli_stage_t *send)
{
    if (recv != NULL)
        recv->unpack = 1;
    if (recv != NULL && send != NULL) {
        recv->next = send;
        send = NULL;
    }
    cli_stage_t *s = recv != NULL ? recv : send;
    if (rc != MPI_SUCCESS || request == NULL) {
        if (rc == MPI_SUCCESS && recv != NULL)
            cli_stage_unpack(recv);
        cli_stage_destroy(&s);
        return rc;
    }
    if (s != NULL)
        cli_stage_attach(*request, s);
    return rc;
}

int cli_sparse_bcast(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                     int root, MPI_Request *request)
{
    int why = 0;
    cli_type_t *t = cli_type_lookup(datatype, &why);
    if (count < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld is negative", (long long)count);
    cli_stage_t *s = cli_stage_one(t, buffer, count);
    if (s == NULL)
        return cli_stage_fail(call, "out of memory to pack the broadcast");
    int me = collab_comm_rank(call->comm->core);
    if (me == root)
        cli_stage_pack(s);
    MPI_Comm comm = cli_comm_handle(call->comm);
    int rc = request ? cli_impl_Ibcast_c(call, s->tmp, s->bytes, cli_byte(), root, comm, request)
                     : cli_impl_Bcast_c(call, s->tmp, s->bytes, cli_byte(), root, comm);
    if (me == root) { /* nothing to unpack at the root */
        if (rc != MPI_SUCCESS || request == NULL)
            cli_stage_destroy(&s);
        else
            cli_stage_attach(*request, s);
        return rc;
    }
    return cli_sparse_done(rc, request, s, NULL);
}

/* The side holding every rank's block: a stage over buf with n blocks
   (count elements each when uniform, else counts[k] at displs[k]
   extents), packed rank after rank; *pc / *pd receive the packed
   counts and displacements (owned by the caller). */
static int cli_sparse_layout(cli_call_t *call, cli_type_t *t, void *buf, int n, int uniform,
                             MPI_Count count, cli_vec_t counts, cli_vec_t displs, cli_stage_t **out,
                             MPI_Count **pc, MPI_Aint **pd)
{
    cli_stage_block_t *b = malloc(((size_t)n + 1) * sizeof *b);
    *pc = malloc(((size_t)n + 1) * sizeof **pc);
    *pd = malloc(((size_t)n + 1) * sizeof **pd);
    if (b == NULL || *pc == NULL || *pd == NULL) {
        free(b);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    if (!uniform &&
        ((counts.i == NULL && counts.c == NULL) || (displs.i == NULL && displs.a == NULL))) {
        free(b);
        return cli_err(call, MPI_ERR_ARG, "recvcounts",
                       "counts and displacements must not be NULL");
    }
    MPI_Count off = 0;
    for (int k = 0; k < n; k++) {
        MPI_Count c = uniform ? count : cli_vec_at(counts, k);
        MPI_Count d = uniform ? (MPI_Count)k * count : cli_vec_at(displs, k);
        if (c < 0) {
            free(b);
            return cli_err(call, MPI_ERR_COUNT, "counts", "entry %d is %lld", k, (long long)c);
        }
        b[k] = (cli_stage_block_t){d * t->extent, off, c};
        (*pc)[k] = c * t->size;
        (*pd)[k] = (MPI_Aint)off;
        off += c * t->size;
    }
    *out = cli_stage_new(t, buf, n, b, off);
    free(b);
    if (*out == NULL)
        return cli_stage_fail(call, "out of memory for the stage");
    return MPI_SUCCESS;
}

/* The single-block side (what one rank sends or receives). */
static int cli_sparse_single(cli_call_t *call, MPI_Datatype h, const void *buf, MPI_Count count,
                             const char *arg, cli_stage_t **out, MPI_Count *bytes)
{
    cli_type_t *t;
    int rc = cli_coll_type(call, h, arg, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld is negative", (long long)count);
    if ((*out = cli_stage_one(t, buf, count)) == NULL)
        return cli_stage_fail(call, "out of memory to pack the data");
    *bytes = (*out)->bytes;
    return MPI_SUCCESS;
}

/* Packs block k of stage s (the caller's own block, for MPI_IN_PLACE). */
static void cli_sparse_pack_block(cli_stage_t *s, int k)
{
    if (s->blk[k].count > 0)
        cli_tmap_pack(s->type, s->blk[k].count, s->buf + s->blk[k].toff, s->tmp + s->blk[k].poff);
}

int cli_sparse_allgatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          cli_vec_t rcounts, cli_vec_t displs, MPI_Datatype recvtype, int uniform,
                          MPI_Request *request)
{
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    cli_type_t *rt;
    cli_stage_t *rs = NULL, *ss = NULL;
    MPI_Count *pc = NULL, sbytes = 0;
    MPI_Aint *pd = NULL;
    int rc = cli_coll_type(call, recvtype, "recvtype", &rt);
    if (rc == MPI_SUCCESS)
        rc = cli_sparse_layout(call, rt, recvbuf, n, uniform, recvcount, rcounts, displs, &rs, &pc,
                               &pd);
    const void *sb = MPI_IN_PLACE;
    if (rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE) {
        cli_sparse_pack_block(rs, me);
    } else if (rc == MPI_SUCCESS) {
        rc = cli_sparse_single(call, sendtype, sendbuf, sendcount, "sendtype", &ss, &sbytes);
        if (rc == MPI_SUCCESS) {
            cli_stage_pack(ss);
            sb = ss->tmp;
        }
    }
    if (rc == MPI_SUCCESS) {
        MPI_Comm comm = cli_comm_handle(call->comm);
        rc = request ? cli_impl_Iallgatherv_c(call, sb, sbytes, cli_byte(), rs->tmp, pc, pd,
                                              cli_byte(), comm, request)
                     : cli_impl_Allgatherv_c(call, sb, sbytes, cli_byte(), rs->tmp, pc, pd,
                                             cli_byte(), comm);
    }
    free(pc);
    free(pd);
    return cli_sparse_done(rc, request, rs, ss);
}

int cli_sparse_gatherv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, cli_vec_t rcounts,
                       cli_vec_t displs, MPI_Datatype recvtype, int root, int uniform,
                       MPI_Request *request)
{
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    cli_stage_t *rs = NULL, *ss = NULL;
    MPI_Count *pc = NULL, sbytes = 0;
    MPI_Aint *pd = NULL;
    int rc = MPI_SUCCESS;
    if (me == root) {
        cli_type_t *rt;
        rc = cli_coll_type(call, recvtype, "recvtype", &rt);
        if (rc == MPI_SUCCESS)
            rc = cli_sparse_layout(call, rt, recvbuf, n, uniform, recvcount, rcounts, displs, &rs,
                                   &pc, &pd);
    }
    const void *sb = MPI_IN_PLACE;
    if (rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE && me == root) {
        cli_sparse_pack_block(rs, me);
    } else if (rc == MPI_SUCCESS) {
        rc = cli_sparse_single(call, sendtype, sendbuf, sendcount, "sendtype", &ss, &sbytes);
        if (rc == MPI_SUCCESS) {
            cli_stage_pack(ss);
            sb = ss->tmp;
        }
    }
    if (rc == MPI_SUCCESS) {
        MPI_Comm comm = cli_comm_handle(call->comm);
        void *rb = rs ? rs->tmp : NULL;
        rc = request ? cli_impl_Igatherv_c(call, sb, sbytes, cli_byte(), rb, pc, pd, cli_byte(),
                                           root, comm, request)
                     : cli_impl_Gatherv_c(call, sb, sbytes, cli_byte(), rb, pc, pd, cli_byte(),
                                          root, comm);
    }
    free(pc);
    free(pd);
    return cli_sparse_done(rc, request, rs, ss);
}

int cli_sparse_scatterv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        cli_vec_t scounts, cli_vec_t displs, MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, int uniform,
                        MPI_Request *request)
{
    int n = collab_comm_size(call->comm->core), me = collab_comm_rank(call->comm->core);
    cli_stage_t *rs = NULL, *ss = NULL;
    MPI_Count *pc = NULL, rbytes = 0;
    MPI_Aint *pd = NULL;
    int rc = MPI_SUCCESS;
    if (me == root) {
        cli_type_t *st;
        rc = cli_coll_type(call, sendtype, "sendtype", &st);
        if (rc == MPI_SUCCESS)
            rc = cli_sparse_layout(call, st, (void *)sendbuf, n, uniform, sendcount, scounts,
                                   displs, &ss, &pc, &pd);
        if (rc == MPI_SUCCESS)
            cli_stage_pack(ss);
    }
    void *rb = MPI_IN_PLACE;
    if (rc == MPI_SUCCESS && !(recvbuf == MPI_IN_PLACE && me == root)) {
        rc = cli_sparse_single(call, recvtype, recvbuf, recvcount, "recvtype", &rs, &rbytes);
        if (rc == MPI_SUCCESS)
            rb = rs->tmp;
    }
    if (rc == MPI_SUCCESS) {
        MPI_Comm comm = cli_comm_handle(call->comm);
        const void *sb = ss ? ss->tmp : NULL;
        rc = request ? cli_impl_Iscatterv_c(call, sb, pc, pd, cli_byte(), rb, rbytes, cli_byte(),
                                            root, comm, request)
                     : cli_impl_Scatterv_c(call, sb, pc, pd, cli_byte(), rb, rbytes, cli_byte(),
                                           root, comm);
    }
    free(pc);
    free(pd);
    return cli_sparse_done(rc, request, rs, ss);
}
