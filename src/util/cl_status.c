/*  cl_status.c - texts for status codes and the library version.

    collab_strerror() gives the short English description of a
    collab_status_t that logs and the faces' error strings use;
    collab_version_string() names this build and the versions of the
    libraries it was compiled against.  Both return static strings.
*/
#include "mpi_collab.h"

#include <czmq.h>
#include <sodium.h>
#include <zmq.h>

#ifndef COLLAB_PROJECT_VERSION
#error "COLLAB_PROJECT_VERSION must be defined by the build (PROJECT_VERSION)"
#endif

#define CL_STR_(x) #x
#define CL_STR(x) CL_STR_(x)

const char *collab_strerror(int status)
{
    switch ((collab_status_t)status) {
    case COLLAB_OK:
        return "success";
    case COLLAB_ERR_ARG:
        return "invalid argument";
    case COLLAB_ERR_NO_MEM:
        return "out of memory";
    case COLLAB_ERR_PROC_FAILED:
        return "a peer needed by the operation failed";
    case COLLAB_ERR_REVOKED:
        return "communicator revoked";
    case COLLAB_ERR_CONFIG:
        return "invalid COLLAB_* configuration";
    case COLLAB_ERR_NOT_INIT:
        return "library not initialized or already finalized";
    case COLLAB_ERR_INTERNAL:
        return "internal error";
    case COLLAB_ERR_UNSUPPORTED:
        return "operation not supported";
    case COLLAB_ERR_TRUNCATE:
        return "message truncated: longer than the receive buffer";
    case COLLAB_ERR_RANK:
        return "invalid rank";
    case COLLAB_ERR_ROOT:
        return "invalid root";
    case COLLAB_ERR_COUNT:
        return "invalid count";
    case COLLAB_ERR_TYPE:
        return "invalid or unsupported datatype";
    case COLLAB_ERR_OP:
        return "operation not defined for this datatype";
    case COLLAB_ERR_TAG:
        return "invalid tag";
    case COLLAB_ERR_COMM:
        return "invalid communicator";
    case COLLAB_ERR_REQUEST:
        return "invalid request";
    case COLLAB_ERR_NETWORK:
        return "could not reach the swarm";
    case COLLAB_ERR_TIMEOUT:
        return "deadline passed";
    case COLLAB_ERR_MISMATCH:
        return "this program's collectives differ from the swarm's";
    case COLLAB_ERR_LEFT:
        return "this peer left the swarm";
    }
    return "unknown status code";
}

/* The versions of the libraries this build was compiled against. */
#define CL_ZMQ_VERSION                                                                             \
    CL_STR(ZMQ_VERSION_MAJOR) "." CL_STR(ZMQ_VERSION_MINOR) "." CL_STR(ZMQ_VERSION_PATCH)
#define CL_CZMQ_VERSION                                                                            \
    CL_STR(CZMQ_VERSION_MAJOR) "." CL_STR(CZMQ_VERSION_MINOR) "." CL_STR(CZMQ_VERSION_PATCH)

const char *collab_version_string(void)
{
    return "mpicollab " COLLAB_PROJECT_VERSION " (libzmq " CL_ZMQ_VERSION ", czmq " CL_CZMQ_VERSION
           ", libsodium " SODIUM_VERSION_STRING ")";
}
