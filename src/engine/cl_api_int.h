/*  cl_api_int.h - what the collab_* API files share.

    The process-wide engine handle and the helper that hands a request to
    the engine and, for blocking calls, waits for it.
*/
#ifndef CL_API_INT_H_INCLUDED
#define CL_API_INT_H_INCLUDED

#include "engine/cl_engine.h"
#include "engine/cl_request.h"

/* The running engine, or NULL before collab_init / after collab_finalize. */
cl_engine_t *cl_api_engine(void);

/* Submits req.  With req_out != NULL the caller gets the request (a
   nonblocking call) and 0 is returned; otherwise waits, frees req and
   returns its status.  On a submission error req is freed. */
int cl_api_run(collab_request_t *req, collab_request_t **req_out);

/* A blocking all-reduce through host leaders when comm is one whose
   members decided so (cl_api_hier.c): returns 1 with the call's status
   in *rc, or 0 when the caller runs it as usual. */
int cl_hier_allreduce(collab_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      collab_dtype_t dtype, const collab_op_t *op, int *rc);

/* Frees comm's host communicators (before comm itself). */
int cl_hier_free(collab_comm_t *comm);

/* Whether some communicator of this process goes through host leaders. */
bool cl_hier_in_use(void);

#endif
