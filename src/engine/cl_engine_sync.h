/*  cl_engine_sync.h - the joiner's side of state sync, one component
    (cl_engine_sync.c; docs/state-sync.md §4 and §5).

    el_sync_t owns one pull of the swarm's state: the donors asked, their
    answers, the agreed items with their bytes, and the stripes asked for.
    It sees the engine only through the context it gets at creation
    (eng_sync_ctx_t): it never includes the engine's private header, and
    nothing else writes its state.  Engine thread only.
*/
#ifndef CL_ENGINE_SYNC_H_INCLUDED
#define CL_ENGINE_SYNC_H_INCLUDED

#include "engine/cl_elmsg.h"
#include "engine/cl_member.h"
#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct el_sync el_sync_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the sync may ask of the engine.  Every function gets `arg`.  The
   pointers stay valid for the component's life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): COLLAB_TIMEOUT makes the
       query deadline and the stall; a monitor fetches a checkpoint. */
    const cl_config_t *cfg;
    const uint8_t *self_key; /* this peer's key, 32 bytes */
    /* The loop's timer set: each pull registers one timer there (the
       query deadline, QUERY again, stalled donors). */
    cl_timer_t *timers;
    /* The engine's clock (eng_now). */
    double (*now)(struct cl_engine *arg);
    /* Sends elastic message m to key; returns 0 or a negative status. */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], const cl_elmsg_t *m);
    /* This peer's rank now (rotates the stripes). */
    int (*rank)(struct cl_engine *arg);
    /* The membership's peers, and one of them by key or NULL: whether a
       donor is a live member, in the group, a monitor (read only). */
    cl_peer_t *const *(*members)(struct cl_engine *arg, size_t *n);
    cl_peer_t *(*find)(struct cl_engine *arg, const uint8_t key[32]);
    /* Does the admission of joiners js run all-reduces in several groups
       (eng_el_split_admission)?  Sets *members and *target_group
       (COLLAB_TARGET_GROUP) for the log line when it does. */
    bool (*split)(struct cl_engine *arg, const cl_el_joiner_t *js, uint32_t nj, int *members,
                  int *target_group);
    /* This peer's own size of item (what, index): 1 with *size when its
       program told it (a straggler's registry), 0 while its program has
       not posted that collective yet (a joiner: eng_sync_want tells it
       then), 2 when this peer has no program to bound it (a monitor:
       the majority's declaration is taken), -1 when it will never ask
       for it.  NULL: 2 for every item. */
    int (*own_size)(struct cl_engine *arg, int what, uint64_t index, uint64_t *size);
    /* Every item is served, dropped or given up on: the admission's sync
       ended, or a monitor's checkpoint fetch.  Called from inside
       eng_sync_on_message, eng_sync_view_changed or its timer: once, and
       again each time the items an eng_sync_want started are in. */
    void (*finished)(struct cl_engine *arg);
} eng_sync_ctx_t;

/* Starts pulling the state of admission s from the donors: the live
   group members of the current view other than the joiners of that
   admission and client-mode peers.  When the group is larger than
   COLLAB_TARGET_GROUP (several groups whose states differ), only one of
   them: `admitter` (the sender of the ADMIT, may be NULL) when it can
   serve, else the lowest-ranked one.  Sends the QUERYs; copies ctx;
   registers its timer in ctx.timers, due at once.  Returns NULL without
   memory or without room in ctx.timers; the caller owns the result. */
el_sync_t *eng_sync_start(const eng_sync_ctx_t *ctx, uint64_t s, const cl_elmsg_t *admit,
                          const uint8_t *admitter);
/* Starts pulling the state of collective s from one peer, key (a peer
   resuming from a monitor's checkpoint: the monitor).  As
   eng_sync_start. */
el_sync_t *eng_sync_start_one(const eng_sync_ctx_t *ctx, uint64_t s, const uint8_t key[32]);
/* Unregisters its timer, frees the sync and every byte it fetched, and
   nulls *sync_p.  Accepts NULL.  Not from inside ctx.finished. */
void eng_sync_destroy(el_sync_t **sync_p);
/* Items agreed so far (served or not), and the i-th of them when it was
   served: 0 with its kind (CL_EL_ITEM_*), index, bytes and signature,
   else COLLAB_ERR_ARG. */
size_t eng_sync_count(const el_sync_t *sync);
int eng_sync_item_at(const el_sync_t *sync, size_t i, int *what, uint64_t *index,
                     const uint8_t **data, size_t *len, uint32_t *signature);
/* A joiner's program posted start-up collective `index` (what: its
   item kind) with `size` bytes: the item is allocated (that size at
   most: a donor declaring another is named and refused) and fetched.
   ENG_SYNC_READY: its bytes are in (eng_sync_item); ENG_SYNC_PENDING:
   not yet (ctx.finished is called again once they are, or the sync has
   not agreed yet); ENG_SYNC_NONE: the swarm does not serve it (this peer
   keeps its own value). */
enum { ENG_SYNC_NONE = 0, ENG_SYNC_READY = 1, ENG_SYNC_PENDING = 2 };
int eng_sync_want(el_sync_t *sync, int what, uint64_t index, uint64_t size);
/* Has the sync finished (ctx.finished was called)?  True for NULL.  A
   joiner's eng_sync_want may start it again. */
bool eng_sync_done(const el_sync_t *sync);
/* The agreed bytes of a buffer or result: 0 with *data, *len and *signature set,
   or COLLAB_ERR_ARG when it was not served (dropped, failed, unknown). */
int eng_sync_item(const el_sync_t *sync, int what, uint64_t index, const uint8_t **data,
                  size_t *len, uint32_t *signature);
/* Items served and their bytes, and the donors that answered and did
   not leave. */
void eng_sync_totals(const el_sync_t *sync, size_t *nitems, uint64_t *bytes, int *ndonors);
/* True when an item was not served although a donor that stopped
   serving it is still a live member: silent (the members do not take
   this peer for admitted: their ADMIT was lost with its admitter), or
   answering that it went past s without a copy for this peer (the group
   ran s without it: a view took it out again).  Keeping its own values
   would make it diverge from the group in silence. */
bool eng_sync_unserved(const el_sync_t *sync);
/* A monitor's fetch (docs/monitor.md §7): true when an item had no
   majority either way among the members that answered, so that nothing
   was fetched and no checkpoint may be written. */
bool eng_sync_split(const el_sync_t *sync);
/* A HASHES, DATA or NACK of collective s from key (one of its donors;
   anything else is ignored): agrees once every donor answered, copies
   DATA in at the offset asked for, moves a refused stripe elsewhere. */
void eng_sync_on_message(el_sync_t *sync, const uint8_t key[32], const cl_elmsg_t *m);
/* The view changed: a donor that is gone, or out of the group and no
   monitor, is asked for nothing more and its stripes move to others. */
void eng_sync_view_changed(el_sync_t *sync);

#endif
