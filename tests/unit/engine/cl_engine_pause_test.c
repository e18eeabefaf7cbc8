/*  cl_engine_pause_test.c - selftest of the pause (cl_engine_pause.c) on a
    fake context: real membership records (el_fixture.h, this peer rank 0
    of three) and a real timer set; the two clocks, membership, the
    excuses, the authority's round, the members asked and the resumption
    of the collectives are this test's.

    COLLAB_TIMEOUT is 8 s and the heartbeat period 2 s here, so a gap
    between two turns of the loop of more than 4.5 s is a stop, and one of
    more than 6 s a long one.  A turn-to-turn gap below that changes
    nothing; a short stop is taken off the engine's clock (less one
    period) and asks nobody; a long one is taken off too, excuses and asks
    every other member, and holds the collectives back (the doubt) until
    every member asked answered, or until the doubt's timer in the loop's
    set ends it COLLAB_TIMEOUT later, or until this peer is no member;
    while the authority's question is open (the context's undecided) it
    outlasts both, with no timer armed, until the authority says it is
    decided (eng_pause_decided), which ends it at the timer set's next
    run.
*/
#include "engine/cl_engine_pause.h"

#include "ctx_fixture.h" /* s_keys, CTX_FAKE_FREE */
#include "el_fixture.h"
#include "mpi_collab.h"
#include "selftest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXASK 8

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    cl_timer_t *timers;
    cl_member_t *mb;
    double raw;     /* the raw clock, every second counted */
    double off;     /* what the pause took off the engine's clock */
    bool member;    /* this peer is a member */
    int starts;     /* rounds of answers opened */
    int resumes;    /* the collectives resumed */
    bool undecided; /* the authority's question is open (ctx.undecided) */
    int nasked;     /* members asked, in order */
    uint8_t asked[MAXASK][32];
    int nexcused; /* members excused, in order, and when */
    uint8_t excused[MAXASK][32];
    double excused_at;
} fake_t;

/* The engine's clock: the raw one less the stops taken off. */
static double f_now(fake_t *f)
{
    return f->raw - f->off;
}

static double f_raw_now(fake_t *f)
{
    return f->raw;
}

static void f_not_running(fake_t *f, double seconds)
{
    f->off += seconds;
}

static bool f_is_member(fake_t *f)
{
    return f->member;
}

static void f_excuse(fake_t *f, cl_peer_t *p, double now)
{
    CHECK(f->nexcused < MAXASK);
    if (f->nexcused < MAXASK)
        memcpy(f->excused[f->nexcused++], p->key, 32);
    f->excused_at = now;
}

static void f_probe_start(fake_t *f)
{
    f->starts++;
}

static void f_ask(fake_t *f, const cl_peer_t *p)
{
    CHECK(f->starts > 0); /* the round is open before the first PROBE */
    CHECK(f->nasked < MAXASK);
    if (f->nasked < MAXASK)
        memcpy(f->asked[f->nasked++], p->key, 32);
}

static bool f_undecided(fake_t *f)
{
    return f->undecided;
}

static void f_resume(fake_t *f)
{
    f->resumes++;
}

/* A pause on a fake context over mb (owned from now on; NULL: this peer
   is rank 0 of three), a member whose loop turned once at raw time 100. */
static eng_pause_t *fake_pause(fake_t *f, cl_member_t *mb)
{
    memset(f, 0, sizeof *f);
    f->raw = 100.0;
    f->member = true;
    f->cfg.timeout = 8.0;
    f->timers = cl_timer_new(8);
    f->mb = mb != NULL ? mb : el_member_of_three(s_keys, 0, f->raw);
    CHECK(f->timers != NULL && f->mb != NULL);
    eng_pause_ctx_t ctx = {.arg = f,
                           .cfg = &f->cfg,
                           .hb_interval = 2.0,
                           .members = f->mb,
                           .timers = f->timers,
                           .now = f_now,
                           .raw_now = f_raw_now,
                           .not_running = f_not_running,
                           .is_member = f_is_member,
                           .excuse = f_excuse,
                           .probe_start = f_probe_start,
                           .ask = f_ask,
                           .undecided = f_undecided,
                           .resume = f_resume};
    memcpy(ctx.self_key, s_keys[0], 32);
    eng_pause_t *p = eng_pause_new(&ctx);
    CHECK(p != NULL);
    eng_pause_check(p); /* the first turn: nothing to measure from */
    CHECK(f->off == 0 && f->starts == 0 && !eng_pause_in_doubt(p));
    eng_pause_after_timers(p);
    return p;
}

static void fake_free(fake_t *f, eng_pause_t **p)
{
    CTX_FAKE_FREE(eng_pause_destroy, p, &f->timers, &f->mb);
}

/* One turn of the loop that began `gap` raw seconds after the last: the
   check after the poll, then the turn's timers and the after-timers
   hook at the engine's time. */
static void turn(fake_t *f, eng_pause_t *p, double gap)
{
    f->raw += gap;
    eng_pause_check(p);
    (void)cl_timer_run(f->timers, f_now(f));
    eng_pause_after_timers(p);
}

/* A long stop: 10 s between two turns.  Taken off the clock less one
   period; both other members excused and asked, once, after the round
   opened; the doubt armed COLLAB_TIMEOUT later on the engine's clock. */
static double long_stop(fake_t *f, eng_pause_t *p)
{
    double off = f->off;
    f->raw += 10.0;
    eng_pause_check(p);
    CHECK(fabs(f->off - (off + 8.0)) < 1e-9); /* 10 s less one period */
    CHECK(f->starts == 1);
    CHECK(f->nasked == 2 && memcmp(f->asked[0], s_keys[1], 32) == 0 &&
          memcmp(f->asked[1], s_keys[2], 32) == 0);
    CHECK(f->nexcused == 2 && memcmp(f->excused[0], s_keys[1], 32) == 0 &&
          memcmp(f->excused[1], s_keys[2], 32) == 0);
    CHECK(fabs(f->excused_at - f_now(f)) < 1e-9); /* heard now, on the corrected clock */
    CHECK(eng_pause_in_doubt(p));
    double until = cl_timer_next(f->timers);
    CHECK(fabs(until - (f_now(f) + f->cfg.timeout)) < 1e-9);
    return until;
}

/* Turns of the loop and a short stop change nothing but the clock. */
static void test_short_stop(void)
{
    fake_t f;
    eng_pause_t *p = fake_pause(&f, NULL);
    turn(&f, p, 1.0);
    turn(&f, p, 4.5); /* the longest the loop may take */
    CHECK(f.off == 0);
    double before = f_now(&f);
    turn(&f, p, 5.0);                               /* a short stop */
    CHECK(fabs(f.off - 3.0) < 1e-9);                /* 5 s less one period */
    CHECK(fabs(f_now(&f) - (before + 2.0)) < 1e-9); /* the clock lost the stopped time */
    CHECK(f.starts == 0 && f.nasked == 0 && f.nexcused == 0);
    CHECK(!eng_pause_in_doubt(p));
    CHECK(isinf(cl_timer_next(f.timers)));
    turn(&f, p, 6.0); /* about COLLAB_TIMEOUT less a period: still short */
    CHECK(fabs(f.off - 7.0) < 1e-9);
    CHECK(f.starts == 0 && !eng_pause_in_doubt(p));
    /* The mark moves with every turn: a long wait measured from an old
       mark would be a stop. */
    for (int i = 0; i < 10; i++)
        turn(&f, p, 1.0);
    CHECK(fabs(f.off - 7.0) < 1e-9 && f.starts == 0);
    /* The after-timers hook marks the turn too: timers that ran 3 s and
       a poll that slept 3 s are no stop. */
    eng_pause_check(p);
    f.raw += 3.0;
    eng_pause_after_timers(p);
    f.raw += 3.0;
    eng_pause_check(p);
    CHECK(fabs(f.off - 7.0) < 1e-9);
    /* A stop while this peer is no member: nothing. */
    f.member = false;
    turn(&f, p, 30.0);
    CHECK(fabs(f.off - 7.0) < 1e-9 && f.starts == 0 && !eng_pause_in_doubt(p));
    CHECK(f.resumes == 0);
    fake_free(&f, &p);
}

/* A long stop: the doubt holds the collectives back until each member
   asked answered; a stranger's view, or one member's twice, does not
   end it. */
static void test_answers(void)
{
    fake_t f;
    eng_pause_t *p = fake_pause(&f, NULL);
    double until = long_stop(&f, p);
    (void)cl_timer_run(f.timers, f_now(&f));
    eng_pause_after_timers(p);
    CHECK(eng_pause_in_doubt(p));
    uint8_t stranger[32];
    memset(stranger, 0x99, 32);
    eng_pause_view_from(p, stranger);
    eng_pause_view_from(p, s_keys[1]);
    eng_pause_view_from(p, s_keys[1]);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    CHECK(cl_timer_next(f.timers) == until);
    eng_pause_view_from(p, s_keys[2]); /* the last one */
    CHECK(!eng_pause_in_doubt(p));
    CHECK(f.resumes == 1);
    CHECK(isinf(cl_timer_next(f.timers))); /* its timer cancelled */
    eng_pause_view_from(p, s_keys[2]);     /* a late answer: nothing more */
    CHECK(f.resumes == 1);
    /* A second long stop opens a new round and asks again. */
    f.starts = f.nasked = f.nexcused = 0;
    (void)long_stop(&f, p);
    fake_free(&f, &p);
}

/* Nobody answers: the doubt's timer ends it COLLAB_TIMEOUT later, not
   before. */
static void test_deadline(void)
{
    fake_t f;
    eng_pause_t *p = fake_pause(&f, NULL);
    double until = long_stop(&f, p);
    eng_pause_view_from(p, s_keys[2]); /* one of two */
    f.raw += until - f_now(&f) - 0.5;
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 0);
    eng_pause_after_timers(p);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    f.raw += 0.5;
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 1);
    CHECK(!eng_pause_in_doubt(p));
    CHECK(f.resumes == 1);
    CHECK(isinf(cl_timer_next(f.timers)));
    eng_pause_view_from(p, s_keys[1]); /* too late: nothing more */
    CHECK(f.resumes == 1);
    fake_free(&f, &p);
}

/* A member answered with a newer view without this peer that no
   majority confirmed (the authority's question is open): the doubt
   outlasts its deadline and every member's answer with no timer armed
   (no tick looks again), and ends at the timer set's next run after the
   authority's decision (eng_pause_decided), not inside that call. */
static void test_undecided(void)
{
    fake_t f;
    eng_pause_t *p = fake_pause(&f, NULL);
    double until = long_stop(&f, p);
    f.undecided = true;
    f.raw += until - f_now(&f);
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 1); /* the deadline: held on */
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    CHECK(isinf(cl_timer_next(f.timers))); /* nothing polls */
    eng_pause_view_from(p, s_keys[1]);
    eng_pause_view_from(p, s_keys[2]); /* every member answered: still open */
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    CHECK(isinf(cl_timer_next(f.timers)));
    f.raw += 30.0;
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 0);
    eng_pause_after_timers(p);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    /* A decision that the authority takes back at once (the question is
       open again when the timer runs): still held, nothing armed. */
    eng_pause_decided(p);
    CHECK(cl_timer_next(f.timers) == f_now(&f));
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 1);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0 && isinf(cl_timer_next(f.timers)));
    /* Decided: the doubt ends at the next run of the timers, at the same
       instant, not inside the call (the view that decided it is not
       installed yet). */
    f.undecided = false;
    eng_pause_decided(p);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    CHECK(cl_timer_next(f.timers) == f_now(&f));
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 1);
    CHECK(!eng_pause_in_doubt(p) && f.resumes == 1);
    CHECK(isinf(cl_timer_next(f.timers)));
    eng_pause_decided(p); /* no doubt: nothing */
    eng_pause_decided(NULL);
    CHECK(isinf(cl_timer_next(f.timers)) && f.resumes == 1);
    fake_free(&f, &p);

    /* Held when the last member answered, before the deadline: the
       deadline's timer goes, and the decision alone ends the doubt. */
    p = fake_pause(&f, NULL);
    until = long_stop(&f, p);
    f.undecided = true;
    eng_pause_view_from(p, s_keys[1]);
    eng_pause_view_from(p, s_keys[2]);
    CHECK(eng_pause_in_doubt(p) && isinf(cl_timer_next(f.timers)));
    f.raw += until - f_now(&f) + 5.0; /* past the deadline: nothing runs */
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 0);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    f.undecided = false;
    eng_pause_decided(p);
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 1);
    CHECK(!eng_pause_in_doubt(p) && f.resumes == 1);
    fake_free(&f, &p);

    /* A decision while members' answers are still awaited (before the
       deadline, the question never held the doubt) changes nothing:
       the answers or the deadline end it. */
    p = fake_pause(&f, NULL);
    until = long_stop(&f, p);
    eng_pause_decided(p);
    CHECK(cl_timer_next(f.timers) == until);
    CHECK(cl_timer_run(f.timers, f_now(&f)) == 0);
    eng_pause_view_from(p, s_keys[1]);
    CHECK(eng_pause_in_doubt(p) && f.resumes == 0);
    eng_pause_view_from(p, s_keys[2]);
    CHECK(!eng_pause_in_doubt(p) && f.resumes == 1);
    fake_free(&f, &p);
}

/* The doubt ends at the next turn once this peer is no member (it joins
   again); a member that is gone is asked but not awaited; a peer alone
   in its view asks nobody and doubts nothing. */
static void test_others(void)
{
    fake_t f;
    eng_pause_t *p = fake_pause(&f, NULL);
    (void)long_stop(&f, p);
    f.member = false;
    eng_pause_after_timers(p);
    CHECK(!eng_pause_in_doubt(p) && f.resumes == 1);
    CHECK(isinf(cl_timer_next(f.timers)));
    fake_free(&f, &p);

    p = fake_pause(&f, NULL);
    cl_member_find(f.mb, s_keys[2])->state = CL_PEER_GONE;
    f.raw += 10.0;
    eng_pause_check(p);
    CHECK(f.nasked == 2 && eng_pause_in_doubt(p));
    eng_pause_view_from(p, s_keys[1]);
    CHECK(!eng_pause_in_doubt(p) && f.resumes == 1);
    fake_free(&f, &p);

    cl_settings_t set = {4, false, 0, 3, 0, 1, 16, false};
    cl_member_t *alone = cl_member_new(s_keys[0]);
    CHECK(cl_member_found(alone, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &set) == 0);
    p = fake_pause(&f, alone);
    f.raw += 10.0;
    eng_pause_check(p);
    CHECK(fabs(f.off - 8.0) < 1e-9);
    CHECK(f.starts == 1 && f.nasked == 0 && !eng_pause_in_doubt(p));
    CHECK(isinf(cl_timer_next(f.timers)));
    CHECK(!eng_pause_in_doubt(NULL));
    fake_free(&f, &p);
}

int main(void)
{
    ctx_keys_init(0x11);
    test_short_stop();
    test_answers();
    test_deadline();
    test_undecided();
    test_others();
    printf("cl_engine_pause_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
