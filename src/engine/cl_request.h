/*  cl_request.h - requests (the struct behind collab_request_t).

    An application thread fills a request, hands it to the engine
    (cl_engine_submit) and then blocks on it or returns it to the program.
    The engine completes it exactly once with cl_request_complete.  All
    completion state is guarded by one process-wide mutex that is never held
    while anything blocks except inside pthread_cond_wait, so no waiting
    thread holds a lock another thread's call needs.
*/
#ifndef CL_REQUEST_H_INCLUDED
#define CL_REQUEST_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_p2p.h"
#include "mpi_collab.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    CL_OP_COLL = 1,      /* a collective (coll args) */
    CL_OP_SEND = 2,      /* eager send of sbuf[0..bytes) to peer */
    CL_OP_RECV = 3,      /* receive into buf[0..bytes) from peer */
    CL_OP_PROBE = 4,     /* blocking probe (take: mprobe) */
    CL_OP_CANCEL = 5,    /* cancel `target` */
    CL_OP_WEIGHT = 6,    /* set this peer's weight */
    CL_OP_STEP = 7,      /* explicit step boundary */
    CL_OP_COMM_FREE = 8, /* forget a communicator (engine frees it) */
    CL_OP_FINALIZE = 9,  /* leave the swarm */
    CL_OP_ABORT = 10,    /* goodbye, best effort, now */
    CL_OP_FOLLOW = 11,   /* copies out of start-up broadcast buffers (follow) */
} cl_op_t;

struct collab_request {
    struct collab_request *next; /* submission queue link */
    cl_op_t op;                  /* what to do */
    collab_comm_t *comm;         /* communicator (not for every op) */
    /* CL_OP_COLL: the arguments, buffers borrowed from the caller until
       completion; counts/displs point at the request's own copies. */
    cl_coll_args_t coll;
    size_t *counts_copy;         /* owned copies of v-variant arrays */
    size_t *displs_copy;
    void *snapshot;              /* private copy of an in-place input (restarts) */
    struct cl_stage *stage;      /* device buffers staged in pinned memory (cl_stage.h) */
    /* Point-to-point. */
    void *buf;                   /* RECV: destination */
    const void *sbuf;            /* SEND: source (copied by the engine) */
    size_t bytes;                /* buffer size */
    int peer;                    /* comm rank, or COLLAB_ANY_SOURCE */
    int tag;                     /* tag, or COLLAB_ANY_TAG */
    bool take;                   /* PROBE: remove the message (mprobe) */
    bool blocking;               /* PROBE: wait for a message (else just look) */
    bool found;                  /* PROBE: a message matched (result) */
    cl_p2p_msg_t *msg;           /* PROBE with take: the message taken */
    bool sync;                   /* SEND: synchronous mode (completes once matched) */
    uint64_t sync_id;            /* SEND with sync: id on the wire, set by the engine */
    int sync_world;              /* SEND with sync: the receiver's world rank */
    struct collab_request *target; /* CANCEL: the request to cancel */
    double weight;               /* WEIGHT */
    const collab_follow_t *follow; /* FOLLOW: the copies, borrowed until completion */
    size_t nfollow;
    /* Completion (guarded by the process-wide request mutex). */
    bool done;                   /* completed */
    bool taken;                  /* SEND: the engine has handled it (sent or queued) */
    bool detached;               /* freed by the engine on completion */
    int status;                  /* collab_status_t */
    collab_status_info_t info;   /* MPI status fields */
    pthread_cond_t cv;           /* signalled at completion */
    /* Engine bookkeeping (engine thread only). */
    double t_start;              /* when the engine received it */
    double deadline;             /* 0 = none */
    bool waiting_logged;         /* a "still waiting" line was printed */
    bool counted;                /* COLL: counted in comm->coll_pending until completion */
};

/* A zeroed request for op; NULL on allocation failure.  Caller owns. */
collab_request_t *cl_request_new(cl_op_t op);

/* Frees a request (and its copies); nulls *req_p; accepts NULL.  Only for
   requests that are complete or were never submitted. */
void cl_request_destroy(collab_request_t **req_p);

/* Engine side: completes req with status (info fields are set by the
   caller before) and wakes its waiters.  A detached request is freed. */
void cl_request_complete(collab_request_t *req, int status);

/* Blocks until req is complete. */
void cl_request_wait(collab_request_t *req);

/* Engine side: req (a send still pending) has been handled: sent and
   waiting for its match, or queued for its peer.  Wakes its waiters. */
void cl_request_taken(collab_request_t *req);

/* Blocks until the engine has handled req (cl_request_taken) or
   completed it. */
void cl_request_wait_taken(collab_request_t *req);

/* Blocks until req is complete or `seconds` pass; true when complete. */
bool cl_request_wait_for(collab_request_t *req, double seconds);

/* True when req is complete. */
bool cl_request_done(collab_request_t *req);

/* Blocks until one of reqs[0..n) (NULL entries skipped) is complete;
   returns its index, or -1 when every entry is NULL. */
int cl_request_wait_any(collab_request_t *const *reqs, int n);

/* Lets the engine free req when it completes (or frees it now when it is
   complete already).  The caller must not touch req afterwards. */
void cl_request_detach(collab_request_t *req);

#endif
