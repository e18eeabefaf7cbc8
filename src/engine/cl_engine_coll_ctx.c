/*  cl_engine_coll_ctx.c - the collective streams' context (cl_engine_coll.h),
    an adapter of the loop.

    eng_coll_create builds eng_cs_ctx_t from the engine (its configuration,
    key and identity, the membership's records, the loop's timer set, the
    transport and the components the streams ask: departures, groups,
    authority, suspicion, point-to-point, reports), with the loop's
    functions and the elastic hooks as callbacks whose arg is the engine,
    typed (struct cl_engine *e; docs/architecture.md, "Typed contexts"),
    and data_seen, which hands a sender's measured bandwidth to the
    membership's records (cl_member_data_seen), and returns the streams to
    the loop, which keeps them in its parts (eng_parts(e)->cs) and then
    makes the elastic layer, whose adapters ask the streams there
    (eng_cs_stream, eng_cs_restart, ...).  Engine thread only.
*/
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_loop_int.h"

#include <stdatomic.h>

/* The streams name the elastic layer's answers by their own constants. */
_Static_assert(ENG_CS_GEN_DEFAULT == ENG_EL_DEFAULT, "ENG_CS_GEN_DEFAULT");
_Static_assert(ENG_CS_ROUTE_DEFAULT == (int)ENG_EL_ROUTE_DEFAULT &&
                   ENG_CS_ROUTE_RESTART == (int)ENG_EL_ROUTE_RESTART &&
                   ENG_CS_ROUTE_NOTIFY == (int)ENG_EL_ROUTE_NOTIFY &&
                   ENG_CS_ROUTE_KEEP == (int)ENG_EL_ROUTE_KEEP,
               "ENG_CS_ROUTE_*");

static int cs_rank(struct cl_engine *e)
{
    return eng_rank(e);
}

static int cs_world_size(struct cl_engine *e)
{
    return eng_world_size(e);
}

static bool cs_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static uint64_t cs_steps(struct cl_engine *e)
{
    return eng_steps(e);
}

static bool cs_stopping(struct cl_engine *e)
{
    return eng_leaving(e);
}

static int cs_send(struct cl_engine *e, const cl_peer_t *to, cl_wire_msg_t *m)
{
    return eng_send(e, to, m);
}

static void cs_set_info(struct cl_engine *e, const collab_info_t *info)
{
    eng_set_info(e, info);
}

/* The streams hold the peer records read only; what they tell about one
   goes back to membership, their one writer (docs/architecture.md,
   "Shared"), with the record membership finds for its key (NULL: none
   any more, nothing to tell). */
static cl_peer_t *record(struct cl_engine *e, const cl_peer_t *p)
{
    return cl_member_find(eng_parts(e)->mb, p->key);
}

static void cs_answered(struct cl_engine *e, const cl_peer_t *p)
{
    cl_peer_t *rec = record(e, p);
    if (rec != NULL)
        eng_member_answered(e, rec);
}

static void cs_report_late(struct cl_engine *e, const cl_peer_t *p, int reason)
{
    cl_peer_t *rec = record(e, p);
    if (rec != NULL)
        eng_report_late(e, rec, reason);
}

static void cs_report_corrupt(struct cl_engine *e, const cl_peer_t *p)
{
    cl_peer_t *rec = record(e, p);
    if (rec != NULL)
        eng_report_corrupt(e, rec);
}

static int cs_verify_target(struct cl_engine *e, const int *ranks, int n, const collab_comm_t *comm)
{
    return eng_verify_target(e, ranks, n, comm);
}

static void cs_request_match(struct cl_engine *e)
{
    eng_request_match(e);
}

/* The elastic hooks, with the engine. */

static bool cs_el_in_doubt(struct cl_engine *e)
{
    return eng_el_in_doubt(e);
}

static bool cs_el_on_post(struct cl_engine *e, stream_t *s, collab_request_t *req, bool again)
{
    return eng_el_on_post(e, s, req, again);
}

static void cs_el_on_done(struct cl_engine *e, stream_t *s, collab_request_t *req, int status)
{
    eng_el_on_done(e, s, req, status);
}

static void cs_el_view_changed(struct cl_engine *e)
{
    eng_el_view_changed(e);
}

static void cs_el_on_fast(struct cl_engine *e, stream_t *s, const collab_request_t *req)
{
    eng_el_on_fast(e, s, req);
}

static bool cs_el_fast_ok(struct cl_engine *e, stream_t *s)
{
    return eng_el_fast_ok(e, s);
}

static uint64_t cs_el_period(struct cl_engine *e)
{
    return eng_el_period(e);
}

static uint64_t cs_el_choose_gen(struct cl_engine *e, stream_t *s, uint64_t seq)
{
    return eng_el_choose_gen(e, s, seq);
}

static bool cs_el_gen_ok(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t gen)
{
    return eng_el_gen_ok(e, s, seq, gen);
}

static int cs_el_route(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t cur, uint64_t hgen)
{
    return (int)eng_el_route(e, s, seq, cur, hgen);
}

static bool cs_el_takes_part(struct cl_engine *e, const collab_comm_t *comm, int w, uint64_t seq,
                             double *weight)
{
    return eng_el_takes_part(e, comm, w, seq, weight);
}

static void cs_data_seen(struct cl_engine *e, const cl_peer_t *p, size_t bytes, double now)
{
    cl_member_data_seen(eng_parts(e)->mb, p->key, bytes, now);
}

eng_cs_t *eng_coll_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_cs_ctx_t ctx = {.arg = e,
                        .cfg = ep->cfg,
                        .id = ep->id,
                        .mb = ep->mb,
                        .timers = ep->timers,
                        .tp = ep->tp,
                        .leave = ep->leave,
                        .groups = ep->groups,
                        .auth = ep->auth,
                        .susp = ep->susp,
                        .p2p = ep->p2p,
                        .rep = ep->rep,
                        .now = eng_ctx_clock,
                        .rank = cs_rank,
                        .world_size = cs_world_size,
                        .is_member = cs_is_member,
                        .steps = cs_steps,
                        .stopping = cs_stopping,
                        .send = cs_send,
                        .desc = eng_peer_desc,
                        .set_info = cs_set_info,
                        .answered = cs_answered,
                        .report_late = cs_report_late,
                        .report_corrupt = cs_report_corrupt,
                        .verify_target = cs_verify_target,
                        .request_match = cs_request_match,
                        .el_in_doubt = cs_el_in_doubt,
                        .el_on_post = cs_el_on_post,
                        .el_on_done = cs_el_on_done,
                        .el_view_changed = cs_el_view_changed,
                        .el_on_fast = cs_el_on_fast,
                        .el_fast_ok = cs_el_fast_ok,
                        .el_period = cs_el_period,
                        .el_choose_gen = cs_el_choose_gen,
                        .el_gen_ok = cs_el_gen_ok,
                        .el_route = cs_el_route,
                        .el_takes_part = cs_el_takes_part,
                        .data_seen = cs_data_seen};
    memcpy(ctx.self_key, ep->self_key, 32);
    return eng_cs_new(&ctx);
}
