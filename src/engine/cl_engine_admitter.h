/*  cl_engine_admitter.h - the admitter's side of admission into the world
    group at step boundaries, one component (cl_engine_admitter.c;
    docs/elastic.md §3, §6 and §9).

    el_admitter_t owns what the peer that decides admissions keeps: the
    queue of peers waiting to be admitted (cl_admission), the admission to
    report once its collective completes, and the timer that expires
    requests nobody repeats.  It sees the engine only through the context
    it gets at creation (eng_admitter_ctx_t): it never includes the
    engine's private header, and nothing else writes its state.  Engine
    thread only.
*/
#ifndef CL_ENGINE_ADMITTER_H_INCLUDED
#define CL_ENGINE_ADMITTER_H_INCLUDED

#include "elastic/cl_admission.h"
#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct el_admitter el_admitter_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the admitter may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): COLLAB_WORLD_SIZE sizes the
       admission queue. */
    const cl_config_t *cfg;
    const uint8_t *self_key; /* this peer's public key (32 bytes) */
    /* The membership's records: it reads them (who admits, the view) and
       installs the view that admits the joiners (cl_member_apply_view). */
    cl_member_t *mb;
    const cl_stream_t *stream;   /* the world stream (read): steps, signatures */
    const cl_startup_t *startup; /* the kept start-up results (read) */
    const cl_statereg_t *reg;    /* the registered buffers (read: the report) */
    const uint8_t *kinds;        /* kind + 1 of stream entries < CL_STREAM_HISTORY */
    /* The loop's timer set: it registers one timer there, armed while
       requests are queued (they expire unless repeated). */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* May this peer admit now: a member, in the group as far as the
       elastic layer knows (not evicted, not waiting or syncing)? */
    bool (*may_admit)(struct cl_engine *arg);
    /* eng_el_split_admission: does the group with joiners js run world
       all-reduces in several groups? */
    bool (*split)(struct cl_engine *arg, const cl_el_joiner_t *js, uint32_t nj);
    /* Every member remembers an admission (its generation rule and its
       entrants); this one is decided by this peer. */
    void (*remember)(struct cl_engine *arg, const cl_elmsg_t *admit);
    /* Publishes the view change d (eng_member_commit; takes d). */
    void (*commit)(struct cl_engine *arg, cl_member_delta_t *d);
    /* Several groups: this peer alone serves joiners js of admission s
       from a copy of its state (eng_donor_expect). */
    void (*serve_alone)(struct cl_engine *arg, uint64_t s, const cl_el_joiner_t *js, uint32_t nj);
    /* This peer's program posted world collective seq (local index idx),
       a step boundary: the monitor's checkpoints (eng_ckpt_on_boundary). */
    void (*boundary)(struct cl_engine *arg, uint64_t seq, uint64_t idx);
    /* The same with nobody to admit: the periodic state check may start
       (eng_audit_maybe_start; step in the group's numbering). */
    void (*idle)(struct cl_engine *arg, uint64_t seq, uint64_t step);
} eng_admitter_ctx_t;

/* Creates the admitter; copies ctx, creates its queue and registers its
   timer in ctx.timers.  Returns NULL without memory or without room in
   ctx.timers; the caller owns the result. */
el_admitter_t *eng_admitter_new(const eng_admitter_ctx_t *ctx);
/* Unregisters its timer, frees the queue and nulls *a_p.  Accepts NULL. */
void eng_admitter_destroy(el_admitter_t **a_p);

/* An ADMIT_REQ from p (a member; m its message): queued when this peer
   admits and p is ranked and out of the group. */
void eng_admitter_on_request(el_admitter_t *a, const cl_peer_t *p, const cl_elmsg_t *m);
/* This peer's program posted world collective seq (local index idx):
   at a step boundary, admits every waiting peer (ADMIT to every member
   and joiner, then the view that puts the joiners into the group). */
void eng_admitter_on_post(el_admitter_t *a, uint64_t seq, uint64_t idx);
/* World collective seq completed with ncontrib peers: logs the admission
   that took effect there (DESIGN §7). */
void eng_admitter_on_done(el_admitter_t *a, uint64_t seq, int ncontrib);
/* The view's ranked members (for the queue's ranks); returns 0 or a
   negative status. */
int eng_admitter_view(el_admitter_t *a, const cl_adm_member_t *members, size_t n);
/* Peers queued for admission. */
size_t eng_admitter_pending(const el_admitter_t *a);
/* Does this peer admit now (a member of the group, in it, and the
   admitter its view names)? */
bool eng_admitter_admits(const el_admitter_t *a);
/* The step that world collective seq belongs to, in the group's
   numbering (the numbering of the periodic state check). */
uint64_t eng_admitter_step(const el_admitter_t *a, uint64_t seq);
/* Is an admission decided here still to be reported (its collective not
   completed yet)? */
bool eng_admitter_reporting(const el_admitter_t *a);

#endif
