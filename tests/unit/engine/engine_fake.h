/*  engine_fake.h - the fake engine loop of the selftests that link an
    adapter file of the loop (cl_engine_member_test links
    cl_engine_member_ctx.c and cl_engine_join_ctx.c): its own struct
    cl_engine (the loop's is defined in cl_engine.c only) with the parts
    the adapters read (eng_parts) and the values the loop owns (eng_state,
    eng_rank, eng_world_size, eng_steps, eng_leaving and their writers),
    the engine's clock (s_now, eng_now, eng_ctx_clock), its log
    description of a peer (eng_peer_desc), the loop's writer of the
    engine's state (eng_set_state) and the loop's table of handlers
    (eng_on_type), the loop's turns over a real timer set
    (fake_run_until), a fake engine's allocation with a real timer set and
    real peer records (fake_engine_alloc, fake_engine_release), and the
    log description the fake contexts of the components behind one give
    them too (fake_peer_desc, p2p_fixture.h).

    Header-only, for one test each.  A test that includes it with
    ENGINE_FAKE_SERVICES defined gets the engine's services above (they
    replace cl_engine.c, which it does not link); without it only the
    static helpers.  The test defines eng_send itself: what it records
    differs from test to test.
*/
#ifndef ENGINE_FAKE_H_INCLUDED
#define ENGINE_FAKE_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

/* A peer in the log: its rank (-1 without a record). */
static inline const char *fake_peer_desc(const cl_peer_t *p, char *out, size_t len)
{
    snprintf(out, len, "rank %d", p != NULL ? p->rank : -1);
    return out;
}

#ifdef ENGINE_FAKE_SERVICES
#include "engine/cl_engine_loop_int.h"

/* The fake engine: the parts the adapters read, and what the loop owns.
   A test sets cfg and parts' settings directly; cfg is parts.cfg. */
struct cl_engine {
    eng_parts_t parts;
    cl_config_t cfg;
    uint8_t self_key[32];
    char self_id[CL_PEER_ID_MAX];
    eng_state_t state;
    int rank, world_size;
    uint64_t steps;
    eng_msg_fn *on_type[ENG_MSG_TYPES];
};

const eng_parts_t *eng_parts(const struct cl_engine *e)
{
    return &e->parts;
}

eng_state_t eng_state(const struct cl_engine *e)
{
    return e->state;
}

int eng_rank(const struct cl_engine *e)
{
    return e->rank;
}

int eng_world_size(const struct cl_engine *e)
{
    return e->world_size;
}

void eng_set_rank(struct cl_engine *e, int rank)
{
    e->rank = rank;
}

void eng_set_world_size(struct cl_engine *e, int world_size)
{
    e->world_size = world_size;
}

uint64_t eng_steps(const struct cl_engine *e)
{
    return e->steps;
}

bool eng_leaving(const struct cl_engine *e)
{
    (void)e;
    return false;
}

/* collab_init's request: the fake engine has none. */
void eng_init_done(struct cl_engine *e)
{
    (void)e;
}

/* The engine's clock: the test moves it. */
static double s_now = 100.0;

double eng_now(void)
{
    return s_now;
}

double eng_ctx_clock(struct cl_engine *e)
{
    (void)e;
    return s_now;
}

const char *eng_peer_desc(const cl_peer_t *p, char *out, size_t len)
{
    return fake_peer_desc(p, out, len);
}

void eng_set_state(struct cl_engine *e, eng_state_t state)
{
    e->state = state;
}

void eng_on_type(struct cl_engine *e, int type, eng_msg_fn *fn)
{
    e->on_type[type] = fn;
}

/* A zeroed engine: this peer's key, a real timer set (8 timers) and
   peer records, mb when given (owned from now on), else new ones. */
static inline struct cl_engine *fake_engine_alloc(const uint8_t key[32], cl_member_t *mb)
{
    struct cl_engine *e = calloc(1, sizeof *e);
    CHECK(e != NULL);
    memcpy(e->self_key, key, 32);
    e->rank = -1;
    e->parts.cfg = &e->cfg;
    e->parts.self_key = e->self_key;
    e->parts.self_id = e->self_id;
    e->parts.timers = cl_timer_new(8);
    e->parts.mb = mb != NULL ? mb : cl_member_new(key);
    CHECK(e->parts.timers != NULL && e->parts.mb != NULL);
    return e;
}

/* Frees what fake_engine_alloc made, once the test's components are
   gone: each took its timers with it. */
static inline void fake_engine_release(struct cl_engine *e)
{
    CHECK(isinf(cl_timer_next(e->parts.timers))); /* every timer went with its component */
    cl_timer_destroy(&e->parts.timers);
    cl_member_destroy(&e->parts.mb);
    free(e);
}

/* The loop's turns up to and including time t: each runs what is due at
   its own deadline (the clock jumps there), then the clock stands at t. */
static inline void fake_run_until(cl_timer_t *timers, double t)
{
    while (cl_timer_next(timers) <= t) {
        s_now = fmax(s_now, cl_timer_next(timers));
        (void)cl_timer_run(timers, s_now);
    }
    s_now = t;
}
#endif

#endif
