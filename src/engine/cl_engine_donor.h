/*  cl_engine_donor.h - the donor's side of state sync, one component
    (cl_engine_donor.c; docs/state-sync.md §3-§5).

    el_donor_t owns what a donor keeps: the joiners' queries that wait for
    the program to reach their sequence, and the copies of the registered
    state taken for an admission served by this peer alone.  It sees the
    engine only through the context it gets at creation (eng_donor_ctx_t):
    it never includes the engine's private header, and nothing else writes
    its state.  Engine thread only.
*/
#ifndef CL_ENGINE_DONOR_H_INCLUDED
#define CL_ENGINE_DONOR_H_INCLUDED

#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct el_donor el_donor_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the donor may ask of the engine.  Every function gets `arg`.  The
   pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    cl_statereg_t *reg;    /* the registered broadcast buffers it reads */
    cl_startup_t *startup; /* the kept start-up results it serves */
    /* The engine's configuration (read only): COLLAB_TIMEOUT says how
       long copies are kept. */
    const cl_config_t *cfg;
    /* The loop's timer set: the donor registers one timer there, armed
       at the earliest expiry of its copies. */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* May this peer serve the state of admission s now?  1 yes, 0 not
       yet, -1 never (eng_el_can_serve, which asks eng_donor_snapshot). */
    int (*can_serve)(struct cl_engine *arg, uint64_t s);
} eng_donor_ctx_t;

/* Creates the donor; copies ctx and registers its timer in ctx.timers
   (it frees copies past their time).  Returns NULL without memory or
   without room in ctx.timers; the caller owns the result. */
el_donor_t *eng_donor_new(const eng_donor_ctx_t *ctx);
/* Unregisters its timer, frees the waiting queries and every copy, and
   nulls *d_p.  Accepts NULL. */
void eng_donor_destroy(el_donor_t **d_p);
/* A QUERY, FETCH or DROP from key (a member, or a monitor a copy is
   expected for): answers it (HASHES, DATA or NACK), keeps a QUERY that
   came before the program reached its sequence, or drops buffers. */
void eng_donor_on_message(el_donor_t *d, const uint8_t key[32], const cl_elmsg_t *m);
/* The program posted a world collective, or a collective completed:
   answers the queries that waited for it, refuses those it went past. */
void eng_donor_progress(el_donor_t *d);
/* This peer alone serves the state of admission s to the joiners js (the
   admitter while the group runs all-reduces in several groups,
   docs/elastic.md §9): it copies its registered buffers when its program
   posts s (eng_donor_on_post) and serves QUERY and FETCH for s from that
   copy (start-up results as always), also once it went past s.  The
   copied contents are freed when every joiner fetched all of them, the
   rest after max(60 s, 12 x COLLAB_TIMEOUT). */
void eng_donor_expect(el_donor_t *d, uint64_t s, const cl_el_joiner_t *js, uint32_t nj);
/* The program posted world collective seq (before it runs): takes the
   copy expected for seq, if any. */
void eng_donor_on_post(el_donor_t *d, uint64_t seq);
/* The copy for admission s: 1 taken, 0 expected (the program has not
   posted s yet), -1 none. */
int eng_donor_snapshot(const el_donor_t *d, uint64_t s);
/* Is a copy expected that the program has not posted for yet (the
   same-host fast path must then wait: the copy is taken when the
   program posts on the engine path)? */
bool eng_donor_waiting(const el_donor_t *d);
/* Is a copy expected or taken for key (a monitor's checkpoint, or a
   joiner of an admission served from a copy)?  Any s when s is
   UINT64_MAX. */
bool eng_donor_expects(const el_donor_t *d, uint64_t s, const uint8_t key[32]);
/* Frees every copy taken for key alone (a monitor's earlier checkpoint,
   when the next one is noticed). */
void eng_donor_forget(el_donor_t *d, const uint8_t key[32]);

#endif
