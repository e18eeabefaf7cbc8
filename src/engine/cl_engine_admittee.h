/*  cl_engine_admittee.h - this peer's own admission into the world group,
    as a joiner or a straggler, one component (cl_engine_admittee.c;
    docs/elastic.md §3 and §6, docs/state-sync.md).

    el_admittee_t owns what a peer outside the group keeps while it waits
    and while it is admitted: the collectives it parks or holds, when it
    asks next and when it gives up, the admission it is in (its sequence,
    start-up prefix and signatures, its deadline) and what undoing it
    restores.  Its standing in the group (el_standing_t) is the elastic
    layer's: the admittee reads it through a const pointer in its context
    and changes a field only by asking (the context's stand, which the
    layer's eng_elastic_stand carries out at once).  It sees the engine
    only through that context (eng_admittee_ctx_t): it never includes the
    engine's private header.  Engine thread only.
*/
#ifndef CL_ENGINE_ADMITTEE_H_INCLUDED
#define CL_ENGINE_ADMITTEE_H_INCLUDED

#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_engine_checkpoint.h"
#include "engine/cl_engine_sync.h"
#include "engine/cl_member.h"
#include "engine/cl_request.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where this peer stands with respect to the world group. */
typedef enum {
    EL_IN = 0,      /* a member of the group (or the group is not formed yet) */
    EL_WAITING = 1, /* outside; asks to be admitted (joiner) or re-admitted (straggler) */
    EL_SYNCING = 2, /* admitted; pulls the group's state */
} el_phase_t;

/* This peer's standing and the numbering of its world stream: written by
   the elastic layer only (cl_engine_elastic.c: the views, the posts, and
   what the admittee asks through its context's stand: an admission, its
   undoing, a resume). */
typedef struct {
    el_phase_t phase;
    bool was_in_group; /* it has been a member of the formed group */
    bool evicted;      /* it was, and was taken out: finishes its step alone */
    bool readmit;      /* what it asks for is a re-admission */
    uint64_t posted;   /* world collectives posted by the program */
    bool mapped;       /* local >= map_local runs as map_seq + (local - map_local) */
    uint64_t map_local, map_seq;
} el_standing_t;

/* A field of el_standing_t the admittee asks to change (stand). */
typedef enum {
    EL_ST_PHASE,        /* value: an el_phase_t */
    EL_ST_WAS_IN_GROUP, /* value: 0 or 1 */
    EL_ST_EVICTED,
    EL_ST_READMIT,
    EL_ST_MAPPED,
    EL_ST_MAP_LOCAL, /* value: the local index */
    EL_ST_MAP_SEQ,   /* value: the sequence number */
} el_st_field_t;

typedef struct el_admittee el_admittee_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the admittee may ask of the engine.  Every function gets `arg`.
   The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): COLLAB_TIMEOUT (how long it
       waits), COLLAB_RUN_ID (the log of a foreign program). */
    const cl_config_t *cfg;
    const uint8_t *self_key;   /* this peer's public key (32 bytes) */
    const cl_member_t *mb;     /* the membership's records (read) */
    const el_standing_t *st;   /* the elastic layer's (read): changed through stand */
    const cl_stream_t *stream; /* the world stream (read): steps */
    cl_statereg_t *reg;        /* a straggler's buffers, overwritten */
    cl_startup_t *startup;     /* the start-up results it answers, kept */
    /* The loop's timer set: it registers one timer there, armed while it
       waits (the next ADMIT_REQ, giving up) or its admission may still be
       lost (the view that admits it). */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* Is this peer a member of the swarm (ENG_MEMBER)? */
    bool (*member)(struct cl_engine *arg);
    /* The peer that admits (cl_member_admitter), or NULL. */
    const cl_peer_t *(*admitter)(struct cl_engine *arg);
    /* When this peer coordinates and no other member is in the group:
       puts itself back into the group, alone (cl_member_regroup_self), and
       publishes the view; true when it did. */
    bool (*regroup)(struct cl_engine *arg);
    /* Asks the coordinator to take this peer out of the group, as a
       straggler's own report (eng_report_self_out). */
    void (*self_out)(struct cl_engine *arg);
    /* An ADMIT from admitter (NULL: unknown) is remembered as every
       member does, and this peer's completed collectives are checked
       against it (eng_elastic_check_admissions). */
    void (*seen)(struct cl_engine *arg, const cl_elmsg_t *m, const uint8_t *admitter);
    /* Hands req back to the engine as world collective seq (not recorded
       again), then sets the world stream's next sequence to next
       (UINT64_MAX: as it was).  COLLAB_ERR_INTERNAL without a world
       stream (req untouched). */
    int (*submit)(struct cl_engine *arg, collab_request_t *req, uint64_t seq, uint64_t next);
    /* The world stream starts no collective below started and numbers the
       next one next (UINT64_MAX: unchanged). */
    void (*renumber)(struct cl_engine *arg, uint64_t started, uint64_t next);
    /* Takes back the world collectives the engine has not completed
       (eng_coll_take_back); returns how many went to taken[0..max). */
    size_t (*take_back)(struct cl_engine *arg, collab_request_t **taken, size_t max);
    /* The running pull of the state and its control (eng_el_sync,
       eng_el_sync_start, eng_el_sync_start_one, eng_sync_want,
       eng_el_sync_check_donors, eng_el_sync_stop). */
    const el_sync_t *(*sync)(struct cl_engine *arg);
    bool (*sync_start)(struct cl_engine *arg, uint64_t s, const cl_elmsg_t *admit,
                       const uint8_t *admitter);
    bool (*sync_start_one)(struct cl_engine *arg, uint64_t s, const uint8_t key[32]);
    /* eng_sync_want on the running pull (ENG_SYNC_NONE without one). */
    int (*sync_want)(struct cl_engine *arg, int what, uint64_t index, uint64_t size);
    void (*sync_check)(struct cl_engine *arg);
    void (*sync_stop)(struct cl_engine *arg);
    /* A monitor's checkpoint to resume from (eng_ckpt_take_resume), and
       that this peer resumes from it (eng_ckpt_resuming). */
    bool (*take_resume)(struct cl_engine *arg, eng_ckpt_resume_t *r);
    void (*resuming)(struct cl_engine *arg);
    /* Leaves the swarm with status (eng_leave). */
    void (*leave)(struct cl_engine *arg, int status);
    /* eng_el_signature, eng_el_result_span and eng_coll_kind_name. */
    uint32_t (*signature)(const collab_request_t *req);
    bool (*result_span)(const collab_request_t *req, int comm_size, void **ptr, size_t *len);
    const char *(*kind_name)(cl_coll_kind_t kind);
    /* Sets field f of the standing st to v: the elastic layer writes it
       (eng_elastic_stand), at once. */
    void (*stand)(struct cl_engine *arg, el_st_field_t f, uint64_t v);
} eng_admittee_ctx_t;

/* Creates the admittee; copies ctx and registers its timer in
   ctx.timers.  Returns NULL without memory or without room in
   ctx.timers; the caller owns the result. */
el_admittee_t *eng_admittee_new(const eng_admittee_ctx_t *ctx);
/* Unregisters its timer, completes every parked or held request with
   COLLAB_ERR_NOT_INIT, frees it and nulls *a_p.  Accepts NULL. */
void eng_admittee_destroy(el_admittee_t **a_p);

/* The program posted world collective req (local index idx, already
   renumbered).  Takes it over while this peer waits outside the group or
   pulls the state (parked, held, or answered from the swarm's state) and
   returns true; false when the engine must run it. */
bool eng_admittee_take(el_admittee_t *a, collab_request_t *req, uint64_t idx);
/* An ADMIT from p (NULL: unknown sender): remembered, and when it names
   this peer while it waits, its admission starts (the numbering, the
   pull of the state). */
void eng_admittee_on_admit(el_admittee_t *a, const cl_peer_t *p, const cl_elmsg_t *m);
/* The pull of the state finished: answers parked start-up collectives or
   resyncs the held straggler. */
void eng_admittee_sync_finished(el_admittee_t *a);
/* World collective seq completed under a generation of the group with
   status: from the admission's sequence on it can no longer be lost. */
void eng_admittee_on_done(el_admittee_t *a, uint64_t seq, int status);
/* This peer's admission did not take effect (why: for the log): the
   group's view that admits it never came, or a later one leaves it out
   before it completed a collective in the group.  Undoes the numbering,
   the sync and what the engine runs for it, and asks to be admitted again:
   as a joiner when nothing of the group's state reached its program yet,
   else holding its next collective like a straggler, so that its
   registered buffers are overwritten with the state of the new admission. */
void eng_admittee_undo(el_admittee_t *a, const char *why);
/* Completes every parked or held request with status. */
void eng_admittee_abort(el_admittee_t *a, int status);
/* A straggler is back in the group without an admission (a view that
   put it back: its own, when it formed the group again, or one that
   regrouped everyone): nothing to resync.  It no longer asks to be
   re-admitted, and its held collective runs under the number it got when
   it was posted.  Nothing for a peer that is no straggler; once only. */
void eng_admittee_regrouped(el_admittee_t *a);
/* A view puts this straggler back into the group without an admission
   (put_in; false: a view that leaves it out, or no straggler).  When that
   view formed the group just now (formed_now: matchmaking closed it; the
   view before had it open, or this peer was no member) while this peer's
   program is past its first world collective, its other members start at
   the first one and this peer cannot run with them from where its
   program is (it went on alone after it was removed from the swarm).
   Then it stays out as a straggler (its collectives run alone, its held
   one stays held): it asks each second to be taken out of the group (the
   context's self_out) instead of to be re-admitted, and once a view
   leaves it out it asks at once to be re-admitted, and is resynced, as
   any straggler.  Returns true while it is kept out so (the caller does
   not regroup it), false otherwise. */
bool eng_admittee_keep_out(el_admittee_t *a, bool put_in, bool formed_now);
/* This peer runs another program than the swarm: logs why (once) and
   marks it; eng_admittee_leave_foreign then takes it out of the swarm. */
void eng_admittee_foreign(el_admittee_t *a, const char *what);
bool eng_admittee_is_foreign(const el_admittee_t *a);
void eng_admittee_leave_foreign(el_admittee_t *a);
/* Called every turn of the loop (eng_el_after_timers): a pull that ended
   unserved by live members undoes the admission here, in the turn whose
   timers ran the pull's own timer that found it so (a timer armed from
   inside a timer would wait for the next turn), and asks again at once. */
void eng_admittee_poll(el_admittee_t *a, double now);
/* Can the admission this peer is in still be lost (no collective of the
   group completed here from its sequence on)? */
bool eng_admittee_pending(const el_admittee_t *a);
/* The generation of the view that admits (or last admitted) this peer;
   0 before any admission. */
uint64_t eng_admittee_gen(const el_admittee_t *a);
/* Anything parked, held or about to be held, an admission that can still
   be lost, or a foreign program (the fast path stays off)? */
bool eng_admittee_busy(const el_admittee_t *a);

#endif
