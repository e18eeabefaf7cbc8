/*  cl_engine_member_ctx.c - the contexts the loop builds for
    membership's components: membership's views (eng_member_ctx_t,
    cl_engine_member.h), the failure detector (eng_suspect_ctx_t,
    cl_engine_suspect.h) and matchmaking (eng_match_ctx_t,
    cl_engine_match.h); the registration of membership's messages with the
    loop (eng_member_create); the transport's events, handed to the
    dial-back, the failure detector and the join (eng_member_on_event); and
    the functions through which the rest of the engine asks these
    components (eng_self_coordinates, eng_take_over, eng_report_late,
    ...: thin wrappers on the failure detector and matchmaking, read from
    the loop's parts).  Membership's views are asked on
    eng_parts(e)->member directly (eng_member_commit, eng_member_become,
    ...); only three functions here do more than pass it on:
    eng_set_weight (sets the configuration first), eng_goodbye_all
    (nothing before membership exists) and eng_member_on_message (the
    loop's handler of membership's messages).

    The adapters below are the only place where those components meet
    the engine: the loop's state (eng_set_state, this peer's rank and
    world size: eng_set_rank, eng_set_world_size; collab_init's request through eng_fail_init, the
    configuration through eng_set_cfg_weight), the transport (send, reply, ban),
    the authority's rules, the elastic layer, the reports, the
    collectives' progress, the join, the fan-out of view changes, and each
    other (the view sent back, a coordinator's commit, whether this peer
    coordinates, the takeover).  Each takes the engine typed, struct
    cl_engine *e (docs/architecture.md, "Typed contexts").
*/
#include "engine/cl_engine_elastic.h" /* eng_el_boundaries_known, eng_el_view_from */
#include "engine/cl_engine_loop_int.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* What the rest of the engine asks of membership and the failure
   detector. */

bool eng_self_coordinates(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    return ep->susp != NULL && eng_suspect_coordinates(ep->susp);
}

void eng_take_over(struct cl_engine *e)
{
    eng_suspect_take_over(eng_parts(e)->susp);
}

/* Peer records: the rest of the engine writes none of their fields; the
   class cl_member.c and the failure detector do. */

void eng_member_heard(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_heard(eng_parts(e)->susp, p);
}

void eng_member_answered(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_answered(eng_parts(e)->susp, p);
}

void eng_member_excuse(struct cl_engine *e, cl_peer_t *p, double now)
{
    eng_suspect_excuse(eng_parts(e)->susp, p, now);
}

void eng_request_match(struct cl_engine *e)
{
    eng_match_request(eng_parts(e)->match);
}

void eng_set_weight(struct cl_engine *e, double w)
{
    eng_set_cfg_weight(e, w);
    eng_member_set_weight(eng_parts(e)->member, w);
}

void eng_goodbye_all(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    if (ep->member != NULL) /* a start that failed before membership */
        eng_member_goodbye_all(ep->member);
}

void eng_member_on_message(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                           const cl_wire_msg_t *m)
{
    eng_member_message(eng_parts(e)->member, from, key, m);
}

/* The transport's events: the dial-back, the failure detector, the join. */
void eng_member_on_event(struct cl_engine *e, const cl_tp_event_t *ev)
{
    const eng_parts_t *ep = eng_parts(e);
    cl_peer_t *p = cl_member_find(ep->mb, ev->key);
    switch (ev->kind) {
    case CL_TP_UP:
        if (ev->inbound)
            break;
        eng_dialback_on_up(ep->dialback, ev->key);
        if (p != NULL)
            eng_suspect_link_up(ep->susp, p); /* our connection to it works (again) */
        eng_join_link_up(ep->join, ev->key);
        break;
    case CL_TP_DOWN:
        eng_join_link_down(ep->join, ev->key);
        if (p != NULL && p->state != CL_PEER_GONE)
            eng_suspect_closed(ep->susp, p);
        break;
    case CL_TP_REFUSED:
        eng_join_link_refused(ep->join, ev->key, ev->reason, ev->text);
        if (p != NULL && p->state != CL_PEER_GONE && eng_state(e) == ENG_MEMBER)
            eng_suspect_refused(ep->susp, p);
        break;
    case CL_TP_MESSAGE:
        break;
    }
    eng_join_changed(ep->join); /* a joiner may found again */
}

void eng_report_late(struct cl_engine *e, cl_peer_t *p, int reason)
{
    eng_suspect_late(eng_parts(e)->susp, p, reason);
}

void eng_report_corrupt(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_corrupt(eng_parts(e)->susp, p);
}

void eng_report_self_out(struct cl_engine *e)
{
    eng_suspect_self_out(eng_parts(e)->susp);
}

static int rank_of(const void *comm, int world)
{
    return cl_comm_rank_of_world(comm, world);
}

int eng_verify_target(struct cl_engine *e, const int *ranks, int n, const collab_comm_t *comm)
{
    return eng_suspect_verify_target(eng_parts(e)->susp, ranks, n, rank_of, comm);
}

/* ---------------------------------------------------------------------- */
/* Membership's context (cl_engine_member.h); its send, reply, coordinates
   and take_over are the failure detector's and matchmaking's below. */

static eng_state_t mem_state(struct cl_engine *e)
{
    return eng_state(e);
}

static void mem_set_state(struct cl_engine *e, eng_state_t state)
{
    eng_set_state(e, state);
}

static void mem_set_rank(struct cl_engine *e, int rank)
{
    eng_set_rank(e, rank);
}

static void mem_set_world_size(struct cl_engine *e, int world_size)
{
    eng_set_world_size(e, world_size);
}

static void mem_fail(struct cl_engine *e, int status)
{
    eng_fail_init(e, status);
}

static const char *mem_address(struct cl_engine *e)
{
    return cl_transport_address(eng_parts(e)->tp);
}

static int mem_send_key(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_send(eng_parts(e)->tp, key, m);
}

static void mem_tenure(struct cl_engine *e)
{
    eng_suspect_tenure(eng_parts(e)->susp);
}

static void mem_started(struct cl_engine *e, bool founder)
{
    eng_suspect_started(eng_parts(e)->susp, founder);
}

static void mem_forget(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_forget(eng_parts(e)->susp, p);
}

static void mem_suspect_message(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                                const cl_wire_msg_t *m)
{
    eng_suspect_on_message(eng_parts(e)->susp, from, key, m);
}

static void mem_left(struct cl_engine *e, cl_peer_t *p)
{
    eng_suspect_peer(eng_parts(e)->susp, p, ENG_REASON_LEFT);
}

static void mem_on_join(struct cl_engine *e, const uint8_t key[32], const cl_wire_join_t *j)
{
    eng_join_on_join(eng_parts(e)->join, key, j);
}

static void mem_on_join_reply(struct cl_engine *e, const uint8_t key[32],
                              const cl_wire_join_reply_t *r)
{
    eng_join_on_reply(eng_parts(e)->join, key, r);
}

static void mem_join_again(struct cl_engine *e)
{
    eng_join_again(eng_parts(e)->join);
}

static void mem_settings_adopted(struct cl_engine *e, const cl_settings_t *s)
{
    eng_settings_adopted(e, s);
}

static void mem_joined(struct cl_engine *e, int rank)
{
    eng_match_joined(eng_parts(e)->match, rank);
}

static void mem_match_check(struct cl_engine *e, double now)
{
    eng_match_check(eng_parts(e)->match, now);
}

static void mem_match_request(struct cl_engine *e, bool from_member)
{
    eng_match_on_request(eng_parts(e)->match, from_member);
}

static void mem_view_from(struct cl_engine *e, const uint8_t key[32])
{
    eng_el_view_from(e, key);
}

static void mem_fan_out_peers(struct cl_engine *e, const cl_member_delta_t *d)
{
    eng_fan_out_peers(e, d);
}

static void mem_fan_out_view(struct cl_engine *e)
{
    eng_fan_out_view(e);
}

static void mem_fan_out_member(struct cl_engine *e)
{
    eng_fan_out_member(e);
}

static void mem_fan_out_weight(struct cl_engine *e)
{
    eng_fan_out_weight(e);
}

/* ---------------------------------------------------------------------- */
/* The failure detector's context (cl_engine_suspect.h). */

static bool ctx_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static int ctx_send(struct cl_engine *e, const cl_peer_t *p, cl_wire_msg_t *m)
{
    return eng_send(e, p, m);
}

static int ctx_reply(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_reply(eng_parts(e)->tp, key, m);
}

static int mem_link_version(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_link_version(eng_parts(e)->tp, key);
}

static void ctx_reply_view(struct cl_engine *e, const uint8_t key[32])
{
    eng_member_reply_view(eng_parts(e)->member, key);
}

static void ctx_commit(struct cl_engine *e, cl_member_delta_t *d)
{
    eng_member_commit(eng_parts(e)->member, d);
}

static void ctx_ban(struct cl_engine *e, const uint8_t key[32], double seconds)
{
    cl_transport_ban(eng_parts(e)->tp, key, seconds);
}

static const char *ctx_desc(struct cl_engine *e, const cl_peer_t *p, char *out, size_t len)
{
    (void)e;
    return eng_peer_desc(p, out, len);
}

static uint64_t ctx_progress(struct cl_engine *e)
{
    return eng_coll_completed(eng_parts(e)->cs);
}

static double ctx_step_gap(struct cl_engine *e)
{
    return eng_coll_step_gap(eng_parts(e)->cs);
}

static bool ctx_boundaries_known(struct cl_engine *e)
{
    return eng_el_boundaries_known(e);
}

static void ctx_late_seen(struct cl_engine *e, double now)
{
    eng_report_late_seen(eng_parts(e)->rep, now);
}

static bool ctx_epoch_step_ok(struct cl_engine *e, uint64_t own, uint64_t epoch)
{
    (void)e;
    return eng_auth_epoch_step_ok(own, epoch);
}

static bool ctx_member_ahead(struct cl_engine *e, bool ahead, double patience)
{
    return eng_auth_member_ahead(eng_parts(e)->auth, ahead, patience);
}

/* Matchmaking's context (cl_engine_match.h); the rest as above. */

static bool ctx_coordinates(struct cl_engine *e)
{
    return eng_self_coordinates(e);
}

static void ctx_take_over(struct cl_engine *e)
{
    eng_take_over(e);
}

static bool ctx_waiting(struct cl_engine *e)
{
    return eng_coll_waiting_for_group(eng_parts(e)->cs);
}

static int ctx_close_group(struct cl_engine *e, cl_member_delta_t *d)
{
    return cl_member_close_group(eng_parts(e)->mb, d);
}

/* After each check of silent members (the timer of _suspect): matchmaking. */
static void ctx_checked(struct cl_engine *e, bool coordinator, double now)
{
    eng_match_checked(eng_parts(e)->match, coordinator, now);
}

static bool ctx_straggler_vote(struct cl_engine *e, const uint8_t subject[32],
                               const uint8_t reporter[32], size_t group_size)
{
    return eng_auth_straggler_vote(eng_parts(e)->auth, subject, reporter, group_size);
}

eng_member_t *eng_member_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_member_ctx_t mctx = {.arg = e,
                             .cfg = ep->cfg,
                             .members = ep->mb,
                             .now = eng_ctx_clock,
                             .state = mem_state,
                             .set_state = mem_set_state,
                             .set_rank = mem_set_rank,
                             .set_world_size = mem_set_world_size,
                             .fail = mem_fail,
                             .address = mem_address,
                             .send = ctx_send,
                             .send_key = mem_send_key,
                             .reply = ctx_reply,
                             .link_version = mem_link_version,
                             .desc = eng_peer_desc,
                             .coordinates = ctx_coordinates,
                             .take_over = ctx_take_over,
                             .tenure = mem_tenure,
                             .started = mem_started,
                             .forget = mem_forget,
                             .suspect_message = mem_suspect_message,
                             .left = mem_left,
                             .on_join = mem_on_join,
                             .on_join_reply = mem_on_join_reply,
                             .join_again = mem_join_again,
                             .settings_adopted = mem_settings_adopted,
                             .joined = mem_joined,
                             .match_check = mem_match_check,
                             .match_request = mem_match_request,
                             .view_from = mem_view_from,
                             .adoptable = eng_el_adoptable,
                             .fan_out_peers = mem_fan_out_peers,
                             .fan_out_view = mem_fan_out_view,
                             .fan_out_member = mem_fan_out_member,
                             .fan_out_weight = mem_fan_out_weight};
    memcpy(mctx.self_key, ep->self_key, 32);
    snprintf(mctx.self_id, sizeof mctx.self_id, "%s", ep->self_id);
    eng_member_t *member = eng_member_new(&mctx);
    if (member == NULL)
        return NULL;
    static const int types[] = {CL_MSG_JOIN,    CL_MSG_JOIN_REPLY, CL_MSG_VIEW,  CL_MSG_HEARTBEAT,
                                CL_MSG_SUSPECT, CL_MSG_MATCH,      CL_MSG_UPDATE};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        eng_on_type(e, types[i], eng_member_on_message);
    return member;
}

eng_match_t *eng_match_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_match_ctx_t ctx = {.arg = e,
                           .cfg = ep->cfg,
                           .members = ep->mb,
                           .timers = ep->timers,
                           .now = eng_ctx_clock,
                           .is_member = ctx_is_member,
                           .coordinates = ctx_coordinates,
                           .take_over = ctx_take_over,
                           .waiting = ctx_waiting,
                           .send = ctx_send,
                           .close_group = ctx_close_group,
                           .commit = ctx_commit};
    return eng_match_new(&ctx);
}

eng_suspect_t *eng_suspect_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_suspect_ctx_t ctx = {.arg = e,
                             .cfg = ep->cfg,
                             .self_key = ep->self_key,
                             .mb = ep->mb,
                             .timers = ep->timers,
                             .hb_interval = ep->hb_interval,
                             .now = eng_ctx_clock,
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
