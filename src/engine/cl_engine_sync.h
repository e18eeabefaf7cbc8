/*  cl_engine_sync.h - the joiner's side of state sync
    (cl_engine_sync.c; docs/state-sync.md §4 and §5).
*/
#ifndef CL_ENGINE_SYNC_H_INCLUDED
#define CL_ENGINE_SYNC_H_INCLUDED

#include "engine/cl_elmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_engine;

typedef struct el_sync el_sync_t;

/* cl_engine_sync.c: the joiner's side of state sync. */
/* Starts pulling the state of admission s from the donors: the live
   group members of the current view other than the joiners of that
   admission and client-mode peers.  When the group is larger than
   COLLAB_TARGET_GROUP (several groups whose states differ), only one of
   them: `admitter` (the sender of the ADMIT, may be NULL) when it can
   serve, else the lowest-ranked one. */
el_sync_t *eng_sync_start(struct cl_engine *e, uint64_t s, const cl_elmsg_t *admit,
                          const uint8_t *admitter);
/* Starts pulling the state of collective s from one peer, key (a peer
   resuming from a monitor's checkpoint: the monitor). */
el_sync_t *eng_sync_start_one(struct cl_engine *e, uint64_t s, const uint8_t key[32]);
void eng_sync_destroy(el_sync_t **sync_p);
/* Items agreed so far (served or not), and the i-th of them when it was
   served: 0 with its kind (CL_EL_ITEM_*), index, bytes and signature,
   else COLLAB_ERR_ARG. */
size_t eng_sync_count(const el_sync_t *sync);
int eng_sync_item_at(const el_sync_t *sync, size_t i, int *what, uint64_t *index,
                     const uint8_t **data, size_t *len, uint32_t *signature);
bool eng_sync_done(const el_sync_t *sync);
/* The agreed bytes of a buffer or result: 0 with *data, *len and *signature set,
   or COLLAB_ERR_ARG when it was not served (dropped, failed, unknown). */
int eng_sync_item(const el_sync_t *sync, int what, uint64_t index, const uint8_t **data,
                  size_t *len, uint32_t *signature);
void eng_sync_totals(const el_sync_t *sync, size_t *nitems, uint64_t *bytes, int *ndonors);
/* True when an item was not served although a donor that stopped
   serving it is still a live member: the members do not take this peer
   for admitted (their ADMIT was lost with its admitter), and keeping its
   own values would make it diverge from the group in silence. */
bool eng_sync_unserved(struct cl_engine *e, const el_sync_t *sync);
/* A monitor's fetch (docs/monitor.md §7): true when an item had no
   majority either way among the members that answered, so that nothing
   was fetched and no checkpoint may be written. */
bool eng_sync_split(const el_sync_t *sync);
void eng_sync_on_message(struct cl_engine *e, el_sync_t *sync, const uint8_t key[32],
                         const cl_elmsg_t *m);
void eng_sync_view_changed(struct cl_engine *e, el_sync_t *sync);
double eng_sync_timer(struct cl_engine *e, el_sync_t *sync, double now);

#endif
