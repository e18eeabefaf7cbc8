/*  cl_engine_coll.h - the collective streams, one component.

    The streams (cl_engine_coll.c with cl_engine_coll_start.c,
    cl_engine_coll_env.c, cl_engine_route.c and cl_engine_fast.c; what
    those files share: cl_engine_coll_int.h) keep their state in
    eng_cs_t, opaque to every other file.  They see the rest of the engine
    only through the context eng_cs_ctx_t that the loop builds
    (cl_engine_coll_ctx.c, eng_coll_create): none of their files includes
    the loop's header.  Engine thread only.
*/
#ifndef CL_ENGINE_COLL_H_INCLUDED
#define CL_ENGINE_COLL_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_engine_auth.h"
#include "engine/cl_engine_gens.h"
#include "engine/cl_engine_groups.h"
#include "engine/cl_engine_leave.h"
#include "engine/cl_engine_p2p.h"
#include "engine/cl_engine_report.h"
#include "engine/cl_engine_suspect.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "engine/cl_transport.h"
#include "engine/cl_wire.h"
#include "mpi_collab.h"
#include "util/cl_config.h"
#include "util/cl_identity.h"

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_cs eng_cs_t;
typedef struct stream stream_t; /* opaque: cl_engine_coll_int.h */

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* The elastic layer's answers the streams ask through their context
   (cl_engine_elastic.h, whose values these are). */
#define ENG_CS_GEN_DEFAULT (UINT64_MAX - 1) /* el_choose_gen: the engine decides */
enum {
    ENG_CS_ROUTE_DEFAULT = 0, /* el_route: the older generation wins */
    ENG_CS_ROUTE_RESTART = 1, /* restart under the message's generation, deliver */
    ENG_CS_ROUTE_NOTIFY = 2,  /* drop it and tell the sender our generation */
    ENG_CS_ROUTE_KEEP = 3,    /* tell the sender ours, and keep it for when we switch */
};

/* What the streams may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    const cl_config_t *cfg;               /* COLLAB_TIMEOUT, the bounds of early messages, ... */
    uint8_t self_key[32];                 /* this peer's identity key */
    const cl_identity_t *id;              /* pair keys and relay proofs */
    const cl_member_t *mb;                /* the membership's records (read only) */
    cl_timer_t *timers;                   /* the loop's set: the streams register one timer */
    cl_transport_t *tp;                   /* the shared-memory links (cl_transport_shm) */
    eng_leave_t *leave;                   /* who left after taking part in a collective */
    eng_groups_t *groups;                 /* world all-reduces in several groups */
    eng_auth_t *auth;                     /* refused collective data named */
    eng_suspect_t *susp;                  /* an overdrawn sender */
    eng_p2p_t *p2p;                       /* the credit of class EARLY, a freed communicator */
    eng_report_t *rep;                    /* completed collectives */
    double (*now)(struct cl_engine *arg); /* the engine's clock (eng_now) */
    int (*rank)(struct cl_engine *arg);   /* this peer's world rank, -1 before it holds one */
    int (*world_size)(struct cl_engine *arg);
    bool (*is_member)(struct cl_engine *arg); /* the engine's state is ENG_MEMBER */
    uint64_t (*steps)(struct cl_engine *arg); /* MPIX_Collab_step calls */
    /* Is this peer on its way out (a leave or a finalize under way)? */
    bool (*stopping)(struct cl_engine *arg);
    int (*send)(struct cl_engine *arg, const cl_peer_t *to, cl_wire_msg_t *m); /* eng_send */
    const char *(*desc)(const cl_peer_t *p, char *out, size_t len);
    void (*set_info)(struct cl_engine *arg, const collab_info_t *info); /* eng_set_info */
    void (*answered)(struct cl_engine *arg, const cl_peer_t *p);        /* eng_member_answered */
    void (*report_late)(struct cl_engine *arg, const cl_peer_t *p,
                        int reason);                                   /* eng_report_late */
    void (*report_corrupt)(struct cl_engine *arg, const cl_peer_t *p); /* eng_report_corrupt */
    /* eng_verify_target: 1 + the comm rank whose part to check, or 0. */
    int (*verify_target)(struct cl_engine *arg, const int *ranks, int n, const collab_comm_t *comm);
    void (*request_match)(struct cl_engine *arg); /* eng_request_match */
    /* The elastic hooks (cl_engine_elastic.h: eng_el_*). */
    bool (*el_in_doubt)(struct cl_engine *arg);
    bool (*el_on_post)(struct cl_engine *arg, stream_t *s, collab_request_t *req, bool again);
    void (*el_on_done)(struct cl_engine *arg, stream_t *s, collab_request_t *req, int status);
    void (*el_view_changed)(struct cl_engine *arg);
    void (*el_on_fast)(struct cl_engine *arg, stream_t *s, const collab_request_t *req);
    bool (*el_fast_ok)(struct cl_engine *arg, stream_t *s);
    uint64_t (*el_period)(struct cl_engine *arg);
    uint64_t (*el_choose_gen)(struct cl_engine *arg, stream_t *s, uint64_t seq);
    bool (*el_gen_ok)(struct cl_engine *arg, stream_t *s, uint64_t seq, uint64_t gen);
    int (*el_route)(struct cl_engine *arg, stream_t *s, uint64_t seq, uint64_t cur, uint64_t hgen);
    bool (*el_takes_part)(struct cl_engine *arg, const collab_comm_t *comm, int w, uint64_t seq,
                          double *weight);
    /* A large data message of `bytes` from p arrived at now: membership
       updates p's measured bandwidth (cl_member_data_seen), the records'
       only writer. */
    void (*data_seen)(struct cl_engine *arg, const cl_peer_t *p, size_t bytes, double now);
} eng_cs_ctx_t;

/* Creates the streams with their context (copied) and registers their
   timer in ctx->timers; NULL when out of memory or the set is full. */
eng_cs_t *eng_cs_new(const eng_cs_ctx_t *ctx);
/* Frees the streams (requests still attached complete with
   COLLAB_ERR_NOT_INIT), their timer and caches; accepts NULL, nulls
   *self_p. */
void eng_cs_destroy(eng_cs_t **self_p);

/* What the loop calls (cl_engine.c, cl_engine_fanout.c). */
void eng_coll_fail_all(eng_cs_t *cs, int status);
void eng_coll_submit(eng_cs_t *cs, collab_request_t *req);
void eng_coll_on_message(eng_cs_t *cs, const cl_peer_t *from, const cl_wire_msg_t *m);
void eng_coll_peer_gone(eng_cs_t *cs, const cl_peer_t *p);
void eng_coll_view_changed(eng_cs_t *cs);
/* This peer became a member: _coll's timer (the tick of running
   collectives, the deadline of calls waiting for the group, the poll of
   device input) runs while it is one. */
void eng_coll_member(eng_cs_t *cs);
/* After each poll round, while this peer is a member (progress, not a
   deadline): the same-host fast path granted or revoked and its reports
   taken (eng_fast_update), device input pumped, and the collectives that
   are done completed (one may have waited for its own messages to
   leave). */
void eng_coll_progress(eng_cs_t *cs);
void eng_coll_deliver_local(eng_cs_t *cs);
void eng_coll_deferred(eng_cs_t *cs);
bool eng_coll_idle(eng_cs_t *cs);
void eng_coll_comm_free(eng_cs_t *cs, collab_comm_t *comm);

/* Whether this peer may take part in all-reduces through host leaders now
   (cl_api_hier.c): COLLAB_HOST_LEADER and shared memory on, a member of
   the closed group of a strict swarm with weight 1, no compression,
   robust aggregation or validation.  Any thread. */
bool eng_coll_hier_ok(const eng_cs_t *cs);
/* Early messages of world rank w waiting in the early buffers (counted
   against it), and their payload bytes in *bytes (the point-to-point
   context's early_queued). */
size_t eng_coll_early_queued(const eng_cs_t *cs, int w, size_t *bytes);
/* Does a running collective wait for a message world rank w could send:
   one on a communicator that has w (the context's coll_waits_for)? */
bool eng_coll_waits_for(const eng_cs_t *cs, int w);

/* What the elastic layer's adapters (cl_engine_elastic_ctx.c) ask of
   the streams, eng_parts(e)->cs.  The stream of communicator id, or NULL (with
   create: a new one, NULL without memory); dropping the early messages
   of s for sequences below `below`; the group generation gen as recorded
   here, or NULL, and whether gen is recorded and lists this peer;
   restarting s's running collective under gen (0: alone). */
stream_t *eng_cs_stream(eng_cs_t *cs, uint64_t id, bool create);
void eng_cs_drop_buffered_below(eng_cs_t *cs, stream_t *s, uint64_t below);
const group_gen_t *eng_cs_gen(eng_cs_t *cs, uint64_t gen);
bool eng_cs_in_gen(eng_cs_t *cs, uint64_t gen);
void eng_cs_restart(eng_cs_t *cs, stream_t *s, uint64_t gen);
/* Hands req back to the world stream as collective seq (not recorded
   again by the elastic hooks), then sets the stream's next sequence to
   next (UINT64_MAX: as it was).  COLLAB_ERR_INTERNAL without a world
   stream (req untouched). */
int eng_cs_submit_at(eng_cs_t *cs, collab_request_t *req, uint64_t seq, uint64_t next);
/* The world stream starts no collective below started and numbers the
   next one next (UINT64_MAX: unchanged). */
void eng_cs_renumber(eng_cs_t *cs, uint64_t started, uint64_t next);
/* Completes the done collectives and starts the queued ones of every
   stream again (something that held them back, eng_el_in_doubt, ended). */
void eng_cs_start_queued(eng_cs_t *cs);
/* req, the call just posted on s, runs as collective seq; s numbers the
   next local call seq + 1 (the elastic hook's mapping, eng_el_on_post). */
void eng_coll_number(stream_t *s, collab_request_t *req, uint64_t seq);
/* Collective seq of s ran elsewhere (the fast path): the next local call
   is numbered after it (never lowered). */
void eng_coll_skip_to(stream_t *s, uint64_t seq);
/* Takes the running collective of s (stopped, its request not completed)
   and then its queued requests back from the engine, in order, into out
   (at most max; the rest stay queued).  Returns how many; the caller owns
   them and must submit or complete each. */
size_t eng_coll_take_back(stream_t *s, collab_request_t **out, size_t max);
const char *eng_coll_kind_name(cl_coll_kind_t k);

/* What others may read of a stream (its record is the streams' own,
   cl_engine_coll_int.h): the elastic layer's adapter asks these. */
/* The communicator's id, and the communicator (NULL until the program
   uses it here). */
uint64_t eng_stream_comm_id(const stream_t *s);
const collab_comm_t *eng_stream_comm(const stream_t *s);
/* Is s the world communicator's stream (its id and a world comm)?  False
   for NULL. */
bool eng_stream_is_world(const stream_t *s);
/* Sequence number of the next local call. */
uint64_t eng_stream_next_seq(const stream_t *s);
/* Does a collective run on s?  Then its sequence number and generation
   in *seq and *gen (untouched otherwise). */
bool eng_stream_running(const stream_t *s, uint64_t *seq, uint64_t *gen);
/* The collective running on s, as it ends: its sequence number,
   generation, members that called another collective and contributors
   (all 0 when none runs; the contributors also 0 when its algorithm has
   none).  Returns whether one runs. */
bool eng_stream_finishing(const stream_t *s, uint64_t *seq, uint64_t *gen, int *nmismatch,
                          int *ncontrib);
/* The calls made on s and not started, in order: how many, the first
   (NULL when none), and taking one out of them (the caller then owns its
   completion: the elastic layer hands them to the admittee).  The list
   is the streams'. */
size_t eng_stream_queued(const stream_t *s);
collab_request_t *eng_stream_queue_head(const stream_t *s);
void eng_stream_dequeue(stream_t *s, collab_request_t *req);

/* Collectives completed here (on the engine or the fast path); 0 for a
   NULL cs.  The suspect's heartbeats and the reports read it. */
uint64_t eng_coll_completed(const eng_cs_t *cs);
/* Recent time between completions (an EWMA, seconds; 0 before the
   second one): how late a straggler is. */
double eng_coll_step_gap(const eng_cs_t *cs);
/* Does a call wait for the world group to form (matchmaking's
   question)? */
bool eng_coll_waiting_for_group(const eng_cs_t *cs);
/* Are messages this peer sent to itself waiting for delivery
   (eng_coll_deliver_local)?  The loop then polls without sleeping. */
bool eng_coll_local_pending(const eng_cs_t *cs);
/* False when a stream of communicator comm is known here and its comm
   rank r is not world rank w (point-to-point's check of a sender). */
bool eng_coll_comm_rank_is(const eng_cs_t *cs, uint64_t comm, int r, int w);
/* The communicators this peer entered collectives on, with how many:
   every stream but the self communicator's that started one, then (in
   the room left) the last ENG_FREED_KEEP communicators the program freed
   after entering some.  Fills at most max entries of comms and returns
   how many there are (a GOODBYE's list, cl_engine_leave.h). */
size_t eng_coll_entered(const eng_cs_t *cs, cl_wire_bye_comm_t *comms, size_t max);

#endif
