/*  cl_stage.h - device buffers of a request, staged through pinned host
    memory (docs/cuda.md).

    The API hands every request to cl_stage_in before the engine sees it.
    Where a buffer the call reads or writes is device memory, the request
    gets a pinned host buffer from the pool in its place; inputs are copied
    from the device now (after the device is synchronised, so that the
    program's queued kernels have finished writing them).  cl_stage_out,
    called by the thread that completes the call (blocking call, wait or
    test), copies the outputs into the user's device buffers before the
    call returns.  A large all-reduce runs the chunk pipeline instead:
    copies in both directions overlap the network, driven by the
    collective through cl_stage_hooks (cl_stage.c's top comment).  The
    engine and the collective algorithms only ever see host memory.
    Without device support both calls cost one load.
*/
#ifndef CL_STAGE_H_INCLUDED
#define CL_STAGE_H_INCLUDED

#include "engine/cl_request.h"

#include <stdbool.h>

typedef struct cl_stage cl_stage_t;

/* Stages req's device buffers (see above).  wake_fd: the engine's wake-up
   (cl_engine_wake_fd), which the device writes once each chunk of a
   pipelined input has landed, or -1.  Returns 0 (also when there is
   nothing to stage), or a negative status (logged) with req unchanged. */
int cl_stage_in(collab_request_t *req, int wake_fd);

/* The chunk pipeline's hooks for req's collective (see cl_stage.c), or
   NULL when req's buffers were staged whole (or are host memory).  Valid
   until req completes. */
const cl_coll_stage_t *cl_stage_hooks(const collab_request_t *req);

/* For a collective that is not stage-aware (cl_coll_stage_aware) under
   the pipeline: queues the copy of the whole input; 1 once it has
   completed (or there is nothing to copy), 0 not yet (ask again later),
   negative on a device failure.  Never waits. */
int cl_stage_in_whole(collab_request_t *req);

/* The result of req, an all-reduce completed without running (a joiner's
   start-up call that got no result from the swarm), is its own input:
   true when staging takes that over (the input is still on the device
   under the pipeline; it is copied to the user's output at completion),
   false when the caller copies sendbuf to recvbuf itself. */
bool cl_stage_keep_input(collab_request_t *req);

/* Copies req's staged outputs to the user's device buffers, once, when
   req completed with status 0.  Returns req's status, or the copy's error. */
int cl_stage_out(collab_request_t *req);

/* True when req has staged outputs that cl_stage_out has not copied yet. */
bool cl_stage_pending(const collab_request_t *req);

/* The user's buffer behind p, a buffer of req (the pinned copy when
   staged): the user's device pointer and *device = true for a staged one,
   else p and false.  For the step detector and the state registry, which
   must see the program's own addresses. */
void *cl_stage_user(const collab_request_t *req, const void *p, bool *device);

/* Gives the pinned buffers back to the pool and nulls *self_p; accepts
   NULL (cl_request_destroy). */
void cl_stage_free(cl_stage_t **self_p);

#endif
