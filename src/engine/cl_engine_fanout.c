/*  cl_engine_fanout.c - membership changes, fanned out to the rest of the
    engine.

    Each function tells the components, in a fixed order, what one view
    change did (docs/architecture.md); the loop's services are in
    cl_engine.c.
*/
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
            eng_report_peer_event(e, p, CL_EVENT_JOINED, "joined");
        }
    }
    for (size_t i = 0; i < d->nmon_added; i++) {
        cl_peer_t *p = d->mon_added[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        (void)cl_transport_connect(e->tp, p->key, p->address);
        if (!d->self_added)
            cl_info("monitor %s joined", eng_peer_desc(p, desc, sizeof desc));
        eng_report_peer_event(e, p, CL_EVENT_JOINED, "joined");
    }
    for (size_t i = 0; i < d->nmon_removed; i++) {
        cl_peer_t *p = d->mon_removed[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        cl_info("monitor %s is gone: %s", eng_peer_desc(p, desc, sizeof desc),
                eng_suspect_reason_text(p->suspect_reason));
        eng_report_peer_event(
            e, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
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
            e, p, p->suspect_reason == ENG_REASON_LEFT ? CL_EVENT_LEFT : CL_EVENT_FAILED,
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
        eng_report_peer_event(e, p, CL_EVENT_UNGROUPED, eng_suspect_reason_text(why));
        eng_coll_peer_gone(e, p);
    }
}

void eng_fan_out_view(struct cl_engine *e)
{
    eng_coll_view_changed(e);
    eng_p2p_view_changed(e->p2p);
    eng_replay_held(e);
    eng_report_view(e);
}

void eng_fan_out_member(struct cl_engine *e)
{
    eng_report_view(e); /* a monitor's picture starts with its own view */
    if (e->init_req != NULL && !cl_request_done(e->init_req))
        cl_request_complete(e->init_req, COLLAB_OK);
}

void eng_fan_out_weight(struct cl_engine *e)
{
    eng_coll_view_changed(e);
}
