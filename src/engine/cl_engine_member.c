/*  cl_engine_member.c - membership's views, the component eng_member_t
    (cl_engine_member.h).

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

    This file is the views: a VIEW installed (from a member it lists, once
    this peer is listed or a member), a coordinator's view change acted on
    and published to every other member and monitor, the view sent to one
    peer or back on a connection, a smaller group's view outbid, this peer
    becoming a member, a weight changed (UPDATE), GOODBYE to all, and the
    dispatch of membership's messages.  Each view change updates this
    peer's own standing (the failure detector's tenure, the ranks added to
    matchmaking, the suspicion of those gone, a rejoin when the view left
    this peer out) and then tells the loop what it did (the fan-out).

    Heartbeats, suspicion, the coordinator's side of it (SUSPECT reports,
    the removal of suspects, stragglers, COLLAB_VERIFY verdicts) and the
    coordinator's tenure are the component eng_suspect_t
    (cl_engine_suspect.c).  The join (JOIN and JOIN_REPLY, the initial
    peers, founding, the coordinator's admission) is the component
    eng_join_t (cl_engine_join.c): this file hands it the JOINs it answers
    as the coordinator, the JOIN_REPLYs and a view that leaves this peer
    out.  Matchmaking (the window, MATCH, the ranks that were ever
    members) is the component eng_match_t (cl_engine_match.c): this file
    hands it the ranks each view adds, looks at the group after each view
    (eng_match_check) and passes it MATCH.  All three are reached through
    this component's context, which the loop builds with theirs
    (cl_engine_member_ctx.c, where the transport's events go to them
    too); this file includes no private header of the engine.
*/
#include "engine/cl_engine_member.h"

#include "engine/cl_engine_auth.h" /* eng_auth_epoch_step_ok, a pure rule */
#include "engine/cl_engine_timer.h" /* ENG_FIGURE_EVERY */
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eng_member {
    eng_member_ctx_t ctx;
    double since;         /* when this peer first got a rank (0: never) */
    double outbid_logged; /* the last outbid logged loud (a member could repeat such views) */
    uint64_t published;   /* the epoch of the last view this peer sent to all (0: none) */
    uint64_t sent_max;    /* the highest epoch of a view this peer sent anyone (0: none) */
};

eng_member_t *eng_member_new(const eng_member_ctx_t *ctx)
{
    eng_member_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->ctx = *ctx;
    return m;
}

void eng_member_destroy(eng_member_t **m_p)
{
    if (m_p == NULL || *m_p == NULL)
        return;
    free(*m_p);
    *m_p = NULL;
}

double eng_member_since(const eng_member_t *m)
{
    return m != NULL ? m->since : 0.0;
}

static bool is_member(const eng_member_t *m)
{
    return m->ctx.state(m->ctx.arg) == ENG_MEMBER;
}

static double now(const eng_member_t *m)
{
    return m->ctx.now(m->ctx.arg);
}

/* Sends msg to every member and monitor of the view but this peer. */
static void send_to_others(eng_member_t *m, cl_wire_msg_t *msg)
{
    size_t n, nm;
    cl_peer_t *const *list = cl_member_list(m->ctx.members, &n);
    cl_peer_t *const *mons = cl_member_monitors(m->ctx.members, &nm);
    for (size_t i = 0; i < nm + n; i++) {
        cl_peer_t *p = i < nm ? mons[i] : list[i - nm];
        if (memcmp(p->key, m->ctx.self_key, 32) != 0)
            (void)m->ctx.send(m->ctx.arg, p, msg);
    }
}

/* ---------------------------------------------------------------------- */
/* Views. */

/* Which view took effect (from the peer `from`) or went out (from NULL),
   and who is in its group: what a rare membership race needs to be read
   from a debug log. */
static void debug_view(eng_member_t *m, const cl_wire_view_t *v, const uint8_t *from)
{
    if (!cl_log_enabled(CL_LOG_DEBUG))
        return;
    char how[32] = "published";
    if (from != NULL) {
        const cl_peer_t *p = cl_member_find(m->ctx.members, from);
        snprintf(how, sizeof how, "from %.8s…", p != NULL ? p->id : "?");
    }
    char ranks[160];
    size_t at = 0;
    ranks[0] = '\0';
    for (uint32_t i = 0; i < v->count && at + 12 < sizeof ranks; i++)
        if (v->members[i].rank >= 0 && (v->members[i].flags & CL_MEMBER_IN_GROUP))
            at += (size_t)snprintf(ranks + at, sizeof ranks - at, " %d", (int)v->members[i].rank);
    cl_debug("view %llu (group generation %llu) %s: group ranks%s",
             (unsigned long long)v->epoch, (unsigned long long)v->group_epoch, how,
             at > 0 ? ranks : " none");
}

/* A view of epoch `epoch` leaves this peer: a coordinator adopts a late
   admission only while no view of its own above the admission's epoch
   went out (adopt_admission). */
static void view_sent(eng_member_t *m, uint64_t epoch)
{
    if (epoch > m->sent_max)
        m->sent_max = epoch;
}

/* Sends the current view to every other member, once per epoch: every
   change of the records raises the epoch, and a commit's handlers may
   commit and publish the next view themselves (the join that completes
   the world forms the group) before the outer commit gets here. */
static void broadcast_view(eng_member_t *m)
{
    if (cl_member_epoch(m->ctx.members) == m->published)
        return;
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_VIEW;
    if (cl_member_view(m->ctx.members, &msg.u.view) != COLLAB_OK)
        return;
    m->published = msg.u.view.epoch;
    view_sent(m, msg.u.view.epoch);
    debug_view(m, &msg.u.view, NULL);
    send_to_others(m, &msg);
    free(msg.u.view.members);
}

void eng_member_send_view(eng_member_t *m, const cl_peer_t *p)
{
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_VIEW;
    if (cl_member_view(m->ctx.members, &msg.u.view) != COLLAB_OK)
        return;
    view_sent(m, msg.u.view.epoch);
    (void)m->ctx.send(m->ctx.arg, p, &msg);
    free(msg.u.view.members);
}

void eng_member_reply_view(eng_member_t *m, const uint8_t key[32])
{
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_VIEW;
    msg.hdr.epoch = cl_member_epoch(m->ctx.members);
    if (cl_member_view(m->ctx.members, &msg.u.view) != COLLAB_OK)
        return;
    view_sent(m, msg.u.view.epoch);
    (void)m->ctx.reply(m->ctx.arg, key, &msg);
    free(msg.u.view.members);
}

void eng_member_outbid(eng_member_t *m, const cl_wire_view_t *v)
{
    if (!m->ctx.coordinates(m->ctx.arg) ||
        !eng_auth_epoch_step_ok(cl_member_epoch(m->ctx.members), v->epoch))
        return;
    m->ctx.take_over(m->ctx.arg);
    if (v->epoch >= cl_member_epoch(m->ctx.members))
        cl_member_raise_epoch(m->ctx.members, v->epoch + 1);
    double t = now(m);
    bool loud = t - m->outbid_logged > 10.0;
    if (loud)
        m->outbid_logged = t;
    cl_log(loud ? CL_LOG_INFO : CL_LOG_DEBUG,
           "a group of %u of this peer's members formed without it (a view of the coordinator "
           "before was lost with it); sending them this peer's larger view",
           v->count);
    for (uint32_t i = 0; i < v->count; i++)
        eng_member_reply_view(m, v->members[i].key);
}

static void print_join_line(eng_member_t *m)
{
    cl_peer_t *me = cl_member_self(m->ctx.members);
    int ws = cl_member_settings(m->ctx.members)->world_size;
    if (m->ctx.cfg->monitor)
        cl_info("monitor %.8s… of a swarm of %d ranks listening; peers can join with:\n"
                "COLLAB_INITIAL_PEERS=%s",
                m->ctx.self_id, ws, m->ctx.address(m->ctx.arg));
    else if (m->ctx.cfg->client_mode)
        cl_info("peer %.8s… rank %d/%d joined in client mode (accepts no connections)",
                m->ctx.self_id, me->rank, ws);
    else
        cl_info("peer %.8s… rank %d/%d listening; other peers can join with:\n"
                "COLLAB_INITIAL_PEERS=%s",
                m->ctx.self_id, me->rank, ws, m->ctx.address(m->ctx.arg));
}

void eng_member_become(eng_member_t *m, bool founder)
{
    const cl_config_t *cfg = m->ctx.cfg;
    cl_peer_t *me = cl_member_self(m->ctx.members);
    bool rejoin = m->since > 0;
    m->ctx.set_state(m->ctx.arg, ENG_MEMBER);
    m->ctx.set_rank(m->ctx.arg, me->rank);
    m->ctx.set_world_size(m->ctx.arg, cl_member_settings(m->ctx.members)->world_size);
    if (!rejoin)
        m->since = now(m);
    m->ctx.started(m->ctx.arg, founder);
    if (!rejoin) {
        cl_log_set_tag(NULL);
        print_join_line(m);
        int ws = cl_member_settings(m->ctx.members)->world_size;
        if (cfg->rank >= ws)
            cl_warn("COLLAB_RANK=%d is outside the swarm's world size %d; this peer holds rank "
                    "%d",
                    cfg->rank, ws, me->rank);
        else if (cfg->rank >= 0 && cfg->rank != me->rank)
            cl_info("rank %d (COLLAB_RANK) was taken; this peer holds rank %d", cfg->rank,
                    me->rank);
    } else {
        cl_info("rejoined the swarm as rank %d", me->rank);
    }
    if (founder) {
        if (cfg->monitor)
            cl_info("found no active peers; waiting for trainers to join");
        else
            cl_info("found no active peers; training alone until someone joins");
    }
    /* From now on every line names this peer's rank (peers share a terminal
       under collab-run). */
    char tag[32];
    if (cfg->monitor)
        snprintf(tag, sizeof tag, "monitor");
    else
        snprintf(tag, sizeof tag, "rank %d", me->rank);
    cl_log_set_tag(tag);
    m->ctx.fan_out_member(m->ctx.arg);
}

/* Acts on what a view change did: this peer's own records here; the
   rest of the engine learns who joined, left, failed or left the group
   from the loop (fan_out_peers), then that the view changed
   (fan_out_view). */
static void apply_delta(eng_member_t *m, cl_member_delta_t *d)
{
    void *arg = m->ctx.arg;
    /* The records changed: whether this peer still coordinates (a view
       that admits a lower rank, or leaves this peer out, ends its
       tenure). */
    m->ctx.tenure(arg);
    if (!is_member(m) && cl_member_self(m->ctx.members) != NULL &&
        cl_member_self(m->ctx.members)->state != CL_PEER_GONE)
        eng_member_become(m, false);
    m->ctx.set_world_size(arg, cl_member_settings(m->ctx.members)->world_size);
    for (size_t i = 0; i < d->nadded; i++)
        m->ctx.joined(arg, d->added[i]->rank);
    m->ctx.fan_out_peers(arg, d);
    /* The records of those gone keep nothing of their suspicion. */
    for (size_t i = 0; i < d->nmon_removed + d->nremoved; i++) {
        cl_peer_t *p = i < d->nmon_removed ? d->mon_removed[i] : d->removed[i - d->nmon_removed];
        if (memcmp(p->key, m->ctx.self_key, 32) != 0)
            m->ctx.forget(arg, p);
    }
    if (d->self_removed && is_member(m))
        m->ctx.join_again(arg);
    if (d->group_closed_now) {
        cl_peer_t *grp[1];
        size_t n = cl_member_group(m->ctx.members, grp, 1);
        cl_debug("the group of the world communicator is formed: %zu peers", n);
    }
    m->ctx.fan_out_view(arg);
}

void eng_member_commit(eng_member_t *m, cl_member_delta_t *d)
{
    apply_delta(m, d);
    cl_member_delta_clear(d);
    broadcast_view(m);
    m->ctx.match_check(m->ctx.arg, now(m)); /* e.g. the last rank just joined */
}

/* Coordinator: a member's weight changed, which starts a new group
   generation (docs/membership.md §2).  The coordinator records it like
   every member that installs the view, before its next collective can
   start under it, then publishes the view. */
static void weight_changed(eng_member_t *m)
{
    m->ctx.fan_out_weight(m->ctx.arg);
    broadcast_view(m);
}

void eng_member_set_weight(eng_member_t *m, double w)
{
    if (!is_member(m))
        return;
    if (m->ctx.coordinates(m->ctx.arg)) {
        m->ctx.take_over(m->ctx.arg);
        if (cl_member_set_weight(m->ctx.members, m->ctx.self_key, w) == 1)
            weight_changed(m);
        return;
    }
    cl_peer_t *c = cl_member_coordinator(m->ctx.members);
    if (c == NULL)
        return;
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_UPDATE;
    msg.u.update.weight = w;
    (void)m->ctx.send(m->ctx.arg, c, &msg);
}

void eng_member_set_figure(eng_member_t *m, uint32_t kbit)
{
    if (!is_member(m) || kbit == 0)
        return;
    if (m->ctx.coordinates(m->ctx.arg)) {
        m->ctx.take_over(m->ctx.arg);
        if (cl_member_set_figure(m->ctx.members, m->ctx.self_key, kbit, now(m), 0) == 1) {
            cl_info("this peer's bandwidth figure is now %u kbit/s (measured)", kbit);
            weight_changed(m);
        }
        return;
    }
    cl_peer_t *c = cl_member_coordinator(m->ctx.members);
    if (c == NULL || m->ctx.link_version(m->ctx.arg, c->key) < CL_WIRE_FIGURE_VERSION)
        return; /* a coordinator of an older version could not read it */
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_UPDATE;
    msg.u.update.bandwidth = kbit; /* weight 0: unchanged */
    (void)m->ctx.send(m->ctx.arg, c, &msg);
}

void eng_member_goodbye_all(eng_member_t *m)
{
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_GOODBYE;
    send_to_others(m, &msg);
}

/* ---------------------------------------------------------------------- */
/* A view from a member. */

/* The admitter's view v, which admits peers into the group, reached this
   coordinator after its own views had gone past v's epoch (a takeover
   raised it, or a view of its own took the same epoch).  Ignored, the
   admission would be undone by this peer's next view, built from records
   without it: every member would take the joiners out of the group again,
   and those in the admission's collective would wait for a generation
   that no longer comes.  So this peer adopts it: its next view puts them
   into the group under v's generation (docs/elastic.md, "An admission the
   coordinator got late").  Only while no view of this peer above v's
   epoch went out: a member that installed one and not v may have run the
   admission's collective under the generation before, and would take
   itself out on learning v's (on_view checks it). */
static void adopt_admission(eng_member_t *m, const uint8_t key[32], const cl_wire_view_t *v)
{
    cl_member_delta_t d;
    int rc = cl_member_adopt_admission(m->ctx.members, v, now(m), &d);
    if (rc == 1) {
        /* Its first action may be this one: the view goes out above any
           of a coordinator before it (the takeover raises the adopted
           view's epoch; the generation stays v's). */
        m->ctx.take_over(m->ctx.arg);
        char desc[CL_WIRE_STR_MAX + 64];
        const cl_peer_t *from = cl_member_find(m->ctx.members, key);
        cl_info("adopted the admission of group generation %llu that %s published (view %llu) "
                "after this peer's own views had gone past it",
                (unsigned long long)v->group_epoch,
                from != NULL ? m->ctx.desc(from, desc, sizeof desc) : "the admitter",
                (unsigned long long)v->epoch);
        eng_member_commit(m, &d);
        return;
    }
    cl_member_delta_clear(&d);
    if (rc < 0)
        cl_warn("could not adopt the admission of group generation %llu: %s",
                (unsigned long long)v->group_epoch, collab_strerror(rc));
}

static void on_view(eng_member_t *m, const uint8_t key[32], const cl_wire_view_t *v)
{
    bool from_member = false, has_me = false;
    for (uint32_t i = 0; i < v->count; i++) {
        if (memcmp(v->members[i].key, key, 32) == 0)
            from_member = true;
        if (memcmp(v->members[i].key, m->ctx.self_key, 32) == 0)
            has_me = true;
    }
    eng_state_t state = m->ctx.state(m->ctx.arg);
    if (!from_member || state == ENG_LEFT)
        return;
    if (state != ENG_MEMBER && !has_me)
        return;
    cl_settings_t theirs;
    cl_settings_from_wire(&v->settings, false, &theirs);
    if (m->since <= 0 && eng_settings_conflict(m->ctx.cfg, &theirs)) {
        /* Admitted, but with settings this peer must not adopt. */
        m->ctx.fail(m->ctx.arg, COLLAB_ERR_CONFIG);
        cl_wire_msg_t msg;
        memset(&msg, 0, sizeof msg);
        msg.hdr.type = CL_MSG_GOODBYE;
        (void)m->ctx.send_key(m->ctx.arg, key, &msg);
        return;
    }
    bool first = m->since <= 0;
    cl_member_delta_t d;
    int rc = cl_member_apply_view(m->ctx.members, v, now(m), &d);
    if (rc == 0 && state == ENG_MEMBER && m->sent_max <= v->epoch &&
        m->ctx.coordinates(m->ctx.arg) && m->ctx.adoptable(m->ctx.arg, key, v->group_epoch)) {
        adopt_admission(m, key, v);
        return;
    }
    if (rc == 1)
        debug_view(m, v, key);
    if (rc == 1 && first)
        m->ctx.settings_adopted(m->ctx.arg, &theirs);
    if (rc == 1)
        apply_delta(m, &d);
    cl_member_delta_clear(&d);
    if (rc == 1)
        m->ctx.match_check(m->ctx.arg, now(m)); /* a coordinator's count changed */
}

/* ---------------------------------------------------------------------- */
/* Membership's messages. */

static void on_join(eng_member_t *m, cl_peer_t *from, bool member, const uint8_t key[32],
                    const cl_wire_join_t *j)
{
    if (!is_member(m)) {
        cl_wire_msg_t r;
        memset(&r, 0, sizeof r);
        r.hdr.type = CL_MSG_JOIN_REPLY;
        r.u.join_reply.status = CL_JOIN_NOT_MEMBER;
        (void)m->ctx.reply(m->ctx.arg, key, &r);
    } else if (m->ctx.coordinates(m->ctx.arg)) {
        m->ctx.take_over(m->ctx.arg);
        m->ctx.on_join(m->ctx.arg, key, j);
    } else if (member && from->state == CL_PEER_ALIVE && !from->link_closed &&
               cl_member_coordinator(m->ctx.members) == from) {
        /* The coordinator of this view asks to join: it never got the
           view that admitted it (the coordinator before it died before
           the view went out), and a REDIRECT would send it to itself.
           Any member hands it the view.  (Another member that asks
           again is redirected: the coordinator tells a retry from a
           restart of the same identity.) */
        char desc[CL_WIRE_STR_MAX + 64];
        cl_debug("%s asks to join but is a member already; sending it the view",
                 m->ctx.desc(from, desc, sizeof desc));
        eng_member_reply_view(m, key);
    } else {
        cl_peer_t *c = cl_member_coordinator(m->ctx.members);
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
        (void)m->ctx.reply(m->ctx.arg, key, &r);
    }
}

void eng_member_message(eng_member_t *m, cl_peer_t *from, const uint8_t key[32],
                        const cl_wire_msg_t *msg)
{
    void *arg = m->ctx.arg;
    bool member = from != NULL && from->state != CL_PEER_GONE;
    switch (msg->hdr.type) {
    case CL_MSG_JOIN:
        on_join(m, from, member, key, &msg->u.join);
        break;
    case CL_MSG_JOIN_REPLY:
        m->ctx.on_join_reply(arg, key, &msg->u.join_reply);
        break;
    case CL_MSG_VIEW:
        on_view(m, key, &msg->u.view);
        m->ctx.view_from(arg, key); /* elastic hook: an answer to a PROBE */
        break;
    case CL_MSG_HEARTBEAT:
    case CL_MSG_SUSPECT:
        m->ctx.suspect_message(arg, from, key, msg);
        break;
    case CL_MSG_GOODBYE:
        /* The loop acknowledged it and tells the collectives
           (on_goodbye in cl_engine.c). */
        if (member && is_member(m))
            m->ctx.left(arg, from);
        break;
    case CL_MSG_MATCH:
        m->ctx.match_request(arg, member);
        break;
    case CL_MSG_UPDATE:
        if (member && m->ctx.coordinates(arg)) {
            m->ctx.take_over(arg);
            const cl_wire_update_t *u = &msg->u.update;
            int changed =
                u->weight > 0 ? cl_member_set_weight(m->ctx.members, from->key, u->weight) : 0;
            if (u->bandwidth > 0 && cl_member_set_figure(m->ctx.members, from->key, u->bandwidth,
                                                         now(m), ENG_FIGURE_EVERY) == 1) {
                cl_info("rank %d's bandwidth figure is now %u kbit/s (measured)", from->rank,
                        u->bandwidth);
                changed = 1;
            }
            if (changed == 1)
                weight_changed(m);
        }
        break;
    default:
        break;
    }
}
