/*  cl_auth_probe_test.c - selftest of the authority's round after a
    pause (cl_engine_auth_probe.c, docs/security.md §4) on the fake
    context of auth_fixture.h (the receiver rank 0 of a view {0, 1, 2}
    with a monitor, a former member and a stranger).

    The round runs on its timer in the real cl_timer set, driven here as
    the loop would (run_until): armed where the round starts, at each
    re-probe, the round's deadline and the end of the rejoin window, and
    disarmed when nothing is due.  The context's decided is counted:
    called once each time the question "did the swarm go on without this
    peer" goes from open to decided.
*/
#include "auth_fixture.h"

/* A peer back from a pause (docs/security.md §4, pauses and removals).
   The receiver, rank 0 of {0, 1, 2}, asked members 1 and 2 (PROBE).  A
   member that is not its coordinator cannot move it alone: member 2's
   forged views, one listing only itself and one listing every member
   but the receiver, are refused, and member 1's answer alone is not
   enough; once both (more than half of the 3 members of the last view)
   answered with one view, that view counts.  Rejoining, a view without
   the receiver from a member it did not ask is refused.  Without a
   majority by the deadline, the members that claimed a newer view are
   sent a JOIN, and a view of theirs that lists the receiver counts. */
/* Whether every JOIN noted since s_njoined was reset went to the peer
   whose key starts with k (the rejoin window sends one each second). */
static bool joined_only(uint8_t k)
{
    for (int i = 0; i < s_njoined; i++)
        if (s_joined[i] != k)
            return false;
    return true;
}

static void test_pause(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int all[3] = {ME, M1, M2}, alone[1] = {M2}, but_me[2] = {M1, M2};
    cl_wire_msg_t m;
    int bans = s_bans;

    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(eng_auth_probing(s_n.auth));
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 1, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 1, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 0); /* one of the 3: no majority */
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* still none */
    /* The members are asked again each second. */
    int probes = s_probes;
    run_until(s_now + 1.5);
    CL_CHECK(s_probes == probes + 2);
    m = view(own + 1, all, 3, ents);
    CL_CHECK(gate(M2, &m) == 1); /* two of the 3 answered with it */
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY); /* nothing more is due */
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* the round is over */
    CL_CHECK(s_bans == bans);

    /* Rejoining: a view without the receiver from a member of its last
       view is refused; one that lists it is taken. */
    s_n.member = false;
    m = view(own + 2, but_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0);
    m = view(own + 2, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 1);
    s_n.member = true;

    /* No majority by the deadline (max(10 s, 4 × COLLAB_TIMEOUT)): the
       member that claimed a newer view is sent a JOIN; its view counts
       only while it lists the receiver. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(!eng_auth_went_on(s_n.auth)); /* nobody answered yet */
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth)); /* a refused newer view: the question is open */
    s_njoined = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_njoined >= 1 && joined_only(s_key[M2][0]));
    CL_CHECK(eng_auth_probing(s_n.auth) && eng_auth_went_on(s_n.auth));
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    int with_me[2] = {ME, M2};
    m = view(own + 3, with_me, 2, ents);
    s_gave_up = 0;
    s_decided = 0;
    CL_CHECK(gate(M2, &m) == 1); /* taken back by a member of the swarm that went on */
    CL_CHECK(!eng_auth_probing(s_n.auth));
    /* The view installed lists it out of the group (a removed peer is
       admitted again as a joiner): the pause is told at once. */
    cl_peer_t *me = cl_member_self(s_n.mb);
    bool was_in = me->in_group;
    me->in_group = false;
    eng_auth_view_changed(s_n.auth);
    me->in_group = was_in;
    CL_CHECK(!eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1);
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(s_bans == bans && s_gave_up == 0);

    /* Nobody takes it back within the window: the engine is stopped
       (the context's give_up), not left to train on alone.  A view
       listing it from a member whose answer was not refused (its own
       fragment) does not end the window. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 4, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* the JOIN */
    CL_CHECK(eng_auth_went_on(s_n.auth));
    s_gave_up = 0;
    s_decided = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == COLLAB_ERR_PROC_FAILED);
    CL_CHECK(!eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1);
    s_gave_up = 0;

    /* "Newer" means newer than the view held when the round began: the
       receiver's own epoch may move on meanwhile (it removes members it
       no longer hears from), past the view a member answered with. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 3, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 5, all, 3, ents);
    cl_member_delta_t delta;
    memset(&delta, 0, sizeof delta);
    CL_CHECK(cl_member_apply_view(s_n.mb, &m.u.view, s_now, &delta) == 1);
    cl_member_delta_clear(&delta);
    s_njoined = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_njoined >= 1 && joined_only(s_key[M2][0]));
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    s_now = 100.0;
}

/* Only a view without this peer says the swarm went on without it (soak
   seed 2, round 28: member 1's newer view, after member 2 died, still
   listed the receiver, and the receiver stopped with an error while
   member 3 waited for it).  A probed member's newer view that lists the
   receiver is refused (no majority) but leaves the question closed: at
   the round's deadline it is sent a JOIN, and the window ends without
   stopping the engine.  One that omits it opens the question, and a
   window that ends without a member taking it back stops the engine. */
static void test_went_on(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int with_me[2] = {ME, M1}, without_me[1] = {M2};
    cl_wire_msg_t m;

    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, with_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0); /* not its coordinator, no majority: not counted */
    CL_CHECK(eng_auth_probing(s_n.auth));
    CL_CHECK(!eng_auth_went_on(s_n.auth)); /* it still lists this peer */
    s_njoined = 0;
    s_gave_up = 0;
    s_decided = 0;
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* no majority: the JOIN */
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M1][0]);
    CL_CHECK(eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    run_until(s_now + 4 * s_n.cfg.timeout + 1); /* the window ends unanswered */
    CL_CHECK(!eng_auth_probing(s_n.auth) && s_gave_up == 0);
    CL_CHECK(s_decided == 0); /* nothing was ever open */

    /* The other member answers with a view without this peer: the swarm
       went on without it. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, with_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(!eng_auth_went_on(s_n.auth));
    m = view(own + 2, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 0);
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == 0 && eng_auth_went_on(s_n.auth));
    run_until(s_now + 4 * s_n.cfg.timeout + 1);
    CL_CHECK(s_gave_up == COLLAB_ERR_PROC_FAILED);
    CL_CHECK(!eng_auth_probing(s_n.auth) && !eng_auth_went_on(s_n.auth));
    CL_CHECK(s_decided == 1);

    /* Decided by a majority: two of the three answer with one view. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 3, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth) && s_decided == 1);
    int all[3] = {ME, M1, M2};
    m = view(own + 3, all, 3, ents);
    CL_CHECK(gate(M1, &m) == 0);
    CL_CHECK(s_decided == 1);
    CL_CHECK(gate(M2, &m) == 1);
    CL_CHECK(!eng_auth_went_on(s_n.auth) && s_decided == 2);
    /* A membership that begins again decides an open question too. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 4, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    eng_auth_member(s_n.auth);
    CL_CHECK(s_decided == 3);
    s_gave_up = 0;
    s_now = 100.0;
}

/* Taken back before the window (soak seed 4, round 5): the one member
   asked answered with a newer view without the receiver (the swarm went
   on), then re-added it at once and sent a newer view that lists it.
   With fewer members asked than a majority needs, the round can only end
   in the window, which would trust that same view: it counts at once.
   While a majority could still answer it does not, nor does a view
   listing the receiver from a member whose answer was not refused.
   Taken back is not resumed at the receiver's stale sequence: while its
   view lists it in the group the question stays open (the pause holds
   its collectives) and it asks each second to be taken out (self_out);
   the view that lists it out of the group decides it (it resyncs as a
   straggler).  The member that took it back gains nothing more: its next
   view counts no longer.  Never taken out, it gives up at the deadline. */
static void test_taken_back(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int without_me[1] = {M2}, with_me[2] = {ME, M2}, m1_me[2] = {ME, M1};
    cl_wire_msg_t m;
    cl_peer_t *me = cl_member_self(s_n.mb);
    bool was_in = me->in_group;
    int bans = s_bans;

    /* Two of three asked: a majority may still answer. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    m = view(own + 2, with_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0);
    CL_CHECK(eng_auth_went_on(s_n.auth));
    eng_auth_member(s_n.auth); /* ends the round */

    /* One of three asked: no majority can answer. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    s_decided = 0;
    s_gave_up = 0;
    s_njoined = 0;
    s_self_out = 0;
    m = view(own + 3, m1_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0); /* M1 was not asked: not its coordinator */
    m = view(own + 3, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0); /* no majority: refused */
    CL_CHECK(eng_auth_went_on(s_n.auth) && s_decided == 0);
    m = view(own + 4, m1_me, 2, ents);
    CL_CHECK(gate(M1, &m) == 0); /* M1 never said the swarm went on */
    CL_CHECK(eng_auth_went_on(s_n.auth) && s_decided == 0);
    m = view(own + 4, with_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 1); /* taken back by the member that went on */
    CL_CHECK(!eng_auth_probing(s_n.auth));
    /* Installed with the receiver in the group: still held, and it asks
       to be taken out, once the view is in and then each second. */
    me->in_group = true;
    eng_auth_view_changed(s_n.auth);
    CL_CHECK(eng_auth_went_on(s_n.auth) && s_decided == 0);
    run_until(s_now + 0.5);
    CL_CHECK(s_self_out == 1);
    run_until(s_now + 1.0);
    CL_CHECK(s_self_out == 2 && eng_auth_went_on(s_n.auth) && s_decided == 0);
    m = view(own + 5, with_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 0); /* no more trust than before */
    /* Its coordinator's view lists it out of the group: decided. */
    me->in_group = false;
    eng_auth_view_changed(s_n.auth);
    CL_CHECK(!eng_auth_went_on(s_n.auth) && s_decided == 1);
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY); /* nothing more is due */
    run_until(s_now + 2 * 4 * s_n.cfg.timeout + 2);
    CL_CHECK(s_njoined == 0 && s_gave_up == 0 && s_decided == 1 && s_self_out == 2);

    /* Taken back, never taken out of the group: it stops at the deadline
       rather than train on with its stale model. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 6, without_me, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    m = view(own + 7, with_me, 2, ents);
    CL_CHECK(gate(M2, &m) == 1);
    me->in_group = true;
    eng_auth_view_changed(s_n.auth);
    run_until(s_now + 4 * s_n.cfg.timeout - 0.5);
    CL_CHECK(s_gave_up == 0 && eng_auth_went_on(s_n.auth) && s_decided == 1);
    run_until(s_now + 1.0);
    CL_CHECK(s_gave_up == COLLAB_ERR_PROC_FAILED);
    CL_CHECK(!eng_auth_went_on(s_n.auth) && s_decided == 2);
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    CL_CHECK(s_bans == bans);
    me->in_group = was_in;
    s_gave_up = 0;
    s_now = 100.0;
}

/* In the rejoin window, the member that said the swarm went on answers
   the JOIN with a REDIRECT to its coordinator (soak seed 4, round 5):
   that coordinator's view listing the receiver takes it back as the
   member's own would.  A redirect from a member whose answer was not
   refused, or outside the window, names nobody; without the redirect
   the coordinator's view counts (it was asked) but ends nothing. */
static void test_redirected(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int without_me[1] = {M2}, m1_me[2] = {ME, M1};
    cl_wire_msg_t m;
    cl_peer_t *me = cl_member_self(s_n.mb);
    bool was_in = me->in_group;

    for (int redirect = 0; redirect < 2; redirect++) {
        eng_auth_probe_start(s_n.auth);
        eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
        eng_auth_redirected(s_n.auth, s_key[M2], s_key[M1]); /* no window yet: nothing */
        m = view(own + 1, without_me, 1, ents);
        CL_CHECK(gate(M2, &m) == 0);
        s_njoined = 0;
        s_decided = 0;
        s_gave_up = 0;
        run_until(s_now + 0.5); /* one of three asked: the JOIN at once */
        CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
        CL_CHECK(eng_auth_went_on(s_n.auth));
        eng_auth_redirected(s_n.auth, s_key[M1], s_key[MON]); /* M1 never said it went on */
        if (redirect)
            eng_auth_redirected(s_n.auth, s_key[M2], s_key[M1]);
        eng_auth_note_join_sent(s_n.auth, s_key[M1]); /* the JOIN follows the redirect */
        m = view(own + 2, m1_me, 2, ents);
        CL_CHECK(gate(M1, &m) == 1);
        me->in_group = false; /* admitted again: out of the group */
        eng_auth_view_changed(s_n.auth);
        CL_CHECK(eng_auth_went_on(s_n.auth) == !redirect);
        CL_CHECK(s_decided == redirect);
        run_until(s_now + 4 * s_n.cfg.timeout + 1);
        CL_CHECK(s_gave_up == (redirect ? 0 : COLLAB_ERR_PROC_FAILED));
        me->in_group = was_in;
    }
    s_gave_up = 0;
    s_now = 100.0;
}

/* The round's timer, at its exact deadlines.  With COLLAB_TIMEOUT 2.6 s
   the round lasts 10.4 s, so its deadline falls between two re-probes:
   the timer is armed at the first re-probe where the round starts, each
   re-probe arms the next one second later, the last before the deadline
   arms the deadline, which sends the JOIN and arms the end of the rejoin
   window; then nothing is due.  A round ends when its timer finds this
   peer no member, and when a membership begins again. */
static void test_probe_timer(void)
{
    uint64_t own = cl_member_epoch(s_n.mb);
    cl_wire_member_t ents[4];
    int alone[1] = {M2};
    cl_wire_msg_t m;
    double timeout = s_n.cfg.timeout;
    s_n.cfg.timeout = 2.6;
    double t0 = s_now, window = s_n.cfg.timeout * 4;
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + 1.0); /* where the round starts */
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0); /* M2 claims a newer view */
    int probes = s_probes;
    s_njoined = 0;
    run_until(t0 + 1.0);
    CL_CHECK(s_probes == probes + 2);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + 2.0); /* the next re-probe */
    run_until(t0 + 10.0);
    CL_CHECK(s_probes == probes + 20 && s_njoined == 0);
    CL_CHECK(cl_timer_next(s_n.timers) == t0 + window); /* the deadline, before t0 + 11 */
    int joins = s_joins;
    run_until(t0 + window);
    CL_CHECK(s_njoined == 1 && s_joined[0] == s_key[M2][0]);
    CL_CHECK(eng_auth_probing(s_n.auth));
    /* In the rejoin window the JOIN goes again each second (a JOIN can
       stay unanswered: a member that stopped coordinating meanwhile
       admits nobody), then the window ends. */
    CL_CHECK(cl_timer_next(s_n.timers) == (t0 + window) + 1.0);
    run_until((t0 + window) + 1.0);
    CL_CHECK(s_njoined == 2 && joined_only(s_key[M2][0]));
    CL_CHECK(cl_timer_next(s_n.timers) == (t0 + window) + 2.0);
    run_until((t0 + window) + window);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    CL_CHECK(s_probes == probes + 20 && s_joins == joins + 11); /* at +0, +1 .. +10 */

    /* Removed meanwhile: the round's timer ends it, without a probe. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M1]);
    s_n.member = false;
    run_until(s_now + 1.0);
    CL_CHECK(!eng_auth_probing(s_n.auth) && s_probes == probes + 20);
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    s_n.member = true;

    /* A membership that begins again ends a round or a rejoin window of
       the former one. */
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    eng_auth_member(s_n.auth);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    eng_auth_probe_start(s_n.auth);
    eng_auth_note_probe_sent(s_n.auth, s_key[M2]);
    m = view(own + 1, alone, 1, ents);
    CL_CHECK(gate(M2, &m) == 0);
    s_njoined = 0;
    run_until(s_now + 0.5); /* one of three asked: no majority possible, the JOIN at once */
    CL_CHECK(s_njoined == 1 && eng_auth_probing(s_n.auth));
    eng_auth_member(s_n.auth);
    CL_CHECK(!eng_auth_probing(s_n.auth));
    CL_CHECK(cl_timer_next(s_n.timers) == INFINITY);
    s_n.cfg.timeout = timeout;
    s_now = 100.0;
}

int main(void)
{
    setup();
    test_pause();
    test_went_on();
    test_taken_back();
    test_redirected();
    test_probe_timer();
    node_fini(&s_n);
    return cl_selftest_end("cl_auth_probe_test");
}
