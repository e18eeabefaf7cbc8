/*  cl_stripe_probe.c - how many connections per link, chosen by
    measurement (see cl_stripe_probe.h).

    A round:
      BASE  measure with `now` connections (after PROBE_SETTLE s of
            backlog, and what was queued then acknowledged, when it just
            changed): base.
      UP    when now < cap: measure with trial = min(2 now, cap).  At
            least PROBE_GAIN x base: now = trial, base = that rate, and UP
            again while below cap; else the round ends, unless it was the
            round's first step and now > 1: then DOWN.
      DOWN  measure with trial = now / 2.  At least PROBE_KEEP x base:
            now = trial.  The round ends either way.
    Between rounds (RESTING) samples are ignored until PROBE_AGAIN s
    after the round ended.
*/
#include "engine/cl_stripe_probe.h"

#include <stdlib.h>
#include <string.h>

void cl_stripe_probe_init(cl_stripe_probe_t *p, int cap)
{
    memset(p, 0, sizeof *p);
    p->cap = cap < 1 ? 1 : cap;
    p->now = 1;
    p->phase = p->cap > 1 ? PROBE_BASE : PROBE_RESTING;
    p->again = p->cap > 1 ? 0 : 1e300;
    p->settle = PROBE_SETTLE_FIRST;
}

/* Starts measuring with `trial` connections in phase ph (0: `now`). */
static void measure(cl_stripe_probe_t *p, cl_stripe_probe_phase_t ph, int trial)
{
    p->phase = ph;
    p->trial = trial;
    p->busy = 0;
    p->nrates = 0;
    p->settle = PROBE_SETTLE;
    p->settle_bytes = 0;
}

void cl_stripe_probe_queued(cl_stripe_probe_t *p, double bytes)
{
    if (p->phase != PROBE_RESTING && bytes > 0)
        p->settle_bytes = bytes;
}

static void rest(cl_stripe_probe_t *p, double now)
{
    p->phase = PROBE_RESTING;
    p->trial = 0;
    p->settle_bytes = 0;
    p->busy = 0;
    p->nrates = 0;
    p->again = now + PROBE_AGAIN;
    p->rounds++;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The mean of the middle half of v's n values (sorted here). */
static double middle_mean(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    int lo = n / 4, hi = n - n / 4;
    double sum = 0;
    for (int i = lo; i < hi; i++)
        sum += v[i];
    return hi > lo ? sum / (hi - lo) : 0;
}

static int twice(const cl_stripe_probe_t *p)
{
    return 2 * p->now < p->cap ? 2 * p->now : p->cap;
}

int cl_stripe_probe_feed(cl_stripe_probe_t *p, double now, double dt, double bytes)
{
    if (p->phase == PROBE_RESTING) {
        if (now < p->again)
            return p->now;
        p->phase = PROBE_BASE;
        p->base = 0;
        p->busy = 0;
        p->nrates = 0;
        p->settle = 0; /* nothing changed: the connections run already */
        p->settle_bytes = 0;
        return p->now;
    }
    if (!(dt > 0) || bytes < 0)
        return cl_stripe_probe_count(p);
    if (p->settle > 0 || p->settle_bytes > 0) {
        p->settle -= dt;
        p->settle_bytes -= bytes;
        return cl_stripe_probe_count(p);
    }
    p->busy += dt;
    if (p->nrates < PROBE_SAMPLES)
        p->rates[p->nrates++] = (float)(bytes / dt);
    if (p->busy < PROBE_BUSY)
        return cl_stripe_probe_count(p);
    double rate = middle_mean(p->rates, p->nrates);
    p->nrates = 0;
    p->decided = true;
    p->first_round = p->rounds == 0; /* before rest() counts this round */
    p->rate = rate;
    p->from = cl_stripe_probe_count(p);
    p->base_rate = p->base;
    p->base_n = p->now;
    switch (p->phase) {
    case PROBE_BASE:
        p->grew = false;
        p->base = rate;
        p->base_rate = rate;
        if (!(rate > 0))
            rest(p, now); /* backlogged and nothing acknowledged: a stalled path, no figure */
        else if (p->now < p->cap)
            measure(p, PROBE_UP, twice(p));
        else if (p->now > 1)
            measure(p, PROBE_DOWN, p->now / 2);
        else
            rest(p, now);
        break;
    case PROBE_UP:
        if (rate >= PROBE_GAIN * p->base) {
            p->now = p->trial;
            p->base = rate;
            p->grew = true;
            if (p->now < p->cap)
                measure(p, PROBE_UP, twice(p));
            else
                rest(p, now);
        } else if (!p->grew && p->now > 1) {
            measure(p, PROBE_DOWN, p->now / 2);
        } else {
            rest(p, now);
        }
        break;
    case PROBE_DOWN:
        if (rate >= PROBE_KEEP * p->base)
            p->now = p->trial;
        rest(p, now);
        break;
    case PROBE_RESTING:
        break;
    }
    return cl_stripe_probe_count(p);
}
