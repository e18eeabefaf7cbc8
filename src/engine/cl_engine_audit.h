/*  cl_engine_audit.h - the periodic state check, one component
    (cl_engine_audit.c; docs/state-sync.md §3, "Periodic check").

    el_audit_t owns the check in progress (the members asked, their
    answers, its deadline) and whether it said that several groups turn
    the check off.  It sees the engine only through the context it gets
    at creation (eng_audit_ctx_t): it never includes the engine's private
    header, and nothing else writes its state.  Taking diverged members
    out of the group is the engine's (the coordinator's) work: the audit
    asks for it through take_out.  Engine thread only.
*/
#ifndef CL_ENGINE_AUDIT_H_INCLUDED
#define CL_ENGINE_AUDIT_H_INCLUDED

#include "elastic/cl_statereg.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct el_audit el_audit_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the audit may ask of the engine.  Every function gets `arg`.  The
   pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    cl_statereg_t *reg;      /* this peer's registered buffers */
    const cl_config_t *cfg;  /* read only: COLLAB_TIMEOUT bounds a check */
    const uint8_t *self_key; /* this peer's public key (32 bytes) */
    cl_timer_t *timers;      /* the loop's set: the audit registers one timer there */
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* True while the group runs all-reduces in several groups
       (eng_coll_multigroup): no check then. */
    bool (*multigroup)(struct cl_engine *arg);
    /* The peers of the current view (cl_member_list) and the record of
       key, or NULL (cl_member_find). */
    cl_peer_t *const *(*members)(struct cl_engine *arg, size_t *n);
    cl_peer_t *(*find)(struct cl_engine *arg, const uint8_t key[32]);
    /* These n members hold state that differs from the group's: when this
       peer is the coordinator, it takes them out of the group (they
       resync at the next step boundary); otherwise nothing. */
    void (*take_out)(struct cl_engine *arg, const uint8_t (*keys)[32], size_t n);
} eng_audit_ctx_t;

/* Creates the audit; copies ctx and registers its timer in ctx.timers.
   Returns NULL without memory or without room in ctx.timers; the caller
   owns the result. */
el_audit_t *eng_audit_new(const eng_audit_ctx_t *ctx);
/* Abandons the check in progress, unregisters its timer, frees the audit
   and nulls *a_p.  Accepts NULL. */
void eng_audit_destroy(el_audit_t **a_p);
/* The admitter completed posting world collective seq, the first of step
   `step`: every 64 steps it starts a check (QUERY to every other live
   member of the group) unless one runs, nothing is registered, or the
   group runs all-reduces in several groups (docs/elastic.md §9). */
void eng_audit_maybe_start(el_audit_t *a, uint64_t seq, uint64_t step);
/* A HASHES or NACK from member key: records its answer; once every member
   answered, decides (DROP of buffers with no majority, take_out of the
   members that differ from it).  A NACK abandons the check. */
void eng_audit_on_message(el_audit_t *a, const uint8_t key[32], const cl_elmsg_t *m);
/* The view changed: a member of the running check may have left the
   group, which abandons the check at the next turn of the loop (its
   timer, which also abandons a check past its deadline). */
void eng_audit_view_changed(el_audit_t *a);
/* True while a check runs. */
bool eng_audit_running(const el_audit_t *a);
/* True when a check is due at the next boundary the admitter sees once
   the group completed `steps` steps (none runs, something is registered,
   one group, a multiple of 64 passed since the last check).  Boundaries
   run on the same-host fast path are not seen: the admitter keeps the
   world's collectives on the engine path while a check is due, so that
   it runs every 64 steps and not only when a fast-path lease lapses
   (docs/state-sync.md §3). */
bool eng_audit_due(const el_audit_t *a, uint64_t steps);

#endif
