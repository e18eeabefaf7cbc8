/*  cl_stripe_probe_test.c - selftest of the measured number of
    connections per link (cl_stripe_probe.c, COLLAB_STRIPES=auto).

    A model path gives the upload's rate for k connections per link; the
    test feeds the probe samples of 0.05 s at that rate for the count it
    answers, as the transport does, and checks where it settles:
      (a) each connection capped at 25 Mbit/s in a 100 Mbit/s link (a
          provider policing each flow): 1, 2, 4 tried and kept, 8 tried
          and given back: 4.  A later round keeps 4 (8 no faster, 2
          slower);
      (b) a link one connection fills (more connections slightly
          slower): 2 tried, 1 kept; with jitter of +-5 % as well;
      (c) the path changes (the cap lifted): later rounds go down to 2,
          then 1, one step per round, PROBE_AGAIN apart;
      (d) a change that carries nothing for its first 0.25 s (new
          connections' handshakes) is measured after PROBE_SETTLE: 2
          connections, 1.33 times as fast as 1, are kept (measured from
          the change they would not be);
      (e) samples that were not backlogged measure nothing; a path that
          acknowledges nothing while backlogged gives no figure and
          nothing is tried; a cap of 1 never tries more; auto:2 stops
          at 2;
      (f) a link one connection fills (94 Mbit/s; 93 with 2), every
          fifth sample of the first 7.5 s carrying nothing (this process
          or its peer stalled on a busy CPU, acknowledgements late): a
          figure is the mean of the middle half of its samples, so 1 is
          kept and measured at 94 (with the plain mean the first figure
          would be 0.8 of the rate, and 2 connections would look 1.24
          times as fast and be kept).
*/
#include "engine/cl_stripe_probe.h"

#include <math.h>
#include <stdio.h>

#include "selftest.h"

#define MBIT (1000000.0 / 8.0) /* bytes/s of 1 Mbit/s */
#define DT 0.05

typedef double (*path_fn)(int k, double since_change);

static double capped(int k, double since)
{
    (void)since;
    return (k * 25.0 < 100.0 ? k * 25.0 : 100.0) * MBIT;
}

static double full(int k, double since)
{
    (void)since;
    return (k == 1 ? 94.0 : 88.0) * MBIT; /* more connections keep a fuller queue */
}

static unsigned s_seed = 12345;
static double full_jitter(int k, double since)
{
    s_seed = s_seed * 1103515245u + 12345u;
    double j = 0.95 + 0.10 * ((s_seed >> 16) & 0x7fff) / 32767.0;
    return full(k, since) * j;
}

/* A path that acknowledges nothing. */
static double stalled(int k, double since)
{
    (void)k;
    (void)since;
    return 0;
}

/* A link one connection fills, every fifth sample of the first figure
   empty. */
static double s_clock; /* run()'s time, for stalls() */
static int s_sample;
static double stalls(int k, double since)
{
    (void)since;
    double r = (k == 1 ? 94.0 : 93.0) * MBIT;
    return s_clock < PROBE_SETTLE_FIRST + PROBE_BUSY && ++s_sample % 5 == 0 ? 0 : r;
}

/* Each connection capped at 30 Mbit/s in a 40 Mbit/s link (2 are 1.33
   times as fast as 1), and a change that carries nothing for 0.25 s. */
static double slow_start(int k, double since)
{
    double r = (k * 30.0 < 40.0 ? k * 30.0 : 40.0) * MBIT;
    return since < 0.25 ? 0 : r;
}

/* Feeds `secs` seconds of backlogged samples from *t over path p;
   returns the count in use at the end, and the highest count used in
   *most (when not NULL). */
static int run(cl_stripe_probe_t *p, double *t, path_fn path, double secs, int *most)
{
    int k = cl_stripe_probe_count(p);
    double since = 1e9; /* the connections in use run already */
    int n = (int)(secs / DT + 0.5);
    for (int i = 0; i < n; i++) {
        *t += DT;
        s_clock = *t;
        since += DT;
        int next = cl_stripe_probe_feed(p, *t, DT, path(k, since) * DT);
        p->decided = false;
        if (next != k)
            since = 0;
        k = next;
        if (most != NULL && k > *most)
            *most = k;
    }
    return k;
}

static void test_flow_cap(void)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    double t = 100;
    int most = 1;
    CHECK(cl_stripe_probe_count(&p) == 1);
    CHECK(run(&p, &t, capped, 20, &most) == 4);
    CHECK(most == 8); /* 8 was tried */
    CHECK(p.phase == PROBE_RESTING && p.rounds == 1);
    CHECK(fabs(p.base - 100 * MBIT) < 1 * MBIT);
    /* Resting: 100 s later still 4, and nothing tried. */
    most = 0;
    CHECK(run(&p, &t, capped, 100, &most) == 4);
    CHECK(most == 4);
    /* The next round: 8 no faster, 2 slower: 4 again. */
    int least = 4;
    most = 0;
    double until = t + PROBE_AGAIN;
    while (t < until) {
        run(&p, &t, capped, 1, &most);
        if (cl_stripe_probe_count(&p) < least)
            least = cl_stripe_probe_count(&p);
    }
    CHECK(cl_stripe_probe_count(&p) == 4);
    CHECK(p.phase == PROBE_RESTING && p.rounds == 2);
    CHECK(most == 8 && least == 2); /* both tried, neither kept */
}

static void test_full_link(path_fn path)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    double t = 0;
    int most = 1;
    CHECK(run(&p, &t, path, 20, &most) == 1);
    CHECK(most == 2); /* tried, not kept */
    CHECK(p.phase == PROBE_RESTING);
    /* A round later: 2 tried again, 1 kept. */
    most = 1;
    CHECK(run(&p, &t, path, PROBE_AGAIN + 20, &most) == 1);
    CHECK(most == 2);
}

static void test_path_changes(void)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    double t = 0;
    CHECK(run(&p, &t, capped, 20, NULL) == 4);
    /* The cap is lifted: one connection fills the link.  Each round
       halves the count (fewer, no slower). */
    CHECK(run(&p, &t, full, PROBE_AGAIN + 10, NULL) == 2);
    CHECK(run(&p, &t, full, PROBE_AGAIN + 10, NULL) == 1);
    CHECK(run(&p, &t, full, PROBE_AGAIN + 10, NULL) == 1);
}

static void test_slow_start(void)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    double t = 0;
    CHECK(run(&p, &t, slow_start, 20, NULL) == 2);
}

static void test_stalls(void)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    double t = 0;
    int most = 1;
    CHECK(run(&p, &t, stalls, 20, &most) == 1);
    CHECK(most == 2); /* tried, not kept */
    CHECK(fabs(p.base - 94 * MBIT) < 1 * MBIT);
}

static void test_idle_and_caps(void)
{
    cl_stripe_probe_t p;
    cl_stripe_probe_init(&p, 8);
    /* Not backlogged (dt 0): no decision however long. */
    for (int i = 0; i < 10000; i++)
        CHECK(cl_stripe_probe_feed(&p, i * DT, 0, 1e6) == 1);
    CHECK(!p.decided && p.phase == PROBE_BASE && p.busy == 0);
    /* A cap of 1 never tries more. */
    cl_stripe_probe_init(&p, 1);
    double t = 0;
    int most = 1;
    CHECK(run(&p, &t, capped, 400, &most) == 1);
    CHECK(most == 1);
    /* auto:2 stops at 2. */
    cl_stripe_probe_init(&p, 2);
    t = 0;
    most = 1;
    CHECK(run(&p, &t, capped, 20, &most) == 2);
    CHECK(most == 2);
    /* A path that acknowledges nothing while backlogged (a stalled peer)
       gives no figure: nothing is tried, the round ends. */
    cl_stripe_probe_init(&p, 8);
    t = 0;
    most = 1;
    CHECK(run(&p, &t, stalled, 20, &most) == 1);
    CHECK(most == 1 && p.phase == PROBE_RESTING);
    /* Garbage figures are ignored. */
    cl_stripe_probe_init(&p, 8);
    CHECK(cl_stripe_probe_feed(&p, 1, NAN, 5) == 1);
    CHECK(cl_stripe_probe_feed(&p, 1, 0.1, -5) == 1);
    CHECK(p.busy == 0);
}

int main(void)
{
    test_flow_cap();
    test_full_link(full);
    test_full_link(full_jitter);
    test_path_changes();
    test_slow_start();
    test_idle_and_caps();
    test_stalls();
    if (s_failures == 0)
        printf("cl_stripe_probe_test: ok\n");
    return s_failures != 0;
}
