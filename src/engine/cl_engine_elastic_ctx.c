/*  cl_engine_elastic_ctx.c - the elastic layer's side of the engine: the
    layer's own context (eng_el_ctx_t, el_ctx) and the elastic
    components' contexts: what the layer's logic, the donor, the audit,
    the joiner's state pull, the monitor's checkpoints, the admitter, the
    admittee and the pause see of the engine (their adapters), the
    layer's creation and destruction (eng_el_create, eng_el_destroy,
    called by the loop), and the running state pull, which only this
    file starts, replaces and frees (docs/architecture.md); also the
    world stream as the layer sees it (eng_el_world).  The hooks of
    cl_engine_elastic.h and the layer's turn of the loop are in
    cl_engine_elastic_hooks.c.  These two are the elastic files that
    include the loop's header (cl_engine_loop_int.h: they are among the
    loop's adapter files); the top comment of cl_engine_elastic.c says
    what the hooks do.
*/
#include "engine/cl_engine_elastic_int.h"
#include "engine/cl_engine_loop_int.h"

#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

static struct eng_elastic *el_of(struct cl_engine *e)
{
    return eng_parts(e)->el;
}

/* The engine as the elastic layer sees it. */

static stream_t *eng_el_world(struct cl_engine *e)
{
    return eng_cs_stream(eng_parts(e)->cs, CL_COMM_WORLD_ID, false);
}

/* The layer's own context (eng_el_ctx_t, cl_engine_elastic_int.h). */
static eng_state_t el_state(struct cl_engine *e)
{
    return eng_state(e);
}

static int el_rank(struct cl_engine *e)
{
    return eng_rank(e);
}

static int el_send(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    const eng_parts_t *ep = eng_parts(e);
    cl_peer_t *p = cl_member_find(ep->mb, key);
    if (p != NULL)
        return eng_send(e, p, m);
    return cl_transport_send(ep->tp, key, m);
}

static void el_reply_view(struct cl_engine *e, const uint8_t key[32])
{
    eng_member_reply_view(eng_parts(e)->member, key);
}

static void el_ban(struct cl_engine *e, const uint8_t key[32], double seconds)
{
    cl_transport_ban(eng_parts(e)->tp, key, seconds);
}

static void el_self_out(struct cl_engine *e)
{
    eng_report_self_out(e);
}

static const group_gen_t *el_gen(struct cl_engine *e, uint64_t gen)
{
    return eng_cs_gen(eng_parts(e)->cs, gen);
}

static bool el_in_gen(struct cl_engine *e, uint64_t gen)
{
    return eng_cs_in_gen(eng_parts(e)->cs, gen);
}

static struct stream *el_world(struct cl_engine *e)
{
    return eng_el_world(e);
}

static uint64_t el_next_seq(struct cl_engine *e, struct stream *s)
{
    (void)e;
    return eng_stream_next_seq(s);
}

static bool el_running(struct cl_engine *e, struct stream *s, uint64_t *seq, uint64_t *gen)
{
    (void)e;
    return eng_stream_running(s, seq, gen);
}

static void el_finishing(struct cl_engine *e, struct stream *s, uint64_t *seq, uint64_t *gen,
                         int *nmismatch, int *ncontrib)
{
    (void)e;
    (void)eng_stream_finishing(s, seq, gen, nmismatch, ncontrib);
}

static void el_restart(struct cl_engine *e, struct stream *s, uint64_t gen)
{
    eng_cs_restart(eng_parts(e)->cs, s, gen);
}

static void el_number(struct cl_engine *e, struct stream *s, collab_request_t *req, uint64_t seq)
{
    (void)e;
    eng_coll_number(s, req, seq);
}

static void el_drop_below(struct cl_engine *e, struct stream *s, uint64_t seq)
{
    eng_cs_drop_buffered_below(eng_parts(e)->cs, s, seq);
}

static size_t el_queued(struct cl_engine *e, struct stream *s)
{
    (void)e;
    return eng_stream_queued(s);
}

static collab_request_t *el_queue_head(struct cl_engine *e, struct stream *s)
{
    (void)e;
    return eng_stream_queue_head(s);
}

static void el_dequeue(struct cl_engine *e, struct stream *s, collab_request_t *req)
{
    (void)e;
    eng_stream_dequeue(s, req);
}

static void el_ctx(struct cl_engine *e, eng_el_ctx_t *ctx)
{
    const eng_parts_t *ep = eng_parts(e);
    *ctx = (eng_el_ctx_t){.arg = e,
                          .cfg = ep->cfg,
                          .self_key = ep->self_key,
                          .mb = ep->mb,
                          .state = el_state,
                          .rank = el_rank,
                          .send = el_send,
                          .reply_view = el_reply_view,
                          .ban = el_ban,
                          .self_out = el_self_out,
                          .gen = el_gen,
                          .in_gen = el_in_gen,
                          .world = el_world,
                          .next_seq = el_next_seq,
                          .running = el_running,
                          .finishing = el_finishing,
                          .restart = el_restart,
                          .number = el_number,
                          .drop_below = el_drop_below,
                          .queued = el_queued,
                          .queue_head = el_queue_head,
                          .dequeue = el_dequeue};
}

/* The donor's context (cl_engine_donor.h). */
static int donor_can_serve(struct cl_engine *e, uint64_t s)
{
    return eng_el_can_serve(e, s);
}

/* The audit's context (cl_engine_audit.h). */
static bool audit_multigroup(struct cl_engine *e)
{
    return eng_coll_multigroup(e);
}

/* What the donor, the audit, the admitter, the admittee, the state sync
   and the checkpoints ask alike (their contexts are typed:
   docs/architecture.md, "Typed contexts"). */
static int elmsg_send(struct cl_engine *e, const uint8_t key[32], const cl_elmsg_t *m)
{
    return eng_elastic_send(eng_parts(e)->el, key, m);
}

static cl_peer_t *const *member_list(struct cl_engine *e, size_t *n)
{
    return cl_member_list(eng_parts(e)->mb, n);
}

static cl_peer_t *member_find(struct cl_engine *e, const uint8_t key[32])
{
    return cl_member_find(eng_parts(e)->mb, key);
}

/* The joiner's sync's context (cl_engine_sync.h): built at each start. */
static int sync_rank(struct cl_engine *e)
{
    return eng_rank(e);
}

static bool sync_split(struct cl_engine *e, const cl_el_joiner_t *js, uint32_t nj, int *members,
                       int *target_group)
{
    *target_group = cl_member_settings(eng_parts(e)->mb)->target_group;
    return eng_el_split_admission(e, js, nj, members);
}

static void sync_finished(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    if (ep->cfg->monitor)
        eng_ckpt_fetched(ep->el->ckpt, ep->el->sync); /* a checkpoint, not an admission */
    else
        eng_admittee_sync_finished(ep->el->admittee);
}

/* This peer's own size of a start-up item (eng_sync_ctx_t.own_size): a
   monitor has none; a straggler has its registry; a joiner tells each
   when its program posts it (eng_sync_want). */
static int sync_own_size(struct cl_engine *e, int what, uint64_t index, uint64_t *size)
{
    const eng_parts_t *ep = eng_parts(e);
    if (ep->cfg->monitor)
        return 2;
    if (!ep->el->st.readmit)
        return 0;
    cl_statereg_entry_t ent;
    if (what != CL_EL_ITEM_BUFFER || cl_statereg_find(ep->el->reg, index, &ent) != COLLAB_OK)
        return -1; /* a straggler overwrites its registered buffers only */
    *size = ent.bytes;
    return 1;
}

static void sync_ctx(struct cl_engine *e, eng_sync_ctx_t *ctx)
{
    const eng_parts_t *ep = eng_parts(e);
    *ctx = (eng_sync_ctx_t){.arg = e,
                            .cfg = ep->cfg,
                            .self_key = ep->self_key,
                            .timers = ep->timers,
                            .now = eng_ctx_clock,
                            .send = elmsg_send,
                            .rank = sync_rank,
                            .members = member_list,
                            .find = member_find,
                            .split = sync_split,
                            .own_size = sync_own_size,
                            .finished = sync_finished};
}

/* The running pull of the state: this file alone starts, replaces and
   frees it (el->sync). */
const el_sync_t *eng_el_sync(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    return ep->el != NULL ? ep->el->sync : NULL;
}

bool eng_el_sync_start(struct cl_engine *e, uint64_t s, const cl_elmsg_t *admit,
                       const uint8_t *admitter)
{
    struct eng_elastic *el = el_of(e);
    eng_sync_destroy(&el->sync);
    eng_sync_ctx_t sctx;
    sync_ctx(e, &sctx);
    el->sync = eng_sync_start(&sctx, s, admit, admitter);
    return el->sync != NULL;
}

bool eng_el_sync_start_one(struct cl_engine *e, uint64_t s, const uint8_t key[32])
{
    struct eng_elastic *el = el_of(e);
    eng_sync_destroy(&el->sync);
    eng_sync_ctx_t sctx;
    sync_ctx(e, &sctx);
    el->sync = eng_sync_start_one(&sctx, s, key);
    return el->sync != NULL;
}

void eng_el_sync_check_donors(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL && el->sync != NULL)
        eng_sync_view_changed(el->sync);
}

void eng_el_sync_stop(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_sync_destroy(&el->sync);
}

/* The checkpoints' context (cl_engine_checkpoint.h). */
static bool ckpt_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static cl_peer_t *ckpt_admitter(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    return cl_member_admitter(ep->mb);
}

static bool ckpt_group_closed(struct cl_engine *e)
{
    return cl_member_group_closed(eng_parts(e)->mb);
}

static bool ckpt_fresh(struct cl_engine *e)
{
    struct eng_elastic *el = eng_parts(e)->el;
    return el->st.posted == 0 && el->st.phase == EL_IN && !el->st.mapped;
}

static void ckpt_keep_copy(struct cl_engine *e, uint64_t s, const uint8_t key[32],
                           bool now_if_blocked)
{
    struct eng_elastic *el = eng_parts(e)->el;
    cl_el_joiner_t who;
    memset(&who, 0, sizeof who);
    memcpy(who.key, key, 32);
    eng_donor_forget(el->donor, key);
    eng_donor_expect(el->donor, s, &who, 1);
    if (!now_if_blocked)
        return;
    stream_t *w = eng_el_world(e);
    if (w != NULL && eng_stream_next_seq(w) > s && el->done_seq <= s)
        eng_donor_on_post(el->donor, s);
}

static bool ckpt_fetch(struct cl_engine *e, uint64_t s, const uint8_t admitter[32])
{
    cl_elmsg_t none;
    memset(&none, 0, sizeof none);
    if (!eng_el_sync_start(e, s, &none, admitter))
        return false;
    eng_el_sync_check_donors(e);
    return true;
}

bool eng_el_monitor_accepts(struct cl_engine *e, int sub)
{
    const eng_parts_t *ep = eng_parts(e);
    return ep->el != NULL && eng_ckpt_monitor_accepts(ep->el->ckpt, sub);
}

void eng_el_on_admit_rank(struct cl_engine *e, const uint8_t key[32])
{
    const eng_parts_t *ep = eng_parts(e);
    if (ep->el != NULL)
        eng_ckpt_on_admit_rank(ep->el->ckpt, key);
}

bool eng_el_copy_expected(struct cl_engine *e, const uint8_t key[32])
{
    const eng_parts_t *ep = eng_parts(e);
    return ep->el != NULL && eng_donor_expects(ep->el->donor, UINT64_MAX, key);
}

/* Members whose state differs from the group's: the coordinator, which
   alone changes views, takes them out of the group. */
static void audit_take_out(struct cl_engine *e, const uint8_t (*keys)[32], size_t n)
{
    const eng_parts_t *ep = eng_parts(e);
    if (!eng_self_coordinates(e))
        return;
    eng_take_over(e);
    cl_member_delta_t d;
    if (cl_member_ungroup(ep->mb, keys, n, &d) == 1)
        eng_member_commit(ep->member, &d);
    else
        cl_member_delta_clear(&d);
}

/* The admitter's context (cl_engine_admitter.h). */
static bool admitter_may(struct cl_engine *e)
{
    const struct eng_elastic *el = eng_parts(e)->el;
    return eng_state(e) == ENG_MEMBER && !el->st.evicted && el->st.phase == EL_IN;
}

static bool admitter_split(struct cl_engine *e, const cl_el_joiner_t *js, uint32_t nj)
{
    return eng_el_split_admission(e, js, nj, NULL);
}

static void admitter_remember(struct cl_engine *e, const cl_elmsg_t *admit)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_elastic_remember(ep->el, admit, ep->self_key);
}

static void admitter_commit(struct cl_engine *e, cl_member_delta_t *d)
{
    eng_member_commit(eng_parts(e)->member, d);
}

static void admitter_serve_alone(struct cl_engine *e, uint64_t s, const cl_el_joiner_t *js,
                                 uint32_t nj)
{
    eng_donor_expect(eng_parts(e)->el->donor, s, js, nj);
}

static void admitter_boundary(struct cl_engine *e, uint64_t seq, uint64_t idx)
{
    eng_ckpt_on_boundary(eng_parts(e)->el->ckpt, seq, idx);
}

static void admitter_idle(struct cl_engine *e, uint64_t seq, uint64_t step)
{
    eng_audit_maybe_start(eng_parts(e)->el->audit, seq, step);
}

/* The admittee's context (cl_engine_admittee.h). */
static const cl_peer_t *admittee_admitter(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    return cl_member_admitter(ep->mb);
}

static bool admittee_regroup(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    if (!eng_self_coordinates(e))
        return false;
    eng_take_over(e);
    cl_member_delta_t d;
    if (cl_member_regroup_self(ep->mb, &d) == 1) {
        eng_member_commit(ep->member, &d);
        return true;
    }
    cl_member_delta_clear(&d);
    return false;
}

static void admittee_seen(struct cl_engine *e, const cl_elmsg_t *m, const uint8_t *admitter)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_elastic_remember(ep->el, m, admitter);
    eng_elastic_check_admissions(ep->el);
}

static int admittee_submit(struct cl_engine *e, collab_request_t *req, uint64_t seq, uint64_t next)
{
    return eng_cs_submit_at(eng_parts(e)->cs, req, seq, next);
}

static void admittee_renumber(struct cl_engine *e, uint64_t started, uint64_t next)
{
    eng_cs_renumber(eng_parts(e)->cs, started, next);
}

static void admittee_stand(struct cl_engine *e, el_st_field_t f, uint64_t v)
{
    eng_elastic_stand(eng_parts(e)->el, f, v);
}

static size_t admittee_take_back(struct cl_engine *e, collab_request_t **taken, size_t max)
{
    stream_t *w = eng_el_world(e);
    return w != NULL ? eng_coll_take_back(w, taken, max) : 0;
}

static bool admittee_sync_start(struct cl_engine *e, uint64_t s, const cl_elmsg_t *admit,
                                const uint8_t *admitter)
{
    return eng_el_sync_start(e, s, admit, admitter);
}

static bool admittee_sync_start_one(struct cl_engine *e, uint64_t s, const uint8_t key[32])
{
    return eng_el_sync_start_one(e, s, key);
}

static int admittee_sync_want(struct cl_engine *e, int what, uint64_t index, uint64_t size)
{
    return eng_sync_want(eng_parts(e)->el->sync, what, index, size);
}

static void admittee_sync_check(struct cl_engine *e)
{
    eng_el_sync_check_donors(e);
}

static void admittee_sync_stop(struct cl_engine *e)
{
    eng_el_sync_stop(e);
}

static bool admittee_take_resume(struct cl_engine *e, eng_ckpt_resume_t *r)
{
    return eng_ckpt_take_resume(eng_parts(e)->el->ckpt, r);
}

static void admittee_resuming(struct cl_engine *e)
{
    eng_ckpt_resuming(eng_parts(e)->el->ckpt);
}

static void admittee_leave(struct cl_engine *e, int status)
{
    eng_leave(e, status);
}

/* The pause's context (cl_engine_pause.h). */
static double pause_raw_now(struct cl_engine *e)
{
    (void)e;
    return eng_raw_now();
}

static void pause_not_running(struct cl_engine *e, double seconds)
{
    (void)e;
    eng_add_not_running(seconds);
}

static bool pause_is_member(struct cl_engine *e)
{
    return eng_state(e) == ENG_MEMBER;
}

static void pause_excuse(struct cl_engine *e, cl_peer_t *p, double now)
{
    eng_member_excuse(e, p, now);
}

static void pause_probe_start(struct cl_engine *e)
{
    eng_auth_probe_start(eng_parts(e)->auth);
}

/* Asks p for its view after a pause: the authority tallies its answer;
   whoever took us out forgot our connection to it, so a fresh one is
   opened before anything else goes out; then the PROBE. */
static void pause_ask(struct cl_engine *e, const cl_peer_t *p)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_auth_note_probe_sent(ep->auth, p->key); /* its answer (a view) is tallied */
    if (!p->client && p->address[0] != '\0')
        (void)cl_transport_reconnect(ep->tp, p->key, p->address);
    eng_el_probe(e, p->key);
}

static bool pause_undecided(struct cl_engine *e)
{
    return eng_auth_went_on(eng_parts(e)->auth);
}

static void pause_resume(struct cl_engine *e)
{
    eng_cs_start_queued(eng_parts(e)->cs);
}

void eng_el_abort(struct cl_engine *e, int status)
{
    const eng_parts_t *ep = eng_parts(e);
    if (ep->el != NULL)
        eng_admittee_abort(ep->el->admittee, status);
}

int eng_el_create(struct cl_engine *e, struct eng_elastic **out)
{
    const eng_parts_t *ep = eng_parts(e);
    *out = NULL;
    eng_el_ctx_t ectx;
    el_ctx(e, &ectx);
    struct eng_elastic *el = eng_elastic_new(&ectx);
    if (el == NULL)
        return COLLAB_ERR_NO_MEM;
    eng_pause_ctx_t pctx = {.arg = e,
                            .cfg = ep->cfg,
                            .hb_interval = ep->hb_interval,
                            .members = ep->mb,
                            .timers = ep->timers,
                            .now = eng_ctx_clock,
                            .raw_now = pause_raw_now,
                            .not_running = pause_not_running,
                            .is_member = pause_is_member,
                            .excuse = pause_excuse,
                            .probe_start = pause_probe_start,
                            .undecided = pause_undecided,
                            .ask = pause_ask,
                            .resume = pause_resume};
    memcpy(pctx.self_key, ep->self_key, 32);
    el->pause = eng_pause_new(&pctx);
    eng_donor_ctx_t dctx = {.arg = e,
                            .reg = el->reg,
                            .startup = el->startup,
                            .cfg = ep->cfg,
                            .timers = ep->timers,
                            .now = eng_ctx_clock,
                            .send = elmsg_send,
                            .can_serve = donor_can_serve};
    el->donor = eng_donor_new(&dctx);
    eng_audit_ctx_t actx = {.arg = e,
                            .reg = el->reg,
                            .cfg = ep->cfg,
                            .self_key = ep->self_key,
                            .timers = ep->timers,
                            .now = eng_ctx_clock,
                            .send = elmsg_send,
                            .multigroup = audit_multigroup,
                            .members = member_list,
                            .find = member_find,
                            .take_out = audit_take_out};
    el->audit = eng_audit_new(&actx);
    eng_admitter_ctx_t mctx = {.arg = e,
                               .cfg = ep->cfg,
                               .self_key = ep->self_key,
                               .mb = ep->mb,
                               .stream = el->stream,
                               .startup = el->startup,
                               .reg = el->reg,
                               .kinds = el->kinds,
                               .timers = ep->timers,
                               .now = eng_ctx_clock,
                               .send = elmsg_send,
                               .may_admit = admitter_may,
                               .split = admitter_split,
                               .remember = admitter_remember,
                               .commit = admitter_commit,
                               .serve_alone = admitter_serve_alone,
                               .boundary = admitter_boundary,
                               .idle = admitter_idle};
    el->admitter = eng_admitter_new(&mctx);
    eng_admittee_ctx_t tctx = {.arg = e,
                               .cfg = ep->cfg,
                               .self_key = ep->self_key,
                               .mb = ep->mb,
                               .st = &el->st,
                               .stream = el->stream,
                               .reg = el->reg,
                               .startup = el->startup,
                               .timers = ep->timers,
                               .now = eng_ctx_clock,
                               .send = elmsg_send,
                               .member = ckpt_is_member,
                               .admitter = admittee_admitter,
                               .regroup = admittee_regroup,
                               .self_out = el_self_out,
                               .seen = admittee_seen,
                               .submit = admittee_submit,
                               .renumber = admittee_renumber,
                               .take_back = admittee_take_back,
                               .sync = eng_el_sync,
                               .sync_start = admittee_sync_start,
                               .sync_start_one = admittee_sync_start_one,
                               .sync_want = admittee_sync_want,
                               .sync_check = admittee_sync_check,
                               .sync_stop = admittee_sync_stop,
                               .take_resume = admittee_take_resume,
                               .resuming = admittee_resuming,
                               .leave = admittee_leave,
                               .signature = eng_el_signature,
                               .result_span = eng_el_result_span,
                               .kind_name = eng_coll_kind_name,
                               .stand = admittee_stand};
    el->admittee = eng_admittee_new(&tctx);
    *out = el;
    if (el->admitter == NULL || el->admittee == NULL || el->donor == NULL || el->audit == NULL ||
        el->pause == NULL) {
        eng_el_destroy(out);
        return COLLAB_ERR_NO_MEM;
    }
    eng_ckpt_ctx_t cctx = {.arg = e,
                           .cfg = ep->cfg,
                           .self_key = ep->self_key,
                           .stream = el->stream,
                           .now = eng_ctx_clock,
                           .send = elmsg_send,
                           .member = ckpt_is_member,
                           .admitter = ckpt_admitter,
                           .members = member_list,
                           .find = member_find,
                           .group_closed = ckpt_group_closed,
                           .fresh = ckpt_fresh,
                           .keep_copy = ckpt_keep_copy,
                           .sync = eng_el_sync,
                           .fetch = ckpt_fetch,
                           .timers = ep->timers};
    int rc = eng_ckpt_new(&cctx, &el->ckpt);
    if (rc != COLLAB_OK)
        eng_el_destroy(out);
    else
        eng_on_type(e, CL_MSG_ELASTIC, eng_el_on_message); /* by sub, there */
    return rc;
}

void eng_el_destroy(struct eng_elastic **elp)
{
    struct eng_elastic *el = *elp;
    if (el == NULL)
        return;
    eng_admittee_destroy(&el->admittee); /* completes what it holds: COLLAB_ERR_NOT_INIT */
    eng_admitter_destroy(&el->admitter);
    eng_sync_destroy(&el->sync);
    eng_audit_destroy(&el->audit);
    eng_donor_destroy(&el->donor);
    eng_ckpt_destroy(&el->ckpt);
    eng_pause_destroy(&el->pause);
    eng_elastic_destroy(&el); /* the world stream's record, the registry, the ADMITs kept */
    *elp = NULL;
}
