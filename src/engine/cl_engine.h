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
#include "engine/cl_wire.h"
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

/* What a monitor's engine tells collab-monitor (docs/monitor.md).  Every
   hook runs on the engine thread, must not block, and may be NULL; the
   pointers it gets are valid during the call only. */
enum { CL_EVENT_JOINED = 0, CL_EVENT_FAILED = 1, CL_EVENT_LEFT = 2, CL_EVENT_UNGROUPED = 3 };
typedef struct {
    void *arg; /* passed to every hook */
    /* A REPORT from the ranked member key (its peer id, address, client flag). */
    void (*on_report)(void *arg, const uint8_t key[32], const char *id, const char *address,
                      bool client, const cl_wire_report_t *report);
    /* A member (rank >= 0) or monitor (monitor true) joined, failed, left the
       swarm, or left the world group (CL_EVENT_*); why is a short text. */
    void (*on_event)(void *arg, int kind, int rank, bool monitor, const char *id,
                     const char *address, const char *why);
    /* The view changed (or was installed): the whole new view. */
    void (*on_view)(void *arg, const cl_wire_view_t *view);
} cl_engine_hooks_t;

/* As cl_engine_start, for collab-monitor: cfg->monitor makes this peer a
   monitor (no rank; founds the swarm without initial peers), and hooks
   (copied) receive what the engine sees. */
int cl_engine_start_hooks(cl_config_t *cfg, cl_identity_t **identity,
                          const cl_engine_hooks_t *hooks, cl_engine_t **out);

/* A relaying monitor's totals (docs/monitor.md §8). */
typedef struct {
    bool serving;             /* this peer relays (collab-monitor --relay) */
    int mbit;                 /* its rate limit, Mbit/s (COLLAB_RELAY_MBIT) */
    uint64_t forwarded_msgs;  /* messages forwarded */
    uint64_t forwarded_bytes; /* their bytes (RELAY bodies) */
    uint64_t dropped_msgs;    /* dropped: over the rate limit's queue, or their
                                 destination left while they waited */
    uint64_t dropped_bytes;
    uint64_t refused;         /* RELAYs refused (not between client members, forged, ...) */
} cl_relay_stats_t;

/* Fills *out with this peer's relay totals.  Any thread, while the engine
   runs. */
void cl_engine_relay_stats(const cl_engine_t *self, cl_relay_stats_t *out);

/* The peer's join line address (its announced multiaddr), "" in client
   mode.  Valid while the engine runs. */
const char *cl_engine_address(const cl_engine_t *self);

/* Sets a named value of this peer's reports (collab_report): name is 1 to
   32 characters of [A-Za-z0-9_.], value finite.  Returns 0 or
   COLLAB_ERR_ARG.  Any thread. */
int cl_engine_report_value(cl_engine_t *self, const char *name, double value);

/* Queues req for the engine.  Returns 0, or COLLAB_ERR_NOT_INIT once the
   engine has stopped (req is then not touched). */
int cl_engine_submit(cl_engine_t *self, collab_request_t *req);

/* The file descriptor (an eventfd) that wakes the engine's loop when 8
   bytes holding 1 are written to it, from any thread (the device's
   callbacks of the staging pipeline, cl_stage.c); the loop then runs its
   timers.  Valid while the engine lives. */
int cl_engine_wake_fd(const cl_engine_t *self);

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

/* Whether the swarm runs in strict mode (known once collab_init
   returned: the same on every member); any thread. */
bool cl_engine_strict(const cl_engine_t *self);

/* Whether this peer may take part in all-reduces through host leaders
   now (eng_coll_hier_ok); any thread. */
bool cl_engine_host_leader_ok(const cl_engine_t *self);

/* Copies the information about the last completed collective. */
void cl_engine_last_info(cl_engine_t *self, collab_info_t *out);
/* Records it, for a collective the application thread completed itself
   (the same-host fast path). */
void cl_engine_set_last_info(cl_engine_t *self, const collab_info_t *info);

#endif
