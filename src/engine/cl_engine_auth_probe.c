/*  cl_engine_auth_probe.c - the authority's round after a pause
    (docs/security.md §4, pauses and removals).

    A member that was stopped long enough for the others to have taken it
    out asks the members of its last view (PROBE, cl_engine_pause.c) and
    starts a round here (eng_auth_probe_start).  Each answer, a view, is
    tallied in cl_viewack (a pure class: who was asked, each one's latest
    view by epoch and digest); a view of a member that is not the
    coordinator counts once more than half of the last view answered with
    it (eng_auth_acknowledged, from the gate's check of views in
    cl_engine_authority.c).  The members whose answers do not agree are
    asked again each second; without a majority by the round's deadline,
    the members that claimed a newer view are sent a JOIN, and for a
    while a view of theirs that lists this peer counts.  Part of the
    authority: its state is in struct eng_auth (cl_engine_auth_int.h).

    Deadlines.  One timer in the loop's set (probe_timer, registered by
    eng_auth_probe_init) is armed at the earliest of what is due: while
    the round is open the next re-probe (ack_next_probe) and the round's
    deadline (ack_until), then the end of the rejoin window
    (rejoin_until); disarmed when nothing is.  It is armed where the
    round starts and by its own callback, and moved where the round ends
    early (a majority answered, eng_auth_acknowledged; a membership began
    again, eng_auth_member).  A round that finds this peer no member
    ends when its timer next fires.
*/
#include "engine/cl_engine_auth_int.h"

#include "engine/cl_engine_elastic.h"
#include "util/cl_log.h"

#include <math.h>

/* How long a pause's round of probes may take to find a majority, and
   how long the peers asked to take this peer back may answer:
   max(10 s, 4 × COLLAB_TIMEOUT). */
static double probe_window(const struct cl_engine *e)
{
    return e->cfg.timeout * 4 > 10 ? e->cfg.timeout * 4 : 10;
}

/* Arms the round's timer at the earliest of what is due (see
   "Deadlines" above), or disarms it when nothing is. */
static void probe_arm(struct cl_engine *e)
{
    struct eng_auth *a = e->auth;
    double t = INFINITY;
    if (cl_viewack_open(a->ack))
        t = fmin(a->ack_next_probe, a->ack_until);
    if (a->rejoin_until > 0)
        t = fmin(t, a->rejoin_until);
    if (t < INFINITY)
        cl_timer_arm(e->timers, a->probe_timer, t);
    else
        cl_timer_cancel(e->timers, a->probe_timer);
}

static void on_probe_timer(void *arg, double now);

int eng_auth_probe_init(struct cl_engine *e)
{
    struct eng_auth *a = e->auth;
    a->probe_timer = -1;
    a->ack = cl_viewack_new();
    if (a->ack == NULL)
        return COLLAB_ERR_NO_MEM;
    a->probe_timer = cl_timer_add(e->timers, on_probe_timer, e);
    return a->probe_timer >= 0 ? COLLAB_OK : COLLAB_ERR_NO_MEM;
}

void eng_auth_probe_fini(struct cl_engine *e)
{
    struct eng_auth *a = e->auth;
    cl_timer_remove(e->timers, a->probe_timer);
    a->probe_timer = -1;
    cl_viewack_destroy(&a->ack);
}

void eng_auth_probe_start(struct cl_engine *e)
{
    struct eng_auth *a = e->auth;
    if (a == NULL)
        return;
    size_t n;
    (void)cl_member_list(e->mb, &n);
    double now = eng_now();
    if (cl_viewack_start(a->ack, n) != 0)
        cl_warn("out of memory for the answers to this peer's probes; only its coordinator's "
                "views count");
    a->ack_until = now + probe_window(e);
    a->ack_epoch = cl_member_epoch(e->mb);
    a->ack_next_probe = now + 1.0;
    a->rejoin_until = 0;
    probe_arm(e);
}

void eng_auth_note_probe_sent(struct cl_engine *e, const uint8_t key[32])
{
    struct eng_auth *a = e->auth;
    if (a != NULL)
        cl_viewack_asked(a->ack, key);
}

bool eng_auth_probing(struct cl_engine *e)
{
    return e->auth != NULL && (cl_viewack_open(e->auth->ack) || e->auth->rejoin_until > 0);
}

void eng_auth_member(struct cl_engine *e)
{
    struct eng_auth *a = e->auth;
    if (a == NULL)
        return;
    cl_viewack_close(a->ack);
    a->rejoin_until = 0;
    probe_arm(e);
}

bool eng_auth_acknowledged(struct cl_engine *e, const uint8_t key[32], const cl_wire_msg_t *m)
{
    struct eng_auth *a = e->auth;
    uint8_t digest[32];
    if (!cl_viewack_was_asked(a->ack, key) || !cl_viewack_digest(m, digest))
        return false;
    size_t same = cl_viewack_answer(a->ack, key, m->u.view.epoch, digest);
    size_t need = cl_viewack_need(a->ack);
    if (same < need)
        return false;
    uint64_t own = cl_member_epoch(e->mb);
    cl_info("after the pause, %zu of the %zu members asked answered with one view (epoch %llu, "
            "%s this peer's); a majority of its last view: it counts",
            same, cl_viewack_nasked(a->ack), (unsigned long long)m->u.view.epoch,
            m->u.view.epoch > own ? "newer than" : "not newer than");
    cl_viewack_close(a->ack);
    probe_arm(e); /* nothing more is due */
    return true;
}

/* The round's step at one of its deadlines: the rejoin window's end;
   the members whose answers do not agree asked again; at the round's
   deadline without a majority, a JOIN to the members that claimed a
   newer view.  A round or window of a peer that is no member ends. */
static void probe_step(struct cl_engine *e, double now)
{
    struct eng_auth *a = e->auth;
    if (a->rejoin_until > 0 && (now >= a->rejoin_until || e->state != ENG_MEMBER))
        a->rejoin_until = 0;
    if (!cl_viewack_open(a->ack))
        return;
    uint64_t own = a->ack_epoch; /* not now's: it moves on as silent members go */
    size_t n = cl_viewack_nasked(a->ack);
    if (e->state != ENG_MEMBER) {
        cl_viewack_close(a->ack); /* removed: the join path takes over */
        return;
    }
    if (now < a->ack_until) {
        if (now < a->ack_next_probe)
            return;
        /* Views may have moved on while the members answered: ask again
           until a majority agrees (their latest answers count). */
        a->ack_next_probe = now + 1.0;
        for (size_t i = 0; i < n; i++) {
            uint64_t ep;
            const uint8_t *k = cl_viewack_key(a->ack, i, &ep);
            const cl_peer_t *q = cl_member_find(e->mb, k);
            if (q != NULL && q->state != CL_PEER_GONE)
                eng_el_probe(e, k);
        }
        return;
    }
    /* No majority in time (members died, or the views never settled).
       The members that claimed a newer view are asked to take this peer
       back (JOIN): the view one of them answers with, listing this peer,
       counts (docs/security.md §4). */
    size_t answered = cl_viewack_nanswered(a->ack), newer = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ep;
        (void)cl_viewack_key(a->ack, i, &ep);
        newer += ep > own;
    }
    if (newer == 0) {
        cl_viewack_close(a->ack);
        cl_info("after the pause no view was answered by a majority of this peer's last view "
                "(%zu of %zu members asked answered, none with a newer view); keeping this view",
                answered, n);
        return;
    }
    cl_warn("after the pause no view was answered by a majority of this peer's last view within "
            "%.0f s (%zu of %zu members asked answered); rejoining through the %zu that answered "
            "with a newer view",
            probe_window(e), answered, n, newer);
    a->rejoin_until = now + probe_window(e);
    for (size_t i = 0; i < n; i++) {
        uint64_t ep;
        const uint8_t *k = cl_viewack_key(a->ack, i, &ep);
        if (ep > own)
            eng_send_join_relinked(e, k); /* it may be removed here, its link dropped */
    }
    cl_viewack_close(a->ack);
}

/* The round's timer (see "Deadlines" above). */
static void on_probe_timer(void *arg, double now)
{
    struct cl_engine *e = arg;
    probe_step(e, now);
    probe_arm(e);
}
