/*  cl_linkrate.h - this peer's upload rate, measured: the bandwidth figure
    that sizes its parts of the butterfly when it declares none
    (COLLAB_BANDWIDTH_MBIT unset; docs/collectives.md §2.2b).

    The engine feeds it samples of its connections (cl_transport_upload):
    the bytes the network acknowledged and those sent so far, and whether
    a connection had bytes waiting that its receiver's window did not
    hold back.  Only stretches in which the link was the limit at every
    sample count: a program that has nothing to send, or a receiver that
    reads slowly (stopped, starved of the CPU), says nothing about the
    link.  Each CL_LINKRATE_WINDOW seconds of such a stretch give one
    rate: what was both sent and acknowledged in it (the lesser of the
    two counts), so that acknowledgements that come late and then all at
    once (ACK compression) do not make a window look faster than the
    link.  The figure is the CL_LINKRATE_RANK-th highest of the last
    CL_LINKRATE_KEEP rates, once there are CL_LINKRATE_MIN of them.
    Plain arithmetic, no clock, no allocation.
*/
#ifndef CL_LINKRATE_H_INCLUDED
#define CL_LINKRATE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_LINKRATE_WINDOW 0.5   /* seconds of a backlogged stretch that give one rate */
#define CL_LINKRATE_GAP 0.35     /* samples further apart than this end a stretch */
#define CL_LINKRATE_KEEP 32      /* rates kept, the latest windows' */
#define CL_LINKRATE_MIN 6        /* rates needed before there is a figure */
#define CL_LINKRATE_RANK 3       /* the figure is the rank-th highest rate kept */
#define CL_LINKRATE_SNAP 1.25    /* a figure within this ratio of another member's joins it */
#define CL_LINKRATE_HYST 1.5     /* the agreed figure goes down past this ratio only */
#define CL_LINKRATE_HYST_UP 1.15 /* and up past this one */

typedef struct {
    bool open;                      /* a backlogged stretch is under way */
    double start_t;                 /* its current window's first sample */
    uint64_t start_acked;           /* acknowledged bytes then */
    uint64_t start_sent;            /* sent bytes then */
    double last_t;                  /* the last sample, any */
    double rates[CL_LINKRATE_KEEP]; /* bytes/s of the latest windows, a ring */
    size_t nrates;                  /* windows in the ring (at most CL_LINKRATE_KEEP) */
    size_t next;                    /* where the next one goes */
    uint64_t windows;               /* windows measured in all */
} cl_linkrate_t;

/* Empties r: no stretch, no rate. */
void cl_linkrate_init(cl_linkrate_t *r);

/* One sample at time t (seconds, non-decreasing): acked and sent are
   the totals of bytes acknowledged and sent so far (non-decreasing while
   the connections stay; a drop ends the stretch), backlogged whether the
   link held data back at this instant.  Returns true when the sample
   completed a window. */
bool cl_linkrate_add(cl_linkrate_t *r, double t, uint64_t acked, uint64_t sent, bool backlogged);

/* The measured rate in kbit/s (at least 1, at most UINT32_MAX): the
   CL_LINKRATE_RANK-th highest of the rates kept, or 0 while fewer than
   CL_LINKRATE_MIN windows were measured. */
uint32_t cl_linkrate_kbit(const cl_linkrate_t *r);

/* The figure this peer should hold, given its measured rate (kbit/s, 0
   none), the figure its view holds for it now (0 none) and the other
   members' figures others[0 .. n-1] (0 entries ignored).  A measurement
   within CL_LINKRATE_SNAP of other members' figures takes the highest of
   them, so that equal links get equal figures (and equal parts) despite
   a few percent of noise.  The figure held goes up when the new one is
   more than CL_LINKRATE_HYST_UP above it or joins another member's
   figure (two members that measured the same link a little apart meet
   at the higher figure, never swapping), and down only when the new one
   is more than CL_LINKRATE_HYST below it: the highest window only grows
   while TCP ramps up and more windows come in, so a rise is news and a
   fall needs more of it.  Returns the figure to hold: `agreed` when
   nothing should change. */
uint32_t cl_linkrate_propose(uint32_t measured, uint32_t agreed, const uint32_t *others, size_t n);

#endif
