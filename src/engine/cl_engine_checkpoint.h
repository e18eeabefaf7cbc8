/*  cl_engine_checkpoint.h - a monitor's checkpoints, one component
    (cl_engine_checkpoint.c; docs/monitor.md §7).

    el_ckpt_t owns what the three roles of a checkpoint keep: the
    monitor's requests, its fetch and its newest checkpoint (served to
    peers that resume from it), the admitter's pending request, and a new
    first peer's checkpoint to resume from.  It sees the engine only
    through the context it gets at creation (eng_ckpt_ctx_t): it never
    includes the engine's private headers, and nothing else writes its
    state.  The fetch itself is a pull of the state (cl_engine_sync.h)
    that the engine owns and starts for it.  Engine thread only.
*/
#ifndef CL_ENGINE_CHECKPOINT_H_INCLUDED
#define CL_ENGINE_CHECKPOINT_H_INCLUDED

#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_engine_sync.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct el_ckpt el_ckpt_t;

/* The engine, incomplete here (also declared in cl_engine_sync.h): the
   type of the context's argument, so that an adapter handed something
   else does not compile (docs/architecture.md, "Typed contexts"). */
struct cl_engine;

/* What the checkpoints may ask of the engine.  Every function gets
   `arg`.  The pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): monitor,
       COLLAB_CHECKPOINT_DIR/_EVERY, COLLAB_RUN_ID. */
    const cl_config_t *cfg;
    const uint8_t *self_key;   /* this peer's key, 32 bytes */
    const cl_stream_t *stream; /* the world communicator's stream (read only) */
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* Is this peer a member of the swarm now (not joining, not left)? */
    bool (*member)(struct cl_engine *arg);
    /* The admitter as this peer computes it (docs/elastic.md §8), or
       NULL; the membership's peers, and one of them by key or NULL; is
       the world group formed (closed)?  Records read only. */
    cl_peer_t *(*admitter)(struct cl_engine *arg);
    cl_peer_t *const *(*members)(struct cl_engine *arg, size_t *n);
    cl_peer_t *(*find)(struct cl_engine *arg, const uint8_t key[32]);
    bool (*group_closed)(struct cl_engine *arg);
    /* Has this peer's program posted no world collective yet, and is it
       in no admission (a checkpoint to resume from is still of use)? */
    bool (*fresh)(struct cl_engine *arg);
    /* The state donor keeps one copy for monitor key: frees the earlier
       one and takes the next when the program posts collective s (with
       now_if_blocked, at once when the program already posted s and it
       did not complete). */
    void (*keep_copy)(struct cl_engine *arg, uint64_t s, const uint8_t key[32],
                      bool now_if_blocked);
    /* The engine's running pull of the state (eng_el_sync), or NULL; and
       starting the monitor's fetch of collective s, asking the live
       members (admitter: the notice's sender): false without memory.
       When it ends the engine calls eng_ckpt_fetched. */
    const el_sync_t *(*sync)(struct cl_engine *arg);
    bool (*fetch)(struct cl_engine *arg, uint64_t s, const uint8_t admitter[32]);
    /* The loop's timer set: a monitor that takes checkpoints registers
       one timer there (its REQUESTs, every 2 s, and while it fetches
       ENG_CKPT_POLL; a fetch whose pull another replaced ends there). */
    cl_timer_t *timers;
} eng_ckpt_ctx_t;

/* Creates the component and reads COLLAB_CHECKPOINT_DIR/_EVERY (a
   monitor loads the newest checkpoint that verifies there); copies ctx.
   Returns 0 with *out set (the caller owns it), COLLAB_ERR_NO_MEM, or
   COLLAB_ERR_CONFIG for a bad setting, logged. */
int eng_ckpt_new(const eng_ckpt_ctx_t *ctx, el_ckpt_t **out);
/* Frees it and nulls *c_p.  Accepts NULL. */
void eng_ckpt_destroy(el_ckpt_t **c_p);
/* Does a monitor that takes checkpoints accept ELASTIC messages of this
   sub type (the others are dropped as before)?  False for NULL. */
bool eng_ckpt_monitor_accepts(const el_ckpt_t *c, int sub);
/* A decoded ELASTIC message from key (p: its record, NULL when unknown):
   true when it was a checkpoint's (handled). */
bool eng_ckpt_on_message(el_ckpt_t *c, cl_peer_t *p, const uint8_t key[32], const cl_elmsg_t *m);
/* The admitter's program posted world collective seq (local idx), a step
   boundary: starts a requested checkpoint. */
void eng_ckpt_on_boundary(el_ckpt_t *c, uint64_t seq, uint64_t idx);
/* A monitor asked this peer (the admitter) for a checkpoint that it has
   not noticed to the members yet, and it is due: the world's program is
   at `step` (its period `period` collectives), near enough to the step
   asked for, and the last checkpoint is MIN_GAP seconds old.  Boundaries
   must then be seen on the engine path (the same-host fast path ends);
   before, the fast path may go on. */
bool eng_ckpt_due(const el_ckpt_t *c, uint64_t step, uint64_t period);
/* A monitor's checkpoint to resume from (docs/monitor.md §7): collective
   s of the group is step `step`, after `prefix` start-up collectives of
   signatures sigs (owned by the component, valid until the next call
   here), held by the monitor `key`. */
typedef struct {
    uint64_t s, step, prefix;
    const uint32_t *sigs;
    uint8_t key[32];
} eng_ckpt_resume_t;
/* This peer's next world collective: true once, with *out, when a
   monitor sent a checkpoint to resume from; the engine then sets up its
   numbering and pulls the checkpoint as a joiner does, and calls
   eng_ckpt_resuming when it did. */
bool eng_ckpt_take_resume(el_ckpt_t *c, eng_ckpt_resume_t *out);
/* This peer resumed from the checkpoint taken: as the coordinator that
   admits ranks while the group forms it passes the RESUME on. */
void eng_ckpt_resuming(el_ckpt_t *c);
/* This peer, as coordinator, admits a rank (before the view goes out):
   a new first peer resumes from the checkpoint. */
void eng_ckpt_on_admit_rank(el_ckpt_t *c, const uint8_t key[32]);
/* The monitor's fetch y ended (called by the engine from the pull's
   `finished`): writes the checkpoint when every item agreed on was
   fetched. */
void eng_ckpt_fetched(el_ckpt_t *c, const el_sync_t *y);
/* This peer became a member: a monitor that takes checkpoints arms its
   timer now (it runs while this peer is a member, and stops when it
   finds it no member).  Accepts NULL. */
void eng_ckpt_member(el_ckpt_t *c);

#endif
