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

/* One call: the checks its kind adds to check_common, then its record.
   `op` is NULL for calls without a reduction; `root` is the root of a
   rooted call or the peer of a send or receive, else unused. */
static ncclResult_t post(const char *call, nf_kind_t kind, const void *sendbuff, void *recvbuff,
                         size_t count, ncclDataType_t datatype, const ncclRedOp_t *op, int root,
                         ncclComm_t comm, cudaStream_t stream)
{
    ncclComm_t c = NULL;
    ncclResult_t rc = check_common(call, comm, &c, datatype, op, count);
    if (rc != ncclSuccess)
        return rc;
    bool p2p = kind == NF_SEND || kind == NF_RECV;
    bool rooted = p2p || kind == NF_BCAST || kind == NF_REDUCE || kind == NF_GATHER ||
                  kind == NF_SCATTER;
    if (rooted && (root < 0 || root >= c->nranks))
        return nf_fail(c, ncclInvalidArgument, call, "%s %d is outside 0..%d",
                       p2p ? "peer" : "root", root, c->nranks - 1);
    bool at_root = rooted && root == c->rank;
    bool bad;
    switch (kind) {
    case NF_SEND:
        bad = sendbuff == NULL;
        break;
    case NF_RECV:
        bad = recvbuff == NULL;
        break;
    case NF_BCAST: /* the root sends, everyone receives */
    case NF_SCATTER:
        bad = recvbuff == NULL || (at_root && sendbuff == NULL);
        break;
    case NF_REDUCE: /* everyone sends, the root receives */
    case NF_GATHER:
        bad = sendbuff == NULL || (at_root && recvbuff == NULL);
        break;
    default:
        bad = sendbuff == NULL || recvbuff == NULL;
        break;
    }
    if (count > 0 && bad) {
        if (p2p)
            return nf_fail(c, ncclInvalidArgument, call, "the buffer is NULL");
        return nf_fail(c, ncclInvalidArgument, call, "sendbuff %p, recvbuff %p", sendbuff,
                       recvbuff);
    }
    /* Copies out of start-up broadcast buffers are followed until the next
       call that is not a broadcast (nf_follow.c). */
    if (kind != NF_BCAST)
        nf_follow_close();
    nf_op_t t = {.kind = kind,
                 .send = sendbuff,
                 .recv = recvbuff,
                 .count = count,
                 .dtype = datatype,
                 .op = op != NULL ? *op : ncclSum,
                 .root = rooted ? root : 0,
                 .stream = stream};
    rc = submit(call, c, &t);
    if (rc == ncclSuccess && kind == NF_BCAST && !c->owns_core)
        nf_follow_bcast(c, recvbuff, count * nf_dtype_size(datatype));
    return rc;
}

ncclResult_t nf_impl_AllReduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream)
{
    return post("ncclAllReduce", NF_ALLREDUCE, sendbuff, recvbuff, count, datatype, &op, 0, comm,
                stream);
}

ncclResult_t nf_impl_Broadcast(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    return post("ncclBroadcast", NF_BCAST, sendbuff, recvbuff, count, datatype, NULL, root, comm,
                stream);
}

ncclResult_t nf_impl_Bcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclBcast", NF_BCAST, buff, buff, count, datatype, NULL, root, comm, stream);
}

ncclResult_t nf_impl_Reduce(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                            cudaStream_t stream)
{
    return post("ncclReduce", NF_REDUCE, sendbuff, recvbuff, count, datatype, &op, root, comm,
                stream);
}

ncclResult_t nf_impl_AllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                               ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclAllGather", NF_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, NULL, 0,
                comm, stream);
}

ncclResult_t nf_impl_ReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t stream)
{
    return post("ncclReduceScatter", NF_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype,
                &op, 0, comm, stream);
}

ncclResult_t nf_impl_Gather(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclGather", NF_GATHER, sendbuff, recvbuff, count, datatype, NULL, root, comm,
                stream);
}

ncclResult_t nf_impl_Scatter(const void *sendbuff, void *recvbuff, size_t count,
                             ncclDataType_t datatype, int root, ncclComm_t comm,
                             cudaStream_t stream)
{
    return post("ncclScatter", NF_SCATTER, sendbuff, recvbuff, count, datatype, NULL, root, comm,
                stream);
}

ncclResult_t nf_impl_AlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclAlltoAll", NF_ALLTOALL, sendbuff, recvbuff, count, datatype, NULL, 0, comm,
                stream);
}

ncclResult_t nf_impl_Send(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                          ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclSend", NF_SEND, sendbuff, NULL, count, datatype, NULL, peer, comm, stream);
}

ncclResult_t nf_impl_Recv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                          ncclComm_t comm, cudaStream_t stream)
{
    return post("ncclRecv", NF_RECV, NULL, recvbuff, count, datatype, NULL, peer, comm, stream);
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
