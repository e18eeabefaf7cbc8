/*  cl_engine_join_ctx.c - the join's context (cl_engine_join.h): what
    the component eng_join_t may ask of the engine, built by the loop.

    The adapters below are the only place where the join meets struct
    cl_engine: the transport, the engine's state (moved by the join
    between ENG_JOINING and ENG_STANDBY only, through eng_set_state), the
    configuration's client mode (eng_set_cfg_client_mode), when this peer first became
    a member (eng_member_since), the authority gate (a JOIN
    sent, a pause's probe round), the coordinator's dial-back, membership
    (a founder becomes a member, a failed join, a coordinator's view
    change) and the elastic layer (a joiner got a rank).  Each takes the
    engine typed, struct cl_engine *e (docs/architecture.md, "Typed
    contexts").
*/
#include "engine/cl_engine_elastic.h" /* eng_el_on_admit_rank */
#include "engine/cl_engine_loop_int.h"

static eng_state_t join_state(struct cl_engine *e)
{
    return eng_state(e);
}

static void join_set_state(struct cl_engine *e, eng_state_t state)
{
    eng_set_state(e, state);
}

static double join_member_since(struct cl_engine *e)
{
    return eng_member_since(eng_parts(e)->member);
}

static int join_rank(struct cl_engine *e)
{
    return eng_rank(e);
}

static const char *join_address(struct cl_engine *e)
{
    return cl_transport_address(eng_parts(e)->tp);
}

static int join_send(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_send(eng_parts(e)->tp, key, m);
}

static int join_reply(struct cl_engine *e, const uint8_t key[32], cl_wire_msg_t *m)
{
    return cl_transport_reply(eng_parts(e)->tp, key, m);
}

static int join_connect(struct cl_engine *e, const uint8_t key[32], const char *address)
{
    return cl_transport_connect(eng_parts(e)->tp, key, address);
}

static bool join_has_link(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_has_link(eng_parts(e)->tp, key);
}

static int join_link_version(struct cl_engine *e, const uint8_t key[32])
{
    return cl_transport_link_version(eng_parts(e)->tp, key);
}

static void join_set_client(struct cl_engine *e)
{
    eng_set_cfg_client_mode(e);
    cl_transport_set_client(eng_parts(e)->tp);
}

static void join_sent(struct cl_engine *e, const uint8_t key[32])
{
    eng_auth_note_join_sent(eng_parts(e)->auth, key);
}

static bool join_probing(struct cl_engine *e)
{
    return eng_auth_probing(eng_parts(e)->auth);
}

static bool join_in_doubt(struct cl_engine *e)
{
    return eng_el_in_doubt(e);
}

static void join_redirected(struct cl_engine *e, const uint8_t key[32], const uint8_t to[32])
{
    eng_auth_redirected(eng_parts(e)->auth, key, to);
}

static int join_reachable(struct cl_engine *e, const uint8_t key[32], const cl_wire_join_t *j)
{
    return eng_dialback_check(eng_parts(e)->dialback, key, j);
}

static void join_founded(struct cl_engine *e)
{
    eng_member_become(eng_parts(e)->member, true);
}

static void join_fail(struct cl_engine *e, int status)
{
    eng_fail_init(e, status);
}

static void join_send_view(struct cl_engine *e, const cl_peer_t *p)
{
    eng_member_send_view(eng_parts(e)->member, p);
}

static void join_commit(struct cl_engine *e, cl_member_delta_t *d)
{
    eng_member_commit(eng_parts(e)->member, d);
}

static void join_admit_rank(struct cl_engine *e, const uint8_t key[32])
{
    eng_el_on_admit_rank(e, key);
}

eng_join_t *eng_join_create(struct cl_engine *e)
{
    const eng_parts_t *ep = eng_parts(e);
    eng_join_ctx_t ctx = {.arg = e,
                          .cfg = ep->cfg,
                          .incarnation = ep->incarnation,
                          .members = ep->mb,
                          .timers = ep->timers,
                          .now = eng_ctx_clock,
                          .state = join_state,
                          .set_state = join_set_state,
                          .member_since = join_member_since,
                          .rank = join_rank,
                          .address = join_address,
                          .send = join_send,
                          .reply = join_reply,
                          .connect = join_connect,
                          .has_link = join_has_link,
                          .link_version = join_link_version,
                          .set_client = join_set_client,
                          .join_sent = join_sent,
                          .probing = join_probing,
                          .in_doubt = join_in_doubt,
                          .redirected = join_redirected,
                          .reachable = join_reachable,
                          .founded = join_founded,
                          .fail = join_fail,
                          .send_view = join_send_view,
                          .commit = join_commit,
                          .admit_rank = join_admit_rank,
                          .desc = eng_peer_desc};
    memcpy(ctx.self_key, ep->self_key, 32);
    return eng_join_new(&ctx);
}

void eng_send_join_relinked(struct cl_engine *e, const uint8_t key[32])
{
    eng_join_send_relinked(eng_parts(e)->join, key);
}

void eng_settings_adopted(struct cl_engine *e, const cl_settings_t *s)
{
    /* A setting that needs a wire version keeps peers of older releases
       out of this peer's handshakes from now on. */
    const char *why;
    int floor = eng_settings_wire_floor(s, &why);
    if (floor > 0)
        cl_transport_set_min_version(eng_parts(e)->tp, floor, why);
}
