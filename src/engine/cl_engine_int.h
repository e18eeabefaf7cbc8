/*  cl_engine_int.h - state shared by the engine's source files.

    cl_engine.c runs the thread, the request queue and the timers;
    cl_engine_coll.c the collective streams.  Membership's views are a
    component (cl_engine_member.h), so are the join (cl_engine_join.h),
    heartbeats and failure detection (cl_engine_suspect.h) and
    matchmaking (cl_engine_match.h); their contexts are built in
    cl_engine_member_ctx.c and cl_engine_join_ctx.c.  The collective
    streams are a component too (cl_engine_coll.h, e->cs), whose files do
    not include this header; their context is built in cl_engine_coll_ctx.c.
    Point-to-point is a component of its own (cl_engine_p2p.h) that does
    not include this header.  Everything below except the fields marked "shared" is
    touched by the engine thread only.
*/
#ifndef CL_ENGINE_INT_H_INCLUDED
#define CL_ENGINE_INT_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_comm.h"
#include "engine/cl_engine.h"
#include "engine/cl_engine_auth.h"
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

/* A data message from a peer that is not a member in this peer's view
   yet (its admission view is still on the way), kept until the next view
   change. */
typedef struct held_msg {
    struct held_msg *next;
    uint8_t key[32];
    double t;          /* when it arrived */
    cl_wire_msg_t msg; /* header fields; payload points at data */
    size_t len;
    uint8_t data[];
} held_msg_t;

struct cl_engine {
    /* Immutable after start. */
    cl_config_t cfg;
    cl_identity_t *id;
    uint8_t self_key[32];
    char self_id[CL_PEER_ID_MAX];
    double t0;            /* monotonic time at start */
    uint64_t incarnation; /* random, tells a restart of this identity */
    double hb_interval;   /* seconds between heartbeats */
    /* Shared with application threads. */
    zactor_t *actor;
    pthread_mutex_t q_mu; /* guards q_head/q_tail/accepting */
    collab_request_t *q_head, *q_tail;
    bool accepting;             /* false once the engine stops */
    int wake_fd;                /* eventfd: the queue has work */
    atomic_int leave_asked;     /* cl_engine_request_leave was called */
    int left_pipe[2];           /* a byte is written to [1] once a requested leave is done */
    collab_request_t *init_req; /* completed when the peer holds a rank */
    atomic_int rank;            /* world rank, -1 before joining */
    atomic_int world_size;
    pthread_mutex_t info_mu; /* guards info */
    collab_info_t info;
    /* Engine thread only. */
    cl_timer_t *timers;                 /* the deadlines the components registered (cl_timer.h) */
    eng_msg_fn *on_type[ENG_MSG_TYPES]; /* message handlers by type (eng_on_type) */
    cl_transport_t *tp;
    cl_member_t *mb;
    eng_state_t state; /* written by eng_set_state only */
    bool terminated;   /* $TERM seen */
    /* Membership's views (cl_engine_member.h; when this peer got its
       rank: eng_member_since): created by eng_member_init. */
    eng_member_t *member;
    /* Joining (cl_engine_join.h): created by eng_join_init. */
    eng_join_t *join;
    /* Matchmaking of the world group (cl_engine_match.h): created by
       eng_member_init. */
    eng_match_t *match;
    /* The collective streams (cl_engine_coll.h): created by eng_coll_init. */
    eng_cs_t *cs;
    double admission_deadline; /* for a peer outside the formed group */
    bool admission_logged;
    held_msg_t *held_head, *held_tail; /* see held_msg_t */
    size_t held_bytes;
    uint64_t held_dropped; /* refused by the COLLAB_MAX_HELD* bounds so far */
    /* Elastic swarm: admission, state sync (cl_engine_elastic.h). */
    struct eng_elastic *el;
    /* Reports to the monitors; a monitor's hooks (cl_engine_report.c). */
    eng_report_t *rep;
    cl_engine_hooks_t hooks;
    /* Who may send what (cl_engine_auth.h). */
    eng_auth_t *auth;
    /* Joiners the coordinator dials back before admitting them
       (cl_engine_dialback.c). */
    eng_dialback_t *dialback;
    /* Messages between client members through a monitor, and a monitor's
       relaying (cl_engine_relay.c). */
    struct eng_relay *relay;
    /* Point-to-point, with its credit (cl_engine_p2p.h). */
    eng_p2p_t *p2p;
    /* World all-reduces in several groups (cl_engine_groups.h). */
    eng_groups_t *groups;
    /* Heartbeats, suspicion, the coordinator's tenure (cl_engine_suspect.h). */
    eng_suspect_t *susp;
    uint64_t steps; /* collab_step calls */
    collab_request_t *finalize_req;
    double finalize_deadline;
    int left_status;         /* why calls fail once ENG_LEFT (0: not initialised) */
    eng_leave_t *leave;      /* departures (cl_engine_leave.h) */
    bool leaving;            /* a leave requested by the program or a signal is under way */
    double leaving_deadline; /* its collectives get until then to finish */
};

/* cl_engine.c */
/* The engine's clock: monotonic seconds, less the time this process was
   found not running (eng_add_not_running).  Every deadline and silence
   is measured on it. */
double eng_now(void);
/* eng_now as a component context's clock (the `now(struct cl_engine
   *arg)` of their contexts; arg is ignored): the one adapter every
   context uses (docs/architecture.md, "Typed contexts"). */
double eng_ctx_clock(struct cl_engine *e);

/* The one writer of the engine's state (e->state): the loop (ENG_LEFT at
   a departure, an abort or the end of finalize), _member (ENG_MEMBER when
   this peer holds a rank, ENG_LEFT when the join fails) and _join through
   its context (ENG_JOINING, ENG_STANDBY). */
void eng_set_state(struct cl_engine *e, eng_state_t state);
/* Completes collab_init with status (if it still waits) and leaves
   (eng_set_state: ENG_LEFT): a join that failed, a view with settings
   this peer must not adopt. */
void eng_fail_init(struct cl_engine *e, int status);
/* The one writer of e->cfg once the engine runs (the rest of it is fixed
   at cl_engine_new): the two settings that change.  This peer's weight
   (MPIX_Collab_set_weight: eng_set_weight) ... */
void eng_set_cfg_weight(struct cl_engine *e, double weight);
/* ... and client mode, turned on (COLLAB_CLIENT_MODE=auto found this
   peer unreachable: the join's context, set_client). */
void eng_set_cfg_client_mode(struct cl_engine *e);
double eng_raw_now(void); /* monotonic seconds, every second counted */
void eng_add_not_running(double seconds);
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

/* cl_engine_join_ctx.c: the join's context (cl_engine_join.h); the rest
   of the engine asks the join through e->join. */
/* Creates e->join and starts it: founds the swarm (no initial peers) or
   starts joining it.  COLLAB_ERR_NO_MEM, or eng_join_start's status. */
int eng_join_init(struct cl_engine *e);
/* Destroys e->join (its timer, the initial peers). */
void eng_join_fini(struct cl_engine *e);
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
   e->member, e->susp and e->match). */
/* Peer records are written by membership only: a message from p came in
   now; p answered in a collective (no longer late); this peer was stopped
   and its own stop explains p's silence (a suspect that did not say
   goodbye and whose connection works is alive again). */
void eng_member_heard(struct cl_engine *e, cl_peer_t *p);
void eng_member_answered(struct cl_engine *e, cl_peer_t *p);
void eng_member_excuse(struct cl_engine *e, cl_peer_t *p, double now);
/* The failure detector, its context built in cl_engine_member_ctx.c
   (cl_engine_start). */
eng_suspect_t *eng_member_suspect_new(struct cl_engine *e);
/* Creates e->member and e->match (matchmaking, whose window's timer goes
   into the set) and registers membership's messages with the loop (JOIN,
   JOIN_REPLY, VIEW, HEARTBEAT, SUSPECT, MATCH, UPDATE:
   eng_member_on_message).  COLLAB_ERR_NO_MEM without memory or when the
   set is full. */
int eng_member_init(struct cl_engine *e);
/* Destroys matchmaking and e->member. */
void eng_member_fini(struct cl_engine *e);
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
void eng_goodbye_all(struct cl_engine *e); /* nothing without e->member */
/* The program waits for the world group (eng_match_request). */
void eng_request_match(struct cl_engine *e);
/* MPIX_Collab_set_weight: the configuration's weight (eng_set_cfg_weight), then
   eng_member_set_weight. */
void eng_set_weight(struct cl_engine *e, double w);
/* Leaves the swarm for good while the program still runs: says goodbye,
   and every pending and later call (but finalize) completes with status. */
void eng_leave(struct cl_engine *e, int status);

/* cl_engine_suspect.c: suspicion, stragglers and COLLAB_VERIFY verdicts. */
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

/* cl_engine_leave.c (a component, cl_engine_leave.h): a graceful
   departure keeps its contributions (docs/elastic.md §10).  Its context
   is built in cl_engine_fanout.c, which registers BYE_ACK for it; the
   rest of the engine asks it through e->leave. */
int eng_leave_init(struct cl_engine *e);  /* e->leave; 0 or COLLAB_ERR_NO_MEM */
void eng_leave_fini(struct cl_engine *e); /* accepts an engine without it */

/* cl_engine_groups.c (a component, cl_engine_groups.h): world all-reduces
   in several groups.  Its context is built in cl_engine_fanout.c. */
int eng_groups_init(struct cl_engine *e); /* e->groups; 0 or COLLAB_ERR_NO_MEM */
void eng_groups_fini(struct cl_engine *e);

/* cl_engine_report.c (a component, cl_engine_report.h): reports to the
   monitors, and a monitor's hooks.  Its context and the REPORT handler
   are built in cl_engine_fanout.c. */
int eng_report_init(struct cl_engine *e); /* 0 or COLLAB_ERR_NO_MEM */
/* The point-to-point component with its context (cl_engine_fanout.c), or
   NULL. */
eng_p2p_t *eng_p2p_create(struct cl_engine *e);
void eng_report_fini(struct cl_engine *e);

/* cl_engine_relay.c: client member to client member through a relaying
   monitor (docs/monitor.md §8). */
int eng_relay_init(struct cl_engine *e); /* 0 or COLLAB_ERR_NO_MEM */
void eng_relay_fini(struct cl_engine *e);

/* cl_engine_authority.c and cl_engine_auth_probe.c (a component,
   cl_engine_auth.h): who may send what (docs/security.md §3, §4).  Its
   context is built in cl_engine_fanout.c; the loop, _join, _member,
   _pause, _route and the fan-out call it through e->auth. */
int eng_auth_init(struct cl_engine *e); /* e->auth; 0 or COLLAB_ERR_NO_MEM */
void eng_auth_fini(struct cl_engine *e);

/* cl_engine_dialback.c (a component, cl_engine_dialback.h): can a joiner
   be reached (docs/membership.md)?  Its context is built in
   cl_engine_fanout.c; _join and _member call it through e->dialback. */
int eng_dialback_init(struct cl_engine *e); /* e->dialback; 0 or COLLAB_ERR_NO_MEM */
void eng_dialback_fini(struct cl_engine *e);

/* cl_engine_coll_ctx.c: the collective streams (a component,
   cl_engine_coll.h), their context built here; the loop calls them
   through e->cs. */
/* Creates e->cs and the elastic layer (eng_el_init).  COLLAB_ERR_NO_MEM,
   or the elastic layer's status. */
int eng_coll_init(struct cl_engine *e);
/* Frees the elastic layer and e->cs; accepts an engine whose init did
   not run. */
void eng_coll_fini(struct cl_engine *e);
/* Does the current world group hold more than COLLAB_TARGET_GROUP members,
   so that world all-reduces run in several groups whose results differ
   (docs/elastic.md §9)?  Always false in strict mode (cl_engine_fanout.c). */
bool eng_coll_multigroup(struct cl_engine *e);

#endif
