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

#endif
