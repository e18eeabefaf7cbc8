/*  cl_timer_test.c - selftest of the engine loop's timers (cl_timer.c).

    Checks (a) ordering: timers fire earliest first, only those due, each
    once per arming, and cl_timer_next names the earliest; (b) re-arming
    replaces a deadline, later or sooner, and cl_timer_arm_by only brings
    one forward; (c) cancelling and removing; (d) equal deadlines fire in
    the order armed; (e) callbacks that re-arm themselves (a periodic
    timer), arm at or before now (next run, not this one), cancel, re-arm
    or remove others due in the same run, and a nested run that runs
    nothing; (f) the bounded size: a full set refuses a timer, a removed
    handle is given again; (g) a heap of many timers armed, re-armed and
    cancelled at random keeps its order (compared with a plain scan).
*/
#include "engine/cl_timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

#define LOG_MAX 64

typedef struct {
    cl_timer_t *set;
    int log[LOG_MAX]; /* the tags of the callbacks run, in order */
    int nlog;
} fake_t;

typedef struct {
    fake_t *f;
    int tag;
    int self_id;     /* its own handle */
    int other;       /* a handle it acts on, or -1 */
    int action;      /* what it does when it fires (below) */
    double period;   /* A_PERIODIC, A_ARM_NOW */
    int fired;
} tmr_t;

enum { A_NONE, A_PERIODIC, A_CANCEL_OTHER, A_REARM_OTHER, A_REMOVE_OTHER, A_ARM_NOW, A_NESTED };

static void fire(void *arg, double now)
{
    tmr_t *t = arg;
    t->fired++;
    if (t->f->nlog < LOG_MAX)
        t->f->log[t->f->nlog++] = t->tag;
    switch (t->action) {
    case A_PERIODIC:
        cl_timer_arm(t->f->set, t->self_id, now + t->period);
        break;
    case A_CANCEL_OTHER:
        cl_timer_cancel(t->f->set, t->other);
        break;
    case A_REARM_OTHER:
        cl_timer_arm(t->f->set, t->other, now + 10);
        break;
    case A_REMOVE_OTHER:
        cl_timer_remove(t->f->set, t->other);
        break;
    case A_ARM_NOW:
        cl_timer_arm(t->f->set, t->self_id, now - t->period);
        break;
    case A_NESTED:
        CHECK(cl_timer_run(t->f->set, now + 100) == 0);
        break;
    }
}

static void setup(fake_t *f, tmr_t *t, int n, size_t cap)
{
    memset(f, 0, sizeof *f);
    f->set = cl_timer_new(cap);
    CHECK(f->set != NULL);
    for (int i = 0; i < n; i++) {
        t[i] = (tmr_t){.f = f, .tag = i, .other = -1};
        t[i].self_id = cl_timer_add(f->set, fire, &t[i]);
        CHECK(t[i].self_id == i);
    }
}

static bool log_is(const fake_t *f, const int *want, int n)
{
    if (f->nlog != n)
        return false;
    return memcmp(f->log, want, (size_t)n * sizeof *want) == 0;
}

static void test_order(void)
{
    fake_t f;
    tmr_t t[4];
    setup(&f, t, 4, 8);
    CHECK(isinf(cl_timer_next(f.set)));
    CHECK(cl_timer_run(f.set, 1e9) == 0);
    cl_timer_arm(f.set, 0, 3.0);
    cl_timer_arm(f.set, 1, 1.0);
    cl_timer_arm(f.set, 2, 2.0);
    CHECK(cl_timer_next(f.set) == 1.0);
    CHECK(cl_timer_when(f.set, 0) == 3.0);
    CHECK(isinf(cl_timer_when(f.set, 3)));
    CHECK(cl_timer_run(f.set, 0.5) == 0);
    CHECK(cl_timer_run(f.set, 2.0) == 2); /* a deadline at now is due */
    CHECK(log_is(&f, (int[]){1, 2}, 2));
    CHECK(cl_timer_next(f.set) == 3.0);
    CHECK(cl_timer_run(f.set, 10.0) == 1);
    CHECK(log_is(&f, (int[]){1, 2, 0}, 3));
    CHECK(cl_timer_run(f.set, 20.0) == 0); /* once per arming */
    CHECK(isinf(cl_timer_when(f.set, 0)));
    cl_timer_destroy(&f.set);
    CHECK(f.set == NULL);
    cl_timer_destroy(&f.set); /* NULL is accepted */
}

static void test_rearm_cancel(void)
{
    fake_t f;
    tmr_t t[3];
    setup(&f, t, 3, 4);
    cl_timer_arm(f.set, 0, 1.0);
    cl_timer_arm(f.set, 1, 2.0);
    cl_timer_arm(f.set, 0, 5.0); /* later */
    CHECK(cl_timer_next(f.set) == 2.0);
    cl_timer_arm(f.set, 1, 0.5); /* sooner */
    CHECK(cl_timer_next(f.set) == 0.5);
    cl_timer_arm_by(f.set, 0, 7.0); /* armed sooner already: kept */
    CHECK(cl_timer_when(f.set, 0) == 5.0);
    cl_timer_arm_by(f.set, 0, 4.0);
    CHECK(cl_timer_when(f.set, 0) == 4.0);
    cl_timer_arm_by(f.set, 2, 9.0); /* disarmed: armed */
    CHECK(cl_timer_when(f.set, 2) == 9.0);
    cl_timer_cancel(f.set, 1);
    cl_timer_cancel(f.set, 1); /* twice is harmless */
    CHECK(isinf(cl_timer_when(f.set, 1)));
    CHECK(cl_timer_next(f.set) == 4.0);
    cl_timer_remove(f.set, 2);
    CHECK(isinf(cl_timer_when(f.set, 2)));
    cl_timer_arm(f.set, 2, 1.0); /* a removed handle is ignored */
    CHECK(isinf(cl_timer_when(f.set, 2)));
    CHECK(cl_timer_run(f.set, 100.0) == 1);
    CHECK(log_is(&f, (int[]){0}, 1));
    /* Handles outside the set and a NULL set are ignored. */
    cl_timer_arm(f.set, -1, 1.0);
    cl_timer_arm(f.set, 99, 1.0);
    cl_timer_cancel(NULL, 0);
    cl_timer_arm(NULL, 0, 1.0);
    CHECK(isinf(cl_timer_next(NULL)));
    CHECK(cl_timer_run(NULL, 1.0) == 0);
    CHECK(cl_timer_add(f.set, NULL, NULL) == -1);
    cl_timer_destroy(&f.set);
}

static void test_equal(void)
{
    fake_t f;
    tmr_t t[5];
    setup(&f, t, 5, 8);
    int order[5] = {3, 0, 4, 1, 2};
    for (int i = 0; i < 5; i++)
        cl_timer_arm(f.set, order[i], 1.0);
    cl_timer_arm(f.set, 0, 1.0); /* re-armed: now last of the equal ones */
    CHECK(cl_timer_run(f.set, 1.0) == 5);
    CHECK(log_is(&f, (int[]){3, 4, 1, 2, 0}, 5));
    cl_timer_destroy(&f.set);
}

static void test_callbacks(void)
{
    fake_t f;
    tmr_t t[6];
    setup(&f, t, 6, 8);
    /* A periodic timer fires once per run, however late the run. */
    t[0].action = A_PERIODIC;
    t[0].period = 1.0;
    cl_timer_arm(f.set, 0, 1.0);
    CHECK(cl_timer_run(f.set, 5.0) == 1);
    CHECK(cl_timer_when(f.set, 0) == 6.0);
    /* Armed at or before now from a callback: the next run. */
    t[1].action = A_ARM_NOW;
    t[1].period = 1.0;
    cl_timer_arm(f.set, 1, 5.5);
    CHECK(cl_timer_run(f.set, 5.5) == 1);
    CHECK(cl_timer_when(f.set, 1) == 4.5);
    t[1].action = A_NONE;
    CHECK(cl_timer_run(f.set, 5.5) == 1);
    CHECK(t[1].fired == 2);
    /* Due in the same run: the first cancels the second, re-arms the
       third (later) and removes the fourth; none of them runs. */
    f.nlog = 0;
    cl_timer_cancel(f.set, 0);
    t[2].action = A_CANCEL_OTHER;
    t[2].other = 3;
    t[1].action = A_REARM_OTHER;
    t[1].other = 4;
    t[0].action = A_REMOVE_OTHER;
    t[0].other = 5;
    cl_timer_arm(f.set, 2, 7.0);
    cl_timer_arm(f.set, 1, 7.0);
    cl_timer_arm(f.set, 0, 7.0);
    cl_timer_arm(f.set, 3, 7.5);
    cl_timer_arm(f.set, 4, 7.5);
    cl_timer_arm(f.set, 5, 7.5);
    CHECK(cl_timer_run(f.set, 8.0) == 3);
    CHECK(log_is(&f, (int[]){2, 1, 0}, 3));
    CHECK(isinf(cl_timer_when(f.set, 3)));
    CHECK(cl_timer_when(f.set, 4) == 18.0);
    CHECK(cl_timer_add(f.set, fire, &t[5]) == 5); /* the removed handle again */
    /* A run from inside a callback runs nothing. */
    t[3].action = A_NESTED;
    cl_timer_arm(f.set, 3, 9.0);
    cl_timer_arm(f.set, 5, 9.0);
    CHECK(cl_timer_run(f.set, 9.0) == 2);
    CHECK(cl_timer_when(f.set, 4) == 18.0);
    cl_timer_destroy(&f.set);
}

static void test_bounded(void)
{
    fake_t f;
    tmr_t t[3];
    setup(&f, t, 3, 3);
    CHECK(cl_timer_add(f.set, fire, &t[0]) == -1); /* full */
    cl_timer_remove(f.set, 1);
    CHECK(cl_timer_add(f.set, fire, &t[1]) == 1);
    CHECK(cl_timer_add(f.set, fire, &t[1]) == -1);
    for (int i = 0; i < 3; i++)
        cl_timer_arm(f.set, i, 3.0 - i);
    CHECK(cl_timer_run(f.set, 3.0) == 3);
    CHECK(log_is(&f, (int[]){2, 1, 0}, 3));
    cl_timer_destroy(&f.set);
    CHECK(cl_timer_new(0) == NULL);
}

/* Many timers armed, re-armed and cancelled at random: the heap gives
   the same earliest deadline as a scan of what was armed. */
#define NRAND 200
static void test_random(void)
{
    cl_timer_t *set = cl_timer_new(NRAND);
    CHECK(set != NULL);
    tmr_t t[NRAND];
    fake_t f = {.set = set};
    double want[NRAND];
    for (int i = 0; i < NRAND; i++) {
        t[i] = (tmr_t){.f = &f, .tag = i, .other = -1};
        CHECK(cl_timer_add(set, fire, &t[i]) == i);
        want[i] = INFINITY;
    }
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int id = (int)((seed >> 8) % NRAND);
        int op = (int)((seed >> 20) % 4);
        if (op == 3) {
            cl_timer_cancel(set, id);
            want[id] = INFINITY;
        } else {
            double when = (double)((seed >> 4) % 1000);
            cl_timer_arm(set, id, when);
            want[id] = when;
        }
        double min = INFINITY;
        for (int i = 0; i < NRAND; i++)
            min = fmin(min, want[i]);
        if (cl_timer_next(set) != min) {
            CHECK(cl_timer_next(set) == min);
            break;
        }
    }
    /* Running everything fires each armed timer once, in order. */
    double last = -1;
    size_t armed = 0;
    for (int i = 0; i < NRAND; i++)
        armed += !isinf(want[i]);
    CHECK(cl_timer_run(set, 1e9) == armed);
    for (int i = 0; i < f.nlog; i++) {
        CHECK(want[f.log[i]] >= last);
        last = want[f.log[i]];
    }
    cl_timer_destroy(&set);
}

int main(void)
{
    test_order();
    test_rearm_cancel();
    test_equal();
    test_callbacks();
    test_bounded();
    test_random();
    if (s_failures == 0)
        printf("cl_timer_test: ok\n");
    return s_failures != 0;
}
