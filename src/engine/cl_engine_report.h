/*  cl_engine_report.h - what a peer tells the swarm's monitors, one
    component of the engine (cl_engine_report.c; docs/monitor.md).

    eng_report_t owns the counters of this peer's reports (steps,
    collectives, bytes, time in collectives and waiting for late members,
    failures and joins seen, the values the program reported) and the
    timer that sends a REPORT to each monitor of the view every
    COLLAB_REPORT_INTERVAL seconds.  On a monitor it hands what arrives
    (reports, joins, failures, views) to collab-monitor's hooks.

    It sees the engine only through the context it gets at creation
    (eng_report_ctx_t): it never includes the engine's private header and
    never writes a peer record.  Engine thread only, except
    eng_report_set_value (any thread).
*/
#ifndef CL_ENGINE_REPORT_H_INCLUDED
#define CL_ENGINE_REPORT_H_INCLUDED

#include "engine/cl_engine.h"
#include "engine/cl_member.h"
#include "engine/cl_request.h"
#include "engine/cl_timer.h"
#include "engine/cl_wire.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_report eng_report_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What reporting may ask of the engine.  Every function gets `arg`. */
typedef struct {
    struct cl_engine *arg;          /* the engine, opaque here */
    const cl_config_t *cfg;         /* COLLAB_REPORT_INTERVAL, _LOSS; monitor */
    cl_timer_t *timers;             /* the loop's set: one timer is registered in it */
    const cl_engine_hooks_t *hooks; /* a monitor's hooks (members: all NULL) */
    /* The engine's clocks (eng_now; eng_raw_now for the cost figures). */
    double (*now)(struct cl_engine *arg);
    double (*raw_now)(struct cl_engine *arg);
    /* Whether this peer is a member (not joining, not gone). */
    bool (*is_member)(struct cl_engine *arg);
    /* The peer records: this peer's, the members', the monitors' (for
       cl_member_self / _list / _monitors), and the swarm's compression. */
    cl_peer_t *(*self)(struct cl_engine *arg);
    cl_peer_t *const *(*members)(struct cl_engine *arg, size_t *n);
    cl_peer_t *const *(*monitors)(struct cl_engine *arg, size_t *n);
    int (*compression)(struct cl_engine *arg);
    /* The current view (a monitor's on_view hook); 0 or a status. */
    int (*view)(struct cl_engine *arg, cl_wire_view_t *out);
    /* Steps (MPIX_Collab_step calls, or those the elastic layer learned)
       and collectives completed. */
    uint64_t (*steps)(struct cl_engine *arg);
    uint64_t (*progress)(struct cl_engine *arg);
    /* Sends m to peer p; 0 or a negative status. */
    int (*send)(struct cl_engine *arg, cl_peer_t *p, cl_wire_msg_t *m);
} eng_report_ctx_t;

/* Creates the component (its timer registered, not armed) or NULL. */
eng_report_t *eng_report_new(const eng_report_ctx_t *ctx);
/* Destroys it (logs its cost at debug level); nulls *self_p; accepts NULL. */
void eng_report_destroy(eng_report_t **self_p);

/* Sets a named value of the reports (collab_report): name is 1 to 32
   characters of [A-Za-z0-9_.], value finite.  0 or COLLAB_ERR_ARG.  Any
   thread. */
int eng_report_set_value(eng_report_t *self, const char *name, double value);

/* A member was first found late in the running collective. */
void eng_report_late_seen(eng_report_t *self, double now);
/* A member or monitor joined, failed, left, left the group (CL_EVENT_*). */
void eng_report_peer_event(eng_report_t *self, const cl_peer_t *p, int kind, const char *why);
/* The view changed (a monitor's on_view hook; the timer looks again). */
void eng_report_view(eng_report_t *self);
/* A collective completed (totals; COLLAB_REPORT_LOSS). */
void eng_report_coll_done(eng_report_t *self, uint64_t comm_id, const collab_request_t *req,
                          int ncontrib, const collab_info_t *info, double now);
/* A REPORT from peer `from` (its record; NULL if unknown): a monitor hands
   a ranked member's report to its hook. */
void eng_report_on_msg(eng_report_t *self, const cl_peer_t *from, const cl_wire_report_t *r);

#endif
