/*  cl_engine_fanout.c - membership changes, fanned out to the rest of the
    engine.

    Each function tells the components, in a fixed order, what one view
    change did (docs/architecture.md); the loop's services are in
    cl_engine.c.  The reports' component (cl_engine_report.c) and the
    point-to-point component (cl_engine_p2p.c) get their contexts here
    too: the engine's adapters for them.
*/
#include "elastic/cl_stream.h"
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* Membership changes, fanned out to the rest of the engine.  Membership
   (cl_engine_member.c) updates its own records and calls these; it never
   calls point-to-point, the collective streams, the reports or the
   transport's connections itself. */

void eng_fan_out_peers(struct cl_engine *e, const cl_member_delta_t *d)
{
    char desc[CL_WIRE_STR_MAX + 64];
    for (size_t i = 0; i < d->nadded; i++) {
        cl_peer_t *p = d->added[i];
        eng_p2p_mark_seen(e->p2p, p->rank);
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        if (!p->client && p->address[0] != '\0')
            (void)cl_transport_connect(e->tp, p->key, p->address);
        else if (p->client)
            (void)cl_transport_expect_client(e->tp, p->key); /* its connection may come later */
        if (!d->self_added) {
            /* A monitor logs joins and failures in its own words (hooks). */
            cl_log(e->cfg.monitor ? CL_LOG_DEBUG : CL_LOG_INFO, "%s joined",
                   eng_peer_desc(p, desc, sizeof desc));
            eng_report_peer_event(e->rep, p, CL_EVENT_JOINED, "joined");
        }
    }
    for (size_t i = 0; i < d->nmon_added; i++) {
        cl_peer_t *p = d->mon_added[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        (void)cl_transport_connect(e->tp, p->key, p->address);
        if (!d->self_added)
            cl_info("monitor %s joined", eng_peer_desc(p, desc, sizeof desc));
        eng_report_peer_event(e->rep, p, CL_EVENT_JOINED, "joined");
    }
    for (size_t i = 0; i < d->nmon_removed; i++) {
        cl_peer_t *p = d->mon_removed[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        cl_info("monitor %s is gone: %s", eng_peer_desc(p, desc, sizeof desc),
                eng_suspect_reason_text(p->suspect_reason));
        eng_report_peer_event(
            e->rep, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
            eng_suspect_reason_text(p->suspect_reason));
        cl_transport_drop(e->tp, p->key);
    }
    for (size_t i = 0; i < d->nremoved; i++) {
        cl_peer_t *p = d->removed[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        cl_log_level_t lv = e->cfg.monitor ? CL_LOG_DEBUG : CL_LOG_WARN;
        if (p->suspect_reason == ENG_REASON_LEFT)
            cl_log(e->cfg.monitor ? CL_LOG_DEBUG : CL_LOG_INFO, "%s left the swarm",
                   eng_peer_desc(p, desc, sizeof desc));
        else if (p->suspect_reason != 0)
            cl_log(lv, "%s failed: %s", eng_peer_desc(p, desc, sizeof desc),
                   eng_suspect_reason_text(p->suspect_reason));
        else
            cl_log(lv, "%s is gone (the coordinator removed it from the swarm)",
                   eng_peer_desc(p, desc, sizeof desc));
        eng_report_peer_event(
            e->rep, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
            p->suspect_reason != 0 ? eng_suspect_reason_text(p->suspect_reason)
                                   : "removed by the coordinator");
        eng_coll_peer_gone(e, p);
        eng_p2p_peer_gone(e->p2p, p);
        cl_transport_drop(e->tp, p->key);
    }
    for (size_t i = 0; i < d->nungrouped; i++) {
        cl_peer_t *p = d->ungrouped[i];
        int why = p->suspect_reason != 0 ? p->suspect_reason : CL_SUSPECT_STRAGGLER;
        if (memcmp(p->key, e->self_key, 32) == 0)
            cl_warn("this peer was taken out of the group (%s); it waits to be admitted again",
                    eng_suspect_reason_text(p->suspect_reason));
        else
            cl_warn("%s left the group: %s", eng_peer_desc(p, desc, sizeof desc),
                    eng_suspect_reason_text(why));
        eng_report_peer_event(e->rep, p, CL_EVENT_UNGROUPED, eng_suspect_reason_text(why));
        eng_coll_peer_gone(e, p);
    }
}

void eng_fan_out_view(struct cl_engine *e)
{
    eng_coll_view_changed(e);
    eng_p2p_view_changed(e->p2p);
    eng_replay_held(e);
    eng_report_view(e->rep);
    eng_relay_view(e);
}

void eng_fan_out_member(struct cl_engine *e)
{
    eng_report_view(e->rep); /* a monitor's picture starts with its own view */
    eng_coll_member(e);      /* their timers run while this peer is a member */
    eng_p2p_member(e->p2p);
    eng_el_member(e);   /* a monitor's checkpoints */
    eng_auth_member(e); /* a pause's round of a former membership ends */
    if (e->init_req != NULL && !cl_request_done(e->init_req))
        cl_request_complete(e->init_req, COLLAB_OK);
}

void eng_fan_out_weight(struct cl_engine *e)
{
    eng_coll_view_changed(e);
}

/* ---------------------------------------------------------------------- */
/* The reports' context (cl_engine_report.h). */

static double rep_now(void *arg)
{
    (void)arg;
    return eng_now();
}

static double rep_raw_now(void *arg)
{
    (void)arg;
    return eng_raw_now();
}

static bool rep_is_member(void *arg)
{
    return ((struct cl_engine *)arg)->state == ENG_MEMBER;
}

static cl_peer_t *rep_self(void *arg)
{
    return cl_member_self(((struct cl_engine *)arg)->mb);
}

static cl_peer_t *const *rep_members(void *arg, size_t *n)
{
    return cl_member_list(((struct cl_engine *)arg)->mb, n);
}

static cl_peer_t *const *rep_monitors(void *arg, size_t *n)
{
    return cl_member_monitors(((struct cl_engine *)arg)->mb, n);
}

static int rep_compression(void *arg)
{
    return cl_member_settings(((struct cl_engine *)arg)->mb)->compression;
}

static int rep_view(void *arg, cl_wire_view_t *out)
{
    return cl_member_view(((struct cl_engine *)arg)->mb, out);
}

/* Steps: MPIX_Collab_step calls, else those of the period the elastic
   layer learned on the world stream. */
static uint64_t rep_steps(void *arg)
{
    struct cl_engine *e = arg;
    if (e->steps > 0)
        return e->steps;
    if (e->el == NULL || e->el->stream == NULL)
        return 0;
    uint64_t period = cl_stream_period(e->el->stream);
    uint64_t count = cl_stream_count(e->el->stream), prefix = cl_stream_prefix(e->el->stream);
    if (period == 0 || prefix == CL_STREAM_NONE || count <= prefix)
        return 0;
    return (count - prefix) / period;
}

static uint64_t rep_progress(void *arg)
{
    return ((struct cl_engine *)arg)->progress;
}

static int rep_send(void *arg, cl_peer_t *p, cl_wire_msg_t *m)
{
    return eng_send(arg, p, m);
}

static void on_report(struct cl_engine *e, cl_peer_t *from, const uint8_t key[32],
                      const cl_wire_msg_t *m)
{
    (void)key;
    eng_report_on_msg(e->rep, from, &m->u.report);
}

int eng_report_init(struct cl_engine *e)
{
    eng_report_ctx_t ctx = {.arg = e,
                            .cfg = &e->cfg,
                            .timers = e->timers,
                            .hooks = &e->hooks,
                            .now = rep_now,
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
    e->rep = eng_report_new(&ctx);
    if (e->rep == NULL)
        return COLLAB_ERR_NO_MEM;
    eng_on_type(e, CL_MSG_REPORT, on_report);
    return COLLAB_OK;
}

void eng_report_fini(struct cl_engine *e)
{
    eng_report_destroy(&e->rep);
}

int cl_engine_report_value(cl_engine_t *e, const char *name, double value)
{
    return eng_report_set_value(e->rep, name, value);
}

/* ---------------------------------------------------------------------- */
/* The context of the point-to-point component (cl_engine_p2p.h): what it
   may ask of the engine. */

static double p2p_now(void *arg)
{
    (void)arg;
    return eng_now();
}

static int p2p_self_rank(void *arg)
{
    struct cl_engine *e = arg;
    return atomic_load(&e->rank);
}

static bool p2p_is_member(void *arg)
{
    const struct cl_engine *e = arg;
    return e->state == ENG_MEMBER;
}

static double p2p_member_since(void *arg)
{
    const struct cl_engine *e = arg;
    return e->member_since;
}

static cl_peer_t *p2p_member_at(void *arg, int w)
{
    const struct cl_engine *e = arg;
    return cl_member_at_rank(e->mb, w);
}

static int p2p_send(void *arg, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_send_now(arg, to, m); /* a COLL message from a FIFO was counted */
}

static bool p2p_comm_rank_is(void *arg, uint64_t comm, int r, int w)
{
    const struct cl_engine *e = arg;
    for (size_t i = 0; i < e->nstreams; i++) {
        const stream_t *s = e->streams[i];
        if (s->comm_id == comm && s->comm != NULL && cl_comm_world_of(s->comm, r) != w)
            return false;
    }
    return true;
}

static int p2p_link_version(void *arg, const uint8_t key[32])
{
    const struct cl_engine *e = arg;
    return cl_transport_link_version(e->tp, key);
}

static void p2p_ban(void *arg, const uint8_t key[32], double seconds)
{
    const struct cl_engine *e = arg;
    cl_transport_ban(e->tp, key, seconds);
}

eng_p2p_t *eng_p2p_create(struct cl_engine *e)
{
    eng_p2p_ctx_t ctx = {.arg = e,
                         .cfg = &e->cfg,
                         .t0 = e->t0,
                         .timers = e->timers,
                         .incarnation = e->incarnation,
                         .now = p2p_now,
                         .self_rank = p2p_self_rank,
                         .is_member = p2p_is_member,
                         .member_since = p2p_member_since,
                         .member_at = p2p_member_at,
                         .send = p2p_send,
                         .desc = eng_peer_desc,
                         .comm_rank_is = p2p_comm_rank_is,
                         .link_version = p2p_link_version,
                         .ban = p2p_ban,
                         .early_queued = eng_coll_early_queued,
                         .coll_waits_for = eng_coll_waits_for};
    return eng_p2p_new(&ctx);
}
