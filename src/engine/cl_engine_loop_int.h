/*  cl_engine_loop_int.h - the engine loop's services to its adapter files.

    The engine loop is cl_engine.c, which alone defines and writes the
    engine's state (struct cl_engine: the request queue, the held
    messages, finalize, the published rank), and its six adapter files,
    which build the components' contexts and fan membership's changes out
    to them: cl_engine_fanout.c, cl_engine_join_ctx.c,
    cl_engine_member_ctx.c, cl_engine_coll_ctx.c, cl_engine_elastic_ctx.c
    and cl_engine_elastic_hooks.c (the elastic layer's hooks).  This
    header is private to those seven files
    (tools/structure/allowed.txt).  An adapter sees the engine through it
    only: the loop's services (the clock, send, the dispatch table, the
    state's one writer), read-only parts (eng_parts: the components and
    the settings fixed at start) and the few values the loop owns
    (eng_state, eng_rank, eng_steps, eng_leaving).  The components
    themselves include neither this header nor any other of the loop's:
    they see their own context only (docs/architecture.md).
*/
#ifndef CL_ENGINE_LOOP_INT_H_INCLUDED
#define CL_ENGINE_LOOP_INT_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_comm.h"
#include "engine/cl_engine.h"
#include "engine/cl_engine_auth.h"
#include "engine/cl_engine_clock.h" /* eng_now, eng_raw_now, eng_add_not_running */
#include "engine/cl_engine_coll.h"
#include "engine/cl_engine_dialback.h"
#include "engine/cl_engine_gens.h"
#include "engine/cl_engine_groups.h"
#include "engine/cl_engine_join.h" /* and eng_state_t */
#include "engine/cl_engine_leave.h"
#include "engine/cl_engine_match.h"
#include "engine/cl_engine_member.h"
#include "engine/cl_engine_p2p.h"
#include "engine/cl_engine_relay.h"
#include "engine/cl_engine_report.h"
#include "engine/cl_engine_suspect.h"
#include "engine/cl_engine_timer.h"
#include "engine/cl_member.h"
#include "engine/cl_p2p.h"
#include "engine/cl_request.h"
#include "engine/cl_timer.h"
#include "engine/cl_transport.h"
#include "util/cl_addr.h"

#include <czmq.h>
#include <pthread.h>
#include <stdatomic.h>

#define ENG_REASON_LEFT                                                                            \
    ENG_SUSPECT_LEFT /* suspect_reason of a peer that said goodbye (local only) */

struct cl_engine;

/* A handler of one message type (eng_on_type): the sender's record p
   (NULL when it has none), its key and the message, which passed the
   authority gate first (eng_on_message). */
typedef void eng_msg_fn(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                        const cl_wire_msg_t *m);
/* The loop's table has a handler for every value of a header's type. */
#define ENG_MSG_TYPES 256

/* The loop's parts as its adapter files see them (eng_parts): the
   settings and identity fixed at start, and the components the loop
   created.  cl_engine.c alone writes them (at start, and when it
   destroys the components at the end); an adapter reads them to build a
   component's context or to call a component, and never changes them. */
typedef struct eng_parts {
    const cl_config_t *cfg;  /* changed by eng_set_cfg_weight, eng_set_cfg_client_mode only */
    const uint8_t *self_key; /* 32 bytes */
    const char *self_id;
    cl_identity_t *id;
    uint64_t incarnation;           /* random, tells a restart of this identity */
    double hb_interval;             /* seconds between heartbeats */
    double t0;                      /* the engine's clock when its thread started */
    const cl_engine_hooks_t *hooks; /* a monitor's */
    cl_timer_t *timers;             /* the deadlines the components registered (cl_timer.h) */
    cl_transport_t *tp;
    cl_member_t *mb;          /* the peer records (written by membership only) */
    eng_member_t *member;     /* membership's views (cl_engine_member.h) */
    eng_join_t *join;         /* joining (cl_engine_join.h) */
    eng_match_t *match;       /* matchmaking of the world group (cl_engine_match.h) */
    eng_suspect_t *susp;      /* heartbeats, suspicion, the coordinator's tenure */
    eng_cs_t *cs;             /* the collective streams (cl_engine_coll.h) */
    struct eng_elastic *el;   /* admission, state sync (cl_engine_elastic.h) */
    eng_report_t *rep;        /* reports to the monitors (cl_engine_report.h) */
    eng_auth_t *auth;         /* who may send what (cl_engine_auth.h) */
    eng_dialback_t *dialback; /* joiners dialled back (cl_engine_dialback.h) */
    struct eng_relay *relay;  /* client members through a monitor (cl_engine_relay.h) */
    eng_p2p_t *p2p;           /* point-to-point, with its credit (cl_engine_p2p.h) */
    eng_groups_t *groups;     /* world all-reduces in several groups (cl_engine_groups.h) */
    eng_leave_t *leave;       /* departures (cl_engine_leave.h) */
    struct eng_rate *rate;    /* the measured bandwidth figure (cl_engine_rate.h) */
} eng_parts_t;

/* cl_engine.c: the engine's own state is defined there only. */
/* The parts, read-only. */
const eng_parts_t *eng_parts(const struct cl_engine *e);
/* The engine's state (written by eng_set_state only). */
eng_state_t eng_state(const struct cl_engine *e);
/* This peer's world rank (-1 before it holds one) and the world's size,
   as the program sees them (MPI_Comm_rank, MPI_Comm_size): written by
   membership's context when a view changes them. */
int eng_rank(const struct cl_engine *e);
int eng_world_size(const struct cl_engine *e);
void eng_set_rank(struct cl_engine *e, int rank);
/* ... and the swarm's strictness with it (cl_engine_strict). */
void eng_set_world_size(struct cl_engine *e, int world_size);
/* MPIX_Collab_step calls so far. */
uint64_t eng_steps(const struct cl_engine *e);
/* Is this peer on its way out: a leave under way or asked for, or
   finalize called? */
bool eng_leaving(const struct cl_engine *e);
/* Completes collab_init (if it still waits): this peer became a member. */
void eng_init_done(struct cl_engine *e);

/* cl_engine.c */
/* eng_now as a component context's clock (the `now(struct cl_engine
   *arg)` of their contexts; arg is ignored): the one adapter every
   context uses (docs/architecture.md, "Typed contexts"). */
double eng_ctx_clock(struct cl_engine *e);

/* The one writer of the engine's state (e->state): the loop (ENG_LEFT at
   a departure, an abort or the end of finalize; eng_fail_init), _member
   through its context (ENG_MEMBER when this peer holds a rank) and _join
   through its context (ENG_JOINING, ENG_STANDBY). */
void eng_set_state(struct cl_engine *e, eng_state_t state);
/* Completes collab_init with status (if it still waits) and leaves
   (eng_set_state: ENG_LEFT): a join that failed, a view with settings
   this peer must not adopt. */
void eng_fail_init(struct cl_engine *e, int status);
/* The one writer of e->cfg once the engine runs (the rest of it is fixed
   at cl_engine_start_hooks): the two settings that change.  This peer's weight
   (MPIX_Collab_set_weight: eng_set_weight) ... */
void eng_set_cfg_weight(struct cl_engine *e, double weight);
/* ... and client mode, turned on (COLLAB_CLIENT_MODE=auto found this
   peer unreachable: the join's context, set_client). */
void eng_set_cfg_client_mode(struct cl_engine *e);
const char *eng_peer_desc(const cl_peer_t *p, char *out, size_t len);
int eng_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m);
/* eng_send without class EARLY's credit (a COLL message from a FIFO of
   the point-to-point component, already counted). */
int eng_send_now(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m);
/* A decoded message from key, as the transport delivers it: the authority
   gate, then its handler (a relayed message arrives here opened). */
void eng_on_message(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m);
/* Registers fn as the handler of messages of `type` (cl_msg_type_t), at
   a component's init: one per type, a later one replaces it.  A type
   nobody registered is dropped after the gate. */
void eng_on_type(struct cl_engine *e, int type, eng_msg_fn *fn);
void eng_set_info(struct cl_engine *e, const collab_info_t *info);
void eng_replay_held(struct cl_engine *e);

/* Each adapter file's eng_X_create builds component X with its context
   and returns it (NULL without memory), registering the messages X
   handles; the loop keeps it in its parts and destroys it at the end
   with X's own destroy. */

/* cl_engine_join_ctx.c: the join's context (cl_engine_join.h); the rest
   of the engine asks the join through eng_parts(e)->join.  The loop
   starts it (eng_join_start) once every component exists. */
eng_join_t *eng_join_create(struct cl_engine *e);
/* eng_join_send_relinked for the authority's probe round. */
void eng_send_join_relinked(struct cl_engine *e, const uint8_t key[32]);
/* The swarm's settings s became this peer's (a view admitted it): raises
   the transport's lowest wire version to what they need. */
void eng_settings_adopted(struct cl_engine *e, const cl_settings_t *s);

/* cl_engine_fanout.c: membership changes, fanned out to the rest of the engine
   (point-to-point, the collective streams, the reports, the transport's
   connections).  Membership calls them after updating its records. */
/* Who joined, left, failed or left the group (the peer records still
   say why: suspect_reason). */
void eng_fan_out_peers(struct cl_engine *e, const cl_member_delta_t *d);
/* Then: the view changed (its epoch, the group, the settings). */
void eng_fan_out_view(struct cl_engine *e);
/* This peer became a member (collab_init completes). */
void eng_fan_out_member(struct cl_engine *e);
/* A member's weight changed: a new group generation, same members. */
void eng_fan_out_weight(struct cl_engine *e);

/* cl_engine_member_ctx.c: the contexts of membership's components
   (cl_engine_member.h, cl_engine_suspect.h, cl_engine_match.h), and the
   functions through which the rest of the engine asks them (wrappers on
   membership's components). */
/* Peer records are written by membership only: a message from p came in
   now; p answered in a collective (no longer late); this peer was stopped
   and its own stop explains p's silence (a suspect that did not say
   goodbye and whose connection works is alive again). */
void eng_member_heard(struct cl_engine *e, cl_peer_t *p);
void eng_member_answered(struct cl_engine *e, cl_peer_t *p);
void eng_member_excuse(struct cl_engine *e, cl_peer_t *p, double now);
/* The failure detector, its context built here (the loop's
   create_parts). */
eng_suspect_t *eng_suspect_create(struct cl_engine *e);
/* Membership's views, registering membership's messages with the loop
   (JOIN, JOIN_REPLY, VIEW, HEARTBEAT, SUSPECT, MATCH, UPDATE:
   eng_member_on_message) ... */
eng_member_t *eng_member_create(struct cl_engine *e);
/* ... and matchmaking, whose window's timer goes into the set (NULL too
   when the set is full). */
eng_match_t *eng_match_create(struct cl_engine *e);
/* Whether this peer is a member and its own coordinator
   (cl_member_coordinator).  Pure: every "do I coordinate" question asks
   this; a peer about to act as the coordinator then calls eng_take_over. */
bool eng_self_coordinates(struct cl_engine *e);
/* The takeover, before this peer acts as the coordinator (eng_self_
   coordinates is true): the first action of its tenure raises the epoch
   so that the views it makes get epochs above any view its predecessor
   may have sent to some peers only.  Later calls of the tenure do
   nothing; the member tick ends the tenure when this peer stops
   coordinating. */
void eng_take_over(struct cl_engine *e);
/* The transport's events, to the dial-back, the failure detector and the
   join. */
void eng_member_on_event(struct cl_engine *e, const cl_tp_event_t *ev);
/* The loop's handler of membership's messages (eng_member_message). */
void eng_member_on_message(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                           const cl_wire_msg_t *m);
void eng_goodbye_all(struct cl_engine *e); /* nothing without membership */
/* The program waits for the world group (eng_match_request). */
void eng_request_match(struct cl_engine *e);
/* MPIX_Collab_set_weight: the configuration's weight (eng_set_cfg_weight), then
   eng_member_set_weight. */
void eng_set_weight(struct cl_engine *e, double w);
/* Leaves the swarm for good while the program still runs: says goodbye,
   and every pending and later call (but finalize) completes with status. */
void eng_leave(struct cl_engine *e, int status);

/* cl_engine_member_ctx.c, on the failure detector (cl_engine_suspect.c):
   suspicion, stragglers and COLLAB_VERIFY verdicts. */
void eng_report_late(struct cl_engine *e, cl_peer_t *p, int reason);
/* This peer cannot go on with the world group (it completed a collective
   under a member list that an admission changed after the fact): asks the
   coordinator to take it out of the group like a straggler, so that it is
   re-admitted and resynced (docs/elastic.md §9). */
void eng_report_self_out(struct cl_engine *e);
/* COLLAB_VERIFY: this peer recomputed a part p reduced and found it wrong
   (docs/security.md §6c).  The coordinator removes p from the swarm and
   bans its key; any other member reports it to the coordinator, which
   then checks p's part itself in its next all-reduces. */
void eng_report_corrupt(struct cl_engine *e, cl_peer_t *p);
/* Coordinator: the part of a member reported for a wrong result that this collective
   (comm members `ranks`, world ranks through comm) should check:
   1 + its comm rank, or 0. */
int eng_verify_target(struct cl_engine *e, const int *ranks, int n, const collab_comm_t *comm);

/* cl_engine_fanout.c builds the contexts of the components below. */
/* Departures: a graceful one keeps its contributions (cl_engine_leave.h,
   docs/elastic.md §10); registers BYE_ACK. */
eng_leave_t *eng_leave_create(struct cl_engine *e);
/* World all-reduces in several groups (cl_engine_groups.h). */
eng_groups_t *eng_groups_create(struct cl_engine *e);
/* Reports to the monitors, and a monitor's hooks (cl_engine_report.h);
   registers REPORT.  Made before the engine's thread starts. */
eng_report_t *eng_report_create(struct cl_engine *e);
/* Point-to-point (cl_engine_p2p.h). */
eng_p2p_t *eng_p2p_create(struct cl_engine *e);
/* The measured bandwidth figure (cl_engine_rate.h), in
   cl_engine_fanout.c. */
struct eng_rate *eng_rate_create(struct cl_engine *e);
/* Client member to client member through a relaying monitor
   (cl_engine_relay.h, docs/monitor.md §8); registers RELAYED. */
struct eng_relay *eng_relay_create(struct cl_engine *e);
/* Who may send what (cl_engine_auth.h, docs/security.md §3, §4): the
   loop, _join, _member, _pause, _route and the fan-out call it. */
eng_auth_t *eng_auth_create(struct cl_engine *e);
/* Can a joiner be reached (cl_engine_dialback.h, docs/membership.md)? */
eng_dialback_t *eng_dialback_create(struct cl_engine *e);
/* Does the current world group hold more than COLLAB_TARGET_GROUP members,
   so that world all-reduces run in several groups whose results differ
   (docs/elastic.md §9)?  Always false in strict mode. */
bool eng_coll_multigroup(struct cl_engine *e);

/* cl_engine_coll_ctx.c: the collective streams (cl_engine_coll.h). */
eng_cs_t *eng_coll_create(struct cl_engine *e);

/* cl_engine_elastic_ctx.c: the elastic layer (cl_engine_elastic.h:
   eng_el_create, eng_el_destroy). */

#endif
