/*  cl_engine.c - the engine thread: request queue, poll loop, timers and
    the dispatch of messages.

    One CZMQ actor per process.  Application threads push requests onto
    the request queue (cl_reqq.h: a locked list and an eventfd); the
    thread polls that fd,
    its actor pipe and every socket of the transport in one poll
    (cl_transport_poll) whose timeout is the nearest deadline, so it
    sleeps whenever nothing is due (several peers share a few cores).
    The deadlines are those the components registered in the loop's
    timer set (cl_timer.h), which each turn runs what is due, and the
    loop's own (a requested leave, a finalize); right
    after the timers it calls the elastic layer's after-timers hook
    (eng_el_after_timers).  After each poll round the loop calls the components'
    progress hooks (eng_coll_deliver_local, eng_coll_deferred,
    eng_coll_progress, eng_p2p_progress): work that follows what the
    round brought, not a deadline.  A message
    passes the authority gate (cl_engine_authority.c), then goes to the
    handler its component registered for its type (eng_on_type).
    Everything network-facing happens here.  The engine's state (joining,
    standby, member, left) has one writer here, eng_set_state; so has the
    configuration once the engine runs (eng_set_cfg_weight: this peer's
    weight; eng_set_cfg_client_mode), and a collab_init that fails
    completes here (eng_fail_init).

    The engine's state (struct cl_engine) is defined here and nowhere
    else.  The adapter files that build the components' contexts see it
    through cl_engine_loop_int.h only: the parts (eng_parts, read-only), the
    values below that the loop owns, and the services of this file.
*/
#define _GNU_SOURCE                   /* pipe2 */
#include "engine/cl_engine_elastic.h" /* elastic hooks */
#include "engine/cl_engine_loop_int.h"
#include "engine/cl_engine_rate.h"
#include "engine/cl_held.h"
#include "engine/cl_reqq.h"

#include "util/cl_log.h"
#include "util/cl_text.h"
#include "util/cl_topo.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(CL_CONFIG_WIRE_VERSION == CL_WIRE_VERSION,
               "COLLAB_WIRE_VERSION is bounded by the wire's version");
_Static_assert(CL_CONFIG_ADAPTIVE_WIRE_VERSION <= CL_WIRE_VERSION,
               "adaptive compression has its version");
_Static_assert(sizeof(((cl_wire_hdr_t *)0)->type) == 1, "the table has every message type");

struct cl_engine {
    /* Immutable after start. */
    cl_config_t cfg; /* but for eng_set_cfg_weight, eng_set_cfg_client_mode */
    cl_identity_t *id;
    uint8_t self_key[32];
    char self_id[CL_PEER_ID_MAX];
    cl_engine_hooks_t hooks; /* a monitor's */
    /* The components and the settings fixed at start, as the adapter
       files see them (eng_parts): written here only. */
    eng_parts_t parts;
    /* Shared with application threads. */
    zactor_t *actor;
    cl_reqq_t *reqq;            /* requests to the engine thread (cl_reqq.h) */
    atomic_int leave_asked;     /* cl_engine_request_leave was called */
    int left_pipe[2];           /* a byte is written to [1] once a requested leave is done */
    collab_request_t *init_req; /* completed when the peer holds a rank */
    atomic_int rank;            /* world rank, -1 before joining */
    atomic_int world_size;
    atomic_int strict; /* the swarm's COLLAB_STRICT, published with the world size */
    pthread_mutex_t info_mu; /* guards info */
    collab_info_t info;
    /* Engine thread only. */
    eng_msg_fn *on_type[ENG_MSG_TYPES]; /* message handlers by type (eng_on_type) */
    eng_state_t state;                  /* written by eng_set_state only */
    bool terminated;                    /* $TERM seen */
    double admission_deadline;          /* for a peer outside the formed group */
    bool admission_logged;
    cl_held_t *held; /* data messages from peers not yet members here (cl_held.h) */
    uint64_t steps;  /* collab_step calls */
    collab_request_t *finalize_req;
    double finalize_deadline;
    int left_status;         /* why calls fail once ENG_LEFT (0: not initialised) */
    bool leaving;            /* a leave requested by the program or a signal is under way */
    double leaving_deadline; /* its collectives get until then to finish */
};

double eng_ctx_clock(struct cl_engine *e)
{
    (void)e;
    return eng_now();
}

void eng_set_state(struct cl_engine *e, eng_state_t state)
{
    e->state = state;
}

void eng_fail_init(struct cl_engine *e, int status)
{
    if (e->init_req != NULL && !cl_request_done(e->init_req))
        cl_request_complete(e->init_req, status);
    eng_set_state(e, ENG_LEFT);
}

void eng_init_done(struct cl_engine *e)
{
    if (e->init_req != NULL && !cl_request_done(e->init_req))
        cl_request_complete(e->init_req, COLLAB_OK);
}

const eng_parts_t *eng_parts(const struct cl_engine *e)
{
    return &e->parts;
}

eng_state_t eng_state(const struct cl_engine *e)
{
    return e->state;
}

int eng_rank(const struct cl_engine *e)
{
    return atomic_load(&e->rank);
}

int eng_world_size(const struct cl_engine *e)
{
    return atomic_load(&e->world_size);
}

void eng_set_rank(struct cl_engine *e, int rank)
{
    atomic_store(&e->rank, rank);
}

void eng_set_world_size(struct cl_engine *e, int world_size)
{
    atomic_store(&e->world_size, world_size);
    atomic_store(&e->strict, cl_member_settings(e->parts.mb)->strict ? 1 : 0);
}

uint64_t eng_steps(const struct cl_engine *e)
{
    return e->steps;
}

bool eng_leaving(const struct cl_engine *e)
{
    return e->leaving || atomic_load(&e->leave_asked) || e->finalize_req != NULL;
}

void eng_set_cfg_weight(struct cl_engine *e, double weight)
{
    e->cfg.weight = weight;
}

void eng_set_cfg_client_mode(struct cl_engine *e)
{
    e->cfg.client_mode = true;
}

const char *eng_peer_desc(const cl_peer_t *p, char *out, size_t len)
{
    /* The address came from the network: escaped, so that it cannot
       forge log lines. */
    char q[CL_WIRE_STR_MAX * 4 + 8];
    cl_text_quote(p->address, 200, q, sizeof q);
    int r = p->rank >= 0 ? p->rank : p->prev_rank, n;
    /* A long address is cut at len: it is a log line. */
    if (r >= 0)
        n = snprintf(out, len, "rank %d (%.8s…, %s)", r, p->id,
                     p->address[0] != '\0' ? q : "client mode");
    else
        n = snprintf(out, len, "peer %.8s… (%s)", p->id, p->address[0] != '\0' ? q : "client mode");
    if (n < 0 && len > 0)
        out[0] = '\0';
    return out;
}

int eng_send_now(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    if (m->hdr.type != CL_MSG_COLL) /* COLL carries its group generation */
        m->hdr.epoch = cl_member_epoch(e->parts.mb);
    if (eng_relay_needed(e->parts.relay, to)) /* client to client: through a monitor */
        return eng_relay_send(e->parts.relay, to, m);
    return cl_transport_send(e->parts.tp, to->key, m);
}

int eng_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    /* Every COLL message to another member counts against its receiver's
       grant of class EARLY (docs/wire.md section 10), whichever path sent
       it: the collectives' transport, a generation notice, a relayed
       copy.  A relay through a monitor has no link to count on. */
    if (m->hdr.type == CL_MSG_COLL && e->parts.p2p != NULL &&
        !eng_relay_needed(e->parts.relay, to) && memcmp(to->key, e->self_key, 32) != 0)
        return eng_p2p_coll_send(e->parts.p2p, to, m);
    return eng_send_now(e, to, m);
}

void cl_engine_relay_stats(const cl_engine_t *self, cl_relay_stats_t *out)
{
    eng_relay_stats(self->parts.relay, out);
}

void eng_set_info(struct cl_engine *e, const collab_info_t *info)
{
    pthread_mutex_lock(&e->info_mu);
    e->info = *info;
    pthread_mutex_unlock(&e->info_mu);
}

void cl_engine_set_last_info(cl_engine_t *self, const collab_info_t *info)
{
    eng_set_info(self, info);
}

bool cl_engine_strict(const cl_engine_t *self)
{
    return atomic_load(&self->strict) != 0;
}

bool cl_engine_host_leader_ok(const cl_engine_t *self)
{
    return self->parts.cs != NULL && eng_coll_hier_ok(self->parts.cs);
}

void cl_engine_last_info(cl_engine_t *self, collab_info_t *out)
{
    pthread_mutex_lock(&self->info_mu);
    *out = self->info;
    pthread_mutex_unlock(&self->info_mu);
}

int cl_engine_rank(const cl_engine_t *self)
{
    return atomic_load(&self->rank);
}

int cl_engine_world_size(const cl_engine_t *self)
{
    return atomic_load(&self->world_size);
}

/* ---------------------------------------------------------------------- */
/* Requests from application threads. */

int cl_engine_submit(cl_engine_t *self, collab_request_t *req)
{
    return cl_reqq_push(self->reqq, req);
}

int cl_engine_wake_fd(const cl_engine_t *self)
{
    return cl_reqq_fd(self->reqq);
}

/* Finalize, once this peer's collectives are done (or their deadline
   passed): a member says goodbye naming what it took part in and waits
   for the others' acknowledgements (cl_engine_leave.c); then it has left. */
static void progress_finalize(struct cl_engine *e, double now)
{
    if (e->state == ENG_MEMBER && !eng_leave_started(e->parts.leave)) {
        cl_debug("leaving the swarm (%.3f s after the finalize call)",
                 now - e->finalize_req->t_start);
        eng_leave_start(e->parts.leave);
    }
    if (!eng_leave_done(e->parts.leave, now))
        return;
    if (!eng_leave_started(e->parts.leave) && (e->state == ENG_STANDBY || e->state == ENG_JOINING))
        eng_goodbye_all(e);
    eng_set_state(e, ENG_LEFT);
    collab_request_t *r = e->finalize_req;
    e->finalize_req = NULL;
    cl_request_complete(r, COLLAB_OK);
}

/* A leave asked for by cl_engine_request_leave (a signal, or the
   program): like finalize, but the program goes on and its calls fail. */
static void progress_requested_leave(struct cl_engine *e, double now)
{
    if (atomic_exchange(&e->leave_asked, 0) && !e->leaving && e->state != ENG_LEFT) {
        cl_info("leaving the swarm as asked (COLLAB_LEAVE_ON or MPIX_Collab_leave)");
        e->leaving = true;
        e->leaving_deadline = now + e->cfg.timeout;
        eng_p2p_cancel_all(e->parts.p2p);
    }
    if (!e->leaving)
        return;
    /* Collectives finish, and what waits for credit goes out (the
       collectives this peer entered need it), within the deadline. */
    bool drained = e->parts.p2p == NULL || eng_p2p_flow_waiting(e->parts.p2p, -1, NULL) == 0;
    if (e->state == ENG_MEMBER && !eng_leave_started(e->parts.leave) &&
        (!eng_coll_idle(e->parts.cs) || !drained) && now < e->leaving_deadline)
        return;
    if (e->state == ENG_MEMBER && !eng_leave_started(e->parts.leave))
        eng_leave_start(e->parts.leave);
    if (!eng_leave_done(e->parts.leave, now))
        return;
    if (!eng_leave_started(e->parts.leave) && (e->state == ENG_STANDBY || e->state == ENG_JOINING))
        eng_goodbye_all(e);
    e->leaving = false;
    eng_set_state(e, ENG_LEFT);
    e->left_status = COLLAB_ERR_LEFT;
    eng_el_abort(e, COLLAB_ERR_LEFT);
    eng_coll_fail_all(e->parts.cs, COLLAB_ERR_LEFT);
    eng_p2p_fail_all(e->parts.p2p, COLLAB_ERR_LEFT);
    cl_info("left the swarm; further MPI calls of this peer fail");
    char one = 1;
    ssize_t w;
    do
        w = write(e->left_pipe[1], &one, 1);
    while (w < 0 && errno == EINTR);
}

void cl_engine_request_leave(cl_engine_t *self)
{
    if (self == NULL)
        return;
    atomic_store(&self->leave_asked, 1);
    cl_reqq_wake(self->reqq);
}

bool cl_engine_wait_left(cl_engine_t *self, int ms)
{
    if (self == NULL || self->left_pipe[0] < 0)
        return false;
    struct pollfd pfd = {self->left_pipe[0], POLLIN, 0};
    int n;
    do
        n = poll(&pfd, 1, ms);
    while (n < 0 && errno == EINTR);
    return n > 0 && (pfd.revents & POLLIN);
}

int cl_engine_leave_bound_ms(const cl_engine_t *self)
{
    return (int)(1000.0 * eng_leave_bound(self->cfg.timeout));
}

void eng_leave(struct cl_engine *e, int status)
{
    if (e->state == ENG_LEFT)
        return;
    if (e->state == ENG_MEMBER || e->state == ENG_STANDBY || e->state == ENG_JOINING)
        eng_goodbye_all(e);
    eng_set_state(e, ENG_LEFT);
    e->left_status = status;
    eng_el_abort(e, status);
    eng_coll_fail_all(e->parts.cs, status);
    eng_p2p_fail_all(e->parts.p2p, status);
}

static void process(struct cl_engine *e, collab_request_t *req)
{
    req->t_start = eng_now();
    if (e->state == ENG_LEFT && req->op != CL_OP_FINALIZE && req->op != CL_OP_ABORT) {
        cl_request_complete(req, e->left_status != 0 ? e->left_status : COLLAB_ERR_NOT_INIT);
        return;
    }
    switch (req->op) {
    case CL_OP_COLL:
        eng_coll_submit(e->parts.cs, req);
        break;
    case CL_OP_SEND:
        eng_p2p_send(e->parts.p2p, req);
        break;
    case CL_OP_RECV:
        eng_p2p_recv(e->parts.p2p, req);
        break;
    case CL_OP_PROBE:
        eng_p2p_probe(e->parts.p2p, req);
        break;
    case CL_OP_CANCEL:
        eng_p2p_cancel(e->parts.p2p, req);
        break;
    case CL_OP_WEIGHT:
        eng_set_weight(e, req->weight);
        cl_request_complete(req, COLLAB_OK);
        break;
    case CL_OP_STEP:
        e->steps++;
        eng_el_mark_step(e); /* elastic hook: an explicit step boundary */
        cl_request_complete(req, COLLAB_OK);
        break;
    case CL_OP_FOLLOW:
        eng_el_follow(e, req->follow, req->nfollow);
        cl_request_complete(req, COLLAB_OK);
        break;
    case CL_OP_COMM_FREE:
        eng_coll_comm_free(e->parts.cs, req->comm);
        req->comm = NULL;
        cl_request_complete(req, COLLAB_OK);
        break;
    case CL_OP_FINALIZE:
        if (e->finalize_req != NULL || e->state == ENG_LEFT) {
            cl_request_complete(req, e->state == ENG_LEFT ? COLLAB_OK : COLLAB_ERR_ARG);
            break;
        }
        e->finalize_req = req;
        /* Receives nobody will match are cancelled; collectives get a
           bounded time to finish (they cannot hang: every wait has a
           deadline). */
        eng_p2p_cancel_all(e->parts.p2p);
        e->finalize_deadline = req->t_start + fmax(4 * e->cfg.timeout, 10.0);
        break;
    case CL_OP_ABORT:
        if (e->state != ENG_LEFT)
            eng_goodbye_all(e);
        eng_set_state(e, ENG_LEFT);
        cl_request_complete(req, COLLAB_OK);
        break;
    }
}

static void drain_queue(struct cl_engine *e)
{
    collab_request_t *r = cl_reqq_take_all(e->reqq);
    while (r != NULL) {
        collab_request_t *next = r->next;
        r->next = NULL;
        process(e, r);
        r = next;
    }
}

/* ---------------------------------------------------------------------- */
/* Network events. */

static void dispatch_data(struct cl_engine *e, cl_peer_t *p, const cl_wire_msg_t *m)
{
    if (m->hdr.type == CL_MSG_COLL)
        eng_coll_on_message(e->parts.cs, p, m);
    else
        eng_p2p_on_message(e->parts.p2p, p, m);
}

/* Keeps a data message that arrived before its sender (or this peer) is a
   member of the view here: the view that admits it is on its way from the
   coordinator, on another connection.  A peer whose admitting view is on
   its way sends a few messages before it arrives, not thousands: a flood
   is named at its first refusal and every power of 2 after. */
static void hold(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    cl_held_put_t r = cl_held_put(e->held, key, m, eng_now());
    uint64_t d = cl_held_refused(e->held);
    if (r == CL_HELD_KEPT || (d & (d - 1)) != 0)
        return;
    if (r == CL_HELD_FULL_MSGS)
        cl_warn("dropped an early %s message: %zu wait for views already (%zu from its "
                "sender; COLLAB_MAX_HELD_MSGS=%d, COLLAB_MAX_HELD_PER_PEER=%d; %llu "
                "dropped so far)",
                cl_wire_type_name(m->hdr.type), cl_held_count(e->held),
                cl_held_count_from(e->held, key), e->cfg.max_held_msgs, e->cfg.max_held_peer,
                (unsigned long long)d);
    else if (r == CL_HELD_FULL_BYTES)
        cl_warn("dropped an early %s message: %zu bytes wait for views already "
                "(COLLAB_MAX_HELD=%d MiB; %llu dropped so far)",
                cl_wire_type_name(m->hdr.type), cl_held_bytes(e->held), e->cfg.max_held_mib,
                (unsigned long long)d);
    else
        cl_warn("dropped an early %s message: out of memory", cl_wire_type_name(m->hdr.type));
}

/* A kept message at a view change: handed to its component once its
   sender is a member, kept for 2 x COLLAB_TIMEOUT while it is not,
   dropped after that. */
static bool replay_one(void *arg, const uint8_t key[32], const cl_wire_msg_t *m, double arrived)
{
    struct cl_engine *e = arg;
    cl_peer_t *p = cl_member_find(e->parts.mb, key);
    if (p != NULL && p->state != CL_PEER_GONE) {
        dispatch_data(e, p, m);
        return false;
    }
    if (eng_now() - arrived < 2 * e->cfg.timeout)
        return true;
    cl_debug("dropped a %s message from a peer that never became a member",
             cl_wire_type_name(m->hdr.type));
    return false;
}

void eng_replay_held(struct cl_engine *e)
{
    if (e->state == ENG_MEMBER)
        cl_held_replay(e->held, replay_one, e);
}

static void on_tp_event(void *ctx, const cl_tp_event_t *ev)
{
    struct cl_engine *e = ctx;
    eng_el_check_pause(e); /* elastic hook: this process was stopped */
    if (ev->kind != CL_TP_MESSAGE)
        eng_member_on_event(e, ev);
    else
        eng_on_message(e, ev->key, ev->msg);
    eng_auth_successor_check(e->parts.auth); /* the coordinator may have failed here just now */
}

void eng_on_message(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    cl_peer_t *p = cl_member_find(e->parts.mb, key);
    if (!eng_auth_message(e->parts.auth, p, key, m))
        return;
    if (p != NULL)
        eng_member_heard(e, p);
    if (e->cfg.monitor &&
        (m->hdr.type == CL_MSG_COLL || m->hdr.type == CL_MSG_P2P ||
         (m->hdr.type == CL_MSG_ELASTIC && !eng_el_monitor_accepts(e, m->hdr.sub)))) {
        /* A monitor holds no rank and serves no state: nobody entitled
           sends it data (docs/monitor.md §3). */
        char desc[CL_WIRE_STR_MAX + 64];
        cl_debug("dropped a %s message from %s: a monitor takes no part in collectives",
                 cl_wire_type_name(m->hdr.type),
                 p != NULL ? eng_peer_desc(p, desc, sizeof desc) : "a non-member");
        return;
    }
    eng_msg_fn *fn = e->on_type[m->hdr.type];
    if (fn != NULL) /* registered by its component at init (eng_on_type) */
        fn(e, p, key, m);
}

void eng_on_type(struct cl_engine *e, int type, eng_msg_fn *fn)
{
    assert(type >= 0 && type < ENG_MSG_TYPES);
    e->on_type[type] = fn;
}

/* COLL, P2P and P2P_CTL: to their component, or held while the sender
   (or this peer) is not yet a member here. */
static void on_data(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                    const cl_wire_msg_t *m)
{
    if (e->state == ENG_LEFT)
        return;
    bool member = p != NULL && p->state != CL_PEER_GONE;
    if (member && e->state == ENG_MEMBER && !cl_held_from(e->held, key))
        dispatch_data(e, p, m);
    else
        hold(e, key, m);
}

/* The components, in the order their contexts need one another (the
   records first, the collective streams and the elastic layer last).
   The join is made and started once the actor's caller is told.
   COLLAB_ERR_NO_MEM, or the elastic layer's status (a bad checkpoint
   setting of a monitor is a configuration error). */
static int create_parts(struct cl_engine *e)
{
    eng_parts_t *p = &e->parts;
    if ((p->mb = cl_member_new(e->self_key)) == NULL || (p->p2p = eng_p2p_create(e)) == NULL ||
        (p->susp = eng_suspect_create(e)) == NULL || (p->member = eng_member_create(e)) == NULL ||
        (p->match = eng_match_create(e)) == NULL || (p->auth = eng_auth_create(e)) == NULL ||
        (p->dialback = eng_dialback_create(e)) == NULL ||
        (p->relay = eng_relay_create(e)) == NULL || (p->groups = eng_groups_create(e)) == NULL ||
        (p->leave = eng_leave_create(e)) == NULL || (p->cs = eng_coll_create(e)) == NULL ||
        (p->rate = eng_rate_create(e)) == NULL)
        return COLLAB_ERR_NO_MEM;
    return eng_el_create(e, &p->el);
}

/* The end of the engine's thread: each component with its own destroy,
   those that use another before it.  The elastic layer completes the
   requests it holds; the report and the timer set go with the engine
   (engine_free). */
static void destroy_parts(struct cl_engine *e)
{
    eng_parts_t *p = &e->parts;
    eng_rate_destroy(&p->rate);
    eng_el_destroy(&p->el);
    eng_cs_destroy(&p->cs);
    eng_leave_destroy(&p->leave);
    eng_join_destroy(&p->join);
    eng_match_destroy(&p->match);
    eng_member_destroy(&p->member);
    eng_p2p_destroy(&p->p2p);
    eng_suspect_destroy(&p->susp);
    cl_transport_destroy(&p->tp, 500);
    cl_member_destroy(&p->mb);
    eng_auth_destroy(&p->auth);
    eng_dialback_destroy(&p->dialback);
    eng_relay_destroy(&p->relay);
    eng_groups_destroy(&p->groups);
}

/* GOODBYE: acknowledged in any state (the leaving peer waits for it),
   then a suspicion (it left) and, for the collectives it did not enter,
   an absence; those it entered keep it (cl_engine_leave.c). */
static void on_goodbye(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m)
{
    bool member = p != NULL && p->state != CL_PEER_GONE;
    eng_leave_on_goodbye(e->parts.leave, member ? p : NULL, key, &m->u.goodbye);
    bool counted = member && e->state == ENG_MEMBER;
    eng_member_on_message(e, p, key, m);
    if (counted)
        eng_coll_peer_gone(e->parts.cs, p);
}

static void wait_term(zsock_t *pipe)
{
    for (;;) {
        char *cmd = zstr_recv(pipe);
        if (cmd == NULL)
            return;
        bool term = strcmp(cmd, "$TERM") == 0;
        zstr_free(&cmd);
        if (term)
            return;
    }
}

static void engine_actor(zsock_t *pipe, void *arg)
{
    struct cl_engine *e = arg;
    char err[512];
    /* The COLLAB_LEAVE_ON handler waits for this thread: it must run on
       another one. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    (void)cl_topo_place_engine_thread();
    e->parts.t0 = eng_now();
    const char *floor_why = NULL;
    int floor = eng_own_wire_floor(&e->cfg, &floor_why);
    cl_transport_config_t tc = {.identity = e->id,
                                .listen = e->cfg.listen,
                                .announce = e->cfg.announce,
                                .client_mode = e->cfg.client_mode,
                                .run_id = e->cfg.run_id,
                                .swarm_secret = e->cfg.swarm_closed ? e->cfg.swarm_secret : NULL,
                                .ban_seconds = e->cfg.ban_time,
                                .max_message = (size_t)e->cfg.max_message_mib << 20,
                                .max_handshakes = (size_t)e->cfg.max_handshakes,
                                .max_handshakes_host = (size_t)e->cfg.max_handshakes_host,
                                .link_idle = e->cfg.link_idle,
                                /* docs/wire.md section 10: two windows and
                                   the control messages, twice over. */
                                .rcv_hwm = 2 * (2 * (size_t)e->cfg.max_unexpected_msgs + 1024),
                                .max_version = e->cfg.wire_version,
                                .min_version = floor, /* what its settings need */
                                .min_why = floor_why,
                                .shm = e->cfg.shm,
                                .stripes = e->cfg.stripes,
                                .stripes_auto = e->cfg.stripes_auto};
    e->parts.tp = cl_transport_new(&tc, err, sizeof err);
    int rc = COLLAB_OK;
    if (e->parts.tp == NULL) {
        cl_error("%s", err);
        rc = COLLAB_ERR_NETWORK;
    } else {
        /* The loop's own messages; each component registers its own at
           its init. */
        eng_on_type(e, CL_MSG_COLL, on_data);
        eng_on_type(e, CL_MSG_P2P, on_data);
        eng_on_type(e, CL_MSG_P2P_CTL, on_data);
        eng_on_type(e, CL_MSG_GOODBYE, on_goodbye);
        rc = create_parts(e);
    }
    zsock_signal(pipe, 0);
    if (rc == COLLAB_OK)
        rc = (e->parts.join = eng_join_create(e)) == NULL ? COLLAB_ERR_NO_MEM
                                                          : eng_join_start(e->parts.join);
    if (rc != COLLAB_OK) {
        cl_request_complete(e->init_req, rc);
        wait_term(pipe);
        goto cleanup;
    }
    while (!e->terminated) {
        eng_el_check_pause(e); /* elastic hook: before anything is sent */
        double now = eng_now();
        double next = now + ENG_IDLE_WAKE;
        /* The deadlines registered (cl_timer.h): a suspicion of _suspect
           is followed by the check below, an unserved pull of _sync is
           undone by the elastic hook in this turn. */
        cl_timer_run(e->parts.timers, now);
        eng_auth_successor_check(
            e->parts.auth);          /* a suspicion may have made the successor coordinator */
        eng_el_after_timers(e, now); /* elastic after-timers hook */
        if (e->leaving || atomic_load(&e->leave_asked)) {
            progress_requested_leave(e, now);
            /* Once started, _leave's deadline is in the set. */
            if (e->leaving && !eng_leave_started(e->parts.leave))
                next = fmin(next, fmin(e->leaving_deadline, now + ENG_LEAVE_POLL));
        }
        if (e->finalize_req != NULL && !e->leaving) {
            /* Messages waiting for credit go out first (a collective
               whose part here completed while they wait needs them). */
            bool drained =
                e->parts.p2p == NULL || eng_p2p_flow_waiting(e->parts.p2p, -1, NULL) == 0;
            if (eng_leave_started(e->parts.leave) || (eng_coll_idle(e->parts.cs) && drained) ||
                now >= e->finalize_deadline)
                progress_finalize(e, now);
            if (e->finalize_req != NULL && !eng_leave_started(e->parts.leave))
                next = fmin(next, e->finalize_deadline);
        }
        next = fmin(next, cl_timer_next(e->parts.timers)); /* what this turn armed too */
        long ms = 0;
        if (!eng_coll_local_pending(e->parts.cs) && next > now)
            ms = (long)ceil((next - now) * 1000.0);
        zmq_pollitem_t items[2] = {{zsock_resolve(pipe), 0, ZMQ_POLLIN, 0},
                                   {NULL, cl_reqq_fd(e->reqq), ZMQ_POLLIN, 0}};
        int n = cl_transport_poll(e->parts.tp, items, 2, ms, on_tp_event, e);
        if (n < 0)
            break; /* the ZeroMQ context is going away */
        /* Elastic hook: a stop during poll, seen before the program's calls. */
        eng_el_check_pause(e);
        if (items[0].revents & ZMQ_POLLIN) {
            char *cmd = zstr_recv(pipe);
            if (cmd == NULL || strcmp(cmd, "$TERM") == 0)
                e->terminated = true;
            zstr_free(&cmd);
        }
        if (items[1].revents & ZMQ_POLLIN) {
            drain_queue(e);
            if (atomic_load(&e->leave_asked))
                progress_requested_leave(e, eng_now());
        }
        /* Progress after every poll round, not deadlines. */
        eng_coll_deliver_local(e->parts.cs);
        eng_coll_deferred(e->parts.cs);
        eng_coll_progress(e->parts.cs);
        eng_p2p_progress(e->parts.p2p);
    }
cleanup:
    if (e->state != ENG_LEFT && e->parts.tp != NULL && e->parts.mb != NULL)
        eng_goodbye_all(e);
    cl_held_destroy(&e->held);
    destroy_parts(e);
}

static void engine_free(struct cl_engine *e)
{
    cl_reqq_destroy(&e->reqq);
    for (int i = 0; i < 2; i++)
        if (e->left_pipe[i] >= 0)
            close(e->left_pipe[i]);
    pthread_mutex_destroy(&e->info_mu);
    cl_request_destroy(&e->init_req);
    cl_held_destroy(&e->held); /* the loop's end frees it already */
    cl_identity_destroy(&e->id);
    cl_config_clear(&e->cfg);
    eng_report_destroy(&e->parts.rep);
    cl_timer_destroy(&e->parts.timers); /* after every component that registered */
    free(e);
}

int cl_engine_start(cl_config_t *cfg, cl_identity_t **identity, cl_engine_t **out)
{
    cl_engine_hooks_t none;
    memset(&none, 0, sizeof none);
    return cl_engine_start_hooks(cfg, identity, &none, out);
}

const char *cl_engine_address(const cl_engine_t *self)
{
    return self->cfg.client_mode ? "" : cl_transport_address(self->parts.tp);
}

int cl_engine_start_hooks(cl_config_t *cfg, cl_identity_t **identity,
                          const cl_engine_hooks_t *hooks, cl_engine_t **out)
{
    *out = NULL;
    struct cl_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return COLLAB_ERR_NO_MEM;
    e->hooks = *hooks;
    e->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    e->id = *identity;
    *identity = NULL;
    e->left_pipe[0] = e->left_pipe[1] = -1;
    memcpy(e->self_key, cl_identity_public_key(e->id), 32);
    uint64_t incarnation;
    randombytes_buf(&incarnation, sizeof incarnation);
    snprintf(e->self_id, sizeof e->self_id, "%s", cl_identity_peer_id(e->id));
    pthread_mutex_init(&e->info_mu, NULL);
    atomic_init(&e->rank, -1);
    atomic_init(&e->world_size, e->cfg.world_size);
    e->parts = (eng_parts_t){.cfg = &e->cfg,
                             .self_key = e->self_key,
                             .self_id = e->self_id,
                             .id = e->id,
                             .incarnation = incarnation,
                             .hb_interval = fmin(fmax(e->cfg.timeout / 4.0, 0.05), 2.0),
                             .hooks = &e->hooks};
    e->init_req = cl_request_new(CL_OP_STEP);
    e->parts.timers = cl_timer_new(ENG_TIMERS_MAX);
    cl_held_limits_t hl = {.max_msgs = (size_t)e->cfg.max_held_msgs,
                           .max_per_peer = (size_t)e->cfg.max_held_peer,
                           .max_bytes = (size_t)e->cfg.max_held_mib << 20};
    e->held = cl_held_new(&hl);
    e->reqq = cl_reqq_new();
    if (e->reqq != NULL && pipe2(e->left_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        e->left_pipe[0] = e->left_pipe[1] = -1;
    if (e->init_req == NULL || e->parts.timers == NULL || e->held == NULL || e->reqq == NULL ||
        e->left_pipe[0] < 0 || (e->parts.rep = eng_report_create(e)) == NULL) {
        cl_error("cannot start the engine: %s", e->reqq == NULL ? strerror(errno) : "no memory");
        engine_free(e);
        return COLLAB_ERR_NO_MEM;
    }
    cl_transport_io_threads(e->cfg.stripes); /* before the process's first ZeroMQ socket */
    e->actor = zactor_new(engine_actor, e);
    if (e->actor == NULL) {
        cl_error("cannot start the engine thread");
        engine_free(e);
        return COLLAB_ERR_INTERNAL;
    }
    cl_request_wait(e->init_req);
    int rc = e->init_req->status;
    if (rc != COLLAB_OK) {
        zactor_destroy(&e->actor);
        engine_free(e);
        return rc;
    }
    *out = e;
    return COLLAB_OK;
}

static void stop_thread(struct cl_engine *e)
{
    cl_reqq_close(e->reqq);
    zactor_destroy(&e->actor);
    /* Requests that arrived after the thread stopped. */
    collab_request_t *r = cl_reqq_take_all(e->reqq);
    while (r != NULL) {
        collab_request_t *next = r->next;
        cl_request_complete(r, COLLAB_ERR_NOT_INIT);
        r = next;
    }
}

int cl_engine_stop(cl_engine_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return COLLAB_ERR_NOT_INIT;
    struct cl_engine *e = *self_p;
    int rc = COLLAB_OK;
    collab_request_t *req = cl_request_new(CL_OP_FINALIZE);
    if (req != NULL && cl_engine_submit(e, req) == COLLAB_OK) {
        cl_request_wait(req);
        rc = req->status;
    }
    cl_request_destroy(&req);
    stop_thread(e);
    engine_free(e);
    *self_p = NULL;
    return rc;
}

void cl_engine_goodbye_now(cl_engine_t *self, int ms)
{
    collab_request_t *req = cl_request_new(CL_OP_ABORT);
    if (req == NULL)
        return;
    if (cl_engine_submit(self, req) != COLLAB_OK) {
        cl_request_destroy(&req);
        return;
    }
    if (cl_request_wait_for(req, ms / 1000.0))
        cl_request_destroy(&req);
    else
        cl_request_detach(req);
}
