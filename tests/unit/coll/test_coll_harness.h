/*  test_coll_harness.h - runs N cl_coll_t state machines in one process
    (one per simulated member) for the selftests of the collectives.

    Every message an algorithm sends is queued; the harness delivers the
    queued events (starts, messages, failure notices) one at a time, picking
    each at random with a seeded generator, so every run explores another
    interleaving and a failing seed can be replayed.  A plan can kill
    members when a given number of events has been delivered: a killed
    member stops, each of its messages still queued is dropped or kept at
    random (in flight), and every survivor gets the failure notice
    (cl_coll_on_fail) as a queued event of its own, so survivors learn of it
    at different moments.  Time is simulated: when nothing is left to
    deliver and some survivor is not done, the clock moves to the
    earliest time a member asked to be looked at again (cl_coll_wake_at)
    and those members are rechecked (cl_coll_recheck), as the engine's
    timer does; when none asked, it jumps past every deadline and the
    members are ticked; a member then reported late
    (env->suspect) means the algorithm hangs, and the run fails.
    Completed members get cl_coll_release_user_buffers at once, as the
    engine does, and stay reachable (retained) until the end of the run.
*/
#ifndef TEST_COLL_HARNESS_H_INCLUDED
#define TEST_COLL_HARNESS_H_INCLUDED

#include "cl_coll.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct th th_t;

#define TH_MAX_KILLS 4

typedef struct {
    uint64_t seed;              /* interleaving */
    int nkill;                  /* kills in the plan */
    long kill_at[TH_MAX_KILLS]; /* event count at which to kill */
    int kill_who[TH_MAX_KILLS]; /* member index to kill */
    bool drop_all_inflight;     /* drop every queued message of a killed member */
    int fuzz_every;             /* > 0: a random message to a random member every k events */
    bool no_fail_to_done;       /* completed members get no failure notices */
} th_plan_t;

/* Relay proofs: every member has an identity key (X25519, one per comm
   rank) and signs with it (cl_xsign), as an engine of wire version 9
   does, except the members whose bit (member index) is set here: they
   speak version 8 (no sign, verify or signs in their env, and the others'
   env->signs says false for them), so a collective with one of them uses
   tags.  Read by th_new; 0 by default, ~0 for tags everywhere. */
extern uint64_t th_unsigned;

/* When set (before th_new), each member's env->confirms_failed says what
   the engine's says: true for a member the harness killed, false for a
   live one, so that a STATUS naming a live member failed (one a member
   disowned for a forgery, cl_coll_disown) leaves the others' views alone.
   false by default: statuses must name the same view exactly. */
extern bool th_confirms;

/* Creates n members from args[0..n) (one per member, each with its own
   buffers; members/comm_size/self must be filled).  Returns NULL when a
   cl_coll_new fails.  Caller owns. */
th_t *th_new(int n, const cl_coll_args_t *args);

/* Called for every message an algorithm sends, with a copy the function
   may change (data is the harness's own copy, len bytes); it returns
   false to drop the message.  from and to are member indexes.  A hostile
   member's behaviour in tests.  NULL: none. */
typedef bool th_tamper_fn(void *arg, int from, int to, cl_coll_msg_t *m);
void th_set_tamper(th_t *self, th_tamper_fn *fn, void *arg);

/* Destroys and nulls *self_p; accepts NULL. */
void th_destroy(th_t **self_p);

/* Runs the plan until nothing is left to deliver.  Returns 0 when every
   survivor completed, -1 when the run got stuck (a hang). */
int th_run(th_t *self, const th_plan_t *plan);

/* Member i's state machine. */
cl_coll_t *th_coll(th_t *self, int i);

/* True when member i was not killed. */
bool th_alive(const th_t *self, int i);

/* Verdicts (env->convict) reported so far. */
long th_convictions(const th_t *self);

/* Events delivered in the last run. */
long th_events(const th_t *self);

/* The simulated clock (seconds; 0 at th_new): it moves only while no
   event is left and some member is not done. */
double th_clock(const th_t *self);

/* Deliveries that an algorithm refused with an error (honest traffic must
   give none). */
long th_refused(const th_t *self);

/* env->suspect calls in the last run. */
long th_suspects(const th_t *self);

/* Random messages injected by the last run's fuzzing, and how many of
   them the members accepted. */
long th_fuzzed(const th_t *self);
long th_fuzz_accepted(const th_t *self);

/* Delivers msg (from comm rank msg->from) to member i at once and returns
   cl_coll_on_msg's result (for malformed-message tests). */
int th_inject(th_t *self, int i, const cl_coll_msg_t *msg);

/* Deterministic generator for test data. */
uint64_t th_rand(uint64_t *state);

#endif
