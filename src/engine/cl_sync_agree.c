/*  cl_sync_agree.c - the majority rule of state sync and checkpoints
    (docs/state-sync.md §4, docs/monitor.md §7).

    A joiner (or a monitor taking a checkpoint) asks several donors what
    they hold at one step boundary; each answers with a list of items
    (start-up broadcast buffers and results: index, size, signature,
    hash).  An item is taken only in the version that more than half of
    the donors that answered declare alike, and served only by those; an
    item that more than half do not declare is left out; one with no
    majority either way (one honest donor against one that lies, a
    split) is undecided.  Every donor whose declaration differs from the
    majority is named, once per donor, with the first such item.

    A monitor decides before anything is allocated for an item
    (cl_sync_agree_prune keeps in each donor's list only what the
    majority declares), so that what it holds is bounded by the registry
    a majority declares; a joiner decides item by item
    (cl_sync_agree_decide, cl_engine_sync.c).  Pure logic: no sockets,
    no clock, no engine state; cl_sync_agree_test drives it.
*/
#include "engine/cl_sync_agree.h"

#include <stdio.h>
#include <string.h>

/* Position of index in a donor's list (ascending, as the codec
   enforces), or -1. */
static long find_buf(const cl_sync_donor_t *o, uint64_t index)
{
    long lo = 0, hi = (long)o->nbufs - 1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (o->bufs[mid].index == index)
            return mid;
        if (o->bufs[mid].index < index)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static long find_res(const cl_sync_donor_t *o, uint64_t index)
{
    long lo = 0, hi = (long)o->nres - 1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (o->res[mid].index == index)
            return mid;
        if (o->res[mid].index < index)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

cl_sync_decl_t cl_sync_agree_decl(const cl_sync_donor_t *o, bool res, uint64_t index)
{
    cl_sync_decl_t d = {false, 0, 0, NULL};
    if (!o->replied || o->gone)
        return d;
    long j = res ? find_res(o, index) : find_buf(o, index);
    if (j < 0)
        return d;
    d.has = true;
    d.size = res ? o->res[j].len : o->bufs[j].size;
    d.signature = res ? o->res[j].signature : 0;
    d.hash = res ? o->res[j].hash : o->bufs[j].hash;
    return d;
}

bool cl_sync_agree_same(const cl_sync_decl_t *a, const cl_sync_decl_t *b)
{
    if (a->has != b->has)
        return false;
    return !a->has || (a->size == b->size && a->signature == b->signature &&
                       memcmp(a->hash, b->hash, CL_ELMSG_HASH) == 0);
}

/* Records donor d's declaration of an item that differs from the
   majority. */
static void name_donor(cl_sync_naming_t *names, int d, bool res, uint64_t index,
                       const cl_sync_decl_t *mine, const char *why)
{
    if (names == NULL || names[d].count++ > 0)
        return;
    if (mine->has)
        snprintf(names[d].first, sizeof names[d].first,
                 "declared start-up %s #%llu as %llu bytes with hash %02x%02x%02x%02x…, %s",
                 res ? "result" : "broadcast", (unsigned long long)index,
                 (unsigned long long)mine->size, mine->hash[0], mine->hash[1], mine->hash[2],
                 mine->hash[3], why);
    else
        snprintf(names[d].first, sizeof names[d].first, "did not declare start-up %s #%llu, %s",
                 res ? "result" : "broadcast", (unsigned long long)index, why);
}

/* The majority rule of one item (index, result or buffer) over the donors
   that answered: the versions they declare (size, signature, hash, or
   "not declared") are counted.  Returns 1 when one version is declared by
   more than half of them (it is taken; the others are named) or when
   more than half do not declare it (it is left out; those that do are
   named), 0 when no version has a majority (each declaration is named).
   *keep gets the version to take (has false: none). */
int cl_sync_agree_decide(cl_sync_naming_t *names, const cl_sync_donor_t *donors, int ndonors,
                         int replied, bool res, uint64_t index, cl_sync_decl_t *keep)
{
    int major = -1;
    for (int d = 0; d < ndonors && major < 0; d++) {
        if (!donors[d].replied || donors[d].gone)
            continue;
        cl_sync_decl_t v = cl_sync_agree_decl(&donors[d], res, index);
        int same = 0;
        for (int x = 0; x < ndonors; x++) {
            cl_sync_decl_t o = cl_sync_agree_decl(&donors[x], res, index);
            same += donors[x].replied && !donors[x].gone && cl_sync_agree_same(&v, &o);
        }
        if (2 * same > replied) {
            major = d;
            *keep = v;
        }
    }
    for (int d = 0; d < ndonors; d++) {
        if (!donors[d].replied || donors[d].gone)
            continue;
        cl_sync_decl_t v = cl_sync_agree_decl(&donors[d], res, index);
        if (major >= 0 && cl_sync_agree_same(&v, keep))
            continue;
        name_donor(names, d, res, index, &v,
                   major < 0 ? "and no version of it has a majority of the members that answered"
                   : keep->has
                       ? "unlike the majority of the members that answered; it is not asked for it"
                       : "that the majority of the members that answered does not hold; left out");
    }
    if (major < 0)
        keep->has = false;
    return major >= 0;
}

/* Keeps in each donor's answer only the items the majority rule takes
   (cl_sync_agree_decide), before anything is allocated for them; names (NULL:
   nobody) gets the donors whose declarations differ.  False when an
   item has no majority either way (one honest donor against one that
   lies, or a split): then nothing is kept, as no checkpoint can be
   trusted. */
bool cl_sync_agree_prune(cl_sync_naming_t *names, cl_sync_donor_t *donors, int ndonors)
{
    int replied = 0;
    for (int d = 0; d < ndonors; d++)
        replied += donors[d].replied && !donors[d].gone;
    bool decided = true;
    for (int res = 0; res <= 1; res++)
        for (int d = 0; d < ndonors; d++) {
            cl_sync_donor_t *dn = &donors[d];
            if (!dn->replied || dn->gone)
                continue;
            uint32_t n = res ? dn->nres : dn->nbufs;
            for (uint32_t k = 0; k < n; k++) {
                uint64_t index = res ? dn->res[k].index : dn->bufs[k].index;
                /* Once per index: at the first donor that declares it. */
                bool seen = false;
                for (int x = 0; x < d && !seen; x++)
                    seen = cl_sync_agree_decl(&donors[x], res, index).has;
                cl_sync_decl_t keep;
                if (!seen &&
                    cl_sync_agree_decide(names, donors, ndonors, replied, res, index, &keep) == 0)
                    decided = false;
            }
        }
    for (int d = 0; d < ndonors; d++) {
        cl_sync_donor_t *dn = &donors[d];
        if (!dn->replied || dn->gone)
            continue;
        uint32_t nb = 0, nr = 0;
        for (uint32_t k = 0; k < dn->nbufs && decided; k++) {
            cl_sync_decl_t v = cl_sync_agree_decl(dn, false, dn->bufs[k].index);
            int same = 0;
            for (int x = 0; x < ndonors; x++) {
                cl_sync_decl_t o = cl_sync_agree_decl(&donors[x], false, dn->bufs[k].index);
                same += o.has && cl_sync_agree_same(&v, &o);
            }
            if (2 * same > replied)
                dn->bufs[nb++] = dn->bufs[k];
        }
        for (uint32_t k = 0; k < dn->nres && decided; k++) {
            cl_sync_decl_t v = cl_sync_agree_decl(dn, true, dn->res[k].index);
            int same = 0;
            for (int x = 0; x < ndonors; x++) {
                cl_sync_decl_t o = cl_sync_agree_decl(&donors[x], true, dn->res[k].index);
                same += o.has && cl_sync_agree_same(&v, &o);
            }
            if (2 * same > replied)
                dn->res[nr++] = dn->res[k];
        }
        dn->nbufs = nb;
        dn->nres = nr;
    }
    return decided;
}
