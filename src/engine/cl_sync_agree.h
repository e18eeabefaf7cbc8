/*  cl_sync_agree.h - the majority rule of state sync and checkpoints
    (cl_sync_agree.c says how it works).
*/
#ifndef CL_SYNC_AGREE_H_INCLUDED
#define CL_SYNC_AGREE_H_INCLUDED

#include "engine/cl_elmsg.h"

#include <stdbool.h>
#include <stdint.h>

/* One donor asked for its state: its answer (HASHES), kept by the
   caller.  The lists are ascending by index, as the codec enforces. */
typedef struct {
    uint8_t key[32];
    bool replied; /* HASHES arrived */
    bool gone;    /* left, refused or stalled: asked for nothing more */
    bool stalled; /* gone because it sent nothing for a while */
    bool moved;   /* gone because it answered that it went past s without this peer */
    bool retried; /* asked again once after a first silence */
    cl_el_buf_t *bufs;
    uint32_t nbufs;
    cl_el_res_t *res;
    uint32_t nres;
} cl_sync_donor_t;

/* What one donor declares for one item: found, and its size, signature
   (results) and hash. */
typedef struct {
    bool has;
    uint64_t size;
    uint32_t signature;
    const uint8_t *hash;
} cl_sync_decl_t;

/* What is said of one donor at a checkpoint: how many of its
   declarations differ from the majority, and the first of them (one
   warning per donor, however many items a hostile one declares). */
typedef struct {
    int count;
    char first[224];
} cl_sync_naming_t;

/* What donor o declares for item index (a start-up result when res, else
   a broadcast buffer); has is false when o did not answer, is gone or
   does not list it.  hash points into o's list. */
cl_sync_decl_t cl_sync_agree_decl(const cl_sync_donor_t *o, bool res, uint64_t index);
/* Whether two declarations are the same version (both absent, or equal
   size, signature and hash). */
bool cl_sync_agree_same(const cl_sync_decl_t *a, const cl_sync_decl_t *b);
/* The majority rule of one item over donors[0..ndonors), of which
   `replied` answered and are not gone.  Returns 1 when one version is
   declared by more than half of those (*keep gets it; the others are
   named) or when more than half do not declare it (*keep has false;
   those that do are named), 0 when no version has a majority (each
   declaration is named, *keep has false).  names: one per donor, or NULL
   (nobody named). */
int cl_sync_agree_decide(cl_sync_naming_t *names, const cl_sync_donor_t *donors, int ndonors,
                         int replied, bool res, uint64_t index, cl_sync_decl_t *keep);
/* A monitor's checkpoint: keeps in each donor's lists only the items the
   majority rule takes, in the version it takes, before anything is
   allocated for them; names (one per donor, or NULL) gets the donors
   whose declarations differ.  Returns false when some item has no
   majority either way: then every list is emptied, as no checkpoint can
   be trusted. */
bool cl_sync_agree_prune(cl_sync_naming_t *names, cl_sync_donor_t *donors, int ndonors);

#endif
