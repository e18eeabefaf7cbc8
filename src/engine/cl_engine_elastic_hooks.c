/*  cl_engine_elastic_hooks.c - the elastic layer's hooks for the rest of
    the engine (cl_engine_elastic.h): thin wrappers that check that the
    layer exists and that a stream is the world's (asked of the streams
    through eng_stream_*, since the stream record is theirs), then let
    the logic in cl_engine_elastic.c answer; whether an admission makes
    world all-reduces run in several groups (eng_el_split_admission,
    which reads only the membership's records); and the layer's turn of
    the loop (eng_el_after_timers, which the loop calls every turn right
    after its timers: docs/architecture.md, "Timers"), the PROBE a peer
    back from a pause sends (eng_el_probe), eng_el_member and the pause's
    hooks.  One of the loop's adapter files (cl_engine_loop_int.h); the
    layer's contexts, creation and destruction are in
    cl_engine_elastic_ctx.c.
*/
#include "engine/cl_engine_elastic_int.h"
#include "engine/cl_engine_loop_int.h"

#include "elastic/cl_moshpit.h"

#include <string.h>

static struct eng_elastic *el_of(struct cl_engine *e)
{
    return eng_parts(e)->el;
}

static bool is_world(const stream_t *s)
{
    return eng_stream_is_world(s);
}

/* ---------------------------------------------------------------------- */
/* The hooks of cl_engine_elastic.h: the layer exists, the stream is the
   world's; then its logic (cl_engine_elastic.c) answers. */

int eng_el_can_serve(struct cl_engine *e, uint64_t s)
{
    return eng_elastic_can_serve(eng_parts(e)->el, s);
}

bool eng_el_on_post(struct cl_engine *e, stream_t *s, collab_request_t *req, bool again)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL || !is_world(s))
        return false;
    return eng_elastic_on_post(el, s, req, again);
}

void eng_el_on_fast(struct cl_engine *e, stream_t *s, const collab_request_t *req)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL && is_world(s))
        eng_elastic_on_fast(el, req);
}

bool eng_el_fast_ok(struct cl_engine *e, stream_t *s)
{
    struct eng_elastic *el = el_of(e);
    return el == NULL || eng_elastic_fast_ok(el, is_world(s));
}

uint64_t eng_el_period(struct cl_engine *e)
{
    return eng_elastic_period(eng_parts(e)->el);
}

uint64_t eng_el_steps(struct cl_engine *e)
{
    return eng_elastic_steps(eng_parts(e)->el);
}

void eng_el_on_done(struct cl_engine *e, stream_t *s, collab_request_t *req, int status)
{
    struct eng_elastic *el = el_of(e);
    uint64_t seq, gen;
    int nmismatch, ncontrib;
    if (el == NULL || !is_world(s) || !eng_stream_finishing(s, &seq, &gen, &nmismatch, &ncontrib))
        return;
    eng_elastic_on_done(el, s, req, status, eng_stream_comm(s)->size);
}

bool eng_el_boundaries_known(struct cl_engine *e)
{
    return eng_elastic_boundaries_known(eng_parts(e)->el);
}

void eng_el_follow(struct cl_engine *e, const collab_follow_t *v, size_t n)
{
    eng_elastic_follow(eng_parts(e)->el, v, n);
}

void eng_el_mark_step(struct cl_engine *e)
{
    eng_elastic_mark_step(eng_parts(e)->el);
}

bool eng_el_gen_ok(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t gen)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL || !is_world(s))
        return true;
    return eng_elastic_gen_ok(el, seq, gen);
}

uint64_t eng_el_choose_gen(struct cl_engine *e, stream_t *s, uint64_t seq)
{
    struct eng_elastic *el = el_of(e);
    (void)seq;
    if (el == NULL || !is_world(s))
        return ENG_EL_DEFAULT;
    return eng_elastic_choose_gen(el);
}

eng_el_route_t eng_el_route(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t cur,
                            uint64_t hgen)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL || !is_world(s))
        return ENG_EL_ROUTE_DEFAULT;
    return eng_elastic_route(el, seq, cur, hgen);
}

bool eng_el_is_entrant(struct cl_engine *e, const uint8_t key[32])
{
    return eng_elastic_is_entrant(eng_parts(e)->el, key);
}

bool eng_el_takes_part(struct cl_engine *e, const collab_comm_t *comm, int w, uint64_t seq,
                       double *weight)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL || comm == NULL || comm->kind != CL_COMM_WORLD)
        return true;
    return eng_elastic_takes_part(el, w, seq, weight);
}

void eng_el_view_changed(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_elastic_view_changed(el);
}

void eng_el_on_message(struct cl_engine *e, cl_peer_t *p, const uint8_t key[32],
                       const cl_wire_msg_t *m)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_elastic_on_message(el, p, key, m);
}

bool eng_el_split_admission(struct cl_engine *e, const cl_el_joiner_t *js, uint32_t nj,
                            int *members_out)
{
    const eng_parts_t *ep = eng_parts(e);
    size_t n;
    cl_peer_t *const *list = cl_member_list(ep->mb, &n);
    int members = (int)nj;
    for (size_t i = 0; i < n; i++) {
        const cl_peer_t *p = list[i];
        bool joiner = false;
        for (uint32_t j = 0; j < nj && !joiner; j++)
            joiner = memcmp(js[j].key, p->key, 32) == 0;
        members += !joiner && p->in_group && p->state != CL_PEER_GONE;
    }
    if (members_out != NULL)
        *members_out = members;
    return !cl_member_settings(ep->mb)->strict &&
           cl_moshpit_ngroups(members, cl_member_settings(ep->mb)->target_group) > 1;
}

/* ---------------------------------------------------------------------- */
/* The elastic layer's turn of the loop, and what the pause asks of the
   engine. */

void eng_el_probe(struct cl_engine *e, const uint8_t key[32])
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL)
        return; /* the authority, which re-probes, lives before and after the layer */
    cl_elmsg_t probe;
    memset(&probe, 0, sizeof probe);
    probe.type = CL_EL_PROBE;
    probe.epoch = cl_member_epoch(eng_parts(e)->mb);
    (void)eng_elastic_send(el, key, &probe);
}

void eng_el_member(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_ckpt_member(el->ckpt);
}

/* What must run every turn after the timers (cl_engine_elastic.h). */
void eng_el_after_timers(struct cl_engine *e, double now)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL)
        return;
    if (eng_admittee_is_foreign(el->admittee) && eng_state(e) != ENG_LEFT)
        eng_admittee_leave_foreign(el->admittee);
    if (el->sync != NULL && el->st.phase == EL_IN && eng_sync_done(el->sync))
        eng_sync_destroy(&el->sync);
    eng_pause_after_timers(el->pause); /* the turn's mark; the doubt of no member ends */
    /* Polled, not a timer: it follows the pull's timer of this turn (a
       timer armed from inside cl_timer_run would wait for the next). */
    eng_admittee_poll(el->admittee, now);
}

/* The pause's hooks for the loop, the collective streams and membership
   (cl_engine_elastic.h): the component answers. */
void eng_el_pause_decided(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_pause_decided(el->pause);
}

void eng_el_check_pause(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL)
        return;
    eng_pause_check(el->pause);
    if (eng_admittee_is_foreign(el->admittee) && eng_state(e) != ENG_LEFT)
        eng_admittee_leave_foreign(el->admittee);
}

bool eng_el_in_doubt(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    return el != NULL && eng_pause_in_doubt(el->pause);
}

bool eng_el_adoptable(struct cl_engine *e, const uint8_t from[32], uint64_t gen)
{
    struct eng_elastic *el = el_of(e);
    return el != NULL && eng_elastic_adoptable(el, from, gen);
}

void eng_el_view_from(struct cl_engine *e, const uint8_t key[32])
{
    struct eng_elastic *el = el_of(e);
    if (el != NULL)
        eng_pause_view_from(el->pause, key);
}
