/*  cli_alltoallv.c - MPI_Alltoallv and MPI_Alltoallw (blocking, I* and
    large-count forms) and all-to-all on non-contiguous datatypes.

    The core's all-to-all moves one block of equal size between every
    pair of ranks, so per-rank counts are carried in padded blocks:
      1. an all-reduce (MAX) of the largest block any rank sends or
         receives, in packed bytes (8 bytes per rank);
      2. every rank packs block j of its send side (sendcounts[j]
         elements of its type, at its displacement) into slot j of a
         n x block stage and runs the core all-to-all;
      3. slot j of the received stage is unpacked into the receive side
         (recvcounts[j] elements of recvtypes[j] at rdispls[j]).
    Each member moves n x max-block bytes: the price of padding, which
    is small when blocks are of similar size (mixture-of-experts token
    exchange) and grows with the imbalance.  A uniform all-to-all on a
    non-contiguous type knows its block and skips step 1.

    Absent ranks follow the swarm's rule for gather-type collectives:
    their slots arrive zero-filled, so the receive side gets zeros where
    they would have sent data, and MPIX_Collab_group reports which ranks
    took part.  The nonblocking forms start step 1 and run steps 2 and
    3 when the program waits on (or tests) the request; by then every
    rank has entered the call, so the exchange cannot wait on a rank
    that is not there.
*/
#include "cli_coll.h"
#include "cli_impl.h"
#include "cli_stage.h"
#include "cli_tmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One side (send or receive) of one rank's exchange. */
typedef struct {
    cli_type_t *type; /* holds a reference, or NULL for an empty block */
    MPI_Count count;  /* elements */
    MPI_Count toff;   /* bytes from the buffer to the first element */
} cli_a2a_slot_t;

typedef struct {
    cli_comm_t *comm;
    int n;
    char *sbuf;           /* program's send buffer (the receive buffer in place) */
    char *rbuf;           /* program's receive buffer */
    cli_a2a_slot_t *send; /* n slots */
    cli_a2a_slot_t *recv; /* n slots */
    uint64_t block;       /* padded block size, agreed in step 1 */
    uint64_t mine;        /* this rank's largest block (step 1 input) */
} cli_a2a_t;

static void cli_a2a_free(cli_a2a_t *a)
{
    if (a == NULL)
        return;
    cli_lock();
    for (int k = 0; k < a->n; k++) {
        if (a->send != NULL && a->send[k].type != NULL)
            cli_type_unref(a->send[k].type);
        if (a->recv != NULL && a->recv[k].type != NULL)
            cli_type_unref(a->recv[k].type);
    }
    cli_unlock();
    free(a->send);
    free(a->recv);
    free(a);
}

/* Describes one side: counts and displacements (in extents of one type,
   or in bytes with one type per rank for w). */
typedef struct {
    cli_vec_t counts, displs;
    MPI_Datatype type;         /* v: one type */
    const MPI_Datatype *types; /* w: one per rank, displs in bytes */
    MPI_Count ucount;          /* uniform: count per rank, displs k * count */
    int uniform;
} cli_a2a_side_t;

static int cli_a2a_fill(cli_call_t *call, cli_a2a_t *a, cli_a2a_slot_t *slots,
                        const cli_a2a_side_t *s, int recv)
{
    const char *cn = recv ? "recvcounts" : "sendcounts";
    const char *tn = recv ? "recvtypes" : "sendtypes";
    if (!s->uniform && ((s->counts.i == NULL && s->counts.c == NULL) ||
                        (s->displs.i == NULL && s->displs.a == NULL && s->displs.c == NULL)))
        return cli_err(call, MPI_ERR_ARG, cn, "counts and displacements must not be NULL");
    if (s->types == NULL && !s->uniform && s->type == cli_abi_type_null())
        return cli_err(call, MPI_ERR_TYPE, tn, "MPI_DATATYPE_NULL");
    if (s->types == NULL && s->uniform && s->type == cli_abi_type_null())
        return cli_err(call, MPI_ERR_TYPE, tn, "MPI_DATATYPE_NULL");
    cli_type_t *one = NULL;
    int rc;
    if (s->types == NULL &&
        (rc = cli_coll_type(call, s->type, recv ? "recvtype" : "sendtype", &one)) != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < a->n; k++) {
        MPI_Count c = s->uniform ? s->ucount : cli_vec_at(s->counts, k);
        if (c < 0)
            return cli_err(call, MPI_ERR_COUNT, cn, "%s[%d] = %lld is negative", cn, k,
                           (long long)c);
        cli_type_t *t = one;
        if (s->types != NULL && (rc = cli_coll_type(call, s->types[k], tn, &t)) != MPI_SUCCESS)
            return rc;
        MPI_Count d = s->uniform ? (MPI_Count)k * s->ucount : cli_vec_at(s->displs, k);
        MPI_Count off = d, bytes;
        if ((s->types == NULL && __builtin_mul_overflow(d, t->extent, &off)) ||
            __builtin_mul_overflow(c, t->size, &bytes))
            return cli_err(call, MPI_ERR_COUNT, cn, "entry %d overflows", k);
        slots[k] = (cli_a2a_slot_t){NULL, c, off};
        if (c > 0) {
            cli_lock();
            t->refs++;
            cli_unlock();
            slots[k].type = t;
        }
        if ((uint64_t)bytes > a->mine)
            a->mine = (uint64_t)bytes;
    }
    return MPI_SUCCESS;
}

/* Steps 2 and 3: returns a core status. */
static int cli_a2a_exchange(cli_a2a_t *a)
{
    size_t n = (size_t)a->n, block = (size_t)a->block;
    if (block == 0)
        return COLLAB_OK;
    if (n > SIZE_MAX / 2 / block)
        return COLLAB_ERR_NO_MEM;
    char *out = calloc(n, block), *in = calloc(n, block);
    if (out == NULL || in == NULL) {
        free(out);
        free(in);
        return COLLAB_ERR_NO_MEM;
    }
    for (size_t k = 0; k < n; k++)
        if (a->send[k].type != NULL)
            cli_tmap_pack(a->send[k].type, a->send[k].count, a->sbuf + a->send[k].toff,
                          out + k * block);
    int st = collab_alltoall(a->comm->core, out, in, block, NULL);
    if (st == COLLAB_OK) {
        for (size_t k = 0; k < n; k++)
            if (a->recv[k].type != NULL)
                cli_tmap_unpack(a->recv[k].type, a->recv[k].count, in + k * block,
                                a->rbuf + a->recv[k].toff);
        cli_collab_note(a->comm);
    }
    free(out);
    free(in);
    return st;
}

static int cli_a2a_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_a2a_t *a = r->aux;
    r->aux = NULL;
    if (status == COLLAB_OK)
        status = cli_a2a_exchange(a);
    cli_a2a_free(a);
    return status;
}

static int cli_a2a(cli_call_t *call, const void *sendbuf, const cli_a2a_side_t *ss, void *recvbuf,
                   const cli_a2a_side_t *rs, MPI_Request *request)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int n = collab_comm_size(call->comm->core);
    cli_a2a_t *a = calloc(1, sizeof *a);
    if (a != NULL) {
        a->send = calloc((size_t)n + 1, sizeof *a->send);
        a->recv = calloc((size_t)n + 1, sizeof *a->recv);
        a->n = n;
    }
    if (a == NULL || a->send == NULL || a->recv == NULL) {
        cli_a2a_free(a);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    a->comm = call->comm;
    a->rbuf = recvbuf;
    int in_place = sendbuf == MPI_IN_PLACE;
    a->sbuf = in_place ? recvbuf : (char *)sendbuf;
    rc = cli_a2a_fill(call, a, a->recv, rs, 1);
    if (rc == MPI_SUCCESS)
        rc = cli_a2a_fill(call, a, a->send, in_place ? rs : ss, 0);
    /* A NULL buffer is MPI_BOTTOM: the datatypes hold absolute addresses. */
    if (rc != MPI_SUCCESS) {
        cli_a2a_free(a);
        return rc;
    }
    int uniform = ss->uniform && rs->uniform;
    if (uniform) { /* the block is the same everywhere: no agreement needed */
        a->block = a->mine;
        if (request == NULL || a->block == 0) {
            int st = cli_a2a_exchange(a);
            cli_a2a_free(a);
            if (st != COLLAB_OK)
                return cli_err_core(call, st, "the all-to-all");
            if (request != NULL)
                return cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, NULL, request);
            return MPI_SUCCESS;
        }
    }
    /* Step 1 (or, uniform and nonblocking, a barrier-free start: the
       exchange runs at completion after an all-reduce of the block). */
    collab_op_t max = {.kind = COLLAB_OP_MAX};
    collab_request_t *req = NULL;
    int st = collab_allreduce(call->comm->core, &a->mine, &a->block, 1, COLLAB_UINT64, &max,
                              request ? &req : NULL);
    if (st != COLLAB_OK) {
        cli_a2a_free(a);
        return cli_err_core(call, st, "agreeing on the all-to-all block size");
    }
    if (request != NULL)
        return cli_req_start(call, CLI_REQ_COLL, call->comm, req, cli_a2a_finish, a, request);
    st = cli_a2a_exchange(a);
    cli_a2a_free(a);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "the all-to-all");
    return MPI_SUCCESS;
}

int cli_sparse_alltoall(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, MPI_Request *request)
{
    cli_a2a_side_t ss = {.type = sendtype, .ucount = sendcount, .uniform = 1};
    cli_a2a_side_t rs = {.type = recvtype, .ucount = recvcount, .uniform = 1};
    return cli_a2a(call, sendbuf, &ss, recvbuf, &rs, request);
}

/* ---------------------------------------------------------------------- */

static int cli_a2av(cli_call_t *call, const void *sendbuf, cli_vec_t sc, cli_vec_t sd,
                    MPI_Datatype st, void *recvbuf, cli_vec_t rc, cli_vec_t rd, MPI_Datatype rt,
                    MPI_Request *request)
{
    cli_a2a_side_t ss = {.counts = sc, .displs = sd, .type = st};
    cli_a2a_side_t rs = {.counts = rc, .displs = rd, .type = rt};
    return cli_a2a(call, sendbuf, &ss, recvbuf, &rs, request);
}

static int cli_a2aw(cli_call_t *call, const void *sendbuf, cli_vec_t sc, cli_vec_t sd,
                    const MPI_Datatype *st, void *recvbuf, cli_vec_t rc, cli_vec_t rd,
                    const MPI_Datatype *rt, MPI_Request *request)
{
    if (rt == NULL || (sendbuf != MPI_IN_PLACE && st == NULL))
        return cli_err(call, MPI_ERR_ARG, "recvtypes", "the type arrays must not be NULL");
    cli_a2a_side_t ss = {.counts = sc, .displs = sd, .types = st};
    cli_a2a_side_t rs = {.counts = rc, .displs = rd, .types = rt};
    return cli_a2a(call, sendbuf, &ss, recvbuf, &rs, request);
}

#define VI(p) ((cli_vec_t){.i = (p)})
#define VC(p) ((cli_vec_t){.c = (p)})
#define VA(p) ((cli_vec_t){.a = (p)})

int cli_impl_Alltoallv(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm)
{
    (void)comm;
    return cli_a2av(call, sendbuf, VI(sendcounts), VI(sdispls), sendtype, recvbuf, VI(recvcounts),
                    VI(rdispls), recvtype, NULL);
}

int cli_impl_Alltoallv_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    (void)comm;
    return cli_a2av(call, sendbuf, VC(sendcounts), VA(sdispls), sendtype, recvbuf, VC(recvcounts),
                    VA(rdispls), recvtype, NULL);
}

int cli_impl_Ialltoallv(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                        const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_a2av(call, sendbuf, VI(sendcounts), VI(sdispls), sendtype, recvbuf, VI(recvcounts),
                    VI(rdispls), recvtype, request);
}

int cli_impl_Ialltoallv_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_a2av(call, sendbuf, VC(sendcounts), VA(sdispls), sendtype, recvbuf, VC(recvcounts),
                    VA(rdispls), recvtype, request);
}

int cli_impl_Alltoallw(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                       const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                       const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                       MPI_Comm comm)
{
    (void)comm;
    return cli_a2aw(call, sendbuf, VI(sendcounts), VI(sdispls), sendtypes, recvbuf, VI(recvcounts),
                    VI(rdispls), recvtypes, NULL);
}

int cli_impl_Alltoallw_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    (void)comm;
    return cli_a2aw(call, sendbuf, VC(sendcounts), VA(sdispls), sendtypes, recvbuf, VC(recvcounts),
                    VA(rdispls), recvtypes, NULL);
}

int cli_impl_Ialltoallw(cli_call_t *call, const void *sendbuf, const int sendcounts[],
                        const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                        const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                        MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_a2aw(call, sendbuf, VI(sendcounts), VI(sdispls), sendtypes, recvbuf, VI(recvcounts),
                    VI(rdispls), recvtypes, request);
}

int cli_impl_Ialltoallw_c(cli_call_t *call, const void *sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_a2aw(call, sendbuf, VC(sendcounts), VA(sdispls), sendtypes, recvbuf, VC(recvcounts),
                    VA(rdispls), recvtypes, request);
}
