/*  cl_engine_fanout.c - membership changes, fanned out to the rest of the
    engine.

    Each function tells the components, in a fixed order, what one view
    change did (docs/architecture.md); the loop's services are in
    cl_engine.c.  The reports' component (cl_engine_report.c), the relay
    (cl_engine_relay.c), the point-to-point component (cl_engine_p2p.c),
    the groups (cl_engine_groups.c), the authority
    (cl_engine_authority.c), the dial-back (cl_engine_dialback.c), the
    departures (cl_engine_leave.c) and the measured bandwidth figure
    (cl_engine_rate.c) get their contexts here too: the
    engine's adapters for them (the authority's decision after a pause
    goes to the pause, eng_pause_decided; its request to take this peer,
    taken back, out of the group to the suspicions, eng_report_self_out;
    every view change to it, eng_auth_view_changed).  All take the engine typed
    (struct cl_engine *e; docs/architecture.md, "Typed contexts").
*/
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_loop_int.h"
#include "engine/cl_engine_rate.h"

#include "util/cl_log.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* Membership changes, fanned out to the rest of the engine.  Membership
   (cl_engine_member.c) updates its own records and calls these; it never
   calls point-to-point, the collective streams, the reports or the
   transport's connections itself. */

void eng_fan_out_peers(struct cl_engine *e, const cl_member_delta_t *d)
{
    const eng_parts_t *ep = eng_parts(e);
    char desc[CL_WIRE_STR_MAX + 64];
    for (size_t i = 0; i < d->nadded; i++) {
        cl_peer_t *p = d->added[i];
        eng_p2p_mark_seen(ep->p2p, p->rank);
        if (memcmp(p->key, ep->self_key, 32) == 0)
            continue;
        if (!p->client && p->address[0] != '\0')
            (void)cl_transport_connect(ep->tp, p->key, p->address);
        else if (p->client)
            (void)cl_transport_expect_client(ep->tp, p->key); /* its connection may come later */
        if (!d->self_added) {
            /* A monitor logs joins and failures in its own words (hooks). */
            cl_log(ep->cfg->monitor ? CL_LOG_DEBUG : CL_LOG_INFO, "%s joined",
                   eng_peer_desc(p, desc, sizeof desc));
            eng_report_peer_event(ep->rep, p, CL_EVENT_JOINED, "joined");
        }
    }
    for (size_t i = 0; i < d->nmon_added; i++) {
        cl_peer_t *p = d->mon_added[i];
        if (memcmp(p->key, ep->self_key, 32) == 0)
            continue;
        (void)cl_transport_connect(ep->tp, p->key, p->address);
        if (!d->self_added)
            cl_info("monitor %s joined", eng_peer_desc(p, desc, sizeof desc));
        eng_report_peer_event(ep->rep, p, CL_EVENT_JOINED, "joined");
    }
    for (size_t i = 0; i < d->nmon_removed; i++) {
        cl_peer_t *p = d->mon_removed[i];
        if (memcmp(p->key, ep->self_key, 32) == 0)
            continue;
        cl_info("monitor %s is gone: %s", eng_peer_desc(p, desc, sizeof desc),
                eng_suspect_reason_text(p->suspect_reason));
        eng_report_peer_event(
            ep->rep, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
            eng_suspect_reason_text(p->suspect_reason));
        cl_transport_drop(ep->tp, p->key);
    }
    for (size_t i = 0; i < d->nremoved; i++) {
        cl_peer_t *p = d->removed[i];
        if (memcmp(p->key, ep->self_key, 32) == 0)
            continue;
        cl_log_level_t lv = ep->cfg->monitor ? CL_LOG_DEBUG : CL_LOG_WARN;
        if (p->suspect_reason == ENG_REASON_LEFT)
            cl_log(ep->cfg->monitor ? CL_LOG_DEBUG : CL_LOG_INFO, "%s left the swarm",
                   eng_peer_desc(p, desc, sizeof desc));
        else if (p->suspect_reason != 0)
            cl_log(lv, "%s failed: %s", eng_peer_desc(p, desc, sizeof desc),
                   eng_suspect_reason_text(p->suspect_reason));
        else
            cl_log(lv, "%s is gone (the coordinator removed it from the swarm)",
                   eng_peer_desc(p, desc, sizeof desc));
        eng_report_peer_event(
            ep->rep, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
            p->suspect_reason != 0 ? eng_suspect_reason_text(p->suspect_reason)
                                   : "removed by the coordinator");
        eng_coll_peer_gone(ep->cs, p);
        eng_p2p_peer_gone(ep->p2p, p);
        cl_transport_drop(ep->tp, p->key);
    }
    for (size_t i = 0; i < d->nungrouped; i++) {
        cl_peer_t *p = d->ungrouped[i];
        int why = p->suspect_reason != 0 ? p->suspect_reason : CL_SUSPECT_STRAGGLER;
        if (memcmp(p->key, ep->self_key, 32) == 0)
            cl_warn("this peer was taken out of the group (%s); it waits to be admitted again",
                    eng_suspect_reason_text(p->suspect_reason));
        else
            cl_warn("%s left the group: %s", eng_peer_desc(p, desc, sizeof desc),
                    eng_suspect_reason_text(why));
        eng_report_peer_event(ep->rep, p, CL_EVENT_UNGROUPED, eng_suspect_reason_text(why));
        eng_coll_peer_gone(ep->cs, p);
    }
}

void eng_fan_out_view(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_coll_view_changed(ep->cs);
    eng_p2p_view_changed(ep->p2p);
    eng_replay_held(e);
    eng_report_view(ep->rep);
    eng_relay_view(ep->relay);
    eng_auth_view_changed(ep->auth); /* a peer taken back after a pause: out of the group yet? */
}

void eng_fan_out_member(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_report_view(ep->rep); /* a monitor's picture starts with its own view */
    eng_coll_member(ep->cs);  /* their timers run while this peer is a member */
    eng_p2p_member(ep->p2p);
    eng_el_member(e);          /* a monitor's checkpoints */
    eng_auth_member(ep->auth); /* a pause's round of a former membership ends */
    eng_init_done(e);
}

void eng_fan_out_weight(struct cl_engine *e)
{
    eng_coll_view_changed(eng_parts(e)->cs);
}

/* ---------------------------------------------------------------------- */
/* The groups' context (cl_engine_groups.h), and the elastic layer's
   question about the view. */

static const cl_settings_t *groups_settings(struct cl_engine *e)
{
    return cl_member_settings(eng_parts(e)->mb);
}

eng_groups_t *eng_groups_create(struct cl_engine *e)
{
    eng_groups_ctx_t ctx = {.arg = e, .settings = groups_settings};
    return eng_groups_new(&ctx);
}

bool eng_coll_multigroup(struct cl_engine *e)
{
    return eng_el_split_admission(e, NULL, 0, NULL); /* the group, nobody being admitted */
}

/* ---------------------------------------------------------------------- */
/* The authority's context (cl_engine_auth.h): the records and the
   engine's answers about this peer's own role, for the gate every
   message passes and its round after a pause. */

static bool auth_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static bool auth_coordinates(struct cl_engine *e)
{
    return eng_self_coordinates(e);
}

static bool auth_entrant(struct cl_engine *e, const uint8_t key[32])
{
    return eng_el_is_entrant(e, key);
}

/* A copy of this peer's state is expected for the monitor key, for any
   admission (a checkpoint, docs/monitor.md §7). */
static bool auth_copy_expected(struct cl_engine *e, const uint8_t key[32])
{
    return eng_el_copy_expected(e, key);
}

static void auth_outbid(struct cl_engine *e, const cl_wire_view_t *v)
{
    eng_member_outbid(eng_parts(e)->member, v);
}

static void auth_deliver(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    eng_on_message(e, key, m);
}

static void auth_ban(struct cl_engine *e, const uint8_t key[32], double seconds)
{
    cl_transport_ban(eng_parts(e)->tp, key, seconds);
}

static void auth_probe(struct cl_engine *e, const uint8_t key[32])
{
    eng_el_probe(e, key);
}

static void auth_rejoin(struct cl_engine *e, const uint8_t key[32])
{
    eng_send_join_relinked(e, key);
}

static void auth_answered(struct cl_engine *e, const uint8_t key[32])
{
    cl_peer_t *p = cl_member_find(eng_parts(e)->mb, key);
    if (p != NULL)
        eng_member_heard(e, p);
}

static void auth_give_up(struct cl_engine *e, int status)
{
    eng_leave(e, status);
}

/* Taken back after a pause, still in the group at a stale sequence:
   asks the coordinator to take this peer out (a straggler's own report),
   to be re-admitted and resynced. */
static void auth_self_out(struct cl_engine *e)
{
    eng_report_self_out(e);
}

/* The question whether the swarm went on without this peer is decided:
   the pause, which holds the collectives meanwhile, looks again. */
static void auth_decided(struct cl_engine *e)
{
    eng_el_pause_decided(e);
}

eng_auth_t *eng_auth_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_auth_ctx_t ctx = {.arg = e,
                          .cfg = ep->cfg,
                          .timers = ep->timers,
                          .mb = ep->mb,
                          .now = eng_ctx_clock,
                          .member = auth_member,
                          .coordinates = auth_coordinates,
                          .entrant = auth_entrant,
                          .copy_expected = auth_copy_expected,
                          .outbid = auth_outbid,
                          .deliver = auth_deliver,
                          .ban = auth_ban,
                          .probe = auth_probe,
                          .rejoin = auth_rejoin,
                          .answered = auth_answered,
                          .give_up = auth_give_up,
                          .decided = auth_decided,
                          .self_out = auth_self_out,
                          .desc = eng_peer_desc};
    memcpy(ctx.self_key, ep->self_key, 32);
    return eng_auth_new(&ctx);
}

/* ---------------------------------------------------------------------- */
/* The dial-back's context (cl_engine_dialback.h): the transport, the
   records and the join protocol, for the coordinator's check that a
   joiner can be reached. */

static bool db_link_up(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_link_up(eng_parts(e)->tp, key);
}

static int db_connect(struct cl_engine *e, const uint8_t key[32], const char *address)
{
    return cl_transport_connect(eng_parts(e)->tp, key, address);
}

static void db_drop(struct cl_engine *e, const uint8_t key[32])
{
    cl_transport_drop(eng_parts(e)->tp, key);
}

static bool db_is_member(struct cl_engine *e, const uint8_t key[32])
{
    const cl_peer_t *p = cl_member_find(eng_parts(e)->mb, key);
    return p != NULL && p->state != CL_PEER_GONE;
}

static bool db_coordinates(struct cl_engine *e)
{
    return eng_self_coordinates(e);
}

static void db_reply_settings(struct cl_engine *e, cl_wire_join_reply_t *r)
{
    eng_join_reply_settings(eng_parts(e)->join, r);
}

static int db_reply(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_reply(eng_parts(e)->tp, key, m);
}

static void db_admit(struct cl_engine *e, const uint8_t key[32], const cl_wire_join_t *j)
{
    eng_join_on_join(eng_parts(e)->join, key, j);
}

eng_dialback_t *eng_dialback_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_dialback_ctx_t ctx = {.arg = e,
                              .cfg = ep->cfg,
                              .timers = ep->timers,
                              .now = eng_ctx_clock,
                              .link_up = db_link_up,
                              .connect = db_connect,
                              .drop = db_drop,
                              .is_member = db_is_member,
                              .coordinates = db_coordinates,
                              .reply_settings = db_reply_settings,
                              .reply = db_reply,
                              .admit = db_admit};
    return eng_dialback_new(&ctx);
}

/* ---------------------------------------------------------------------- */
/* The reports' context (cl_engine_report.h). */

static double rep_raw_now(struct cl_engine *e)
{
    (void)e;
    return eng_raw_now();
}

static bool rep_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static cl_peer_t *rep_self(struct cl_engine *e)
{
    return cl_member_self(eng_parts(e)->mb);
}

static cl_peer_t *const *rep_members(struct cl_engine *e, size_t *n)
{
    return cl_member_list(eng_parts(e)->mb, n);
}

static cl_peer_t *const *rep_monitors(struct cl_engine *e, size_t *n)
{
    return cl_member_monitors(eng_parts(e)->mb, n);
}

static int rep_compression(struct cl_engine *e)
{
    return cl_member_settings(eng_parts(e)->mb)->compression;
}

static int rep_view(struct cl_engine *e, cl_wire_view_t *out)
{
    return cl_member_view(eng_parts(e)->mb, out);
}

/* Steps: MPIX_Collab_step calls, else those of the period the elastic
   layer learned on the world stream. */
static uint64_t rep_steps(struct cl_engine *e)
{
    if (eng_steps(e) > 0)
        return eng_steps(e);
    return eng_el_steps(e);
}

static uint64_t rep_progress(struct cl_engine *e)
{
    return eng_coll_completed(eng_parts(e)->cs);
}

static int rep_send(struct cl_engine *e, cl_peer_t *p, cl_wire_msg_t *m)
{
    return eng_send(e, p, m);
}

static void on_report(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                      const cl_wire_msg_t *m)
{
    (void)key;
    eng_report_on_msg(eng_parts(e)->rep, from, &m->u.report);
}

eng_report_t *eng_report_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_report_ctx_t ctx = {.arg = e,
                            .cfg = ep->cfg,
                            .timers = ep->timers,
                            .hooks = ep->hooks,
                            .now = eng_ctx_clock,
                            .raw_now = rep_raw_now,
                            .is_member = rep_is_member,
                            .self = rep_self,
                            .members = rep_members,
                            .monitors = rep_monitors,
                            .compression = rep_compression,
                            .view = rep_view,
                            .steps = rep_steps,
                            .progress = rep_progress,
                            .send = rep_send};
    eng_report_t *rep = eng_report_new(&ctx);
    if (rep != NULL)
        eng_on_type(e, CL_MSG_REPORT, on_report);
    return rep;
}

int cl_engine_report_value(cl_engine_t *e, const char *name, double value)
{
    return eng_report_set_value(eng_parts(e)->rep, name, value);
}

/* ---------------------------------------------------------------------- */
/* The relay's context (cl_engine_relay.h) and its RELAYED handler. */

static bool relay_has_link(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_has_link(eng_parts(e)->tp, key);
}

static int relay_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_send(e, to, m);
}

static void relay_deliver(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    eng_on_message(e, key, m);
}

static void on_relayed(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m)
{
    eng_relay_on_message(eng_parts(e)->relay, p, key, m);
}

struct eng_relay *eng_relay_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_relay_ctx_t ctx = {.arg = e,
                           .cfg = ep->cfg,
                           .self_key = ep->self_key,
                           .secret_key = cl_identity_secret_key(ep->id),
                           .timers = ep->timers,
                           .mb = ep->mb,
                           .now = eng_ctx_clock,
                           .has_link = relay_has_link,
                           .send = relay_send,
                           .deliver = relay_deliver,
                           .desc = eng_peer_desc};
    struct eng_relay *relay = eng_relay_new(&ctx);
    if (relay != NULL)
        eng_on_type(e, CL_MSG_RELAYED, on_relayed);
    return relay;
}

/* ---------------------------------------------------------------------- */
/* The context of the point-to-point component (cl_engine_p2p.h): what it
   may ask of the engine. */

static int p2p_self_rank(struct cl_engine *e)
{
    return eng_rank(e);
}

static bool p2p_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static double p2p_member_since(struct cl_engine *e)
{
    return eng_member_since(eng_parts(e)->member);
}

static cl_peer_t *p2p_member_at(struct cl_engine *e, int w)
{
    return cl_member_at_rank(eng_parts(e)->mb, w);
}

static int p2p_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_send_now(e, to, m); /* a COLL message from a FIFO was counted */
}

static bool p2p_comm_rank_is(struct cl_engine *e, uint64_t comm, int r, int w)
{
    return eng_coll_comm_rank_is(eng_parts(e)->cs, comm, r, w);
}

static int p2p_link_version(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_link_version(eng_parts(e)->tp, key);
}

static void p2p_ban(struct cl_engine *e, const uint8_t key[32], double seconds)
{
    cl_transport_ban(eng_parts(e)->tp, key, seconds);
}

/* The early messages and the waits of the collective streams (created
   after point-to-point: asked only once the loop runs). */
static size_t p2p_early_queued(struct cl_engine *e, int w, size_t *bytes)
{
    return eng_coll_early_queued(eng_parts(e)->cs, w, bytes);
}

static bool p2p_coll_waits_for(struct cl_engine *e, int w)
{
    return eng_coll_waits_for(eng_parts(e)->cs, w);
}

eng_p2p_t *eng_p2p_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_p2p_ctx_t ctx = {.arg = e,
                         .cfg = ep->cfg,
                         .t0 = ep->t0,
                         .timers = ep->timers,
                         .incarnation = ep->incarnation,
                         .now = eng_ctx_clock,
                         .self_rank = p2p_self_rank,
                         .is_member = p2p_is_member,
                         .member_since = p2p_member_since,
                         .member_at = p2p_member_at,
                         .send = p2p_send,
                         .desc = eng_peer_desc,
                         .comm_rank_is = p2p_comm_rank_is,
                         .link_version = p2p_link_version,
                         .ban = p2p_ban,
                         .early_queued = p2p_early_queued,
                         .coll_waits_for = p2p_coll_waits_for};
    return eng_p2p_new(&ctx);
}

/* ---------------------------------------------------------------------- */
/* The departures' context (cl_engine_leave.h), and BYE_ACK handed to
   them. */

static int leave_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_send(e, to, m);
}

static int leave_reply(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_reply(eng_parts(e)->tp, key, m);
}

/* The communicators this peer entered collectives on: every stream but
   the self communicator's that started one. */
static size_t leave_entered(struct cl_engine *e, cl_wire_bye_comm_t *comms, size_t max)
{
    return eng_coll_entered(eng_parts(e)->cs, comms, max);
}

static void on_bye_ack(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m)
{
    (void)p;
    (void)m;
    eng_leave_on_ack(eng_parts(e)->leave, key);
}

eng_leave_t *eng_leave_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_leave_ctx_t ctx = {.arg = e,
                           .cfg = ep->cfg,
                           .members = ep->mb,
                           .timers = ep->timers,
                           .now = eng_ctx_clock,
                           .send = leave_send,
                           .reply = leave_reply,
                           .desc = eng_peer_desc,
                           .entered = leave_entered};
    memcpy(ctx.self_key, ep->self_key, 32);
    eng_leave_t *leave = eng_leave_new(&ctx);
    if (leave != NULL)
        eng_on_type(e, CL_MSG_BYE_ACK, on_bye_ack);
    return leave;
}

/* ---------------------------------------------------------------------- */
/* The measured bandwidth figure (cl_engine_rate.h). */

static bool rate_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static bool rate_busy(struct cl_engine *e)
{
    return !eng_coll_idle(eng_parts(e)->cs);
}

static void rate_upload(struct cl_engine *e, double now, uint64_t *acked, uint64_t *sent,
                        bool *backlogged)
{
    cl_transport_upload(eng_parts(e)->tp, now, acked, sent, backlogged);
}

static uint32_t rate_figures(struct cl_engine *e, uint32_t *others, size_t cap, size_t *n)
{
    const cl_member_t *mb = eng_parts(e)->mb;
    const cl_peer_t *me = cl_member_self(mb);
    size_t nm = 0;
    cl_peer_t *const *list = cl_member_list(mb, &nm);
    *n = 0;
    for (size_t i = 0; i < nm && *n < cap; i++)
        if (list[i] != me && list[i]->in_group && !list[i]->monitor)
            others[(*n)++] = list[i]->bw_figure;
    return me != NULL ? me->bw_figure : 0;
}

static void rate_propose(struct cl_engine *e, uint32_t kbit)
{
    eng_member_set_figure(eng_parts(e)->member, kbit);
}

eng_rate_t *eng_rate_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_rate_ctx_t ctx = {.arg = e,
                          .cfg = ep->cfg,
                          .timers = ep->timers,
                          .now = eng_ctx_clock,
                          .raw_now = rep_raw_now,
                          .is_member = rate_is_member,
                          .busy = rate_busy,
                          .upload = rate_upload,
                          .figures = rate_figures,
                          .propose = rate_propose};
    return eng_rate_new(&ctx);
}
