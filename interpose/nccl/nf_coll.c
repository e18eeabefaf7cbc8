/*  nf_coll.c - the NCCL face's collectives, point-to-point calls, groups
    and reduction operators (docs/nccl.md).

    Each call checks its arguments at once (a clear error, nothing
    queued), then becomes an operation record.  Outside a group the
    record is submitted alone; between ncclGroupStart and ncclGroupEnd the
    records of this thread are kept and submitted at the outermost
    ncclGroupEnd, one batch per communicator, in call order.  The proxy
    thread of the communicator (nf_proxy.c) runs them in stream order.
*/
#include "nf.h"

#include "nf_impl.h"

#include <stdlib.h>
#include <string.h>

/* This thread's group: depth and the records collected so far. */
static __thread int t_depth;
static __thread struct pending {
    ncclComm_t comm;
    nf_op_t *op;
    struct pending *next;
} * t_head, *t_tail;

static bool reducible(ncclDataType_t t)
{
    return t != ncclFloat8e4m3 && t != ncclFloat8e5m2;
}

static const char *dtype_name(ncclDataType_t t)
{
    static const char *names[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                  "ncclUint32",   "ncclInt64",      "ncclUint64",
                                  "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                  "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    return (int)t >= 0 && (int)t < ncclNumTypes ? names[t] : "?";
}

/* The checks every call shares: comm, datatype, op (reductions), count. */
static ncclResult_t check_common(const char *call, ncclComm_t comm, ncclComm_t *live,
                                 ncclDataType_t dtype, const ncclRedOp_t *op, size_t count)
{
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "invalid communicator %p", (void *)comm);
    size_t esize = nf_dtype_size(dtype);
    if (esize == 0)
        return nf_fail(c, ncclInvalidArgument, call, "invalid datatype %d", (int)dtype);
    if (count > SIZE_MAX / esize / (size_t)c->nranks)
        return nf_fail(c, ncclInvalidArgument, call, "count %zu is too large", count);
    if (op != NULL) {
        int o = (int)*op;
        if (o < 0 || (o >= ncclNumOps && o - ncclNumOps >= NF_MAX_PREMUL))
            return nf_fail(c, ncclInvalidArgument, call, "invalid reduction operator %d", o);
        if (o >= ncclNumOps) {
            pthread_mutex_lock(&c->mu);
            bool ok = c->premul[o - ncclNumOps].used && c->premul[o - ncclNumOps].dtype == dtype;
            pthread_mutex_unlock(&c->mu);
            if (!ok)
                return nf_fail(c, ncclInvalidArgument, call,
                               "reduction operator %d was not created for this communicator "
                               "and %s",
                               o, dtype_name(dtype));
        }
        if (!reducible(dtype))
            return nf_fail(c, ncclInvalidArgument, call,
                           "%s reductions are not supported by mpicollab (data movement is)",
                           dtype_name(dtype));
    }
    *live = c;
    return ncclSuccess;
}

static ncclResult_t submit(const char *call, ncclComm_t c, const nf_op_t *tmpl)
{
    nf_op_t *op = malloc(sizeof *op);
    if (op == NULL)
        return nf_fail(c, ncclSystemError, call, "out of memory");
    *op = *tmpl;
    op->next = NULL;
    if (op->kind != NF_SEND && op->kind != NF_RECV && op->kind != NF_BCAST &&
        (int)op->op >= ncclNumOps) {
        pthread_mutex_lock(&c->mu);
        op->premul = c->premul[op->op - ncclNumOps].value;
        op->premul_dev = c->premul[op->op - ncclNumOps].dev;
        op->premul_ptr = c->premul[op->op - ncclNumOps].ptr;
        pthread_mutex_unlock(&c->mu);
    }
    if (t_depth > 0) {
        struct pending *p = malloc(sizeof *p);
        if (p == NULL) {
            free(op);
            return nf_fail(c, ncclSystemError, call, "out of memory");
        }
        p->comm = c;
        p->op = op;
        p->next = NULL;
        if (t_tail != NULL)
            t_tail->next = p;
        else
            t_head = p;
        t_tail = p;
        return ncclSuccess;
    }
    return nf_proxy_submit(c, op, call);
}

ncclResult_t nf_impl_AllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream)
{
    const char *call = "ncclAllReduce";
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, &op, count);
    if (rc != ncclSuccess)
        return rc;
    if (count > 0 && (sendbuff == NULL || recvbuff == NULL))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_ALLREDUCE,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .op = op,
                 .stream = stream};
    return submit(call, c, &t);
}

static ncclResult_t broadcast(const char *call, const void *sendbuff, void *recvbuff, size_t count,
                              ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream)
{
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, NULL, count);
    if (rc != ncclSuccess)
        return rc;
    if (root < 0 || root >= c->nranks)
        return nf_fail(c, ncclInvalidArgument, call, "root %d is outside 0..%d", root,
                       c->nranks - 1);
    if (count > 0 && (recvbuff == NULL || (root == c->rank && sendbuff == NULL)))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_BCAST,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .root = root,
                 .stream = stream};
    return submit(call, c, &t);
}

ncclResult_t nf_impl_Broadcast(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    return broadcast("ncclBroadcast", sendbuff, recvbuff, count, datatype, root, comm, stream);
}

ncclResult_t nf_impl_Bcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    return broadcast("ncclBcast", buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t nf_impl_Reduce(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                            cudaStream_t stream)
{
    const char *call = "ncclReduce";
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, &op, count);
    if (rc != ncclSuccess)
        return rc;
    if (root < 0 || root >= c->nranks)
        return nf_fail(c, ncclInvalidArgument, call, "root %d is outside 0..%d", root,
                       c->nranks - 1);
    if (count > 0 && (sendbuff == NULL || (root == c->rank && recvbuff == NULL)))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_REDUCE,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .op = op,
                 .root = root,
                 .stream = stream};
    return submit(call, c, &t);
}

ncclResult_t nf_impl_AllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAllGather";
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, NULL, sendcount);
    if (rc != ncclSuccess)
        return rc;
    if (sendcount > 0 && (sendbuff == NULL || recvbuff == NULL))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_ALLGATHER,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = sendcount,
                 .dtype = datatype,
                 .stream = stream};
    return submit(call, c, &t);
}

ncclResult_t nf_impl_ReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t stream)
{
    const char *call = "ncclReduceScatter";
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, &op, recvcount);
    if (rc != ncclSuccess)
        return rc;
    if (recvcount > 0 && (sendbuff == NULL || recvbuff == NULL))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_REDUCE_SCATTER,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = recvcount,
                 .dtype = datatype,
                 .op = op,
                 .stream = stream};
    return submit(call, c, &t);
}

static ncclResult_t rooted(const char *call, nf_kind_t kind, const void *sendbuff, void *recvbuff,
                           size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, NULL, count);
    if (rc != ncclSuccess)
        return rc;
    if (root < 0 || root >= c->nranks)
        return nf_fail(c, ncclInvalidArgument, call, "root %d is outside 0..%d", root,
                       c->nranks - 1);
    bool at_root = root == c->rank;
    bool bad = kind == NF_GATHER ? sendbuff == NULL || (at_root && recvbuff == NULL)
                                 : recvbuff == NULL || (at_root && sendbuff == NULL);
    if (count > 0 && bad)
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = kind,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .root = root,
                 .stream = stream};
    return submit(call, c, &t);
}

ncclResult_t nf_impl_Gather(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return rooted("ncclGather", NF_GATHER, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

ncclResult_t nf_impl_Scatter(const void *sendbuff, void *recvbuff, size_t count,
                             ncclDataType_t datatype, int root, ncclComm_t comm,
                             cudaStream_t stream)
{
    return rooted("ncclScatter", NF_SCATTER, sendbuff, recvbuff, count, datatype, root, comm,
                  stream);
}

ncclResult_t nf_impl_AlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAlltoAll";
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, NULL, count);
    if (rc != ncclSuccess)
        return rc;
    if (count > 0 && (sendbuff == NULL || recvbuff == NULL))
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    nf_op_t t = {.kind = NF_ALLTOALL,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .stream = stream};
    return submit(call, c, &t);
}

static ncclResult_t p2p(const char *call, nf_kind_t kind, const void *sbuf, void *rbuf,
                        size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                        cudaStream_t stream)
{
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, NULL, count);
    if (rc != ncclSuccess)
        return rc;
    if (peer < 0 || peer >= c->nranks)
        return nf_fail(c, ncclInvalidArgument, call, "peer %d is outside 0..%d", peer,
                       c->nranks - 1);
    if (count > 0 && (kind == NF_SEND ? sbuf == NULL : rbuf == NULL))
        return nf_fail(c, ncclInvalidArgument, call, "the buffer is NULL");
    nf_op_t t = {.kind = kind,
                 .send = sbuf,
                 .recv = rbuf,
                 .count = count,
                 .dtype = datatype,
                 .root = peer,
                 .stream = stream};
    return submit(call, c, &t);
}

ncclResult_t nf_impl_Send(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                          ncclComm_t comm, cudaStream_t stream)
{
    return p2p("ncclSend", NF_SEND, sendbuff, NULL, count, datatype, peer, comm, stream);
}

ncclResult_t nf_impl_Recv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                          ncclComm_t comm, cudaStream_t stream)
{
    return p2p("ncclRecv", NF_RECV, NULL, recvbuff, count, datatype, peer, comm, stream);
}

/* ---------------------------------------------------------------------- */
/* Groups. */

ncclResult_t nf_impl_GroupStart(void)
{
    if (t_depth == 1 << 20)
        return nf_fail(NULL, ncclInvalidUsage, "ncclGroupStart", "groups nested too deeply");
    t_depth++;
    return ncclSuccess;
}

ncclResult_t nf_impl_GroupEnd(void)
{
    if (t_depth == 0)
        return nf_fail(NULL, ncclInvalidUsage, "ncclGroupEnd", "no ncclGroupStart before");
    if (--t_depth > 0)
        return ncclSuccess;
    ncclResult_t first = ncclSuccess;
    /* One batch per communicator, in the order of the calls. */
    while (t_head != NULL) {
        ncclComm_t c = t_head->comm;
        nf_op_t *ops = NULL, **tail = &ops;
        struct pending **pp = &t_head;
        t_tail = NULL;
        while (*pp != NULL) {
            struct pending *p = *pp;
            if (p->comm == c) {
                *tail = p->op;
                tail = &p->op->next;
                *pp = p->next;
                free(p);
            } else {
                t_tail = p;
                pp = &p->next;
            }
        }
        /* nf_proxy_submit owns ops, also when it fails; a communicator
           released meanwhile is refused there (its memory is kept). */
        ncclResult_t rc;
        if (nf_comm_live(c) != NULL) {
            rc = nf_proxy_submit(c, ops, "ncclGroupEnd");
        } else {
            rc = nf_fail(NULL, ncclInvalidArgument, "ncclGroupEnd",
                         "a communicator of the group was destroyed");
            while (ops != NULL) {
                nf_op_t *n = ops->next;
                free(ops);
                ops = n;
            }
        }
        if (first == ncclSuccess)
            first = rc;
    }
    return first;
}

/* ---------------------------------------------------------------------- */
/* Reduction operators. */

static double scalar_value(const void *p, ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
        return *(const int8_t *)p;
    case ncclUint8:
        return *(const uint8_t *)p;
    case ncclInt32:
        return *(const int32_t *)p;
    case ncclUint32:
        return *(const uint32_t *)p;
    case ncclInt64:
        return (double)*(const int64_t *)p;
    case ncclUint64:
        return (double)*(const uint64_t *)p;
    case ncclFloat32:
        return *(const float *)p;
    case ncclFloat64:
        return *(const double *)p;
    case ncclBfloat16: {
        uint32_t b = (uint32_t) * (const uint16_t *)p << 16;
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    default:
        return 0.0; /* fp16: nf_half_to_double */
    }
}

ncclResult_t nf_impl_RedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                          ncclScalarResidence_t residence, ncclComm_t comm)
{
    const char *call = "ncclRedOpCreatePreMulSum";
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "invalid communicator %p", (void *)comm);
    if (op == NULL || scalar == NULL)
        return nf_fail(c, ncclInvalidArgument, call, "op %p, scalar %p", (void *)op, scalar);
    if (nf_dtype_size(datatype) == 0 || !reducible(datatype))
        return nf_fail(c, ncclInvalidArgument, call, "datatype %d is not supported", (int)datatype);
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
        return nf_fail(c, ncclInvalidArgument, call, "invalid residence %d", (int)residence);
    double value = 0.0;
    if (residence == ncclScalarHostImmediate) {
        if (datatype == ncclFloat16) {
            uint16_t h;
            memcpy(&h, scalar, 2);
            value = nf_half_to_double(h);
        } else {
            value = scalar_value(scalar, datatype);
        }
    }
    pthread_mutex_lock(&c->mu);
    int i = 0;
    while (i < NF_MAX_PREMUL && c->premul[i].used)
        i++;
    if (i < NF_MAX_PREMUL) {
        c->premul[i].used = true;
        c->premul[i].dtype = datatype;
        c->premul[i].dev = residence == ncclScalarDevice;
        c->premul[i].value = value;
        c->premul[i].ptr = scalar;
    }
    pthread_mutex_unlock(&c->mu);
    if (i == NF_MAX_PREMUL)
        return nf_fail(c, ncclInvalidUsage, call, "more than %d operators are live", NF_MAX_PREMUL);
    *op = (ncclRedOp_t)(ncclNumOps + i);
    return ncclSuccess;
}

ncclResult_t nf_impl_RedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    const char *call = "ncclRedOpDestroy";
    ncclComm_t c = nf_comm_live(comm);
    if (c == NULL)
        return nf_fail(NULL, ncclInvalidArgument, call, "invalid communicator %p", (void *)comm);
    int i = (int)op - ncclNumOps;
    pthread_mutex_lock(&c->mu);
    bool ok = i >= 0 && i < NF_MAX_PREMUL && c->premul[i].used;
    if (ok)
        c->premul[i].used = false;
    pthread_mutex_unlock(&c->mu);
    return ok ? ncclSuccess
              : nf_fail(c, ncclInvalidArgument, call, "operator %d was not created here", (int)op);
}
