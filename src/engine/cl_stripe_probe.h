/*  cl_stripe_probe.h - how many connections per link, chosen by
    measurement (COLLAB_STRIPES=auto; docs/wire.md section 1.1,
    docs/config.md).

    The transport feeds it what its outbound connections' kernels
    acknowledged while this peer had bytes waiting to go out (its upload
    "backlogged"); it answers how many connections each link should use.
    A round of probing measures the rate with the current count, then with
    twice as many: kept when at least PROBE_GAIN times as fast, and tried
    doubled again; else the count goes back, and (above one) half as many
    are tried, kept when at least PROBE_KEEP times as fast as the current
    count (fewer connections, no slower).  A round starts at once and then
    every PROBE_AGAIN seconds, so the count follows a path that changes.

    The figure is this peer's whole upload, all links together: more
    connections that only take a larger share of the same upload from
    this peer's other links gain nothing here and are not kept.

    Pure state: no clock or I/O of its own, so tests drive it with chosen
    figures.
*/
#ifndef CL_STRIPE_PROBE_H_INCLUDED
#define CL_STRIPE_PROBE_H_INCLUDED

#include <stdbool.h>

/* Seconds of backlog skipped after a change (new connections start
   slowly), before the first figure (the first connections' windows grow
   over their first transfers, and a program's start is busy), and
   measured for one figure. */
#define PROBE_SETTLE 0.3
#define PROBE_SETTLE_FIRST 5.0
#define PROBE_BUSY 2.5
/* A figure is the mean of the middle half of its samples' rates (at most
   this many kept): samples stretched by a stall of this process or its
   peer, or acknowledgements that came late or in a bunch, do not move
   it (samples of 50 ms vary by a factor of 2 and more either way). */
#define PROBE_SAMPLES 512
/* More connections are kept when this much faster. */
#define PROBE_GAIN 1.2
/* Fewer connections are kept when at least this fast (a share of the
   rate with the current count). */
#define PROBE_KEEP 0.97
/* Seconds between rounds once one ended. */
#define PROBE_AGAIN 120.0

typedef enum { PROBE_BASE, PROBE_UP, PROBE_DOWN, PROBE_RESTING } cl_stripe_probe_phase_t;

typedef struct {
    int cap;                       /* most connections per link */
    int now;                       /* connections per link while not trying */
    int trial;                     /* being tried (PROBE_UP, PROBE_DOWN), else 0 */
    cl_stripe_probe_phase_t phase; /* what the current measurement is for */
    double base;                   /* bytes/s with `now` in this round (0: not yet) */
    double busy;                   /* backlog seconds in the current measurement */
    float rates[PROBE_SAMPLES];    /* its samples' rates (bytes/s) */
    int nrates;
    double settle;                 /* backlog seconds still skipped */
    double settle_bytes;           /* bytes still skipped: queued before the last change */
    double again;                  /* PROBE_RESTING: when the next round starts */
    bool grew;                     /* this round kept more connections already */
    int rounds;                    /* rounds ended */
    /* The last decision, for the log: the rate measured with `from`
       connections against `base_rate` with `base_n`; first_round: made
       in the first round. */
    int from, base_n;
    double rate, base_rate;
    bool decided, first_round;
} cl_stripe_probe_t;

/* Starts with one connection per link, a round under way.  cap: 1 ..
   16 (1: never more than one). */
void cl_stripe_probe_init(cl_stripe_probe_t *p, int cap);

/* One sample: over `dt` seconds this peer's upload stayed backlogged and
   its connections' peers acknowledged `bytes` (dt 0: not backlogged, the
   sample is not measured); `now` is the caller's
   clock (seconds), for the pause between rounds.  Returns the number of
   connections per link to use from now on.  Sets p->decided when this
   sample ended a measurement (the fields for the log say what it
   found); the caller clears it. */
int cl_stripe_probe_feed(cl_stripe_probe_t *p, double now, double dt, double bytes);

/* After the count changed: `bytes` were queued on the connections then
   (handed over and not yet acknowledged).  The measurement starts only
   once as many more were acknowledged: until then the old connections
   still drain what they were given, and a new count's rate does not show
   yet. */
void cl_stripe_probe_queued(cl_stripe_probe_t *p, double bytes);

/* Connections per link in use now (a trial's count while it runs). */
static inline int cl_stripe_probe_count(const cl_stripe_probe_t *p)
{
    return p->trial > 0 ? p->trial : p->now;
}

#endif
