/*  cl_engine_sync_bound.c - what a joiner allocates for the swarm's
    state (docs/state-sync.md §4, docs/security-bounds.md §5).

    A joiner runs the same program as its donors, so its own start-up
    collectives tell the size of every item it takes: nothing is
    allocated for an item before that size is known (a straggler's
    registry, at agreement; a joiner's collective, when its program posts
    it: eng_sync_want), and never more than it.  A donor that declared
    another size is named and refused, and the item is decided again
    among the others.  A monitor, which runs no program, takes the sizes
    a majority of the members declares (cl_sync_agree_prune).
*/
#include "engine/cl_engine_sync_int.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"
#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

/* Allocates item i's bytes and asks its holders for them. */
void eng_sync_start_item(el_sync_t *y, size_t i)
{
    item_t *it = &y->items[i];
    it->state = IT_FETCHING;
    if (it->size == 0) {
        it->state = IT_OK;
        return;
    }
    it->data = malloc((size_t)it->size);
    if (it->data == NULL) {
        cl_error("out of memory for the swarm's start-up %s #%llu (%llu bytes); this peer keeps "
                 "its own value",
                 it->what == CL_EL_ITEM_BUFFER ? "broadcast" : "result",
                 (unsigned long long)it->index, (unsigned long long)it->size);
        it->state = IT_FAILED;
        return;
    }
    if (!eng_sync_plan_item(y, i))
        it->state = IT_FAILED;
}

/* This peer's own program has `own` bytes for item i (it runs the same
   program, so an honest donor declares exactly that).  Donors that
   declared another size are named and refused, nothing is allocated for
   what they declared, and the item is decided again among the others
   (the majority rule of cl_sync_agree_decide); without a majority of
   them the item fails with an error and this peer keeps its own value.
   Then the bytes are allocated (own, at most) and fetched. */
void eng_sync_bound_item(el_sync_t *y, size_t i, uint64_t own)
{
    item_t *it = &y->items[i];
    bool res = it->what == CL_EL_ITEM_RESULT;
    const char *kind = res ? "result" : "broadcast";
    if (it->size == own) {
        eng_sync_start_item(y, i);
        return;
    }
    bool *off = calloc((size_t)y->ndonors, sizeof *off);
    if (off == NULL) {
        it->state = IT_FAILED;
        return;
    }
    int replied = 0;
    for (int d = 0; d < y->ndonors; d++) {
        donor_t *dn = &y->donors[d];
        if (!dn->replied || dn->gone)
            continue;
        cl_sync_decl_t v = cl_sync_agree_decl(dn, res, it->index);
        if (v.has && v.size != own) {
            const cl_peer_t *p = y->ctx.find(y->ctx.arg, dn->key);
            cl_warn("state of collective #%llu: rank %d (%.12s) declared start-up %s #%llu as "
                    "%llu bytes, but this program's own has %llu: refused, nothing allocated "
                    "for it",
                    (unsigned long long)y->s, p != NULL ? p->rank : -1, p != NULL ? p->id : "?",
                    kind, (unsigned long long)it->index, (unsigned long long)v.size,
                    (unsigned long long)own);
            off[d] = true;
            dn->gone = true; /* for the decision below only */
        } else {
            replied++;
        }
    }
    cl_sync_decl_t keep = {false, 0, 0, NULL};
    bool ok =
        replied > 0 &&
        cl_sync_agree_decide(NULL, y->donors, y->ndonors, replied, res, it->index, &keep) != 0 &&
        keep.has && keep.size == own;
    for (int d = 0; d < y->ndonors; d++) {
        cl_sync_decl_t o = cl_sync_agree_decl(&y->donors[d], res, it->index);
        it->holder[d] = ok && o.has && cl_sync_agree_same(&o, &keep);
    }
    for (int d = 0; d < y->ndonors; d++)
        if (off[d])
            y->donors[d].gone = false;
    free(off);
    if (!ok) {
        cl_error("no honest majority of the peers that answered declared the swarm's start-up %s "
                 "#%llu with this program's size (%llu bytes); this peer keeps its own value",
                 kind, (unsigned long long)it->index, (unsigned long long)own);
        it->state = IT_FAILED;
        return;
    }
    it->size = keep.size;
    it->signature = keep.signature;
    memcpy(it->hash, keep.hash, CL_ELMSG_HASH);
    eng_sync_start_item(y, i);
}

int eng_sync_want(el_sync_t *y, int what, uint64_t index, uint64_t size)
{
    item_t *it = y != NULL && y->agreed ? eng_sync_item_of(y, what, index) : NULL;
    if (it == NULL)
        return y != NULL && !y->agreed ? ENG_SYNC_PENDING : ENG_SYNC_NONE;
    if (it->state == IT_DEFERRED) {
        eng_sync_bound_item(y, (size_t)(it - y->items), size);
        if (it->state == IT_FETCHING) {
            double now = y->ctx.now(y->ctx.arg);
            y->done = false; /* finished again once it is in */
            y->last_progress = now;
            cl_timer_arm(y->ctx.timers, y->timer, now + y->stall);
        }
    }
    if (it->state == IT_FETCHING)
        return ENG_SYNC_PENDING;
    return it->state == IT_OK && it->size == size ? ENG_SYNC_READY : ENG_SYNC_NONE;
}
