/*  nf_proxy.c - runs a communicator's operations in stream order
    (docs/nccl.md, "Stream order").

    NCCL calls return once the operation is queued on the program's
    stream; the face keeps that contract without blocking the CPU and
    without CUDA host functions (which must not block or call CUDA, and
    which one thread per context runs for every stream).  At each call the
    program's thread records an event on the stream, takes the next ticket
    of the communicator and queues cuStreamWaitValue32(flag >= ticket) on
    the stream, so the stream's later work waits for the result.  The
    communicator's proxy thread takes the batches in ticket order, sleeps
    until the batch's events complete (the inputs are written), runs the
    operations through the core (which stages device buffers through
    pinned host memory), then writes the ticket into the flag: a word of
    pinned host memory that the device reads.  Where the device has no
    stream memory operations the calling thread waits for the ticket
    instead (logged once).

    Schedule per operation: the core's (DESIGN; docs/collectives.md).
    ncclAvg, ncclRedOpCreatePreMulSum and bfloat16 reductions take a host
    path: the input is copied to host memory, scaled (pre-multiplied),
    reduced by the core, divided by the communicator's size (ncclAvg) and
    copied back, so each of them moves the buffer over PCIe twice more
    than a float ncclSum.
*/
#include "nf.h"

#include "coll/cl_half.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double nf_half_to_double(uint16_t h)
{
    return (double)cl_half_to_float(h);
}

static int cdtype(ncclDataType_t t, collab_dtype_t *out)
{
    static const collab_dtype_t map[] = {
        [ncclInt8] = COLLAB_INT8,       [ncclUint8] = COLLAB_UINT8,   [ncclInt32] = COLLAB_INT32,
        [ncclUint32] = COLLAB_UINT32,   [ncclInt64] = COLLAB_INT64,   [ncclUint64] = COLLAB_UINT64,
        [ncclFloat16] = COLLAB_FLOAT16, [ncclFloat32] = COLLAB_FLOAT, [ncclFloat64] = COLLAB_DOUBLE,
    };
    if ((int)t < 0 || (int)t > ncclFloat64)
        return COLLAB_ERR_TYPE;
    *out = map[t];
    return COLLAB_OK;
}

static collab_op_kind_t cop(ncclRedOp_t op)
{
    switch (op) {
    case ncclProd:
        return COLLAB_OP_PROD;
    case ncclMax:
        return COLLAB_OP_MAX;
    case ncclMin:
        return COLLAB_OP_MIN;
    default:
        return COLLAB_OP_SUM; /* ncclSum, ncclAvg, pre-multiplied sums */
    }
}

/* x[i] = x[i] * mul (mul != 1) and then x[i] / div (div > 1): integers
   divide (truncating, as NCCL's ncclAvg does), floats multiply by the
   factor and divide in their own precision. */
static void scale(void *buf, size_t n, ncclDataType_t t, double mul, int div)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
#define NF_SCALE_INT(T)                                                                            \
    {                                                                                              \
        T *x = (T *)buf + i;                                                                       \
        if (mul != 1.0)                                                                            \
            *x = (T)((double)*x * mul);                                                            \
        if (div > 1)                                                                               \
            *x = (T)(*x / (T)div);                                                                 \
        break;                                                                                     \
    }
        case ncclInt8:
            NF_SCALE_INT(int8_t)
        case ncclUint8:
            NF_SCALE_INT(uint8_t)
        case ncclInt32:
            NF_SCALE_INT(int32_t)
        case ncclUint32:
            NF_SCALE_INT(uint32_t)
        case ncclInt64:
            NF_SCALE_INT(int64_t)
        case ncclUint64:
            NF_SCALE_INT(uint64_t)
#undef NF_SCALE_INT
        case ncclFloat32: {
            float *x = (float *)buf + i;
            if (mul != 1.0)
                *x = *x * (float)mul;
            if (div > 1)
                *x = *x / (float)div;
            break;
        }
        case ncclFloat64: {
            double *x = (double *)buf + i;
            if (mul != 1.0)
                *x = *x * mul;
            if (div > 1)
                *x = *x / (double)div;
            break;
        }
        case ncclFloat16: {
            uint16_t *x = (uint16_t *)buf + i;
            float f = cl_half_to_float(*x);
            if (mul != 1.0)
                f = (float)cl_half_to_float((uint16_t)cl_half_from_float(f * (float)mul));
            if (div > 1)
                f = f / (float)div;
            *x = (uint16_t)cl_half_from_float(f);
            break;
        }
        default:
            break;
        }
    }
}

static float bf16_to_float(uint16_t h);

/* The pre-multiplication factor of op (read from device memory when the
   operator was created with ncclScalarDevice). */
static int premul_factor(const nf_op_t *op, double *out)
{
    if (!op->premul_dev) {
        *out = op->premul;
        return COLLAB_OK;
    }
    unsigned char raw[8] = {0};
    int st = collab_memcpy(raw, op->premul_ptr, nf_dtype_size(op->dtype));
    if (st != COLLAB_OK)
        return st;
    double v = 0.0;
    switch (op->dtype) {
    case ncclFloat16:
    case ncclBfloat16: {
        uint16_t h;
        memcpy(&h, raw, 2);
        v = op->dtype == ncclBfloat16 ? (double)bf16_to_float(h) : nf_half_to_double(h);
        break;
    }
    case ncclFloat32: {
        float f;
        memcpy(&f, raw, 4);
        v = f;
        break;
    }
    case ncclFloat64:
        memcpy(&v, raw, 8);
        break;
    default: {
        int64_t i = 0;
        memcpy(&i, raw, nf_dtype_size(op->dtype));
        v = (double)i;
        break;
    }
    }
    *out = v;
    return COLLAB_OK;
}

/* bfloat16 <-> float: widening is exact; narrowing rounds to nearest
   even and keeps NaNs quiet. */
static float bf16_to_float(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint16_t bf16_from_float(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

/* ncclAvg, pre-multiplied sums, in-place reduce-scatter and bfloat16
   reductions: through a host copy of the input (see the top comment).
   bfloat16 is reduced as float (each element widened exactly, the
   result rounded once), so every member rounds the same float and the
   results agree bit for bit; it crosses the network at 4 bytes per
   element. */
static int host_path(ncclComm_t comm, nf_op_t *op, collab_dtype_t dt)
{
    bool bf16 = op->dtype == ncclBfloat16;
    ncclDataType_t wt = bf16 ? ncclFloat32 : op->dtype; /* the working type */
    size_t es = nf_dtype_size(op->dtype), ws = nf_dtype_size(wt);
    int n = comm->nranks;
    size_t in_count = op->kind == NF_REDUCE_SCATTER ? op->count * (size_t)n : op->count;
    double mul = 1.0;
    int st = (int)op->op >= ncclNumOps ? premul_factor(op, &mul) : COLLAB_OK;
    if (st != COLLAB_OK)
        return st;
    if (bf16)
        dt = COLLAB_FLOAT;
    int div = op->op == ncclAvg ? n : 1;
    void *tmp = malloc(in_count * ws + ws);
    uint16_t *raw = bf16 ? malloc(in_count * es + es) : NULL;
    if (tmp == NULL || (bf16 && raw == NULL)) {
        free(tmp);
        free(raw);
        return COLLAB_ERR_NO_MEM;
    }
    st = collab_memcpy(bf16 ? (void *)raw : tmp, op->send, in_count * es);
    if (st == COLLAB_OK && bf16)
        for (size_t i = 0; i < in_count; i++)
            ((float *)tmp)[i] = bf16_to_float(raw[i]);
    if (st == COLLAB_OK && mul != 1.0)
        scale(tmp, in_count, wt, mul, 1);
    collab_op_t o = {.kind = cop(op->op)};
    size_t out_count = op->count;
    if (st == COLLAB_OK) {
        switch (op->kind) {
        case NF_ALLREDUCE:
            st = collab_allreduce(comm->core, NULL, tmp, op->count, dt, &o, NULL);
            break;
        case NF_REDUCE:
            st = collab_reduce(comm->core, comm->rank == op->root ? NULL : tmp,
                               comm->rank == op->root ? tmp : NULL, op->count, dt, &o, op->root,
                               NULL);
            if (comm->rank != op->root)
                out_count = 0;
            break;
        default: /* NF_REDUCE_SCATTER, in place in the core's sense */
            st = collab_reduce_scatter_block(comm->core, NULL, tmp, op->count, dt, &o, NULL);
            break;
        }
    }
    if (st == COLLAB_OK && out_count > 0) {
        scale(tmp, out_count, wt, 1.0, div);
        if (bf16)
            for (size_t i = 0; i < out_count; i++)
                raw[i] = bf16_from_float(((float *)tmp)[i]);
        st = collab_memcpy(op->recv, bf16 ? (void *)raw : tmp, out_count * es);
    }
    free(raw);
    free(tmp);
    return st;
}

int nf_run_op(ncclComm_t comm, nf_op_t *op, collab_request_t **req)
{
    size_t es = nf_dtype_size(op->dtype);
    size_t bytes = op->count * es;
    int n = comm->nranks;
    collab_dtype_t dt = COLLAB_BYTE;
    bool reduction =
        op->kind == NF_ALLREDUCE || op->kind == NF_REDUCE || op->kind == NF_REDUCE_SCATTER;
    if (op->kind == NF_FOLLOW) { /* bookkeeping: a failure costs joiners, not this call */
        int st = collab_state_follow(op->follow, op->count);
        if (st != COLLAB_OK)
            cl_warn("copies out of start-up broadcasts not followed: %s", collab_strerror(st));
        return COLLAB_OK;
    }
    if (op->count == 0)
        return COLLAB_OK;
    if (reduction && op->dtype == ncclBfloat16)
        return host_path(comm, op, COLLAB_FLOAT);
    if (reduction && cdtype(op->dtype, &dt) != COLLAB_OK)
        return COLLAB_ERR_TYPE;
    collab_op_t o = {.kind = cop(op->op)};
    bool scaled = reduction && (op->op == ncclAvg || (int)op->op >= ncclNumOps);
    switch (op->kind) {
    case NF_ALLREDUCE:
        if (scaled)
            return host_path(comm, op, dt);
        return collab_allreduce(comm->core, op->send == op->recv ? NULL : op->send, op->recv,
                                op->count, dt, &o, NULL);
    case NF_REDUCE:
        if (scaled)
            return host_path(comm, op, dt);
        return collab_reduce(comm->core,
                             op->send == op->recv && comm->rank == op->root ? NULL : op->send,
                             op->recv, op->count, dt, &o, op->root, NULL);
    case NF_REDUCE_SCATTER:
        if (scaled || (const char *)op->send + (size_t)comm->rank * bytes == op->recv)
            return host_path(comm, op, dt);
        return collab_reduce_scatter_block(comm->core, op->send, op->recv, op->count, dt, &o, NULL);
    case NF_BCAST:
        if (comm->rank == op->root && op->send != op->recv) {
            int st = collab_memcpy(op->recv, op->send, bytes);
            if (st != COLLAB_OK)
                return st;
        }
        return collab_bcast(comm->core, op->recv, bytes, op->root, NULL);
    case NF_ALLGATHER:
    case NF_GATHER: {
        size_t *counts = malloc(2 * (size_t)n * sizeof *counts);
        if (counts == NULL)
            return COLLAB_ERR_NO_MEM;
        for (int r = 0; r < n; r++) {
            counts[r] = bytes;
            counts[n + r] = (size_t)r * bytes;
        }
        const void *send = op->send;
        if (op->recv != NULL && send == (const char *)op->recv + (size_t)comm->rank * bytes)
            send = NULL; /* in place */
        int st =
            op->kind == NF_ALLGATHER
                ? collab_allgatherv(comm->core, send, bytes, op->recv, counts, counts + n, NULL)
                : collab_gatherv(comm->core, comm->rank == op->root ? send : op->send, bytes,
                                 op->recv, counts, counts + n, op->root, NULL);
        free(counts);
        return st;
    }
    case NF_SCATTER: {
        size_t *counts = malloc(2 * (size_t)n * sizeof *counts);
        if (counts == NULL)
            return COLLAB_ERR_NO_MEM;
        for (int r = 0; r < n; r++) {
            counts[r] = bytes;
            counts[n + r] = (size_t)r * bytes;
        }
        void *recv = op->recv;
        if (comm->rank == op->root && recv == (const char *)op->send + (size_t)comm->rank * bytes)
            recv = NULL; /* in place */
        int st =
            collab_scatterv(comm->core, op->send, counts, counts + n, recv, bytes, op->root, NULL);
        free(counts);
        return st;
    }
    case NF_ALLTOALL:
        return collab_alltoall(comm->core, op->send == op->recv ? NULL : op->send, op->recv, bytes,
                               NULL);
    case NF_SEND:
        return collab_send(comm->core, op->send, bytes, op->root, NF_TAG, req);
    case NF_RECV:
        return collab_recv(comm->core, op->recv, bytes, op->root, NF_TAG, NULL, req);
    case NF_FOLLOW:
        break; /* handled above */
    }
    return COLLAB_ERR_ARG;
}

static const char *kind_name(nf_kind_t k)
{
    static const char *names[] = {
        "ncclAllReduce", "ncclBroadcast", "ncclReduce",   "ncclAllGather", "ncclReduceScatter",
        "ncclGather",    "ncclScatter",   "ncclAlltoAll", "ncclSend",      "ncclRecv",
        "ncclBroadcast (its copies)"};
    return names[k];
}

/* Records st of op: an async error, except for absent peers outside
   strict mode (the swarm's semantics: logged, the run goes on). */
static void note_status(ncclComm_t comm, const nf_op_t *op, int st)
{
    if (st == COLLAB_OK)
        return;
    bool absent = st == COLLAB_ERR_PROC_FAILED || st == COLLAB_ERR_REVOKED;
    if (absent && !comm->strict) {
        cl_warn("%s with rank %d of a %d-rank communicator: %s; outside strict mode the "
                "operation is skipped (a receive leaves its buffer as it was)",
                kind_name(op->kind), op->root, comm->nranks, collab_strerror(st));
        return;
    }
    ncclResult_t rc = nf_result_of(st);
    cl_error("%s on a %d-rank communicator failed: %s", kind_name(op->kind), comm->nranks,
             collab_strerror(st));
    pthread_mutex_lock(&comm->mu);
    if (comm->async_error == ncclSuccess) {
        comm->async_error = rc;
        snprintf(comm->last_error, sizeof comm->last_error, "%s: %s", kind_name(op->kind),
                 collab_strerror(st));
    }
    pthread_mutex_unlock(&comm->mu);
}

static void free_ops(nf_op_t *ops, const cl_devops_t *dev)
{
    while (ops != NULL) {
        nf_op_t *n = ops->next;
        if (ops->event != NULL && dev != NULL)
            (void)dev->event_wait(ops->ev_ctx, ops->event); /* also releases it */
        free(ops->follow);
        free(ops);
        ops = n;
    }
}

static void run_batch(ncclComm_t comm, nf_batch_t *b, const cl_devops_t *dev)
{
    int np2p = 0;
    for (nf_op_t *op = b->ops; op != NULL; op = op->next) {
        if (op->event != NULL) {
            if (dev->event_wait(op->ev_ctx, op->event) != 0)
                cl_error("waiting for the program's stream: %s", dev->last_error());
            op->event = NULL;
        }
        np2p += op->kind == NF_SEND || op->kind == NF_RECV;
    }
    collab_request_t **reqs = np2p > 0 ? calloc((size_t)np2p, sizeof *reqs) : NULL;
    const nf_op_t **req_ops = np2p > 0 ? calloc((size_t)np2p, sizeof *req_ops) : NULL;
    int k = 0;
    for (nf_op_t *op = b->ops; op != NULL; op = op->next) {
        bool p = op->kind == NF_SEND || op->kind == NF_RECV;
        /* Point-to-point calls of a batch are all posted before any is
           waited for, so that a group's sends and receives cannot block
           each other; without memory for that they run one by one. */
        collab_request_t **rp = p && reqs != NULL && req_ops != NULL ? &reqs[k] : NULL;
        int st = nf_run_op(comm, op, rp);
        if (rp != NULL && st == COLLAB_OK && *rp != NULL)
            req_ops[k++] = op;
        else if (st != COLLAB_OK)
            note_status(comm, op, st); /* zero bytes: nothing was posted */
    }
    for (int i = 0; i < k; i++)
        note_status(comm, req_ops[i], collab_wait(&reqs[i], NULL));
    free(reqs);
    free(req_ops);
}

static void *proxy_main(void *arg)
{
    ncclComm_t comm = arg;
    const cl_devops_t *dev = nf_devops();
    pthread_mutex_lock(&comm->mu);
    for (;;) {
        while (comm->head == NULL && !comm->stopping)
            pthread_cond_wait(&comm->cv, &comm->mu);
        nf_batch_t *b = comm->head;
        if (b == NULL)
            break;
        comm->head = b->next;
        if (comm->head == NULL)
            comm->tail = NULL;
        bool skip = comm->aborting;
        pthread_mutex_unlock(&comm->mu);
        if (!skip)
            run_batch(comm, b, dev);
        free_ops(b->ops, dev);
        pthread_mutex_lock(&comm->mu);
        comm->done = b->ticket;
        if (comm->flag != NULL)
            __atomic_store_n(comm->flag, b->ticket, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&comm->cv);
        free(b);
    }
    pthread_mutex_unlock(&comm->mu);
    return NULL;
}

/* The pinned staging buffers the batch's device buffers will take,
   allocated here in the program's thread (collab_device_reserve). */
static int reserve(ncclComm_t comm, const nf_op_t *ops)
{
    size_t sizes[16];
    int k = 0;
    for (const nf_op_t *op = ops; op != NULL && k + 2 <= 16; op = op->next) {
        size_t b = op->count * nf_dtype_size(op->dtype), n = (size_t)comm->nranks;
        switch (op->kind) {
        case NF_FOLLOW:
            continue;
        case NF_ALLGATHER:
        case NF_GATHER:
            sizes[k++] = b;
            sizes[k++] = b * n;
            break;
        case NF_REDUCE_SCATTER:
        case NF_SCATTER:
            sizes[k++] = b * n;
            sizes[k++] = b;
            break;
        case NF_ALLTOALL:
            sizes[k++] = b * n;
            sizes[k++] = b * n;
            break;
        default:
            sizes[k++] = b;
            sizes[k++] = b;
            break;
        }
    }
    return collab_device_reserve(sizes, k);
}

ncclResult_t nf_proxy_submit(ncclComm_t comm, nf_op_t *ops, const char *call)
{
    const cl_devops_t *dev = nf_devops();
    ncclResult_t rc = ncclSuccess;
    nf_batch_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        rc = nf_fail(comm, ncclSystemError, call, "out of memory");
        goto err_ops;
    }
    if (dev == NULL || dev->event_record == NULL) {
        rc = nf_fail(comm, ncclInvalidUsage, call, "no device support");
        goto err_batch;
    }
    /* Best effort: without it the operation allocates its staging itself. */
    (void)reserve(comm, ops);
    for (nf_op_t *op = ops; op != NULL; op = op->next)
        if (op->kind != NF_FOLLOW && dev->event_record(op->stream, &op->ev_ctx, &op->event) != 0) {
            rc = nf_fail(comm, ncclUnhandledCudaError, call, "recording an event: %s",
                         dev->last_error());
            goto err_batch;
        }
    b->ops = ops;
    pthread_mutex_lock(&comm->mu);
    if (comm->stopping) {
        pthread_mutex_unlock(&comm->mu);
        rc = nf_fail(comm, ncclInvalidUsage, call, "the communicator is being destroyed");
        goto err_batch;
    }
    if (comm->flag == NULL && dev->flag_alloc(&comm->flag) != 0) {
        pthread_mutex_unlock(&comm->mu);
        rc = nf_fail(comm, ncclUnhandledCudaError, call, "%s", dev->last_error());
        goto err_batch;
    }
    if (!comm->proxy_started) {
        if (pthread_create(&comm->proxy, NULL, proxy_main, comm) != 0) {
            pthread_mutex_unlock(&comm->mu);
            rc = nf_fail(comm, ncclSystemError, call, "cannot start the proxy thread: %m");
            goto err_batch;
        }
        comm->proxy_started = true;
    }
    b->ticket = ++comm->issued;
    uint32_t ticket = b->ticket;
    cudaStream_t streams[8];
    int nstreams = 0;
    bool more = false;
    for (nf_op_t *op = ops; op != NULL; op = op->next) {
        if (op->kind == NF_FOLLOW)
            continue; /* no stream waits for the core's bookkeeping */
        int i = 0;
        while (i < nstreams && streams[i] != op->stream)
            i++;
        if (i == nstreams && nstreams < 8)
            streams[nstreams++] = op->stream;
        else if (i == nstreams)
            more = true;
    }
    if (comm->tail != NULL)
        comm->tail->next = b;
    else
        comm->head = b;
    comm->tail = b;
    pthread_cond_broadcast(&comm->cv);
    bool host_wait = comm->host_wait || more;
    pthread_mutex_unlock(&comm->mu);
    /* The streams' later work waits for the ticket. */
    for (int i = 0; i < nstreams && !host_wait; i++)
        if (dev->stream_wait_flag(streams[i], comm->flag, ticket) != 0) {
            cl_warn("%s: no stream memory operations (%s): calls on this communicator now "
                    "return once complete",
                    call, dev->last_error());
            pthread_mutex_lock(&comm->mu);
            comm->host_wait = true;
            pthread_mutex_unlock(&comm->mu);
            host_wait = true;
        }
    if (host_wait) {
        pthread_mutex_lock(&comm->mu);
        while ((int32_t)(comm->done - ticket) < 0)
            pthread_cond_wait(&comm->cv, &comm->mu);
        pthread_mutex_unlock(&comm->mu);
    }
    return ncclSuccess;

err_batch:
    free(b);
err_ops:
    free_ops(ops, dev);
    return rc;
}

/* Flags of destroyed communicators: a stream may still read them, so they
   are kept (and stay reachable) until the process ends. */
static pthread_mutex_t s_retired_mu = PTHREAD_MUTEX_INITIALIZER;
static struct retired {
    uint32_t *flag;
    struct retired *next;
} * s_retired;

void nf_proxy_stop(ncclComm_t comm, bool drain)
{
    const cl_devops_t *dev = nf_devops();
    pthread_mutex_lock(&comm->mu);
    comm->stopping = true;
    comm->aborting = !drain;
    pthread_cond_broadcast(&comm->cv);
    bool started = comm->proxy_started;
    pthread_mutex_unlock(&comm->mu);
    if (started)
        pthread_join(comm->proxy, NULL);
    if (comm->flag != NULL && dev != NULL) {
        /* Streams may still wait on the flag: release them. */
        __atomic_store_n(comm->flag, comm->issued, __ATOMIC_RELEASE);
        struct retired *r = malloc(sizeof *r);
        if (r != NULL) {
            pthread_mutex_lock(&s_retired_mu);
            r->flag = comm->flag;
            r->next = s_retired;
            s_retired = r;
            pthread_mutex_unlock(&s_retired_mu);
        }
        comm->flag = NULL;
    }
}
