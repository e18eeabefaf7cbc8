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
    took part.  The nonblocking forms cannot leave a step for later (the
    program may start other collectives before it waits, in a different
    order on each rank), so they start at once one gather to each rank:
    n collectives, each moving exactly the blocks for its root, no
    padding; the request completes with the last and unpacks.
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

/* The nonblocking form: one gather to each rank, all started now, so
   that nothing is left to start at completion (other collectives the
   program starts meanwhile keep their order on every rank). */
typedef struct {
    cli_a2a_t *a;
    char *out, *in;          /* packed send blocks; received blocks, rank after rank */
    size_t *scount, *soff;   /* per rank: packed bytes and offset of what this rank sends */
    size_t *rcount, *roff;   /* the same for what it receives */
    collab_request_t **reqs; /* the n gathers; the last is the MPI request's */
} cli_a2a_nb_t;

static void cli_a2a_nb_free(cli_a2a_nb_t *g)
{
    if (g == NULL)
        return;
    cli_a2a_free(g->a);
    free(g->out), free(g->in), free(g->scount), free(g->soff), free(g->rcount), free(g->roff);
    free(g->reqs), free(g);
}

/* Waits for the gathers 0 .. upto-1 (the last one completed already). */
static int cli_a2a_nb_wait(cli_a2a_nb_t *g, int upto)
{
    int st = COLLAB_OK;
    for (int k = 0; k < upto; k++) {
        if (g->reqs[k] == NULL)
            continue;
        collab_status_info_t info;
        int s = collab_wait(&g->reqs[k], &info);
        if (s == COLLAB_OK && info.error != COLLAB_OK)
            s = info.error;
        if (st == COLLAB_OK)
            st = s;
    }
    return st;
}

static int cli_a2a_nb_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_a2a_nb_t *g = r->aux;
    r->aux = NULL;
    int s = cli_a2a_nb_wait(g, g->a->n - 1);
    if (status == COLLAB_OK)
        status = s;
    if (status == COLLAB_OK) {
        cli_a2a_t *a = g->a;
        for (int k = 0; k < a->n; k++)
            if (a->recv[k].type != NULL)
                cli_tmap_unpack(a->recv[k].type, a->recv[k].count, g->in + g->roff[k],
                                a->rbuf + a->recv[k].toff);
        cli_collab_note(a->comm);
    }
    cli_a2a_nb_free(g);
    return status;
}

static int cli_a2a_nb(cli_call_t *call, cli_a2a_t *a, MPI_Request *request)
{
    size_t n = (size_t)a->n;
    cli_a2a_nb_t *g = calloc(1, sizeof *g);
    if (g == NULL) {
        cli_a2a_free(a);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    g->a = a;
    g->scount = calloc(n, sizeof(size_t)), g->soff = calloc(n, sizeof(size_t));
    g->rcount = calloc(n, sizeof(size_t)), g->roff = calloc(n, sizeof(size_t));
    g->reqs = calloc(n, sizeof *g->reqs);
    size_t stot = 0, rtot = 0;
    if (g->scount != NULL && g->soff != NULL && g->rcount != NULL && g->roff != NULL &&
        g->reqs != NULL) {
        for (size_t k = 0; k < n; k++) {
            cli_a2a_slot_t *ss = &a->send[k], *rs = &a->recv[k];
            g->scount[k] = ss->type ? (size_t)(ss->count * ss->type->size) : 0;
            g->rcount[k] = rs->type ? (size_t)(rs->count * rs->type->size) : 0;
            g->soff[k] = stot, g->roff[k] = rtot;
            stot += g->scount[k], rtot += g->rcount[k];
        }
        g->out = malloc(stot + 1);
        g->in = calloc(1, rtot + 1); /* absent senders' blocks stay zero */
    }
    if (g->out == NULL || g->in == NULL) {
        cli_a2a_nb_free(g);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for the all-to-all");
    }
    for (size_t k = 0; k < n; k++)
        if (a->send[k].type != NULL)
            cli_tmap_pack(a->send[k].type, a->send[k].count, a->sbuf + a->send[k].toff,
                          g->out + g->soff[k]);
    for (int root = 0; root < a->n; root++) {
        int st = collab_gatherv(a->comm->core, g->out + g->soff[root], g->scount[root], g->in,
                                g->rcount, g->roff, root, &g->reqs[root]);
        if (st != COLLAB_OK) {
            cli_a2a_nb_wait(g, root);
            cli_a2a_nb_free(g);
            return cli_err_core(call, st, "the all-to-all");
        }
    }
    collab_request_t *last = g->reqs[n - 1];
    g->reqs[n - 1] = NULL;
    return cli_req_start(call, CLI_REQ_COLL, call->comm, last, cli_a2a_nb_finish, g, request);
}

/* Nonblocking with one block size everywhere: one all-to-all, now. */
static int cli_a2a_nb_uniform(cli_call_t *call, cli_a2a_t *a, MPI_Request *request)
{
    size_t n = (size_t)a->n, block = (size_t)a->block;
    cli_a2a_nb_t *g = calloc(1, sizeof *g);
    if (g == NULL) {
        cli_a2a_free(a);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    g->a = a;
    g->roff = calloc(n, sizeof(size_t));
    g->reqs = calloc(n, sizeof *g->reqs);
    if (n <= SIZE_MAX / 2 / block) {
        g->out = calloc(n, block);
        g->in = calloc(n, block);
    }
    if (g->roff == NULL || g->reqs == NULL || g->out == NULL || g->in == NULL) {
        cli_a2a_nb_free(g);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for the all-to-all");
    }
    for (size_t k = 0; k < n; k++) {
        g->roff[k] = k * block;
        if (a->send[k].type != NULL)
            cli_tmap_pack(a->send[k].type, a->send[k].count, a->sbuf + a->send[k].toff,
                          g->out + k * block);
    }
    collab_request_t *req = NULL;
    int st = collab_alltoall(a->comm->core, g->out, g->in, block, &req);
    if (st != COLLAB_OK) {
        cli_a2a_nb_free(g);
        return cli_err_core(call, st, "the all-to-all");
    }
    return cli_req_start(call, CLI_REQ_COLL, call->comm, req, cli_a2a_nb_finish, g, request);
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
    if (request != NULL && !uniform)
        return cli_a2a_nb(call, a, request);
    if (uniform) { /* the block is the same everywhere: no agreement needed */
        a->block = a->mine;
        if (request != NULL && a->block > 0)
            return cli_a2a_nb_uniform(call, a, request);
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
    /* Blocking: step 1, then the exchange. */
    collab_op_t max = {.kind = COLLAB_OP_MAX};
    int st = collab_allreduce(call->comm->core, &a->mine, &a->block, 1, COLLAB_UINT64, &max, NULL);
    if (st != COLLAB_OK) {
        cli_a2a_free(a);
        return cli_err_core(call, st, "agreeing on the all-to-all block size");
    }
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
