/*  cl_api_coll.c - the collab_* collectives.

    Each call checks what the core relies on (communicator, root, datatype
    and op, buffers for non-zero sizes, counts that do not overflow),
    copies the per-rank count arrays (the caller's may be temporaries of
    the MPI face), and queues a collective request; the engine thread gives
    it a sequence number and runs it (cl_engine_coll.c).  Buffers belong to
    the caller until the request completes.

    A blocking small all-reduce, broadcast or barrier on a communicator of two peers
    of this host is first offered to the fast path (cl_fast.h), which the
    calling thread carries out itself while the engine grants it; when it
    is not taken it goes to the engine at the same sequence number.  A
    blocking all-reduce is offered to the host leaders first
    (cl_api_hier.c), which run it as three collectives of their own.
*/
#include "engine/cl_api_int.h"

#include "engine/cl_comm.h"
#include "engine/cl_fast.h"
#include "util/cl_device.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int check_comm(const collab_comm_t *comm)
{
    if (comm == NULL)
        return COLLAB_ERR_COMM;
    return cl_api_engine() != NULL ? COLLAB_OK : COLLAB_ERR_NOT_INIT;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* MPIX_Collab_last_info after a collective every member took part in
   without the engine's record of it as a whole: the fast path (it runs
   only with the whole communicator; its own sequence number) or host
   leaders (fast = false: the sequence of their last step's record). */
static void whole_info(collab_comm_t *comm, size_t bytes, double t0, bool fast)
{
    static _Thread_local collab_info_t info;
    if (fast)
        info.sequence = cl_fast_next_seq(atomic_load(&comm->fast)) - 1;
    else
        cl_engine_last_info(cl_api_engine(), &info);
    info.group_size = comm->size;
    info.world_size = comm->size;
    info.bytes_sent = info.bytes_received = bytes;
    info.seconds = mono_now() - t0;
    info.nranks = comm->size < COLLAB_MAX_INFO_RANKS ? comm->size : COLLAB_MAX_INFO_RANKS;
    for (int r = 0; r < info.nranks; r++)
        info.ranks[r] = r;
    cl_engine_set_last_info(cl_api_engine(), &info);
}

static int check_root(const collab_comm_t *comm, int root)
{
    return root >= 0 && root < comm->size ? COLLAB_OK : COLLAB_ERR_ROOT;
}

static int check_reduction(collab_dtype_t dtype, const collab_op_t *op, size_t count,
                           size_t blocks)
{
    if ((unsigned)dtype >= COLLAB_DTYPE_COUNT || collab_dtype_extent(dtype) == 0)
        return COLLAB_ERR_TYPE;
    if (op == NULL || (unsigned)op->kind >= COLLAB_OP_COUNT)
        return COLLAB_ERR_OP;
    if (op->kind == COLLAB_OP_USER && op->user_fn == NULL)
        return COLLAB_ERR_OP;
    if (!collab_op_valid(op->kind, dtype))
        return COLLAB_ERR_OP;
    size_t ext = collab_dtype_extent(dtype);
    if (count > SIZE_MAX / ext / (blocks > 0 ? blocks : 1))
        return COLLAB_ERR_COUNT;
    return COLLAB_OK;
}

static collab_request_t *coll_new(collab_comm_t *comm, cl_coll_kind_t kind)
{
    collab_request_t *r = cl_request_new(CL_OP_COLL);
    if (r == NULL)
        return NULL;
    r->comm = comm;
    r->coll.kind = kind;
    r->coll.root = -1;
    r->coll.dtype = COLLAB_BYTE;
    r->coll.op.kind = COLLAB_OP_NO_OP;
    return r;
}

/* Copies a per-rank array of comm->size entries into the request. */
static size_t *copy_counts(const collab_comm_t *comm, const size_t *a)
{
    size_t *c = malloc((size_t)comm->size * sizeof *c);
    if (c != NULL)
        memcpy(c, a, (size_t)comm->size * sizeof *c);
    return c;
}

static int check_v(const collab_comm_t *comm, const size_t *counts, const size_t *displs,
                   const void *buf)
{
    if (counts == NULL || displs == NULL)
        return COLLAB_ERR_ARG;
    for (int r = 0; r < comm->size; r++) {
        if (displs[r] > SIZE_MAX - counts[r])
            return COLLAB_ERR_COUNT;
        if (counts[r] > 0 && buf == NULL)
            return COLLAB_ERR_ARG;
    }
    return COLLAB_OK;
}

static int set_v(collab_request_t *r, const collab_comm_t *comm, const size_t *counts,
                 const size_t *displs)
{
    r->counts_copy = copy_counts(comm, counts);
    r->displs_copy = copy_counts(comm, displs);
    if (r->counts_copy == NULL || r->displs_copy == NULL)
        return COLLAB_ERR_NO_MEM;
    r->coll.counts = r->counts_copy;
    r->coll.displs = r->displs_copy;
    return COLLAB_OK;
}

int collab_barrier(collab_comm_t *comm, collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc != COLLAB_OK)
        return rc;
    double t0 = mono_now();
    if (req == NULL && cl_fast_barrier(atomic_load(&comm->fast)) == 1) {
        whole_info(comm, 0, t0, true);
        return COLLAB_OK;
    }
    collab_request_t *r = coll_new(comm, CL_COLL_BARRIER);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    return cl_api_run(r, req);
}

int collab_bcast(collab_comm_t *comm, void *buf, size_t bytes, int root, collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc == COLLAB_OK)
        rc = check_root(comm, root);
    if (rc == COLLAB_OK && bytes > 0 && buf == NULL)
        rc = COLLAB_ERR_ARG;
    if (rc != COLLAB_OK)
        return rc;
    double t0 = mono_now();
    if (req == NULL && !cl_device_active() &&
        cl_fast_bcast(atomic_load(&comm->fast), buf, bytes, root) == 1) {
        whole_info(comm, bytes, t0, true);
        return COLLAB_OK;
    }
    collab_request_t *r = coll_new(comm, CL_COLL_BCAST);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->coll.root = root;
    r->coll.count = bytes;
    r->coll.recvbuf = buf;
    return cl_api_run(r, req);
}

static int reduction(collab_comm_t *comm, cl_coll_kind_t kind, const void *sendbuf,
                     void *recvbuf, size_t count, collab_dtype_t dtype, const collab_op_t *op,
                     int root, collab_request_t **req)
{
    int rc = check_comm(comm);
    size_t blocks = kind == CL_COLL_REDUCE_SCATTER_BLOCK && comm != NULL ? (size_t)comm->size : 1;
    if (rc == COLLAB_OK && kind == CL_COLL_REDUCE)
        rc = check_root(comm, root);
    if (rc == COLLAB_OK)
        rc = check_reduction(dtype, op, count, blocks);
    if (rc != COLLAB_OK)
        return rc;
    bool at_root = kind != CL_COLL_REDUCE || comm->rank == root;
    if (count > 0) {
        if (at_root && recvbuf == NULL)
            return COLLAB_ERR_ARG;
        if (!at_root && sendbuf == NULL)
            return COLLAB_ERR_ARG;
    }
    double t0 = mono_now();
    int hrc;
    if (req == NULL && kind == CL_COLL_ALLREDUCE &&
        cl_hier_allreduce(comm, sendbuf, recvbuf, count, dtype, op, &hrc)) {
        if (hrc == COLLAB_OK)
            whole_info(comm, count * collab_dtype_extent(dtype), t0, false);
        return hrc;
    }
    if (req == NULL && !cl_device_active() &&
        ((kind == CL_COLL_ALLREDUCE &&
          cl_fast_allreduce(atomic_load(&comm->fast), sendbuf, recvbuf, count, dtype, op) == 1) ||
         (kind == CL_COLL_REDUCE && cl_fast_reduce(atomic_load(&comm->fast), sendbuf, recvbuf,
                                                   count, dtype, op, root) == 1))) {
        whole_info(comm, count * collab_dtype_extent(dtype), t0, true);
        return COLLAB_OK;
    }
    collab_request_t *r = coll_new(comm, kind);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->coll.root = kind == CL_COLL_REDUCE ? root : -1;
    r->coll.dtype = dtype;
    r->coll.op = *op;
    r->coll.count = count;
    r->coll.sendbuf = sendbuf;
    r->coll.recvbuf = recvbuf;
    return cl_api_run(r, req);
}

int collab_allreduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                     collab_dtype_t dtype, const collab_op_t *op, collab_request_t **req)
{
    return reduction(comm, CL_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1, req);
}

int collab_reduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                  collab_dtype_t dtype, const collab_op_t *op, int root, collab_request_t **req)
{
    return reduction(comm, CL_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, req);
}

int collab_reduce_scatter_block(collab_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t recvcount, collab_dtype_t dtype, const collab_op_t *op,
                                collab_request_t **req)
{
    return reduction(comm, CL_COLL_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, recvcount, dtype, op,
                     -1, req);
}

int collab_allgatherv(collab_comm_t *comm, const void *sendbuf, size_t sbytes, void *recvbuf,
                      const size_t *rcounts, const size_t *displs, collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc == COLLAB_OK)
        rc = check_v(comm, rcounts, displs, recvbuf);
    if (rc == COLLAB_OK && sendbuf != NULL && sbytes != rcounts[comm->rank])
        rc = COLLAB_ERR_COUNT;
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = coll_new(comm, CL_COLL_ALLGATHERV);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    if (set_v(r, comm, rcounts, displs) != COLLAB_OK) {
        cl_request_destroy(&r);
        return COLLAB_ERR_NO_MEM;
    }
    r->coll.sendbuf = sendbuf;
    r->coll.sbytes = sendbuf != NULL ? sbytes : rcounts[comm->rank];
    r->coll.recvbuf = recvbuf;
    return cl_api_run(r, req);
}

int collab_gatherv(collab_comm_t *comm, const void *sendbuf, size_t sbytes, void *recvbuf,
                   const size_t *rcounts, const size_t *displs, int root,
                   collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc == COLLAB_OK)
        rc = check_root(comm, root);
    if (rc != COLLAB_OK)
        return rc;
    bool at_root = comm->rank == root;
    if (at_root) {
        rc = check_v(comm, rcounts, displs, recvbuf);
        if (rc == COLLAB_OK && sendbuf != NULL && sbytes != rcounts[root])
            rc = COLLAB_ERR_COUNT;
    } else if (sendbuf == NULL && sbytes > 0) {
        rc = COLLAB_ERR_ARG;
    }
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = coll_new(comm, CL_COLL_GATHERV);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    if (at_root && set_v(r, comm, rcounts, displs) != COLLAB_OK) {
        cl_request_destroy(&r);
        return COLLAB_ERR_NO_MEM;
    }
    r->coll.root = root;
    r->coll.sendbuf = sendbuf;
    r->coll.sbytes = sendbuf != NULL ? sbytes : (at_root ? rcounts[root] : 0);
    r->coll.recvbuf = recvbuf;
    return cl_api_run(r, req);
}

int collab_scatterv(collab_comm_t *comm, const void *sendbuf, const size_t *scounts,
                    const size_t *sdispls, void *recvbuf, size_t rbytes, int root,
                    collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc == COLLAB_OK)
        rc = check_root(comm, root);
    if (rc != COLLAB_OK)
        return rc;
    bool at_root = comm->rank == root;
    if (at_root)
        rc = check_v(comm, scounts, sdispls, sendbuf);
    if (rc == COLLAB_OK && !at_root && rbytes > 0 && recvbuf == NULL)
        rc = COLLAB_ERR_ARG;
    if (rc == COLLAB_OK && at_root && recvbuf != NULL && rbytes != scounts[root])
        rc = COLLAB_ERR_COUNT;
    if (rc != COLLAB_OK)
        return rc;
    collab_request_t *r = coll_new(comm, CL_COLL_SCATTERV);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    if (at_root && set_v(r, comm, scounts, sdispls) != COLLAB_OK) {
        cl_request_destroy(&r);
        return COLLAB_ERR_NO_MEM;
    }
    r->coll.root = root;
    r->coll.sendbuf = sendbuf;
    r->coll.recvbuf = recvbuf;
    r->coll.rbytes = recvbuf != NULL ? rbytes : 0;
    return cl_api_run(r, req);
}

int collab_alltoall(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t bytes,
                    collab_request_t **req)
{
    int rc = check_comm(comm);
    if (rc != COLLAB_OK)
        return rc;
    if (bytes > SIZE_MAX / (size_t)comm->size)
        return COLLAB_ERR_COUNT;
    if (bytes > 0 && recvbuf == NULL)
        return COLLAB_ERR_ARG;
    collab_request_t *r = coll_new(comm, CL_COLL_ALLTOALL);
    if (r == NULL)
        return COLLAB_ERR_NO_MEM;
    r->coll.count = bytes;
    r->coll.sendbuf = sendbuf;
    r->coll.recvbuf = recvbuf;
    return cl_api_run(r, req);
}
