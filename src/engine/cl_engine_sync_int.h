/*  cl_engine_sync_int.h - the state of one pull, shared by
    cl_engine_sync.c (queries, agreement, stripes, timer) and
    cl_engine_sync_bound.c (what a joiner allocates, bounded by its own
    program).  Private to those two files.
*/
#ifndef CL_ENGINE_SYNC_INT_H_INCLUDED
#define CL_ENGINE_SYNC_INT_H_INCLUDED

#include "engine/cl_engine_sync.h"
#include "engine/cl_sync_agree.h"

/* IT_DEFERRED: agreed, nothing allocated; waits until this peer's own
   program posts the collective and so tells its size (eng_sync_want). */
enum { IT_FETCHING = 0, IT_OK = 1, IT_FAILED = 2, IT_DEFERRED = 3 };

typedef cl_sync_donor_t donor_t; /* cl_sync_agree.h */

typedef struct {
    int what; /* CL_EL_ITEM_* */
    uint64_t index;
    uint64_t size;
    uint32_t signature; /* results */
    uint8_t hash[CL_ELMSG_HASH];
    uint8_t *data;
    int state;       /* IT_* */
    int tries;       /* complete fetches that failed the hash check */
    uint8_t *holder; /* per donor: 1 when it agreed and may serve this item */
} item_t;

typedef struct {
    size_t item;
    int donor;
    uint64_t offset, len, got;
} stripe_t;

struct el_sync {
    eng_sync_ctx_t ctx; /* the engine as this sync sees it */
    int timer;          /* in ctx.timers (armed) */
    uint64_t s;
    donor_t *donors;
    int ndonors;
    item_t *items;
    size_t nitems;
    stripe_t *stripes;
    size_t nstripes, capstripes;
    bool agreed;
    bool split; /* a monitor's: an item without a majority either way */
    bool done;
    double deadline;   /* queries; then: no progress since */
    double next_query; /* QUERY again to the donors that did not answer yet */
    double last_progress;
    double stall; /* seconds without DATA before a donor counts as stalled */
    uint64_t bytes;
};

/* The item of kind what and index, or NULL. */
item_t *eng_sync_item_of(const el_sync_t *y, int what, uint64_t index);
/* Plans (or plans again) every stripe of item i over the donors that
   hold it and are not gone, and asks for them; false when none is left. */
bool eng_sync_plan_item(el_sync_t *y, size_t i);
/* cl_engine_sync_bound.c: allocates item i's bytes and asks for them;
   bounds item i by this program's own size `own` first. */
void eng_sync_start_item(el_sync_t *y, size_t i);
void eng_sync_bound_item(el_sync_t *y, size_t i, uint64_t own);

#endif
