/*  cl_engine_groups.h - world all-reduces in several groups beyond
    COLLAB_TARGET_GROUP, one component (cl_engine_groups.c;
    docs/elastic.md §9).

    eng_groups_t decides whether a collective's member list is split and
    which part of it this peer runs, and remembers how many groups the
    last split world all-reduce had (to log when that number crosses
    one).  It sees the engine only through the context it gets at
    creation (eng_groups_ctx_t): it never includes the engine's private
    header, and nothing else writes its state.  Engine thread only.
*/
#ifndef CL_ENGINE_GROUPS_H_INCLUDED
#define CL_ENGINE_GROUPS_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_member.h"
#include "mpi_collab.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct eng_groups eng_groups_t;

/* The engine, incomplete here: the type of the context's argument, so that
   an adapter handed something else does not compile (docs/architecture.md,
   "Typed contexts"). */
struct cl_engine;

/* What the groups may ask of the engine.  Every function gets `arg`. */
typedef struct {
    struct cl_engine *arg; /* the engine, opaque here */
    /* The swarm's settings as this peer's view holds them now
       (COLLAB_TARGET_GROUP, COLLAB_STRICT); never NULL. */
    const cl_settings_t *(*settings)(struct cl_engine *arg);
} eng_groups_ctx_t;

/* Creates the component; copies ctx.  Returns NULL without memory; the
   caller owns the result. */
eng_groups_t *eng_groups_new(const eng_groups_ctx_t *ctx);
/* Frees it and nulls *g_p.  Accepts NULL. */
void eng_groups_destroy(eng_groups_t **g_p);
/* Does collective kind on comm with k members run in several groups?
   Only a world all-reduce outside strict mode with more than
   COLLAB_TARGET_GROUP members.  Logs when world all-reduces start or stop
   running in several groups. */
bool eng_groups_split_applies(eng_groups_t *g, const collab_comm_t *comm, cl_coll_kind_t kind,
                              int k);
/* rank[0..k) ascending comm ranks with their weights and client flags:
   keeps in rank[] only the group of comm rank self for collective seq
   (cl_moshpit_split, the same on every member) and returns its size; k
   when self is not in the list; a negative status without memory or
   when the split fails. */
int eng_groups_mine(eng_groups_t *g, int self, uint64_t seq, int k, int *rank, const double *weight,
                    const int *client);
/* Groups of the last world all-reduce that asked (1 or less: one). */
int eng_groups_count(const eng_groups_t *g);

#endif
