/*  cli_persist.c - persistent requests (MPI-4 collectives MPI_X_init,
    point-to-point MPI_Send_init/MPI_Recv_init, MPI_Start, MPI_Startall).

    A persistent collective is a request holding a recipe: the call and
    its arguments.  It starts inactive; a start runs the nonblocking
    form of the call (MPI_Iallreduce for MPI_Allreduce_init, ...) and
    moves the resulting request's state into the persistent one, which
    then completes through MPI_Wait/Test like any other request and
    becomes inactive again instead of being freed.  MPI_Request_free
    releases it (after completion when it is active).  So each start is
    an ordinary collective of the swarm, with the same rules for absent
    ranks and joiners; nothing is planned ahead across starts.

    Start order.  MPI-4 matches persistent collectives by the order of
    their initialisation, while the core matches collectives by the
    order in which each peer posts them, and the world communicator's
    stream (which admission of joiners follows, docs/elastic.md) must
    have the same order on every peer.  So MPI_Start and MPI_Startall
    only mark a persistent collective as started and queue it; the
    queue is posted, sorted by initialisation order, when the program
    makes any other MPI call (cli_enter calls cli_persist_flush; calls
    allowed before MPI_Init, such as MPI_Wtime, do not).  Starts made
    one after the other thus match by initialisation order whatever
    their order, every peer posts them in the same order, and the world
    stream keeps one order; a start is never held past the program's
    next MPI call, which is as much progress as MPI promises.  The
    arrays and buffers passed at initialisation are the program's and
    are read again at each start, as the standard allows.  Persistent
    point-to-point requests (MPI_Send_init, MPI_Recv_init, ...) work the
    same way with MPI_Isend/MPI_Irecv; MPI_Start on any other request is
    MPI_ERR_REQUEST.
*/
#include "cli_coll.h"
#include "cli_impl.h"

#include <stdint.h>
#include <stdlib.h>

enum {
    CLI_P_BARRIER,
    CLI_P_BCAST,
    CLI_P_ALLREDUCE,
    CLI_P_REDUCE,
    CLI_P_RSB,
    CLI_P_RS,
    CLI_P_SCAN,
    CLI_P_EXSCAN,
    CLI_P_ALLGATHER,
    CLI_P_ALLGATHERV,
    CLI_P_GATHER,
    CLI_P_GATHERV,
    CLI_P_SCATTER,
    CLI_P_SCATTERV,
    CLI_P_ALLTOALL,
    CLI_P_ALLTOALLV,
    CLI_P_ALLTOALLW,
    CLI_P_SEND, /* persistent point-to-point */
    CLI_P_BSEND,
    CLI_P_SSEND,
    CLI_P_RSEND,
    CLI_P_RECV
};

struct cli_persist {
    int what;  /* CLI_P_* */
    int large; /* arrays are MPI_Count / MPI_Aint (the _c forms) */
    const void *sbuf;
    void *rbuf;
    MPI_Count scount, rcount;
    const void *scounts, *sdispls, *rcounts, *rdispls; /* program's arrays */
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes;
    MPI_Op op;
    int root;
    MPI_Comm comm;
    int active;          /* started, not yet completed by a wait or test */
    int queued;          /* started, not yet posted (cli_persist_flush) */
    uint64_t seq;        /* initialisation order in this process */
    cli_type_t *held[2]; /* references on stype/rtype: a program may free them meanwhile */
};

/* Started persistent collectives not yet posted, under cli.lock; the
   count is also read without the lock, to make the check in every call
   cheap. */
static cli_req_t **cli_queue;
static int cli_nqueued, cli_queue_cap;
static uint64_t cli_init_seq;

int cli_persist_active(const struct cli_persist *p)
{
    return p->active;
}

void cli_persist_set_active(struct cli_persist *p, int on)
{
    p->active = on;
}

void cli_persist_destroy(struct cli_persist **p)
{
    if (p == NULL || *p == NULL)
        return;
    cli_lock();
    for (int k = 0; k < 2; k++)
        if ((*p)->held[k] != NULL)
            cli_type_unref((*p)->held[k]);
    cli_unlock();
    free(*p);
    *p = NULL;
}

/* Registers an inactive persistent request with recipe p (consumed). */
static int cli_persist_new(cli_call_t *call, struct cli_persist p, MPI_Request *request)
{
    struct cli_persist *c = malloc(sizeof *c);
    if (c == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    *c = p;
    c->comm = cli_comm_handle(call->comm);
    c->seq = __atomic_fetch_add(&cli_init_seq, 1, __ATOMIC_RELAXED);
    MPI_Datatype hs[2] = {p.stype, p.rtype};
    for (int k = 0; k < 2; k++) {
        int why = 0;
        cli_type_t *t = cli_type_lookup(hs[k], &why); /* takes the lock itself */
        if (t != NULL && t->predef < 0) {
            cli_lock();
            t->refs++;
            cli_unlock();
            c->held[k] = t;
        }
    }
    int rc = cli_req_done(call, CLI_REQ_COLL, call->comm, COLLAB_OK, NULL, request);
    if (rc != MPI_SUCCESS) {
        cli_persist_destroy(&c);
        return rc;
    }
    int why = 0;
    cli_req_lookup(*request, &why)->pers = c;
    return MPI_SUCCESS;
}

#define I_(p) ((const int *)(p))
#define C_(p) ((const MPI_Count *)(p))
#define A_(p) ((const MPI_Aint *)(p))

/* Starts the nonblocking form of p; *inner gets its request. */
static int cli_persist_run(cli_call_t *call, const struct cli_persist *p, MPI_Request *inner)
{
    switch (p->what) {
    case CLI_P_BARRIER:
        return cli_impl_Ibarrier(call, p->comm, inner);
    case CLI_P_BCAST:
        return cli_impl_Ibcast_c(call, p->rbuf, p->rcount, p->rtype, p->root, p->comm, inner);
    case CLI_P_ALLREDUCE:
        return cli_impl_Iallreduce_c(call, p->sbuf, p->rbuf, p->rcount, p->rtype, p->op, p->comm,
                                     inner);
    case CLI_P_REDUCE:
        return cli_impl_Ireduce_c(call, p->sbuf, p->rbuf, p->rcount, p->rtype, p->op, p->root,
                                  p->comm, inner);
    case CLI_P_RSB:
        return cli_impl_Ireduce_scatter_block_c(call, p->sbuf, p->rbuf, p->rcount, p->rtype, p->op,
                                                p->comm, inner);
    case CLI_P_RS:
        return p->large ? cli_impl_Ireduce_scatter_c(call, p->sbuf, p->rbuf, C_(p->rcounts),
                                                     p->rtype, p->op, p->comm, inner)
                        : cli_impl_Ireduce_scatter(call, p->sbuf, p->rbuf, I_(p->rcounts), p->rtype,
                                                   p->op, p->comm, inner);
    case CLI_P_SCAN:
        return cli_impl_Iscan_c(call, p->sbuf, p->rbuf, p->rcount, p->rtype, p->op, p->comm, inner);
    case CLI_P_EXSCAN:
        return cli_impl_Iexscan_c(call, p->sbuf, p->rbuf, p->rcount, p->rtype, p->op, p->comm,
                                  inner);
    case CLI_P_ALLGATHER:
        return cli_impl_Iallgather_c(call, p->sbuf, p->scount, p->stype, p->rbuf, p->rcount,
                                     p->rtype, p->comm, inner);
    case CLI_P_ALLGATHERV:
        return p->large
                   ? cli_impl_Iallgatherv_c(call, p->sbuf, p->scount, p->stype, p->rbuf,
                                            C_(p->rcounts), A_(p->rdispls), p->rtype, p->comm,
                                            inner)
                   : cli_impl_Iallgatherv(call, p->sbuf, (int)p->scount, p->stype, p->rbuf,
                                          I_(p->rcounts), I_(p->rdispls), p->rtype, p->comm, inner);
    case CLI_P_GATHER:
        return cli_impl_Igather_c(call, p->sbuf, p->scount, p->stype, p->rbuf, p->rcount, p->rtype,
                                  p->root, p->comm, inner);
    case CLI_P_GATHERV:
        return p->large ? cli_impl_Igatherv_c(call, p->sbuf, p->scount, p->stype, p->rbuf,
                                              C_(p->rcounts), A_(p->rdispls), p->rtype, p->root,
                                              p->comm, inner)
                        : cli_impl_Igatherv(call, p->sbuf, (int)p->scount, p->stype, p->rbuf,
                                            I_(p->rcounts), I_(p->rdispls), p->rtype, p->root,
                                            p->comm, inner);
    case CLI_P_SCATTER:
        return cli_impl_Iscatter_c(call, p->sbuf, p->scount, p->stype, p->rbuf, p->rcount, p->rtype,
                                   p->root, p->comm, inner);
    case CLI_P_SCATTERV:
        return p->large
                   ? cli_impl_Iscatterv_c(call, p->sbuf, C_(p->scounts), A_(p->sdispls), p->stype,
                                          p->rbuf, p->rcount, p->rtype, p->root, p->comm, inner)
                   : cli_impl_Iscatterv(call, p->sbuf, I_(p->scounts), I_(p->sdispls), p->stype,
                                        p->rbuf, (int)p->rcount, p->rtype, p->root, p->comm, inner);
    case CLI_P_ALLTOALL:
        return cli_impl_Ialltoall_c(call, p->sbuf, p->scount, p->stype, p->rbuf, p->rcount,
                                    p->rtype, p->comm, inner);
    case CLI_P_ALLTOALLV:
        return p->large ? cli_impl_Ialltoallv_c(call, p->sbuf, C_(p->scounts), A_(p->sdispls),
                                                p->stype, p->rbuf, C_(p->rcounts), A_(p->rdispls),
                                                p->rtype, p->comm, inner)
                        : cli_impl_Ialltoallv(call, p->sbuf, I_(p->scounts), I_(p->sdispls),
                                              p->stype, p->rbuf, I_(p->rcounts), I_(p->rdispls),
                                              p->rtype, p->comm, inner);
    case CLI_P_ALLTOALLW:
        return p->large ? cli_impl_Ialltoallw_c(call, p->sbuf, C_(p->scounts), A_(p->sdispls),
                                                p->stypes, p->rbuf, C_(p->rcounts), A_(p->rdispls),
                                                p->rtypes, p->comm, inner)
                        : cli_impl_Ialltoallw(call, p->sbuf, I_(p->scounts), I_(p->sdispls),
                                              p->stypes, p->rbuf, I_(p->rcounts), I_(p->rdispls),
                                              p->rtypes, p->comm, inner);
    case CLI_P_SEND:
        return cli_impl_Isend_c(call, p->sbuf, p->rcount, p->rtype, p->root, (int)p->scount,
                                p->comm, inner);
    case CLI_P_BSEND:
        return cli_impl_Ibsend_c(call, p->sbuf, p->rcount, p->rtype, p->root, (int)p->scount,
                                 p->comm, inner);
    case CLI_P_SSEND:
        return cli_impl_Issend_c(call, p->sbuf, p->rcount, p->rtype, p->root, (int)p->scount,
                                 p->comm, inner);
    case CLI_P_RSEND:
        return cli_impl_Irsend_c(call, p->sbuf, p->rcount, p->rtype, p->root, (int)p->scount,
                                 p->comm, inner);
    case CLI_P_RECV:
        return cli_impl_Irecv_c(call, p->rbuf, p->rcount, p->rtype, p->root, (int)p->scount,
                                p->comm, inner);
    default:
        return cli_err(call, MPI_ERR_INTERN, NULL, "unknown persistent request %d", p->what);
    }
}

static int cli_start_one(cli_call_t *call, MPI_Request *request, const char *arg)
{
    int why = 0;
    cli_req_t *r = cli_req_lookup(*request, &why);
    if (r == NULL || r->pers == NULL)
        return cli_err(call, MPI_ERR_REQUEST, arg,
                       r == NULL ? "not a valid request" : "not a persistent request");
    if (r->pers->active)
        return cli_err(call, MPI_ERR_REQUEST, arg, "the persistent request is already active");
    call->comm = r->comm;
    if (r->pers->what < CLI_P_SEND) { /* a collective: queued (see the top) */
        cli_lock();
        if (cli_nqueued == cli_queue_cap) {
            int ncap = cli_queue_cap ? 2 * cli_queue_cap : 16;
            cli_req_t **q = realloc(cli_queue, (size_t)ncap * sizeof *q);
            if (q == NULL) {
                cli_unlock();
                return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
            }
            cli_queue = q;
            cli_queue_cap = ncap;
        }
        r->pers->active = 1;
        r->pers->queued = 1;
        r->done = 0;
        r->core = NULL;
        cli_queue[cli_nqueued] = r;
        __atomic_store_n(&cli_nqueued, cli_nqueued + 1, __ATOMIC_RELEASE);
        cli_unlock();
        return MPI_SUCCESS;
    }
    MPI_Request inner = cli_abi_req_null();
    int rc = cli_persist_run(call, r->pers, &inner);
    if (rc != MPI_SUCCESS)
        return rc;
    if (cli_req_adopt(r, inner) != COLLAB_OK)
        return cli_err(call, MPI_ERR_INTERN, arg, "lost the started request");
    r->pers->active = 1;
    return MPI_SUCCESS;
}

static int cli_by_init_order(const void *a, const void *b)
{
    const cli_req_t *x = *(cli_req_t *const *)a, *y = *(cli_req_t *const *)b;
    return (x->pers->seq > y->pers->seq) - (x->pers->seq < y->pers->seq);
}

int cli_persist_queued(void)
{
    return __atomic_load_n(&cli_nqueued, __ATOMIC_ACQUIRE) != 0;
}

void cli_persist_flush(void)
{
    if (__atomic_load_n(&cli_nqueued, __ATOMIC_ACQUIRE) == 0)
        return;
    cli_lock();
    int n = cli_nqueued;
    cli_req_t **mine = malloc((size_t)(n > 0 ? n : 1) * sizeof *mine);
    if (mine != NULL) {
        for (int i = 0; i < n; i++)
            mine[i] = cli_queue[i];
        __atomic_store_n(&cli_nqueued, 0, __ATOMIC_RELEASE);
    }
    cli_unlock();
    if (mine == NULL)
        return; /* out of memory: the next call tries again */
    qsort(mine, (size_t)n, sizeof *mine, cli_by_init_order);
    for (int i = 0; i < n; i++) {
        cli_req_t *r = mine[i];
        /* Errors are those MPI_Start would have reported: under its name,
           through the communicator's handler. */
        cli_call_t call;
        cli_call_init(&call, "MPI_Start");
        call.comm = r->comm;
        r->pers->queued = 0;
        MPI_Request inner = cli_abi_req_null();
        int rc = cli_persist_run(&call, r->pers, &inner);
        if (rc == MPI_SUCCESS && cli_req_adopt(r, inner) != COLLAB_OK)
            rc = cli_err(&call, MPI_ERR_INTERN, "request", "lost the started request");
        if (rc != MPI_SUCCESS) { /* the handler returned: the request fails */
            r->done = 1;
            r->status = COLLAB_ERR_ARG;
        }
    }
    free(mine);
}

int cli_impl_Start(cli_call_t *call, MPI_Request *request)
{
    return cli_start_one(call, request, "request");
}

int cli_impl_Startall(cli_call_t *call, int count, MPI_Request array_of_requests[])
{
    if (count < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%d is negative", count);
    if (count > 0 && array_of_requests == NULL)
        return cli_err(call, MPI_ERR_ARG, "array_of_requests", "must not be NULL");
    for (int k = 0; k < count; k++) {
        int rc = cli_start_one(call, &array_of_requests[k], "array_of_requests");
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* The initialisations: check nothing the start will check again, keep
   the recipe. */

#define P_(...) ((struct cli_persist){__VA_ARGS__})

int cli_impl_Barrier_init(cli_call_t *call, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)comm, (void)info;
    return cli_persist_new(call, P_(.what = CLI_P_BARRIER), request);
}

int cli_impl_Bcast_init_c(cli_call_t *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                          int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)comm, (void)info;
    return cli_persist_new(
        call,
        P_(.what = CLI_P_BCAST, .rbuf = buffer, .rcount = count, .rtype = datatype, .root = root),
        request);
}

#define CLI_RED_INIT(name, kind)                                                                   \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,     \
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,            \
                        MPI_Request *request)                                                      \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = kind, .sbuf = sendbuf, .rbuf = recvbuf, .rcount = count, \
                                  .rtype = datatype, .op = op),                                    \
                               request);                                                           \
    }
CLI_RED_INIT(Allreduce_init_c, CLI_P_ALLREDUCE)
CLI_RED_INIT(Reduce_scatter_block_init_c, CLI_P_RSB)
CLI_RED_INIT(Scan_init_c, CLI_P_SCAN)
CLI_RED_INIT(Exscan_init_c, CLI_P_EXSCAN)

int cli_impl_Reduce_init_c(cli_call_t *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                           MPI_Request *request)
{
    (void)comm, (void)info;
    return cli_persist_new(call,
                           P_(.what = CLI_P_REDUCE, .sbuf = sendbuf, .rbuf = recvbuf,
                              .rcount = count, .rtype = datatype, .op = op, .root = root),
                           request);
}

int cli_impl_Reduce_scatter_init(cli_call_t *call, const void *sendbuf, void *recvbuf,
                                 const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)comm, (void)info;
    return cli_persist_new(call,
                           P_(.what = CLI_P_RS, .sbuf = sendbuf, .rbuf = recvbuf,
                              .rcounts = recvcounts, .rtype = datatype, .op = op),
                           request);
}

int cli_impl_Reduce_scatter_init_c(cli_call_t *call, const void *sendbuf, void *recvbuf,
                                   const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)comm, (void)info;
    return cli_persist_new(call,
                           P_(.what = CLI_P_RS, .large = 1, .sbuf = sendbuf, .rbuf = recvbuf,
                              .rcounts = recvcounts, .rtype = datatype, .op = op),
                           request);
}

#define CLI_MOVE_INIT(name, kind)                                                                  \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,                \
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,                 \
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = kind, .sbuf = sendbuf, .scount = sendcount,              \
                                  .stype = sendtype, .rbuf = recvbuf, .rcount = recvcount,         \
                                  .rtype = recvtype),                                              \
                               request);                                                           \
    }
CLI_MOVE_INIT(Allgather_init_c, CLI_P_ALLGATHER)
CLI_MOVE_INIT(Alltoall_init_c, CLI_P_ALLTOALL)

#define CLI_ROOTED_INIT(name, kind)                                                                \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,                \
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,                 \
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,             \
                        MPI_Request *request)                                                      \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = kind, .sbuf = sendbuf, .scount = sendcount,              \
                                  .stype = sendtype, .rbuf = recvbuf, .rcount = recvcount,         \
                                  .rtype = recvtype, .root = root),                                \
                               request);                                                           \
    }
CLI_ROOTED_INIT(Gather_init_c, CLI_P_GATHER)
CLI_ROOTED_INIT(Scatter_init_c, CLI_P_SCATTER)

#define CLI_GV_INIT(name, cty, dty, lg)                                                            \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, cty sendcount,                      \
                        MPI_Datatype sendtype, void *recvbuf, const cty recvcounts[],              \
                        const dty displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,   \
                        MPI_Request *request)                                                      \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = CLI_P_ALLGATHERV, .large = lg, .sbuf = sendbuf,          \
                                  .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,         \
                                  .rcounts = recvcounts, .rdispls = displs, .rtype = recvtype),    \
                               request);                                                           \
    }
CLI_GV_INIT(Allgatherv_init, int, int, 0)
CLI_GV_INIT(Allgatherv_init_c, MPI_Count, MPI_Aint, 1)

#define CLI_GVR_INIT(name, cty, dty, lg)                                                           \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, cty sendcount,                      \
                        MPI_Datatype sendtype, void *recvbuf, const cty recvcounts[],              \
                        const dty displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,        \
                        MPI_Info info, MPI_Request *request)                                       \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = CLI_P_GATHERV, .large = lg, .sbuf = sendbuf,             \
                                  .scount = sendcount, .stype = sendtype, .rbuf = recvbuf,         \
                                  .rcounts = recvcounts, .rdispls = displs, .rtype = recvtype,     \
                                  .root = root),                                                   \
                               request);                                                           \
    }
CLI_GVR_INIT(Gatherv_init, int, int, 0)
CLI_GVR_INIT(Gatherv_init_c, MPI_Count, MPI_Aint, 1)

#define CLI_SV_INIT(name, cty, dty, lg)                                                            \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, const cty sendcounts[],             \
                        const dty displs[], MPI_Datatype sendtype, void *recvbuf, cty recvcount,   \
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,             \
                        MPI_Request *request)                                                      \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = CLI_P_SCATTERV, .large = lg, .sbuf = sendbuf,            \
                                  .scounts = sendcounts, .sdispls = displs, .stype = sendtype,     \
                                  .rbuf = recvbuf, .rcount = recvcount, .rtype = recvtype,         \
                                  .root = root),                                                   \
                               request);                                                           \
    }
CLI_SV_INIT(Scatterv_init, int, int, 0)
CLI_SV_INIT(Scatterv_init_c, MPI_Count, MPI_Aint, 1)

#define CLI_A2AV_INIT(name, cty, dty, lg)                                                          \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, const cty sendcounts[],             \
                        const dty sdispls[], MPI_Datatype sendtype, void *recvbuf,                 \
                        const cty recvcounts[], const dty rdispls[], MPI_Datatype recvtype,        \
                        MPI_Comm comm, MPI_Info info, MPI_Request *request)                        \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = CLI_P_ALLTOALLV, .large = lg, .sbuf = sendbuf,           \
                                  .scounts = sendcounts, .sdispls = sdispls, .stype = sendtype,    \
                                  .rbuf = recvbuf, .rcounts = recvcounts, .rdispls = rdispls,      \
                                  .rtype = recvtype),                                              \
                               request);                                                           \
    }
CLI_A2AV_INIT(Alltoallv_init, int, int, 0)
CLI_A2AV_INIT(Alltoallv_init_c, MPI_Count, MPI_Aint, 1)

#define CLI_A2AW_INIT(name, cty, dty, lg)                                                          \
    int cli_impl_##name(cli_call_t *call, const void *sendbuf, const cty sendcounts[],             \
                        const dty sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,        \
                        const cty recvcounts[], const dty rdispls[],                               \
                        const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,              \
                        MPI_Request *request)                                                      \
    {                                                                                              \
        (void)comm, (void)info;                                                                    \
        return cli_persist_new(call,                                                               \
                               P_(.what = CLI_P_ALLTOALLW, .large = lg, .sbuf = sendbuf,           \
                                  .scounts = sendcounts, .sdispls = sdispls, .stypes = sendtypes,  \
                                  .rbuf = recvbuf, .rcounts = recvcounts, .rdispls = rdispls,      \
                                  .rtypes = recvtypes),                                            \
                               request);                                                           \
    }
CLI_A2AW_INIT(Alltoallw_init, int, int, 0)
CLI_A2AW_INIT(Alltoallw_init_c, MPI_Count, MPI_Aint, 1)

/* ---------------------------------------------------------------------- */
/* Persistent point-to-point: each start is an MPI_Isend (in the request's
   mode) or an MPI_Irecv with the arguments given at initialisation. */

static int cli_persist_p2p(cli_call_t *call, int what, const void *buf, MPI_Count count,
                           MPI_Datatype datatype, int peer, int tag, MPI_Request *request)
{
    return cli_persist_new(call,
                           P_(.what = what, .sbuf = buf, .rbuf = (void *)buf, .rcount = count,
                              .rtype = datatype, .root = peer, .scount = tag),
                           request);
}

int cli_impl_Send_init_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                         int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_persist_p2p(call, CLI_P_SEND, buf, count, datatype, dest, tag, request);
}

int cli_impl_Bsend_init_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_persist_p2p(call, CLI_P_BSEND, buf, count, datatype, dest, tag, request);
}

int cli_impl_Ssend_init_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_persist_p2p(call, CLI_P_SSEND, buf, count, datatype, dest, tag, request);
}

int cli_impl_Rsend_init_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_persist_p2p(call, CLI_P_RSEND, buf, count, datatype, dest, tag, request);
}

int cli_impl_Recv_init_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                         int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_persist_p2p(call, CLI_P_RECV, buf, count, datatype, source, tag, request);
}
