/*  cl_engine_pause.c - a peer that did not run for a while (SIGSTOP, a
    frozen VM, a starved CPU): the time it was stopped is taken off the
    engine's clock, and when the stop was long enough for the others to
    have taken it out it asks them (PROBE) and starts or completes no
    collective until they answered (docs/collectives.md §3, "Members that
    were stopped"; docs/elastic.md, pauses).  The doubt's end is a timer
    in the loop's set (eng_el_doubt_over).  Part of the elastic layer
    (its state is in struct eng_elastic: last_alive, doubt_*); the PROBE
    it sends and the after-timers hook that marks the loop's turns are in
    cl_engine_elastic_ctx.c.
*/
#include "engine/cl_engine_elastic.h"

#include "util/cl_log.h"

#include <math.h>
#include <string.h>

static struct eng_elastic *el_of(struct cl_engine *e)
{
    return e->el;
}

/* The doubt after a pause ends: collectives may start again (an evicted
   straggler's alone, eng_el_choose_gen). */
void eng_el_end_doubt(struct cl_engine *e, const char *why)
{
    struct eng_elastic *el = el_of(e);
    if (el->doubt_until <= 0)
        return;
    el->doubt_until = 0;
    el->ndoubt = 0;
    cl_timer_cancel(e->timers, el->doubt_timer);
    cl_debug("after the pause: %s; collectives start again", why);
    eng_coll_start_queued(e);
}

bool eng_el_in_doubt(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    return el != NULL && el->doubt_until > 0;
}

void eng_el_view_from(struct cl_engine *e, const uint8_t key[32])
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL || el->doubt_until <= 0)
        return;
    for (int i = 0; i < el->ndoubt; i++)
        if (memcmp(el->doubt_keys[i], key, 32) == 0) {
            memmove(el->doubt_keys[i], el->doubt_keys[el->ndoubt - 1], 32);
            el->ndoubt--;
            break;
        }
    if (el->ndoubt == 0)
        eng_el_end_doubt(e, "every member asked answered");
}

static void on_pause(struct cl_engine *e, double now, double gap)
{
    struct eng_elastic *el = el_of(e);
    cl_warn("this peer was stopped for %.1f s (about COLLAB_TIMEOUT or longer); asking the others "
            "whether the swarm went on without it",
            gap);
    size_t n;
    cl_peer_t *const *list = cl_member_list(e->mb, &n);
    /* Until they answer, no collective starts: the others may have
       completed the next ones without this peer, and their inputs for
       them, sent while it was stopped, wait here (docs/collectives.md §3,
       "Members that were stopped"). */
    el->ndoubt = 0;
    el->doubt_until = now + fmax(e->cfg.timeout, 1.0);
    eng_auth_probe_start(e); /* their views count with a majority's answers */
    for (size_t i = 0; i < n; i++) {
        cl_peer_t *p = list[i];
        if (memcmp(p->key, e->self_key, 32) == 0)
            continue;
        if (el->ndoubt < EL_DOUBT && p->state != CL_PEER_GONE && !p->monitor)
            memcpy(el->doubt_keys[el->ndoubt++], p->key, 32);
        /* Our own stop explains their silence (one that said goodbye
           stays gone). */
        eng_member_excuse(e, p, now);
        eng_auth_note_probe_sent(e, p->key); /* its answer (a view) is tallied */
        /* Whoever took us out forgot our connection to it: open a fresh
           one before anything else goes out. */
        if (!p->client && p->address[0] != '\0')
            (void)cl_transport_reconnect(e->tp, p->key, p->address);
        eng_el_probe(e, p->key);
    }
    if (el->ndoubt == 0)
        el->doubt_until = 0; /* nobody to ask */
    else
        cl_timer_arm(e->timers, el->doubt_timer, el->doubt_until);
}

void eng_el_check_pause(struct cl_engine *e)
{
    struct eng_elastic *el = el_of(e);
    if (el == NULL)
        return;
    /* The loop runs at least every heartbeat interval; a longer gap means
       this process did not run (SIGSTOP, a frozen VM, a starved CPU).
       That time is taken off the engine's clock, so no deadline or
       silence counts it: the others' silence is explained by our own
       stop.  When the gap is long enough for the others to have taken
       this peer out, it also asks them (on_pause). */
    double raw = eng_raw_now();
    double gap = raw - el->last_alive;
    double normal = 2.0 * e->hb_interval + 0.5;
    if (el->last_alive > 0 && gap > normal && e->state == ENG_MEMBER) {
        eng_add_not_running(gap - e->hb_interval);
        if (gap > fmax(e->cfg.timeout - e->hb_interval, normal))
            on_pause(e, eng_now(), gap);
        else
            cl_debug("this peer did not run for %.1f s; deadlines and silences do not count it",
                     gap);
    }
    el->last_alive = raw;
    if (eng_admittee_is_foreign(el->admittee) && e->state != ENG_LEFT)
        eng_admittee_leave_foreign(el->admittee);
}

void eng_el_doubt_over(void *arg, double now)
{
    struct cl_engine *e = arg;
    struct eng_elastic *el = el_of(e);
    if (el != NULL && el->doubt_until > 0 && now >= el->doubt_until)
        eng_el_end_doubt(e, "not every member asked answered in time");
}
