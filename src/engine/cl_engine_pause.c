/*  cl_engine_pause.c - a peer that did not run for a while (SIGSTOP, a
    frozen VM, a starved CPU): the time it was stopped is taken off the
    engine's clock, and when the stop was long enough for the others to
    have taken it out it asks them (PROBE) and starts or completes no
    collective until they answered (docs/collectives.md §3, "Members that
    were stopped"; docs/elastic.md, pauses).

    The loop marks each of its turns (eng_pause_after_timers, and every
    check); the next check measures the raw time since the mark.  The loop
    runs at least every heartbeat period, so a gap of more than twice
    that (and half a second) means this process did not run: that time,
    less one period, is taken off the clock, so that no deadline or
    silence counts it.  A gap of about COLLAB_TIMEOUT or more starts the
    doubt: every other member is excused (its silence was ours) and asked
    for its view, the ranked ones that are alive are awaited, and the
    doubt ends when the last of them answered (a VIEW from it,
    eng_pause_view_from), at its deadline (this component's timer in the
    loop's set), or at once when this peer is no member.  What the
    answers mean is the authority's round (docs/security.md §4, rule 5):
    while a member answered with a newer view without this peer that no
    majority has yet confirmed, or this peer asked to be taken back, or,
    taken back, its view still lists it in the group at its stale
    sequence (ctx.undecided), the doubt does not end there: it is held, with no
    timer armed, until the authority says the question is decided
    (eng_pause_decided), which arms the timer at once; the timer's next
    run, after the message that decided it was handled, ends the doubt.
    The timer is thus armed at one deadline only, the doubt's end
    (COLLAB_TIMEOUT), and at the decision.  A peer the swarm went on
    without thus completes no collective alone: it is taken back, or the
    authority stops it with an error.

    The component eng_pause_t (cl_engine_pause.h) owns the mark, the
    members awaited and the doubt's end; it sees the engine only through
    its context, built by eng_el_create (cl_engine_elastic_ctx.c).
*/
#include "engine/cl_engine_pause.h"

#include "util/cl_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PAUSE_DOUBT_MAX 64 /* members asked after a pause whose answer is awaited */

struct eng_pause {
    eng_pause_ctx_t ctx;
    double last_alive; /* raw_now at the last mark (0: none yet) */
    /* After a pause: the members asked (PROBE) that have not answered. */
    uint8_t doubt_keys[PAUSE_DOUBT_MAX][32];
    int ndoubt;
    double doubt_until; /* 0: no doubt; else it ends then at the latest */
    int timer;          /* in ctx.timers, armed at doubt_until, or now at a decision */
    bool held_on;       /* answered or late, but held while ctx.undecided: no timer armed */
};

/* The doubt after a pause ends: collectives may start again (an evicted
   straggler's alone, eng_el_choose_gen); why goes to the debug log. */
static void end_doubt(eng_pause_t *p, const char *why)
{
    if (p->doubt_until <= 0)
        return;
    p->doubt_until = 0;
    p->ndoubt = 0;
    cl_timer_cancel(p->ctx.timers, p->timer);
    cl_debug("after the pause: %s; collectives start again", why);
    p->ctx.resume(p->ctx.arg);
}

/* Whether the authority still doubts this peer's view: a member asked
   answered with a newer view that no majority confirmed yet, or it asked
   to be taken back (ctx.undecided). */
static bool undecided(const eng_pause_t *p)
{
    return p->ctx.undecided != NULL && p->ctx.undecided(p->ctx.arg);
}

/* Every member asked answered, or the doubt's deadline came (why): the
   doubt ends, unless the question whether the swarm went on without this
   peer is open; then it is held, with no timer armed, until the
   authority decides it (eng_pause_decided). */
static void settle(eng_pause_t *p, const char *why)
{
    if (undecided(p)) {
        if (!p->held_on)
            cl_info("after the pause a member answered with a newer view without this peer that "
                    "no majority confirmed yet; no collective starts until that is decided");
        p->held_on = true;
        cl_timer_cancel(p->ctx.timers, p->timer);
        return;
    }
    end_doubt(p, p->held_on ? "the question whether the swarm went on without it is decided" : why);
}

/* The doubt's deadline came (not every member asked answered in time),
   or, while it is held, the authority decided the question. */
static void on_timer(void *arg, double now)
{
    eng_pause_t *p = arg;
    if (p->doubt_until <= 0 || (!p->held_on && now < p->doubt_until))
        return;
    settle(p, "not every member asked answered in time");
}

eng_pause_t *eng_pause_new(const eng_pause_ctx_t *ctx)
{
    eng_pause_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->ctx = *ctx;
    p->timer = cl_timer_add(ctx->timers, on_timer, p);
    if (p->timer < 0) {
        free(p);
        return NULL;
    }
    return p;
}

void eng_pause_destroy(eng_pause_t **p_p)
{
    if (p_p == NULL || *p_p == NULL)
        return;
    eng_pause_t *p = *p_p;
    cl_timer_remove(p->ctx.timers, p->timer);
    free(p);
    *p_p = NULL;
}

bool eng_pause_in_doubt(const eng_pause_t *p)
{
    return p != NULL && p->doubt_until > 0;
}

void eng_pause_view_from(eng_pause_t *p, const uint8_t key[32])
{
    if (p == NULL || p->doubt_until <= 0)
        return;
    for (int i = 0; i < p->ndoubt; i++)
        if (memcmp(p->doubt_keys[i], key, 32) == 0) {
            memmove(p->doubt_keys[i], p->doubt_keys[p->ndoubt - 1], 32);
            p->ndoubt--;
            break;
        }
    if (p->ndoubt == 0)
        settle(p, "every member asked answered");
}

void eng_pause_decided(eng_pause_t *p)
{
    if (p == NULL || p->doubt_until <= 0 || !p->held_on)
        return;
    /* Not at once: the decision may come from inside the gate, before
       the view that decided it is installed, and no collective may start
       with the view it replaces.  The loop's next run of its timers
       comes after the message is handled. */
    cl_timer_arm(p->ctx.timers, p->timer, p->ctx.now(p->ctx.arg));
}

static void on_pause(eng_pause_t *p, double now, double gap)
{
    cl_warn("this peer was stopped for %.1f s (about COLLAB_TIMEOUT or longer); asking the others "
            "whether the swarm went on without it",
            gap);
    size_t n;
    cl_peer_t *const *list = cl_member_list(p->ctx.members, &n);
    /* Until they answer, no collective starts: the others may have
       completed the next ones without this peer, and their inputs for
       them, sent while it was stopped, wait here (docs/collectives.md §3,
       "Members that were stopped"). */
    p->ndoubt = 0;
    p->held_on = false;
    p->doubt_until = now + fmax(p->ctx.cfg->timeout, 1.0);
    p->ctx.probe_start(p->ctx.arg); /* their views count with a majority's answers */
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *q = list[i];
        if (memcmp(q->key, p->ctx.self_key, 32) == 0)
            continue;
        if (p->ndoubt < PAUSE_DOUBT_MAX && q->state != CL_PEER_GONE && !q->monitor)
            memcpy(p->doubt_keys[p->ndoubt++], q->key, 32);
        /* Our own stop explains their silence (one that said goodbye
           stays gone). */
        p->ctx.excuse(p->ctx.arg, q, now);
        p->ctx.ask(p->ctx.arg, q);
    }
    if (p->ndoubt == 0)
        p->doubt_until = 0; /* nobody to ask */
    else
        cl_timer_arm(p->ctx.timers, p->timer, p->doubt_until);
}

void eng_pause_check(eng_pause_t *p)
{
    if (p == NULL)
        return;
    /* The loop runs at least every heartbeat interval; a longer gap means
       this process did not run (SIGSTOP, a frozen VM, a starved CPU).
       That time is taken off the engine's clock, so no deadline or
       silence counts it: the others' silence is explained by our own
       stop.  When the gap is long enough for the others to have taken
       this peer out, it also asks them (on_pause). */
    double raw = p->ctx.raw_now(p->ctx.arg);
    double gap = raw - p->last_alive;
    double hb = p->ctx.hb_interval;
    double normal = 2.0 * hb + 0.5;
    if (p->last_alive > 0 && gap > normal && p->ctx.is_member(p->ctx.arg)) {
        p->ctx.not_running(p->ctx.arg, gap - hb);
        if (gap > fmax(p->ctx.cfg->timeout - hb, normal))
            on_pause(p, p->ctx.now(p->ctx.arg), gap);
        else
            cl_debug("this peer did not run for %.1f s; deadlines and silences do not count it",
                     gap);
    }
    p->last_alive = raw;
}

void eng_pause_after_timers(eng_pause_t *p)
{
    if (p == NULL)
        return;
    p->last_alive = p->ctx.raw_now(p->ctx.arg);
    if (p->doubt_until > 0 && !p->ctx.is_member(p->ctx.arg))
        end_doubt(p, "it joins again");
}
