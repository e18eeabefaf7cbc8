/*  cl_engine_member.c - joining, views, heartbeats and failure detection.

    docs/membership.md describes the protocol.  In short: a joiner connects
    to every COLLAB_INITIAL_PEERS entry and sends JOIN to each one that
    completes the handshake; non-members answer NOT_MEMBER, members that do
    not coordinate answer REDIRECT, and the coordinator (cl_member_coordinator:
    the live public member with the lowest rank) assigns a rank and publishes a new view.
    Members heartbeat every COLLAB_TIMEOUT/4; one that is silent for
    COLLAB_TIMEOUT, or whose connection closed, is suspected and reported
    to the coordinator, which confirms it against its own records and
    publishes a view without it.  When the coordinator itself is suspected,
    the next member in rank order takes over: every peer computes that
    locally from the view and its own suspicions, without clocks.

    Heartbeats, suspicion, the coordinator's side of it (SUSPECT reports,
    the removal of suspects, stragglers, COLLAB_VERIFY verdicts) and the
    coordinator's tenure are the component eng_suspect_t
    (cl_engine_suspect.c), whose context this file builds.  The join
    (JOIN and JOIN_REPLY, the initial peers, founding, the coordinator's
    admission) is the component eng_join_t (cl_engine_join.c): this file
    hands it the JOINs it answers as the coordinator, the JOIN_REPLYs,
    the link events and a view that leaves this peer out (e->join).
    Matchmaking (the window, MATCH, the ranks that were ever members) is
    the component eng_match_t (cl_engine_match.c), whose context this file
    builds (eng_member_init): this file hands it the ranks each view adds,
    looks at the group after each view (eng_match_check), and passes it
    MATCH and the checks of silent members.
*/
#include "engine/cl_engine_elastic.h" /* step boundaries */
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"
#include "util/cl_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON_LEFT ENG_REASON_LEFT

bool eng_self_coordinates(struct cl_engine *e)
{
    return e->susp != NULL && eng_suspect_coordinates(e->susp);
}

/* Calls fn for every member and monitor of the view but this peer. */
static void for_others(struct cl_engine *e, void (*fn)(struct cl_engine *, cl_peer_t *, void *),
                       void *arg)
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    cl_peer_t *const *mons = cl_member_monitors(e->mb, &nm);
    for (size_t i = 0; i < nm + n; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (memcmp(p->key, e->self_key, 32) != 0)
            fn(e, p, arg);
    }
}

static void send_to(struct cl_engine *e, cl_peer_t *p, void *m)
{
    (void)eng_send(e, p, m);
}

void eng_take_over(struct cl_engine *e)
{
    eng_suspect_take_over(e->susp);
}

void eng_fail_init(struct cl_engine *e, int status)
{
    if (e->init_req != NULL && !cl_request_done(e->init_req))
        cl_request_complete(e->init_req, status);
    eng_set_state(e, ENG_LEFT);
}

/* ---------------------------------------------------------------------- */
/* Peer records: the rest of the engine writes none of their fields; the
   class cl_member.c and the failure detector do. */

void eng_member_heard(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_heard(e->susp, p);
}

void eng_member_answered(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_answered(e->susp, p);
}

void eng_member_excuse(struct cl_engine *e, cl_peer_t *p, double now)
{
    eng_suspect_excuse(e->susp, p, now);
}

/* ---------------------------------------------------------------------- */
/* Views. */

static void broadcast_view(struct cl_engine *e)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    if (cl_member_view(e->mb, &m.u.view) != COLLAB_OK)
        return;
    for_others(e, send_to, &m);
    free(m.u.view.members);
}

void eng_send_view_to(struct cl_engine *e, const cl_peer_t *p)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    if (cl_member_view(e->mb, &m.u.view) != COLLAB_OK)
        return;
    (void)eng_send(e, p, &m);
    free(m.u.view.members);
}

void eng_reply_view(struct cl_engine *e, const uint8_t key[32])
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_VIEW;
    m.hdr.epoch = cl_member_epoch(e->mb);
    if (cl_member_view(e->mb, &m.u.view) != COLLAB_OK)
        return;
    (void)cl_transport_reply(e->tp, key, &m);
    free(m.u.view.members);
}

void eng_outbid_view(struct cl_engine *e, const cl_wire_view_t *v)
{
    if (!eng_self_coordinates(e) || !eng_auth_epoch_step_ok(cl_member_epoch(e->mb), v->epoch))
        return;
    eng_take_over(e);
    if (v->epoch >= cl_member_epoch(e->mb))
        cl_member_raise_epoch(e->mb, v->epoch + 1);
    static double logged; /* once in a while: a member could repeat such views */
    double now = eng_now();
    bool loud = now - logged > 10.0;
    if (loud)
        logged = now;
    cl_log(loud ? CL_LOG_INFO : CL_LOG_DEBUG,
           "a group of %u of this peer's members formed without it (a view of the coordinator "
           "before was lost with it); sending them this peer's larger view",
           v->count);
    for (uint32_t i = 0; i < v->count; i++)
        eng_reply_view(e, v->members[i].key);
}

static void print_join_line(struct cl_engine *e)
{
    cl_peer_t *me = cl_member_self(e->mb);
    int ws = cl_member_settings(e->mb)->world_size;
    if (e->cfg.monitor)
        cl_info("monitor %.8s… of a swarm of %d ranks listening; peers can join with:\n"
                "COLLAB_INITIAL_PEERS=%s",
                e->self_id, ws, cl_transport_address(e->tp));
    else if (e->cfg.client_mode)
        cl_info("peer %.8s… rank %d/%d joined in client mode (accepts no connections)", e->self_id,
                me->rank, ws);
    else
        cl_info("peer %.8s… rank %d/%d listening; other peers can join with:\n"
                "COLLAB_INITIAL_PEERS=%s",
                e->self_id, me->rank, ws, cl_transport_address(e->tp));
}

void eng_become_member(struct cl_engine *e, bool founder)
{
    cl_peer_t *me = cl_member_self(e->mb);
    bool rejoin = e->member_since > 0;
    eng_set_state(e, ENG_MEMBER);
    atomic_store(&e->rank, me->rank);
    atomic_store(&e->world_size, cl_member_settings(e->mb)->world_size);
    if (!rejoin)
        e->member_since = eng_now();
    eng_suspect_started(e->susp, founder);
    if (!rejoin) {
        cl_log_set_tag(NULL);
        print_join_line(e);
        int ws = cl_member_settings(e->mb)->world_size;
        if (e->cfg.rank >= ws)
            cl_warn("COLLAB_RANK=%d is outside the swarm's world size %d; this peer holds rank "
                    "%d",
                    e->cfg.rank, ws, me->rank);
        else if (e->cfg.rank >= 0 && e->cfg.rank != me->rank)
            cl_info("rank %d (COLLAB_RANK) was taken; this peer holds rank %d", e->cfg.rank,
                    me->rank);
    } else {
        cl_info("rejoined the swarm as rank %d", me->rank);
    }
    if (founder) {
        if (e->cfg.monitor)
            cl_info("found no active peers; waiting for trainers to join");
        else
            cl_info("found no active peers; training alone until someone joins");
    }
    /* From now on every line names this peer's rank (peers share a terminal
       under collab-run). */
    char tag[32];
    if (e->cfg.monitor)
        snprintf(tag, sizeof tag, "monitor");
    else
        snprintf(tag, sizeof tag, "rank %d", me->rank);
    cl_log_set_tag(tag);
    eng_fan_out_member(e);
}

/* Acts on what a view change did: this peer's own records here; the
   rest of the engine learns who joined, left, failed or left the group
   from the loop (eng_fan_out_peers), then that the view changed
   (eng_fan_out_view). */
static void apply_delta(struct cl_engine *e, cl_member_delta_t *d)
{
    /* The records changed: whether this peer still coordinates (a view
       that admits a lower rank, or leaves this peer out, ends its
       tenure). */
    eng_suspect_tenure(e->susp);
    if (e->state != ENG_MEMBER && cl_member_self(e->mb) != NULL &&
        cl_member_self(e->mb)->state != CL_PEER_GONE)
        eng_become_member(e, false);
    atomic_store(&e->world_size, cl_member_settings(e->mb)->world_size);
    for (size_t i = 0; i < d->nadded; i++)
        eng_match_joined(e->match, d->added[i]->rank);
    eng_fan_out_peers(e, d);
    /* The records of those gone keep nothing of their suspicion. */
    for (size_t i = 0; i < d->nmon_removed + d->nremoved; i++) {
        cl_peer_t *p = i < d->nmon_removed ? d->mon_removed[i] : d->removed[i - d->nmon_removed];
        if (memcmp(p->key, e->self_key, 32) != 0)
            eng_suspect_forget(e->susp, p);
    }
    if (d->self_removed && e->state == ENG_MEMBER)
        eng_join_again(e->join);
    if (d->group_closed_now) {
        cl_peer_t *grp[1];
        size_t n = cl_member_group(e->mb, grp, 1);
        cl_debug("the group of the world communicator is formed: %zu peers", n);
    }
    eng_fan_out_view(e);
}

void eng_coordinator_commit(struct cl_engine *e, cl_member_delta_t *d)
{
    apply_delta(e, d);
    cl_member_delta_clear(d);
    broadcast_view(e);
    eng_match_check(e->match, eng_now()); /* e.g. the last rank just joined */
}

void eng_request_match(struct cl_engine *e)
{
    eng_match_request(e->match);
}

/* Coordinator: a member's weight changed, which starts a new group
   generation (docs/membership.md §2).  The coordinator records it like
   every member that installs the view, before its next collective can
   start under it, then publishes the view. */
static void weight_changed(struct cl_engine *e)
{
    eng_fan_out_weight(e);
    broadcast_view(e);
}

void eng_set_weight(struct cl_engine *e, double w)
{
    e->cfg.weight = w;
    if (e->state != ENG_MEMBER)
        return;
    if (eng_self_coordinates(e)) {
        eng_take_over(e);
        if (cl_member_set_weight(e->mb, e->self_key, w) == 1)
            weight_changed(e);
        return;
    }
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (c == NULL)
        return;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_UPDATE;
    m.u.update.weight = w;
    (void)eng_send(e, c, &m);
}

void eng_goodbye_all(struct cl_engine *e)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_GOODBYE;
    for_others(e, send_to, &m);
}

/* ---------------------------------------------------------------------- */
/* Joining. */

static void on_view(struct cl_engine *e, const uint8_t key[32], const cl_wire_view_t *v)
{
    bool from_member = false, has_me = false;
    for (uint32_t i = 0; i < v->count; i++) {
        if (memcmp(v->members[i].key, key, 32) == 0)
            from_member = true;
        if (memcmp(v->members[i].key, e->self_key, 32) == 0)
            has_me = true;
    }
    if (!from_member || e->state == ENG_LEFT)
        return;
    if (e->state != ENG_MEMBER && !has_me)
        return;
    cl_settings_t theirs;
    cl_settings_from_wire(&v->settings, false, &theirs);
    if (e->member_since <= 0 && eng_settings_conflict(&e->cfg, &theirs)) {
        /* Admitted, but with settings this peer must not adopt. */
        eng_fail_init(e, COLLAB_ERR_CONFIG);
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_GOODBYE;
        (void)cl_transport_send(e->tp, key, &m);
        return;
    }
    bool first = e->member_since <= 0;
    cl_member_delta_t d;
    int rc = cl_member_apply_view(e->mb, v, eng_now(), &d);
    if (rc == 1 && first)
        eng_settings_adopted(e, &theirs);
    if (rc == 1)
        apply_delta(e, &d);
    cl_member_delta_clear(&d);
    if (rc == 1)
        eng_match_check(e->match, eng_now()); /* a coordinator's count changed */
}

/* ---------------------------------------------------------------------- */
/* Events and messages from the transport. */

void eng_member_on_event(struct cl_engine *e, const cl_tp_event_t *ev)
{
    cl_peer_t *p = cl_member_find(e->mb, ev->key);
    switch (ev->kind) {
    case CL_TP_UP:
        if (ev->inbound)
            break;
        eng_dialback_on_up(e->dialback, ev->key);
        if (p != NULL)
            eng_suspect_link_up(e->susp, p); /* our connection to it works (again) */
        eng_join_link_up(e->join, ev->key);
        break;
    case CL_TP_DOWN:
        eng_join_link_down(e->join, ev->key);
        if (p != NULL && p->state != CL_PEER_GONE)
            eng_suspect_closed(e->susp, p);
        break;
    case CL_TP_REFUSED:
        eng_join_link_refused(e->join, ev->key, ev->reason, ev->text);
        if (p != NULL && p->state != CL_PEER_GONE && e->state == ENG_MEMBER)
            eng_suspect_refused(e->susp, p);
        break;
    case CL_TP_MESSAGE:
        break;
    }
    eng_join_changed(e->join); /* a joiner may found again */
}

void eng_member_on_message(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                           const cl_wire_msg_t *m)
{
    bool member = from != NULL && from->state != CL_PEER_GONE;
    switch (m->hdr.type) {
    case CL_MSG_JOIN:
        if (e->state != ENG_MEMBER) {
            cl_wire_msg_t r;
            memset(&r, 0, sizeof r);
            r.hdr.type = CL_MSG_JOIN_REPLY;
            r.u.join_reply.status = CL_JOIN_NOT_MEMBER;
            (void)cl_transport_reply(e->tp, key, &r);
        } else if (eng_self_coordinates(e)) {
            eng_take_over(e);
            eng_join_on_join(e->join, key, &m->u.join);
        } else if (member && from->state == CL_PEER_ALIVE && !from->link_closed &&
                   cl_member_coordinator(e->mb) == from) {
            /* The coordinator of this view asks to join: it never got the
               view that admitted it (the coordinator before it died before
               the view went out), and a REDIRECT would send it to itself.
               Any member hands it the view.  (Another member that asks
               again is redirected: the coordinator tells a retry from a
               restart of the same identity.) */
            char desc[CL_WIRE_STR_MAX + 64];
            cl_debug("%s asks to join but is a member already; sending it the view",
                     eng_peer_desc(from, desc, sizeof desc));
            eng_reply_view(e, key);
        } else {
            cl_peer_t *c = cl_member_coordinator(e->mb);
            cl_wire_msg_t r;
            memset(&r, 0, sizeof r);
            r.hdr.type = CL_MSG_JOIN_REPLY;
            if (c != NULL && c->address[0] != '\0') {
                r.u.join_reply.status = CL_JOIN_REDIRECT;
                memcpy(r.u.join_reply.key, c->key, 32);
                snprintf(r.u.join_reply.address, sizeof r.u.join_reply.address, "%s", c->address);
            } else {
                r.u.join_reply.status = CL_JOIN_NOT_MEMBER;
            }
            (void)cl_transport_reply(e->tp, key, &r);
        }
        break;
    case CL_MSG_JOIN_REPLY:
        eng_join_on_reply(e->join, key, &m->u.join_reply);
        break;
    case CL_MSG_VIEW:
        on_view(e, key, &m->u.view);
        eng_el_view_from(e, key); /* elastic hook: an answer to a PROBE */
        break;
    case CL_MSG_HEARTBEAT:
    case CL_MSG_SUSPECT:
        eng_suspect_on_message(e->susp, from, key, m);
        break;
    case CL_MSG_GOODBYE:
        /* The loop acknowledged it and tells the collectives
           (eng_on_goodbye in cl_engine.c). */
        if (member && e->state == ENG_MEMBER)
            eng_suspect_peer(e->susp, from, REASON_LEFT);
        break;
    case CL_MSG_MATCH:
        eng_match_on_request(e->match, member);
        break;
    case CL_MSG_UPDATE:
        if (member && eng_self_coordinates(e)) {
            eng_take_over(e);
            if (cl_member_set_weight(e->mb, from->key, m->u.update.weight) == 1)
                weight_changed(e);
        }
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Timers. */

/* ---------------------------------------------------------------------- */
/* The failure detector's context (cl_engine_suspect.h), and what the rest
   of the engine asks of it. */

static bool ctx_is_member(void *arg)
{
    return ((struct cl_engine *)arg)->state == ENG_MEMBER;
}

static int ctx_send(void *arg, const cl_peer_t *p, cl_wire_msg_t *m)
{
    return eng_send(arg, p, m);
}

static int ctx_reply(void *arg, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_reply(((struct cl_engine *)arg)->tp, key, m);
}

static void ctx_reply_view(void *arg, const uint8_t key[32])
{
    eng_reply_view(arg, key);
}

static void ctx_commit(void *arg, cl_member_delta_t *d)
{
    eng_coordinator_commit(arg, d);
}

static void ctx_ban(void *arg, const uint8_t key[32], double seconds)
{
    cl_transport_ban(((struct cl_engine *)arg)->tp, key, seconds);
}

static const char *ctx_desc(void *arg, const cl_peer_t *p, char *out, size_t len)
{
    (void)arg;
    return eng_peer_desc(p, out, len);
}

static uint64_t ctx_progress(void *arg)
{
    return eng_coll_completed(((struct cl_engine *)arg)->cs);
}

static double ctx_step_gap(void *arg)
{
    return eng_coll_step_gap(((struct cl_engine *)arg)->cs);
}

static bool ctx_boundaries_known(void *arg)
{
    return eng_el_boundaries_known(arg);
}

static void ctx_late_seen(void *arg, double now)
{
    eng_report_late_seen(((struct cl_engine *)arg)->rep, now);
}

static bool ctx_epoch_step_ok(void *arg, uint64_t own, uint64_t epoch)
{
    (void)arg;
    return eng_auth_epoch_step_ok(own, epoch);
}

static bool ctx_member_ahead(void *arg, bool ahead, double patience)
{
    return eng_auth_member_ahead(((struct cl_engine *)arg)->auth, ahead, patience);
}

/* Matchmaking's context (cl_engine_match.h); the rest as above. */

static bool ctx_coordinates(void *arg)
{
    return eng_self_coordinates(arg);
}

static void ctx_take_over(void *arg)
{
    eng_take_over(arg);
}

static bool ctx_waiting(void *arg)
{
    return eng_coll_waiting_for_group(((struct cl_engine *)arg)->cs);
}

static int ctx_close_group(void *arg, cl_member_delta_t *d)
{
    return cl_member_close_group(((struct cl_engine *)arg)->mb, d);
}

/* After each check of silent members (the timer of _suspect): matchmaking. */
static void ctx_checked(void *arg, bool coordinator, double now)
{
    eng_match_checked(((struct cl_engine *)arg)->match, coordinator, now);
}

static bool ctx_straggler_vote(void *arg, const uint8_t subject[32], const uint8_t reporter[32],
                               size_t group_size)
{
    return eng_auth_straggler_vote(((struct cl_engine *)arg)->auth, subject, reporter, group_size);
}

int eng_member_init(struct cl_engine *e)
{
    static const int types[] = {CL_MSG_JOIN,      CL_MSG_JOIN_REPLY, CL_MSG_VIEW,  CL_MSG_HEARTBEAT,
                                CL_MSG_SUSPECT,   CL_MSG_MATCH,      CL_MSG_UPDATE};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        eng_on_type(e, types[i], eng_member_on_message);
    eng_match_ctx_t ctx = {.arg = e,
                           .cfg = &e->cfg,
                           .members = e->mb,
                           .timers = e->timers,
                           .now = eng_ctx_now,
                           .is_member = ctx_is_member,
                           .coordinates = ctx_coordinates,
                           .take_over = ctx_take_over,
                           .waiting = ctx_waiting,
                           .send = ctx_send,
                           .close_group = ctx_close_group,
                           .commit = ctx_commit};
    e->match = eng_match_new(&ctx);
    return e->match != NULL ? COLLAB_OK : COLLAB_ERR_NO_MEM;
}

void eng_member_fini(struct cl_engine *e)
{
    eng_match_destroy(&e->match);
}

eng_suspect_t *eng_member_suspect_new(struct cl_engine *e)
{
    eng_suspect_ctx_t ctx = {.arg = e,
                             .cfg = &e->cfg,
                             .self_key = e->self_key,
                             .mb = e->mb,
                             .timers = e->timers,
                             .hb_interval = e->hb_interval,
                             .now = eng_ctx_now,
                             .is_member = ctx_is_member,
                             .send = ctx_send,
                             .reply = ctx_reply,
                             .reply_view = ctx_reply_view,
                             .commit = ctx_commit,
                             .ban = ctx_ban,
                             .desc = ctx_desc,
                             .progress = ctx_progress,
                             .step_gap = ctx_step_gap,
                             .boundaries_known = ctx_boundaries_known,
                             .late_seen = ctx_late_seen,
                             .epoch_step_ok = ctx_epoch_step_ok,
                             .member_ahead = ctx_member_ahead,
                             .straggler_vote = ctx_straggler_vote,
                             .checked = ctx_checked};
    return eng_suspect_new(&ctx);
}

void eng_report_late(struct cl_engine *e, cl_peer_t *p, int reason)
{
    eng_suspect_late(e->susp, p, reason);
}

void eng_report_corrupt(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_corrupt(e->susp, p);
}

void eng_report_self_out(struct cl_engine *e)
{
    eng_suspect_self_out(e->susp);
}

static int rank_of(const void *comm, int world)
{
    return cl_comm_rank_of_world(comm, world);
}

int eng_verify_target(struct cl_engine *e, const int *ranks, int n, const collab_comm_t *comm)
{
    return eng_suspect_verify_target(e->susp, ranks, n, rank_of, comm);
}
