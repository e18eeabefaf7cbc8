/*  cl_engine_auth_probe.c - the authority's round after a pause
    (docs/security.md §4, pauses and removals).

    A member that was stopped long enough for the others to have taken it
    out asks the members of its last view (PROBE, cl_engine_pause.c) and
    starts a round here (eng_auth_probe_start).  Each answer, a view, is
    tallied in cl_viewack (a pure class: who was asked, each one's latest
    view by epoch and digest; when fewer were asked than a majority
    needs, the first refused newer answer moves the deadline to now); a view of a member that is not
   the coordinator counts once more than half of the last view answered with it
   (eng_auth_acknowledged, from the gate's check of views in cl_engine_authority.c).  The members
   whose answers do not agree are asked again each second; without a majority by the round's
   deadline, the members that claimed a newer view are sent a JOIN, and for a while a view of theirs
   that lists this peer counts.  The members whose newer answer, a view without this peer, the gate
   refused are (with the coordinator such a member names in a REDIRECT to the window's JOIN,
   eng_auth_redirected) the swarm that may have gone on without it (eng_auth_refused_newer): a view
   listing it from one of them ends the window (eng_auth_taken_back; the gate takes it,
    eng_auth_went_on_by), or the round already when fewer members were
    asked than a majority needs (it can only end in the window, which
    would trust that same view), and a window that ends without one
    stops the engine with an error (the context's give_up).  Taken back
    is not resumed at this peer's stale sequence: until its view lists
    it out of the group (eng_auth_view_changed, after each view change)
    it asks each second to be taken out (the context's self_out, a
    straggler's own report) and is then re-admitted and resynced as a
    straggler (docs/elastic.md §6); not out within the window's length,
    it stops with an error as well.  While such an answer came and
    nothing is decided, the window is open, or this peer taken back is
    still in the group, the pause holds every collective
    (eng_auth_went_on, cl_engine_pause.c); the moment that question is
    decided, the context's decided tells it (decided_if, after every
    change of the round).  Part of the
    authority (cl_engine_auth.h): its state is struct auth_round in
    struct eng_auth (cl_engine_auth_int.h), which this file alone
    writes; the gate asks it through eng_auth_acknowledged,
    eng_auth_was_probed, eng_auth_went_on_by and eng_auth_rejoining.  It sees the engine
    through the authority's context only: the records, the clock, the
    timer set, whether this peer is a member, PROBE (probe), JOIN
    (rejoin) and its own report as a straggler (self_out).

    Deadlines.  One timer in the loop's set (probe_timer, registered by
    eng_auth_probe_init from eng_auth_new) is armed at the earliest of what is due: while
    the round is open the next re-probe (ack_next_probe) and the round's
    deadline (ack_until), then the end of the rejoin window
    (rejoin_until), or, taken back and still in the group, the next
    request to be taken out (next_self_out) and its deadline
    (taken_until); disarmed when nothing is.  It is armed where the
    round starts and by its own callback, and moved where the round ends
    early (a majority answered, eng_auth_acknowledged; a member of the
    swarm that went on took this peer back, eng_auth_taken_back; a
    membership began again, eng_auth_member) and at each view change
    while taken back (eng_auth_view_changed).  A round that finds this peer no member
    ends when its timer next fires.
*/
#include "engine/cl_engine_auth_int.h"

#include "util/cl_log.h"

#include <math.h>
#include <string.h>

/* Seconds between the JOINs a member back from a pause sends in its
   rejoin window (probe_step). */
#define REJOIN_EVERY 1.0

/* How long a pause's round of probes may take to find a majority, and
   how long the peers asked to take this peer back may answer:
   max(10 s, 4 × COLLAB_TIMEOUT). */
static double probe_window(const eng_auth_t *a)
{
    double timeout = a->ctx.cfg->timeout;
    return timeout * 4 > 10 ? timeout * 4 : 10;
}

/* Arms the round's timer at the earliest of what is due (see
   "Deadlines" above), or disarms it when nothing is. */
static void probe_arm(eng_auth_t *a)
{
    struct auth_round *r = &a->round;
    double t = INFINITY;
    if (cl_viewack_open(r->ack))
        t = fmin(r->ack_next_probe, r->ack_until);
    if (r->rejoin_until > 0)
        t = fmin(t, fmin(r->rejoin_until, r->next_rejoin));
    if (r->taken_back)
        t = fmin(t, fmin(r->next_self_out, r->taken_until));
    if (t < INFINITY)
        cl_timer_arm(a->ctx.timers, r->probe_timer, t);
    else
        cl_timer_cancel(a->ctx.timers, r->probe_timer);
}

static void on_probe_timer(void *arg, double now);

/* After a change of the round: when the question "did the swarm go on
   without this peer" was open before it (was_open) and is not now, the
   context's decided is told: the pause holds the collectives until
   then, and waits for this call rather than asking again. */
static void decided_if(eng_auth_t *a, bool was_open)
{
    if (was_open && !eng_auth_went_on(a) && a->ctx.decided != NULL)
        a->ctx.decided(a->ctx.arg);
}

int eng_auth_probe_init(eng_auth_t *a)
{
    struct auth_round *r = &a->round;
    r->probe_timer = -1;
    r->ack = cl_viewack_new();
    if (r->ack == NULL)
        return COLLAB_ERR_NO_MEM;
    r->probe_timer = cl_timer_add(a->ctx.timers, on_probe_timer, a);
    return r->probe_timer >= 0 ? COLLAB_OK : COLLAB_ERR_NO_MEM;
}

void eng_auth_probe_fini(eng_auth_t *a)
{
    struct auth_round *r = &a->round;
    cl_timer_remove(a->ctx.timers, r->probe_timer);
    r->probe_timer = -1;
    cl_viewack_destroy(&r->ack);
}

void eng_auth_probe_start(eng_auth_t *a)
{
    if (a == NULL)
        return;
    struct auth_round *r = &a->round;
    bool was_open = eng_auth_went_on(a);
    size_t n;
    (void)cl_member_list(a->ctx.mb, &n);
    double now = a->ctx.now(a->ctx.arg);
    if (cl_viewack_start(r->ack, n) != 0)
        cl_warn("out of memory for the answers to this peer's probes; only its coordinator's "
                "views count");
    r->ack_until = now + probe_window(a);
    r->ack_epoch = cl_member_epoch(a->ctx.mb);
    r->ack_next_probe = now + 1.0;
    r->rejoin_until = 0;
    r->refused_newer = false;
    r->nrefused = 0;
    r->taken_back = false;
    probe_arm(a);
    decided_if(a, was_open); /* a new round: the old question ends */
}

void eng_auth_note_probe_sent(eng_auth_t *a, const uint8_t key[32])
{
    if (a != NULL)
        cl_viewack_asked(a->round.ack, key);
}

bool eng_auth_probing(const eng_auth_t *a)
{
    return a != NULL && (cl_viewack_open(a->round.ack) || a->round.rejoin_until > 0);
}

bool eng_auth_went_on(const eng_auth_t *a)
{
    if (a == NULL)
        return false;
    const struct auth_round *r = &a->round;
    return r->taken_back || (r->refused_newer && (r->rejoin_until > 0 || cl_viewack_open(r->ack)));
}

/* Whether key's newer answer was refused in this round. */
static bool was_refused(const struct auth_round *r, const uint8_t key[32])
{
    for (size_t i = 0; i < r->nrefused; i++)
        if (memcmp(r->refused_keys[i], key, 32) == 0)
            return true;
    return false;
}

void eng_auth_refused_newer(eng_auth_t *a, const uint8_t key[32])
{
    struct auth_round *r = &a->round;
    if (!cl_viewack_open(r->ack))
        return;
    r->refused_newer = true;
    if (!was_refused(r, key) && r->nrefused < REFUSED_MAX)
        memcpy(r->refused_keys[r->nrefused++], key, 32);
    /* Fewer members asked than a majority needs: the round can only end
       at its deadline, in the fallback; it goes there at once (the JOIN
       to the members that claimed a newer view), since the swarm that
       went on may finish before the deadline. */
    if (cl_viewack_nasked(r->ack) < cl_viewack_need(r->ack)) {
        r->ack_until = fmin(r->ack_until, a->ctx.now(a->ctx.arg));
        probe_arm(a);
    }
}

void eng_auth_redirected(eng_auth_t *a, const uint8_t from[32], const uint8_t to[32])
{
    if (a == NULL)
        return;
    struct auth_round *r = &a->round;
    if (r->rejoin_until <= 0 || !was_refused(r, from) || was_refused(r, to) ||
        r->nrefused >= REFUSED_MAX)
        return;
    memcpy(r->refused_keys[r->nrefused++], to, 32);
}

/* Before the window as in it, once no majority can answer (soak seed 4,
   round 5: the one member asked answered without this peer, then
   re-added it at once): the round can only end in the window, which
   would trust this same view. */
bool eng_auth_went_on_by(const eng_auth_t *a, const uint8_t key[32])
{
    const struct auth_round *r = &a->round;
    bool doomed = cl_viewack_open(r->ack) && cl_viewack_nasked(r->ack) < cl_viewack_need(r->ack);
    return r->refused_newer && was_refused(r, key) && (r->rejoin_until > 0 || doomed);
}

/* Whether this peer is out of the group in its own view (or no member):
   a straggler, resynced at its re-admission. */
static bool out_of_group(const eng_auth_t *a)
{
    const cl_peer_t *me = cl_member_self(a->ctx.mb);
    return !a->ctx.member(a->ctx.arg) || me == NULL || me->state == CL_PEER_GONE || !me->in_group;
}

/* Taken back: the view that lists this peer becomes its own, but not
   its stale sequence.  The swarm went on without it, so it must not run
   the group's collectives with the parameters it held when it stopped
   (it would run ahead as the admitter with a stale model, or take the
   members that went on out as behind it): it stays held until its view
   lists it out of the group, then finishes its step alone and is
   re-admitted and resynced as any straggler (docs/elastic.md §6). */
void eng_auth_taken_back(eng_auth_t *a, const uint8_t key[32])
{
    struct auth_round *r = &a->round;
    if (!eng_auth_went_on_by(a, key))
        return;
    cl_info("after the pause, a member of the swarm that went on answered with a view that lists "
            "this peer: it is back, and resyncs with the group as a straggler");
    double now = a->ctx.now(a->ctx.arg);
    cl_viewack_close(r->ack);
    r->rejoin_until = 0;
    r->taken_back = true;
    r->taken_until = now + probe_window(a);
    r->next_self_out = now; /* once the view is installed (eng_auth_view_changed) */
    probe_arm(a);
}

void eng_auth_view_changed(eng_auth_t *a)
{
    if (a == NULL || !a->round.taken_back)
        return;
    if (!out_of_group(a)) {
        probe_arm(a); /* asks to be taken out, from the timer */
        return;
    }
    a->round.taken_back = false;
    cl_info("after the pause this peer is out of the group; it is re-admitted and resynced at a "
            "step boundary");
    probe_arm(a);
    decided_if(a, true);
}

bool eng_auth_was_probed(const eng_auth_t *a, const uint8_t key[32])
{
    return cl_viewack_was_asked(a->round.ack, key);
}

bool eng_auth_rejoining(const eng_auth_t *a)
{
    return a->round.rejoin_until > 0;
}

void eng_auth_member(eng_auth_t *a)
{
    if (a == NULL)
        return;
    bool was_open = eng_auth_went_on(a);
    cl_viewack_close(a->round.ack);
    a->round.rejoin_until = 0;
    a->round.refused_newer = false;
    a->round.nrefused = 0;
    a->round.taken_back = false;
    probe_arm(a);
    decided_if(a, was_open);
}

bool eng_auth_acknowledged(eng_auth_t *a, const uint8_t key[32], const cl_wire_msg_t *m)
{
    struct auth_round *r = &a->round;
    uint8_t digest[32];
    if (!cl_viewack_was_asked(r->ack, key) || !cl_viewack_digest(m, digest))
        return false;
    size_t same = cl_viewack_answer(r->ack, key, m->u.view.epoch, digest);
    size_t need = cl_viewack_need(r->ack);
    if (same < need)
        return false;
    uint64_t own = cl_member_epoch(a->ctx.mb);
    cl_info("after the pause, %zu of the %zu members asked answered with one view (epoch %llu, "
            "%s this peer's); a majority of its last view: it counts",
            same, cl_viewack_nasked(r->ack), (unsigned long long)m->u.view.epoch,
            m->u.view.epoch > own ? "newer than" : "not newer than");
    bool was_open = eng_auth_went_on(a);
    cl_viewack_close(r->ack);
    probe_arm(a); /* nothing more is due */
    decided_if(a, was_open);
    return true;
}

/* The round's step at one of its deadlines: the rejoin window's end;
   the members whose answers do not agree asked again; at the round's
   deadline without a majority, a JOIN to the members that claimed a
   newer view.  A round or window of a peer that is no member ends. */
static void probe_step(eng_auth_t *a, double now)
{
    struct auth_round *r = &a->round;
    bool member = a->ctx.member(a->ctx.arg);
    if (r->taken_back) {
        if (out_of_group(a)) {
            r->taken_back = false; /* on_probe_timer tells the pause */
        } else if (now >= r->taken_until) {
            r->taken_back = false;
            cl_error("after the pause this peer was taken back, but the group did not take it "
                     "out within %.0f s to resync it; stopping (its parameters are no longer "
                     "the swarm's)",
                     probe_window(a));
            a->ctx.give_up(a->ctx.arg, COLLAB_ERR_PROC_FAILED);
        } else if (now >= r->next_self_out) {
            r->next_self_out = now + 1.0;
            if (a->ctx.self_out != NULL)
                a->ctx.self_out(a->ctx.arg);
        }
        return;
    }
    if (r->rejoin_until > 0 && !member)
        r->rejoin_until = 0; /* removed: the join path takes over */
    if (r->rejoin_until > 0 && now >= r->rejoin_until && !r->refused_newer)
        r->rejoin_until = 0; /* only its own later views came back: nothing went on */
    if (r->rejoin_until > 0 && now >= r->rejoin_until) {
        /* Nobody took it back: the swarm went on without this peer (a
           member's newer view was refused), and training on alone would
           end with another model. */
        r->rejoin_until = 0;
        cl_error("after the pause the swarm went on without this peer and none of its members "
                 "took it back within %.0f s; stopping (its parameters are no longer the "
                 "swarm's)",
                 probe_window(a));
        a->ctx.give_up(a->ctx.arg, COLLAB_ERR_PROC_FAILED);
        return;
    }
    if (r->rejoin_until > 0 && now >= r->next_rejoin) {
        /* A JOIN can stay unanswered: a member that was no longer the
           coordinator when its dial-back of this peer came through
           admits nobody, and waits for the joiner's next JOIN.  So the
           JOIN goes again each second to the members that claimed the
           newer view, and to the coordinators they redirected it to. */
        r->next_rejoin = now + REJOIN_EVERY;
        for (size_t i = 0; i < r->nrefused; i++)
            a->ctx.rejoin(a->ctx.arg, r->refused_keys[i]);
    }
    if (!cl_viewack_open(r->ack))
        return;
    uint64_t own = r->ack_epoch; /* not now's: it moves on as silent members go */
    size_t n = cl_viewack_nasked(r->ack);
    if (!member) {
        cl_viewack_close(r->ack); /* removed: the join path takes over */
        return;
    }
    if (now < r->ack_until) {
        if (now < r->ack_next_probe)
            return;
        /* Views may have moved on while the members answered: ask again
           until a majority agrees (their latest answers count). */
        r->ack_next_probe = now + 1.0;
        for (size_t i = 0; i < n; i++) {
            uint64_t ep;
            const uint8_t *k = cl_viewack_key(r->ack, i, &ep);
            const cl_peer_t *q = cl_member_find(a->ctx.mb, k);
            if (q != NULL && q->state != CL_PEER_GONE)
                a->ctx.probe(a->ctx.arg, k);
        }
        return;
    }
    /* No majority in time (members died, or the views never settled).
       The members that claimed a newer view are asked to take this peer
       back (JOIN): the view one of them answers with, listing this peer,
       counts (docs/security.md §4). */
    size_t answered = cl_viewack_nanswered(r->ack), newer = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ep;
        (void)cl_viewack_key(r->ack, i, &ep);
        newer += ep > own;
    }
    if (newer == 0) {
        cl_viewack_close(r->ack);
        cl_info("after the pause no view was answered by a majority of this peer's last view "
                "(%zu of %zu members asked answered, none with a newer view); keeping this view",
                answered, n);
        return;
    }
    if (n < cl_viewack_need(r->ack))
        cl_warn("after the pause no majority of this peer's last view can answer (%zu members "
                "asked, %zu needed, %zu answered); rejoining through the %zu that answered with a "
                "newer view",
                n, cl_viewack_need(r->ack), answered, newer);
    else
        cl_warn("after the pause no view was answered by a majority of this peer's last view "
                "within %.0f s (%zu of %zu members asked answered); rejoining through the %zu "
                "that answered with a newer view",
                probe_window(a), answered, n, newer);
    r->rejoin_until = now + probe_window(a);
    r->next_rejoin = now + REJOIN_EVERY;
    for (size_t i = 0; i < n; i++) {
        uint64_t ep;
        const uint8_t *k = cl_viewack_key(r->ack, i, &ep);
        if (ep > own)
            a->ctx.rejoin(a->ctx.arg, k); /* it may be removed here, its link dropped */
    }
    cl_viewack_close(r->ack);
}

/* The round's timer (see "Deadlines" above). */
static void on_probe_timer(void *arg, double now)
{
    eng_auth_t *a = arg;
    bool was_open = eng_auth_went_on(a);
    probe_step(a, now);
    probe_arm(a);
    decided_if(a, was_open);
}
