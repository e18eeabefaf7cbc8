/*  cl_coll_fail_staged.c - the staged cases of cl_coll_fail_test: a
    hostile producer under signatures and tags, and an all-reduce that
    completes before the others' DONE.  Each runs the same interleaving
    twice: once to find the event to kill at, once with the kill.
*/
#include "cl_coll_fail_fx.h"
#include "util/cl_selftest.h"
#include "util/cl_xsign.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The staged cases' collective: an all-reduce of 4096 doubles (SUM) on 4
   members, two chunks per part. */
static fcase_t s_four_doubles(const char *name)
{
    return (fcase_t){.name = name,
                     .kind = CL_COLL_ALLREDUCE,
                     .n = 4,
                     .size = 4,
                     .dt = COLLAB_DOUBLE,
                     .op = COLLAB_OP_SUM,
                     .count = 4096,
                     .chunk = 4096,
                     .small = 0};
}

/* The fixture and harness of one pass (every member's early_rate set);
   NULL, the fixture torn down, when the harness cannot be made. */
static th_t *s_staged(fx_t *fx, const fcase_t *tc, double early_rate)
{
    fx_setup(fx, tc);
    for (int i = 0; i < tc->n; i++)
        fx->args[i].early_rate = early_rate;
    th_t *h = th_new(tc->n, fx->args);
    CL_CHECK(h != NULL);
    if (h == NULL)
        fx_teardown(fx);
    return h;
}

/* A pass's plan: the interleaving of `seed`, and member 3 killed when
   `kill_at` events were delivered (none when negative). */
static th_plan_t s_plan(uint64_t seed, long kill_at)
{
    th_plan_t plan = {.seed = seed};
    if (kill_at >= 0) {
        plan.nkill = 1;
        plan.kill_at[0] = kill_at;
        plan.kill_who[0] = 3;
    }
    return plan;
}

/* A hostile producer (docs/security.md §6, relay proofs): member 3, the
   reducer of part 3 of a butterfly all-reduce among 4, gives member 1 a
   wrong proof of each chunk it produces and then fails.
     tags (every member at wire version 8): the RESULTs to the others
       carry a wrong tag for member 1, member 1 gets none.  The holders'
       relays fail member 1's tag check, statuses keep saying "held", and
       the repair of part 3 waits until deadlines suspect honest holders:
       the old liveness failure (the run is stuck).
     signed: the RESULT to member 1 carries a wrong signature (refused: it
       never holds it), the others' verify.  Once member 3 fails, their
       relays to member 1 carry the producer's signature and count: the
       repair completes without a deadline, all survivors equal.
   Returns whether the run completed with no member suspected. */
typedef struct {
    th_t *h;
    size_t nb;
    bool sig;
    long last; /* events delivered when member 3 sent its last RESULT */
} hostile_t;

static bool s_hostile(void *arg, int from, int to, cl_coll_msg_t *m)
{
    hostile_t *x = arg;
    if (from != 3 || m->type != CL_MSG_RESULT || m->len < x->nb + CL_COLL_SIG)
        return true;
    x->last = th_events(x->h);
    uint8_t *d = (uint8_t *)m->data;
    if (x->sig) {
        if (to == 1)
            d[x->nb + CL_XSIGN_PK + 7] ^= 0x40; /* the signature (R) */
        return true;
    }
    if (to == 1)
        return false;
    d[x->nb + 1 * CL_COLL_TAG + 3] ^= 0x40; /* member 1's tag */
    return true;
}

static bool s_hostile_run(bool sig, uint64_t seed, bool *equal)
{
    const fcase_t tc = s_four_doubles("hostile producer");
    th_unsigned = sig ? 0 : ~(uint64_t)0;
    long kill = -1;
    bool ok = false;
    *equal = false;
    for (int pass = 0; pass < 2; pass++) {
        fx_t fx;
        th_t *h = s_staged(&fx, &tc, 0);
        if (h == NULL)
            break;
        hostile_t x = {.h = h, .nb = 1, .sig = sig, .last = -1};
        th_set_tamper(h, s_hostile, &x);
        /* Pass 0 finds when member 3 sends its last RESULT; pass 1, with
           the same interleaving, kills it one event later. */
        th_plan_t plan = s_plan(seed, pass == 1 ? kill : -1);
        int rc = th_run(h, &plan);
        if (pass == 0) {
            kill = x.last + 1;
        } else {
            ok = rc == 0 && th_suspects(h) == 0;
            *equal = rc == 0;
            for (int i = 0; i < 3 && *equal; i++)
                *equal = cl_coll_done(th_coll(h, i)) &&
                         memcmp(fx.out[i], fx.out[0], tc.count * fx.e) == 0;
            if (rc == 0)
                for (int i = 0; i < 3; i++)
                    fx_check_reduction(&fx, h, i, fx.out[i], tc.count, 0);
        }
        th_destroy(&h);
        fx_teardown(&fx);
    }
    th_unsigned = 0;
    return ok;
}

void fx_hostile_producer(void)
{
    int old_stuck = 0, done = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        bool equal;
        bool ok = s_hostile_run(true, seed, &equal);
        CL_CHECK(ok);
        CL_CHECK(equal);
        done += ok && equal;
        if (!s_hostile_run(false, seed, &equal))
            old_stuck++;
    }
    /* What tags did: every run stuck on member 1 (the behaviour the
       signatures remove; kept as a check that the attack still bites). */
    CL_CHECK(old_stuck == 8);
    fprintf(stderr,
            "hostile producer: signed: %d of 8 completed, no deadline; tags: %d of 8 stuck\n",
            done, old_stuck);
}

/* Completion before the others' DONE (docs/collectives.md §3,
   "Retention").  Mode "nodone": every DONE is dropped, and every member
   must still complete (each holds everything).  Mode "relay": member 3
   sends its part's results to member 0 only, and is killed right after
   member 0 sent its DONE; member 0 completed then, its program's buffer
   is scribbled over (the harness), and members 1 and 2 must get part 3
   from member 0's kept copy: equal, correct results.  Both hang, or
   relay nothing from a completed member, when completion waits for every
   DONE.  Mode "nodone" runs again with a rate that lets the members
   complete only 5 s (simulated) after the transfer began: each holds
   everything at once, no message comes after, and only the harness's
   timer (cl_coll_wake_at, cl_coll_recheck, as the engine's) completes
   it. */
typedef struct {
    th_t *h;
    bool relay;     /* mode "relay" (else "nodone") */
    long done_at;   /* events delivered when member 0 sent its DONE */
    int late_relay; /* relays sent by member 0 after it completed */
} early_t;

static bool s_early_tamper(void *arg, int from, int to, cl_coll_msg_t *m)
{
    early_t *x = arg;
    if (!x->relay)
        return m->type != CL_MSG_DONE;
    if (from == 0 && m->type == CL_MSG_DONE && x->done_at < 0)
        x->done_at = th_events(x->h);
    if (from == 0 && m->type == CL_MSG_RELAY && cl_coll_done(th_coll(x->h, 0)))
        x->late_relay++;
    return !(from == 3 && m->type == CL_MSG_RESULT && (to == 1 || to == 2));
}

static void s_early(bool relay, double gate, uint64_t seed, int *late)
{
    const fcase_t tc = s_four_doubles("early completion");
    long kill = -1;
    for (int pass = relay ? 0 : 1; pass < 2; pass++) {
        fx_t fx;
        double bytes = (double)tc.count * sizeof(double);
        th_t *h = s_staged(&fx, &tc, gate > 0 ? bytes / gate : INFINITY);
        if (h == NULL)
            return;
        early_t x = {.h = h, .relay = relay, .done_at = -1};
        th_set_tamper(h, s_early_tamper, &x);
        /* Pass 0 finds when member 0 sends its DONE; pass 1, with the same
           interleaving, kills member 3 one event later. */
        th_plan_t plan = s_plan(seed, pass == 1 && relay ? kill : -1);
        int rc = th_run(h, &plan);
        if (pass == 0) {
            kill = x.done_at + 1;
            CL_CHECK(x.done_at >= 0);
        } else {
            int nlive = relay ? 3 : 4;
            CL_CHECK(rc == 0);
            CL_CHECK(th_suspects(h) == 0);
            CL_CHECK(th_refused(h) == 0);
            /* Every DONE dropped: complete at once, or at the time the
               rate allows and not before (the clock moves only while
               some member is not done). */
            if (!relay)
                CL_CHECK(gate > 0 ? th_clock(h) >= gate : th_clock(h) == 0);
            for (int i = 0; i < nlive; i++) {
                CL_CHECK(cl_coll_done(th_coll(h, i)));
                CL_CHECK(memcmp(fx.out[i], fx.out[0], tc.count * fx.e) == 0);
                fx_check_reduction(&fx, h, i, fx.out[i], tc.count, 0);
            }
            *late += x.late_relay;
        }
        th_destroy(&h);
        fx_teardown(&fx);
    }
}

void fx_early_completion(void)
{
    int late = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        s_early(false, 0, seed, &late);
        s_early(false, 5.0, seed, &late);
        s_early(true, 0, seed, &late);
    }
    CL_CHECK(late > 0);
    fprintf(stderr, "early completion: %d relays from a completed member over 8 seeds\n", late);
}

void fx_staged_counts(int *checks, int *failures)
{
    *checks = cl_selftest_checks;
    *failures = cl_selftest_failures;
}
