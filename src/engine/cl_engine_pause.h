/*  cl_engine_pause.h - a peer that did not run for a while, one component
    (cl_engine_pause.c; docs/collectives.md §3, "Members that were
    stopped").

    eng_pause_t marks each turn of the loop on the raw clock and measures
    the gap to the next: one longer than the loop ever sleeps means this
    process was stopped (SIGSTOP, a frozen VM, a starved CPU).  It takes
    that time off the engine's clock, and when the stop was long enough
    for the others to have taken this peer out, asks the members (PROBE)
    and holds every collective back until each member asked answered or
    its timer in the loop's set ends the doubt, and beyond that while
    the authority has not decided whether the swarm went on without it
    (ctx.undecided), until the authority tells it (eng_pause_decided).
    It owns the mark, the
    members whose answer it awaits and the doubt's end.  It sees the
    engine only through the context it gets at creation
    (eng_pause_ctx_t): it never includes the engine's private headers,
    and nothing else writes its state.  Engine thread only.
*/
#ifndef CL_ENGINE_PAUSE_H_INCLUDED
#define CL_ENGINE_PAUSE_H_INCLUDED

#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_pause eng_pause_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the pause may ask of the engine.  Every function gets `arg`.  The
   pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): a stop of about
       COLLAB_TIMEOUT is asked about, and the doubt lasts COLLAB_TIMEOUT
       (at least 1 s) at most. */
    const cl_config_t *cfg;
    uint8_t self_key[32]; /* this peer's identity key */
    /* The loop's heartbeat period: it runs at least this often, so a gap
       of more than twice this (and half a second) is a stop. */
    double hb_interval;
    /* The membership's records: the members asked after a stop (the
       records are written only through `excuse`). */
    const cl_member_t *members;
    /* The loop's timer set: the component registers one timer there,
       armed at the doubt's end while answers are awaited. */
    cl_timer_t *timers;
    /* The engine's clock (eng_now), which does not count the time this
       process was found stopped. */
    double (*now)(struct cl_engine *arg);
    /* Monotonic seconds, every second counted (eng_raw_now). */
    double (*raw_now)(struct cl_engine *arg);
    /* Takes seconds off the engine's clock: no deadline or silence counts
       them (eng_add_not_running). */
    void (*not_running)(struct cl_engine *arg, double seconds);
    /* Whether this peer is a member (a peer that is none has no view to
       doubt: it measures nothing and its doubt ends). */
    bool (*is_member)(struct cl_engine *arg);
    /* Member p's silence is explained by this peer's own stop: it counts
       as heard now (eng_member_excuse). */
    void (*excuse)(struct cl_engine *arg, cl_peer_t *p, double now);
    /* The round of the members' answers opens (the authority's,
       eng_auth_probe_start): their views count with a majority's
       answers. */
    void (*probe_start)(struct cl_engine *arg);
    /* Whether the question "did the swarm go on without this peer" is
       still open: a member asked answered with a newer view that no
       majority has yet confirmed or refuted, or this peer asked to be
       taken back (eng_auth_went_on).  While it is, the doubt outlasts
       its deadline and the answers: collectives stay held until
       eng_pause_decided (NULL: never). */
    bool (*undecided)(struct cl_engine *arg);
    /* Asks member p for its view: its answer is tallied by that round,
       a fresh link to it is opened where it is public (whoever took this
       peer out forgot its connection), then the PROBE goes out. */
    void (*ask)(struct cl_engine *arg, const cl_peer_t *p);
    /* The doubt ended: the collectives it held back may start
       (eng_cs_start_queued). */
    void (*resume)(struct cl_engine *arg);
} eng_pause_ctx_t;

/* Creates the component; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in the set;
   the caller owns the result. */
eng_pause_t *eng_pause_new(const eng_pause_ctx_t *ctx);
/* Unregisters its timer, frees it and nulls *p_p.  Accepts NULL. */
void eng_pause_destroy(eng_pause_t **p_p);

/* Called first in every turn of the loop, after its poll and for every
   event: measures the raw time since the last mark.  A gap longer than
   the loop sleeps, while this peer is a member, is taken off the clock
   (less one heartbeat period); one of about COLLAB_TIMEOUT or more also
   asks every other member of the view (`excuse`, `ask`) and starts the
   doubt, when there is anyone to await.  Then marks now. */
void eng_pause_check(eng_pause_t *p);
/* Called every turn right after the loop's timers: marks now (the mark
   the next check measures from) and ends the doubt at once when this
   peer is no member. */
void eng_pause_after_timers(eng_pause_t *p);
/* True while the doubt lasts: no collective starts or completes (false
   for NULL).  It lasts while every member asked has not answered (at
   most COLLAB_TIMEOUT, at least 1 s), and then, when ctx.undecided says
   the question is open, until eng_pause_decided. */
bool eng_pause_in_doubt(const eng_pause_t *p);
/* A VIEW from key was handled (installed or not): an answer of a member
   asked.  The last one awaited ends the doubt. */
void eng_pause_view_from(eng_pause_t *p, const uint8_t key[32]);
/* The authority decided the question whether the swarm went on without
   this peer (it was open, eng_auth_went_on).  A doubt held for it ends
   at the loop's next run of its timers (after the message being handled,
   if any) unless ctx.undecided says it is open again.  Accepts NULL;
   nothing when no doubt is held. */
void eng_pause_decided(eng_pause_t *p);

#endif
