/*  nf.h - the NCCL face's internals (docs/nccl.md).

    The face translates NCCL calls into the core API (mpi_collab.h) and
    orders them on the program's CUDA streams through the device plugin's
    table (cl_devops.h).  It calls only collab_* for everything that has
    state in the core, so that a process that also loads an MPI face runs
    one core: the faces export collab_* and the dynamic linker binds every
    face to the first library that defines them.

    Files: nf_comm.c (unique ids, communicators, errors, memory),
    nf_coll.c (collectives, point-to-point, groups, reduction operators),
    nf_proxy.c (the per-communicator proxy thread that runs them in stream
    order).  The bindings (pnccl* and their weak nccl* aliases) are
    generated from nccl.h and interpose/gen/nccl_functions.txt.
*/
#ifndef NF_H_INCLUDED
#define NF_H_INCLUDED

#include <nccl.h>

#include "mpi_collab.h"
#include "util/cl_devops.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define NF_EXPORT __attribute__((visibility("default")))

/* The first 16 bytes of every unique id the face makes. */
#define NF_ID_MAGIC "mpicollab-nccl\0\1"
#define NF_COMM_MAGIC 0x6e66636fu /* "nfco" while a communicator lives */
#define NF_MAX_PREMUL 64          /* ncclRedOpCreatePreMulSum operators per communicator */
#define NF_TAG 0x4e43             /* the core tag of ncclSend/ncclRecv */

/* ncclTeam_t of the device-side API (nccl_device/core.h; C++ only). */
typedef struct ncclTeam {
    int nRanks, rank, stride;
} ncclTeam_t;

/* One operation queued on a communicator. */
typedef enum {
    NF_ALLREDUCE,
    NF_BCAST,
    NF_REDUCE,
    NF_ALLGATHER,
    NF_REDUCE_SCATTER,
    NF_GATHER,
    NF_SCATTER,
    NF_ALLTOALL,
    NF_SEND,
    NF_RECV,
    NF_FOLLOW, /* copies out of start-up broadcasts, for the core (nf_follow.c) */
} nf_kind_t;

typedef struct nf_op {
    nf_kind_t kind;
    const void *send; /* NULL: in place */
    void *recv;
    size_t count; /* elements, as NCCL counts them */
    ncclDataType_t dtype;
    ncclRedOp_t op; /* reductions only */
    double premul;  /* ncclRedOpCreatePreMulSum's factor (op >= ncclNumOps) */
    int premul_dev; /* 1: premul_ptr is read when the operation runs */
    const void *premul_ptr;
    int root;            /* root or peer */
    cudaStream_t stream; /* the program's stream */
    void *ev_ctx;        /* context and event recorded on stream at enqueue */
    void *event;
    collab_follow_t *follow; /* NF_FOLLOW: `count` copies, owned */
    struct nf_op *next;
} nf_op_t;

/* A batch: one call, or everything between ncclGroupStart and End on one
   communicator.  The proxy runs it, then writes `ticket` to the flag. */
typedef struct nf_batch {
    nf_op_t *ops;
    uint32_t ticket;
    struct nf_batch *next;
} nf_batch_t;

struct ncclComm {
    uint32_t magic;      /* NF_COMM_MAGIC while alive */
    collab_comm_t *core; /* the core communicator */
    bool owns_core;      /* false for the world communicator */
    int nranks, rank;    /* as the program sees them */
    int device;          /* device ordinal at creation (-1: none) */
    bool strict;         /* COLLAB_STRICT */
    pthread_mutex_t mu;  /* guards everything below */
    pthread_cond_t cv;   /* proxy work and completion */
    pthread_t proxy;     /* the proxy thread (started on first use) */
    bool proxy_started;
    bool stopping;            /* destroy: the proxy drains and ends */
    nf_batch_t *head, *tail;  /* batches waiting for the proxy */
    uint32_t issued;          /* last ticket handed out */
    uint32_t done;            /* last ticket completed */
    uint32_t *flag;           /* pinned word the streams wait on */
    bool host_wait;           /* no stream memory ops: callers wait for `done` */
    bool aborting;            /* abort: queued batches are dropped */
    ncclResult_t async_error; /* first failure of a queued operation */
    struct {
        bool used;
        ncclDataType_t dtype;
        bool dev;     /* the factor is read at run time from ptr */
        double value; /* the factor (host-immediate residence) */
        const void *ptr;
    } premul[NF_MAX_PREMUL];    /* operators ncclNumOps + i */
    char last_error[256];       /* its reason */
    struct ncclComm *next_live; /* registry of live communicators */
};

/* The device plugin's table, or NULL (device support off).  Loads it on
   first use in this face's copy of the core. */
const cl_devops_t *nf_devops(void);

/* Logs "<call>: outside the NCCL face's scope (<reason>)", once per call
   name, and keeps it for ncclGetLastError. */
void nf_out_of_scope(const char *call, const char *reason);

/* Logs an error for the program (prefix [collab], the call's name) and
   keeps it for ncclGetLastError; returns rc. */
ncclResult_t nf_fail(ncclComm_t comm, ncclResult_t rc, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Maps a core status to the NCCL result a program expects. */
ncclResult_t nf_result_of(int status);

/* Looks comm up among the live communicators; NULL when it is not one. */
ncclComm_t nf_comm_live(ncclComm_t comm);

/* Size in bytes of one element of t, or 0 when t is not a datatype. */
size_t nf_dtype_size(ncclDataType_t t);

/* Queues a batch on comm: records events on the ops' streams, makes the
   streams wait for the batch's ticket, hands it to the proxy.  Takes
   ownership of ops.  Returns ncclSuccess or an error (logged). */
ncclResult_t nf_proxy_submit(ncclComm_t comm, nf_op_t *ops, const char *call);

/* Stops comm's proxy after the queued batches ran (drain) or at once
   (abort: queued batches are dropped), and releases the streams waiting
   on its flag.  The flag's memory is kept: a stream may still read it. */
void nf_proxy_stop(ncclComm_t comm, bool drain);

/* IEEE binary16 bits to double. */
double nf_half_to_double(uint16_t h);

/* Where the bytes of start-up broadcasts go (nf_follow.c).  In the
   program's thread: a broadcast on the world communicator opens a window
   on its buffer; any other call closes the windows and hands the copies
   noted meanwhile to the broadcasts' communicators; a communicator that
   goes is forgotten. */
void nf_follow_bcast(ncclComm_t comm, void *buf, size_t bytes);
void nf_follow_close(void);
void nf_follow_forget(ncclComm_t comm);

/* Runs one operation through the core (proxy thread); a core status. */
int nf_run_op(ncclComm_t comm, nf_op_t *op, collab_request_t **req);

#endif
