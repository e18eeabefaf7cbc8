/*  cl_member_int.h - what cl_member.c (records, views received and the
    delta of every change) and cl_member_change.c (the coordinator's
    changes: founding, ranks, admissions, removals, the group) share.
    Internal to those two files; the class is described in cl_member.h.
*/
#ifndef CL_MEMBER_INT_H_INCLUDED
#define CL_MEMBER_INT_H_INCLUDED

#include "engine/cl_member.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_member {
    uint8_t self_key[32];
    cl_peer_t **recs; /* every record */
    size_t nrecs, caprecs;
    size_t *index;    /* open addressing: recs index + 1, 0 = empty */
    size_t capindex;  /* power of two, >= 2 * nrecs */
    cl_peer_t **view; /* members sorted by rank */
    size_t nview;
    cl_peer_t **mons; /* monitors (no rank) sorted by key */
    size_t nmons;
    uint64_t epoch;       /* 0 = no view */
    uint64_t group_epoch; /* epoch of the last change of the world group */
    cl_settings_t settings;
    bool group_closed;
};

/* Installing a new member list.  `next` holds the records of the new view
   (sorted by rank, ranks and in_group already written into next_rank[] /
   next_group[]); computes the delta, then commits. */

typedef struct {
    cl_peer_t *p;
    int rank;
    bool in_group;
    bool client;
    double weight;
    const char *address;
    bool monitor;
    bool relay;  /* a monitor entry that relays (CL_MEMBER_RELAY) */
    uint32_t bw; /* bandwidth figure, kbit/s (0 unknown) */
} entry_t;

/* Installs the view of the n entries e (sorted by rank, monitors first)
   as epoch `epoch`, computing *delta against the current one;
   group_epoch 0: computed here (the coordinator's changes).  Every change
   to the view goes through it. */
int member_view_set(cl_member_t *self, const entry_t *e, size_t n, uint64_t epoch,
                    const cl_settings_t *settings, bool group_closed, uint64_t group_epoch,
                    double now, cl_member_delta_t *delta);

/* The current view as entries, with room for `extra` more (a change
   edits them and installs them with member_view_set); NULL when out of
   memory.  Free with free(). */
entry_t *member_view_entries(const cl_member_t *self, size_t extra);

/* How many entries member_view_entries returns before the extra ones. */
size_t member_view_nentries(const cl_member_t *self);

#endif
