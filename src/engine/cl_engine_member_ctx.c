/*  cl_engine_member_ctx.c - the contexts the loop builds for the
    components membership drives: the failure detector (eng_suspect_ctx_t,
    cl_engine_suspect.h) and matchmaking (eng_match_ctx_t,
    cl_engine_match.h), and the registration of membership's messages
    with the loop (eng_member_init).

    The adapters below are the only place where those two components meet
    struct cl_engine: the transport (send, reply, ban), the authority's
    rules, the elastic layer's step boundaries, the reports, the
    collectives' progress, and membership itself (the view sent back, a
    coordinator's commit, whether this peer coordinates, the takeover).
*/
#include "engine/cl_engine_elastic.h" /* eng_el_boundaries_known */
#include "engine/cl_engine_int.h"

/* ---------------------------------------------------------------------- */
/* The failure detector's context (cl_engine_suspect.h). */

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
    return ((struct cl_engine *)arg)->progress;
}

static double ctx_step_gap(void *arg)
{
    return ((struct cl_engine *)arg)->step_gap;
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
    return ((struct cl_engine *)arg)->waiting_for_group;
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
