/*  cl_engine_match.c - matchmaking of the world group, one component
    (cl_engine_match.h; docs/membership.md §2).

    A member whose program waits for the world group asks for it: the
    coordinator starts the window's clock (match_since, the first request
    it got, a MATCH or its own), another member sends the coordinator
    MATCH, once per coordinator, again at each check of silent members.
    The coordinator forms the group once every rank of the world was a
    member (joined/njoined; some may have failed since), the target size
    is present, or the window (COLLAB_MATCHMAKING_TIME) ended with at least
    COLLAB_MIN_GROUP members, unless COLLAB_STRICT.  It looks
    at every event that changes one of these: a view installed or
    committed, a MATCH, each check of silent members while it coordinates,
    and the window's end, the component's one timer.

    The component writes no record: the engine closes the group and
    publishes the view through the context (close_group, commit).  The
    commit tells this component again (eng_match_check) while it is still
    inside its own check: that call is deferred, not run re-entrantly, and
    the check runs once more when commit returns (it finds the group
    formed).
*/
#include "engine/cl_engine_match.h"

#include "engine/cl_comm.h" /* CL_COMM_WORLD_ID */
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct eng_match {
    eng_match_ctx_t ctx;
    double since;          /* the window's start; 0 = nobody asked yet */
    int timer;             /* in ctx.timers: the window's end */
    uint8_t asked_key[32]; /* coordinator this peer sent MATCH to */
    bool asked;
    uint8_t *joined; /* joined[r]: rank r was a member at some time */
    int njoined_cap; /* size of joined */
    int njoined;     /* distinct ranks in it */
    bool checking;   /* eng_match_check runs (commit may call it) */
    bool again;      /* it was called meanwhile: look once more */
};

static void on_timer(void *arg, double now);

eng_match_t *eng_match_new(const eng_match_ctx_t *ctx)
{
    eng_match_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->ctx = *ctx;
    m->timer = cl_timer_add(ctx->timers, on_timer, m);
    if (m->timer < 0) {
        free(m);
        return NULL;
    }
    return m;
}

void eng_match_destroy(eng_match_t **m_p)
{
    if (m_p == NULL || *m_p == NULL)
        return;
    eng_match_t *m = *m_p;
    cl_timer_remove(m->ctx.timers, m->timer);
    free(m->joined);
    free(m);
    *m_p = NULL;
}

void eng_match_joined(eng_match_t *m, int r)
{
    int ws = cl_member_settings(m->ctx.members)->world_size;
    if (r < 0 || r >= ws)
        return;
    if (r >= m->njoined_cap) {
        uint8_t *a = realloc(m->joined, (size_t)ws);
        if (a == NULL)
            return;
        memset(a + m->njoined_cap, 0, (size_t)(ws - m->njoined_cap));
        m->joined = a;
        m->njoined_cap = ws;
    }
    if (!m->joined[r]) {
        m->joined[r] = 1;
        m->njoined++;
    }
}

static void check_once(eng_match_t *m, double now)
{
    const eng_match_ctx_t *c = &m->ctx;
    if (!c->coordinates(c->arg) || cl_member_group_closed(c->members) || m->since <= 0)
        return;
    eng_match_joined(m, cl_member_self(c->members)->rank);
    size_t n;
    cl_member_list(c->members, &n);
    const cl_settings_t *s = cl_member_settings(c->members);
    /* Every rank of the world was a member (some may have failed since):
       nobody else can come, and waiting for the window is in vain. */
    bool close =
        (int)n >= s->world_size || (int)n >= s->target_group || m->njoined >= s->world_size;
    if (!close && !s->strict && now >= m->since + c->cfg->matchmaking_time &&
        (int)n >= c->cfg->min_group)
        close = true;
    if (!close)
        return;
    /* Taking over only to act: a peer that coordinates with nothing to
       do (a newcomer that took the lowest rank into a formed group) keeps
       its epoch, so that the admitter's view that admits it, one above
       it, is not old news when it arrives (docs/elastic.md). */
    c->take_over(c->arg);
    cl_member_delta_t d;
    if (c->close_group(c->arg, &d) == 1) {
        cl_info("formed the group: %zu of %d ranks present", n, s->world_size);
        c->commit(c->arg, &d);
    } else {
        cl_member_delta_clear(&d);
    }
}

void eng_match_check(eng_match_t *m, double now)
{
    if (m->checking) {
        m->again = true; /* from commit, inside check_once */
        return;
    }
    m->checking = true;
    do {
        m->again = false;
        check_once(m, now);
        now = m->ctx.now(m->ctx.arg);
    } while (m->again);
    m->checking = false;
}

/* Someone asked for the group: the window's start is set (the first
   request), its end armed. */
static void asked(eng_match_t *m, double now)
{
    if (m->since <= 0)
        m->since = now;
    cl_timer_arm(m->ctx.timers, m->timer, m->since + m->ctx.cfg->matchmaking_time);
}

void eng_match_request(eng_match_t *m)
{
    const eng_match_ctx_t *c = &m->ctx;
    if (cl_member_group_closed(c->members) || !c->is_member(c->arg))
        return;
    if (c->coordinates(c->arg)) {
        c->take_over(c->arg);
        asked(m, c->now(c->arg));
        eng_match_check(m, c->now(c->arg));
        return;
    }
    cl_peer_t *coord = cl_member_coordinator(c->members);
    if (coord == NULL || (m->asked && memcmp(m->asked_key, coord->key, 32) == 0))
        return;
    cl_wire_msg_t msg;
    memset(&msg, 0, sizeof msg);
    msg.hdr.type = CL_MSG_MATCH;
    msg.hdr.comm = CL_COMM_WORLD_ID;
    if (c->send(c->arg, coord, &msg) == COLLAB_OK) {
        memcpy(m->asked_key, coord->key, 32);
        m->asked = true;
    }
}

void eng_match_on_request(eng_match_t *m, bool from_member)
{
    /* A peer that is not the coordinator (yet) keeps the request too:
       the sender computed that it coordinates, so it does once it
       notices the failure of the one before it, and its clock then runs
       from the first request it got. */
    const eng_match_ctx_t *c = &m->ctx;
    if (from_member && c->is_member(c->arg) && !cl_member_group_closed(c->members)) {
        asked(m, c->now(c->arg));
        eng_match_check(m, c->now(c->arg));
    }
}

void eng_match_checked(eng_match_t *m, bool coordinator, double now)
{
    const eng_match_ctx_t *c = &m->ctx;
    if (coordinator) {
        if (c->waiting(c->arg))
            eng_match_request(m); /* starts the clock of a new coordinator */
        eng_match_check(m, now);
        return;
    }
    /* Ask again at every check while the group is not formed: a MATCH
       can be lost with a coordinator that failed, or reach a peer that
       did not know yet that it is a member (its view was on the way). */
    if (c->waiting(c->arg)) {
        m->asked = false;
        eng_match_request(m);
    }
}

/* The end of the matchmaking window (since + COLLAB_MATCHMAKING_TIME):
   the one deadline of matchmaking.  Every other condition of forming the
   group changes with an event that looks at it (a view installed or
   committed, a MATCH, each check of silent members while this peer
   coordinates). */
static void on_timer(void *arg, double now)
{
    eng_match_t *m = arg;
    if (m->ctx.is_member(m->ctx.arg))
        eng_match_check(m, now);
}

double eng_match_due(const eng_match_t *m)
{
    return cl_timer_when(m->ctx.timers, m->timer);
}

int eng_match_njoined(const eng_match_t *m)
{
    return m->njoined;
}
