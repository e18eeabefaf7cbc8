/*  cl_engine.h - the engine: one thread per process that owns every socket.

    Started by collab_init, stopped by collab_finalize.  Application threads
    hand it requests (cl_request.h) through a mutex-protected queue and an
    eventfd wake-up; the engine thread blocks in zmq_poll with a timeout
    computed from its nearest deadline, runs the join protocol, membership,
    collectives and point-to-point, and completes the requests.
*/
#ifndef CL_ENGINE_H_INCLUDED
#define CL_ENGINE_H_INCLUDED

#include "engine/cl_request.h"
#include "mpi_collab.h"

#include <stdbool.h>
#include "util/cl_config.h"
#include "util/cl_identity.h"

typedef struct cl_engine cl_engine_t;

/* Starts the engine thread and joins (or founds) the swarm; returns once
   this peer holds a rank.  Takes ownership of *cfg (zeroed on return) and
   *identity (nulled).  Returns 0 with *out set, or a negative status after
   logging one line: COLLAB_ERR_NETWORK (initial peers unreachable,
   cannot listen), COLLAB_ERR_CONFIG (settings conflict with the swarm's),
   COLLAB_ERR_NO_MEM. */
int cl_engine_start(cl_config_t *cfg, cl_identity_t **identity, cl_engine_t **out);

/* Queues req for the engine.  Returns 0, or COLLAB_ERR_NOT_INIT once the
   engine has stopped (req is then not touched). */
int cl_engine_submit(cl_engine_t *self, collab_request_t *req);

/* Leaves the swarm gracefully (pending operations complete first, others
   are told at once), stops the thread and frees everything; nulls *self_p. */
int cl_engine_stop(cl_engine_t **self_p);

/* Asks the engine to leave the swarm gracefully, as finalize does, while
   the program still runs: its running collectives get COLLAB_TIMEOUT to
   finish, then it says goodbye and waits for the acknowledgements; after
   that every call fails with COLLAB_ERR_LEFT.  Async-signal-safe (an
   atomic store and a write); returns at once. */
void cl_engine_request_leave(cl_engine_t *self);

/* Waits up to ms (poll, async-signal-safe) until a requested leave is
   done.  Returns true once it is. */
bool cl_engine_wait_left(cl_engine_t *self, int ms);

/* The longest a requested leave takes, in ms: its collectives' time, the
   acknowledgements' and a margin. */
int cl_engine_leave_bound_ms(const cl_engine_t *self);

/* Says goodbye to every peer and waits up to ms for it to leave; for
   abort paths.  The engine keeps running. */
void cl_engine_goodbye_now(cl_engine_t *self, int ms);

/* This peer's world rank and the nominal world size. */
int cl_engine_rank(const cl_engine_t *self);
int cl_engine_world_size(const cl_engine_t *self);

/* Copies the information about the last completed collective. */
void cl_engine_last_info(cl_engine_t *self, collab_info_t *out);

#endif
