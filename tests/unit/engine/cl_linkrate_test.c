/*  cl_linkrate_test.c - selftest of the measured upload (cl_linkrate.c).

    Checks (a) a link kept full at 100 Mbit/s, sampled every 0.1 s, gives
    one rate per half second and a figure of 100 000 kbit/s once
    CL_LINKRATE_MIN windows are in, none before; (b) samples that were not
    backlogged, a gap between samples (a stopped engine), or acknowledged
    bytes that go down (a connection replaced) end the stretch, so that no
    window spans them, and an idle program measures nothing; (c) the
    figure is the third highest of the last CL_LINKRATE_KEEP windows:
    slower windows (the link shared with a slow member's tail) do not
    lower it, and as many windows of a slower link replace the old
    figure; acknowledgements that stall and then come all at once do not
    raise a window above what was sent in it, and two odd fast windows do
    not raise the figure, a third does; (d) the
    figure's bounds: at least 1 kbit/s, at most UINT32_MAX; (e) the
    proposal: an unknown agreed figure takes the measurement; within 1.25
    of other members' figures it takes the highest of them; the agreed one
    goes up past 1.15 and down past 1.5 only; two members that measured
    one link a little apart meet at the higher figure and never swap.
*/
#include "engine/cl_linkrate.h"

#include <stdint.h>
#include <stdio.h>

#include "selftest.h"

#define MBIT (1000000.0 / 8.0) /* bytes/s of 1 Mbit/s */

/* Feeds `secs` seconds of samples every 0.1 s from *t at `rate` bytes/s,
   backlogged or not; returns the windows completed. */
static int feed(cl_linkrate_t *r, double *t, uint64_t *acked, double secs, double rate,
                bool backlogged)
{
    int windows = 0;
    int n = (int)(secs * 10.0 + 0.5);
    for (int i = 0; i < n; i++) {
        *t += 0.1;
        *acked += (uint64_t)(rate * 0.1);
        windows += cl_linkrate_add(r, *t, *acked, *acked, backlogged);
    }
    return windows;
}

static void test_full_link(void)
{
    cl_linkrate_t r;
    cl_linkrate_init(&r);
    double t = 10.0;
    uint64_t acked = 0;
    CHECK(cl_linkrate_kbit(&r) == 0);
    /* 0.1 s opens the stretch; each 0.5 s after gives a window. */
    int before = CL_LINKRATE_MIN - 1;
    CHECK(feed(&r, &t, &acked, 0.1 + 0.5 * before, 100 * MBIT, true) == before);
    CHECK(cl_linkrate_kbit(&r) == 0); /* one window short */
    CHECK(feed(&r, &t, &acked, 0.5, 100 * MBIT, true) == 1);
    CHECK(cl_linkrate_kbit(&r) == 100000);
    CHECK(r.windows == CL_LINKRATE_MIN);
}

static void test_stretch_ends(void)
{
    cl_linkrate_t r;
    cl_linkrate_init(&r);
    double t = 0;
    uint64_t acked = 0;
    /* An idle program: nothing measured however long. */
    CHECK(feed(&r, &t, &acked, 30, 1 * MBIT, false) == 0);
    CHECK(cl_linkrate_kbit(&r) == 0);
    /* Backlogged stretches of 0.4 s broken by one free sample: never a
       window, whatever the rate. */
    for (int k = 0; k < 20; k++) {
        CHECK(feed(&r, &t, &acked, 0.4, 50 * MBIT, true) == 0);
        CHECK(feed(&r, &t, &acked, 0.1, 900 * MBIT, false) == 0);
    }
    /* A gap of a second between two backlogged samples ends the stretch
       too: the window restarts there. */
    CHECK(feed(&r, &t, &acked, 0.4, 50 * MBIT, true) == 0);
    t += 1.0;
    acked += (uint64_t)(900 * MBIT);
    CHECK(!cl_linkrate_add(&r, t, acked, acked, true));
    CHECK(feed(&r, &t, &acked, 0.4, 50 * MBIT, true) == 0);
    /* Acknowledged bytes that go down: a new start, not a huge rate. */
    CHECK(!cl_linkrate_add(&r, t + 0.1, acked / 2, acked / 2, true));
    t += 0.1;
    acked /= 2;
    CHECK(feed(&r, &t, &acked, 0.4, 50 * MBIT, true) == 0);
    CHECK(feed(&r, &t, &acked, 0.1, 50 * MBIT, true) == 1);
    CHECK(r.rates[0] > 49 * MBIT && r.rates[0] < 51 * MBIT);
}

static void test_highest_recent(void)
{
    cl_linkrate_t r;
    cl_linkrate_init(&r);
    double t = 0;
    uint64_t acked = 0;
    CHECK(feed(&r, &t, &acked, 0.1 + 0.5 * CL_LINKRATE_MIN, 100 * MBIT, true) == CL_LINKRATE_MIN);
    CHECK(cl_linkrate_kbit(&r) == 100000);
    /* Windows at 30 Mbit/s (sharing with a slow tail): the figure holds
       while a 100 Mbit/s window is among the last CL_LINKRATE_KEEP. */
    int more = CL_LINKRATE_KEEP - CL_LINKRATE_MIN;
    CHECK(feed(&r, &t, &acked, 0.1, 30 * MBIT, false) == 0);
    CHECK(feed(&r, &t, &acked, 0.1 + 0.5 * more, 30 * MBIT, true) == more);
    CHECK(cl_linkrate_kbit(&r) == 100000);
    /* CL_LINKRATE_KEEP windows of 25 Mbit/s: the link became slower. */
    CHECK(feed(&r, &t, &acked, 0.1, 25 * MBIT, false) == 0);
    CHECK(feed(&r, &t, &acked, 0.1 + 0.5 * CL_LINKRATE_KEEP, 25 * MBIT, true) == CL_LINKRATE_KEEP);
    CHECK(cl_linkrate_kbit(&r) == 25000);
}

/* Acknowledgements late then all at once: each window counts what was
   both sent and acknowledged in it, and the figure is the third highest,
   so neither a catch-up of acknowledgements nor two odd fast windows
   make the link look faster; a third does. */
static void test_compression(void)
{
    cl_linkrate_t r;
    cl_linkrate_init(&r);
    double t = 0;
    uint64_t acked = 0, sent = 0;
    const uint64_t step = (uint64_t)(25 * MBIT * 0.1); /* 25 Mbit/s */
    CHECK(!cl_linkrate_add(&r, t, acked, sent, true));
    /* 8 windows at 25 Mbit/s sent: in every other one the
       acknowledgements stall after its first tenth, in the next they all
       come at its start: a fifth and nine fifths of the link's rate by
       acknowledgements alone. */
    for (int w = 0; w < 8; w++)
        for (int k = 0; k < 5; k++) {
            t += 0.1;
            sent += step;
            bool stall = w % 2 == 0 && k > 0;
            acked = stall ? acked : sent - (w % 2 == 1 || k == 0 ? 0 : step);
            if (w % 2 == 1 && k == 0)
                acked = sent;
            CHECK(cl_linkrate_add(&r, t, acked, sent, true) == (k == 4));
        }
    CHECK(r.windows == 8);
    uint32_t kbit = cl_linkrate_kbit(&r);
    CHECK(kbit >= 24000 && kbit <= 25001);
    /* Two windows twice as fast (a burst into the qdisc counted as sent):
       the figure stays; a third raises it. */
    for (int w = 0; w < 3; w++) {
        for (int k = 0; k < 5; k++) {
            t += 0.1;
            sent += 2 * step;
            acked = sent;
            CHECK(cl_linkrate_add(&r, t, acked, sent, true) == (k == 4));
        }
        if (w < 2)
            CHECK(cl_linkrate_kbit(&r) == kbit);
    }
    CHECK(cl_linkrate_kbit(&r) == 50000);
}

static void test_bounds(void)
{
    cl_linkrate_t r;
    cl_linkrate_init(&r);
    double t = 0;
    uint64_t acked = 0;
    double secs = 0.1 + 0.5 * CL_LINKRATE_MIN;
    CHECK(feed(&r, &t, &acked, secs, 0, true) == CL_LINKRATE_MIN); /* nothing acknowledged */
    CHECK(cl_linkrate_kbit(&r) == 1);
    cl_linkrate_init(&r);
    t = 0;
    acked = 0;
    CHECK(feed(&r, &t, &acked, secs, 1e15, true) == CL_LINKRATE_MIN); /* past a u32 of kbit/s */
    CHECK(cl_linkrate_kbit(&r) == UINT32_MAX);
}

static void test_propose(void)
{
    const uint32_t none[1] = {0};
    /* Nothing measured: the agreed figure stays. */
    CHECK(cl_linkrate_propose(0, 7000, none, 1) == 7000);
    /* No agreed figure yet: the measurement, or the highest other
       figure within 1.25 of it. */
    CHECK(cl_linkrate_propose(95000, 0, none, 0) == 95000);
    const uint32_t others[3] = {25000, 100000, 110000};
    CHECK(cl_linkrate_propose(95000, 0, others, 3) == 110000);
    CHECK(cl_linkrate_propose(24000, 0, others, 3) == 25000);
    CHECK(cl_linkrate_propose(50000, 0, others, 3) == 50000);
    /* Hysteresis (no other figure near): up past 1.15, down past 1.5
       only. */
    CHECK(cl_linkrate_propose(57000, 50000, none, 1) == 50000);
    CHECK(cl_linkrate_propose(58000, 50000, none, 1) == 58000);
    CHECK(cl_linkrate_propose(40000, 50000, none, 1) == 50000);
    CHECK(cl_linkrate_propose(76000, 50000, none, 1) == 76000);
    CHECK(cl_linkrate_propose(33000, 50000, none, 1) == 33000);
    /* A slow member among fast ones, its figure agreed: it stays. */
    CHECK(cl_linkrate_propose(24000, 25000, others, 3) == 25000);
    /* Two members that measured one link a little apart: the lower one
       rises to the higher, the higher stays (no swap). */
    const uint32_t a_sees[1] = {97000}, b_sees[1] = {93000};
    CHECK(cl_linkrate_propose(94000, 93000, a_sees, 1) == 97000);
    CHECK(cl_linkrate_propose(96000, 97000, b_sees, 1) == 97000);
    const uint32_t b_after[1] = {97000};
    CHECK(cl_linkrate_propose(96000, 97000, b_after, 1) == 97000);
    /* Never down to a lower neighbour within the hysteresis. */
    const uint32_t lower[1] = {90000};
    CHECK(cl_linkrate_propose(100000, 105000, lower, 1) == 105000);
}

int main(void)
{
    test_full_link();
    test_stretch_ends();
    test_highest_recent();
    test_compression();
    test_bounds();
    test_propose();
    if (s_failures == 0)
        printf("cl_linkrate_test: ok\n");
    return s_failures != 0;
}
