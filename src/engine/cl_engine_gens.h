/*  cl_engine_gens.h - the generations of the world group, one component
    (cl_engine_gens.c; docs/wire.md §6).

    eng_gens_t remembers the last ENG_GENS groups of the world (each a
    view's group_epoch, with its members' weights, client flags and
    bandwidth figures): recorded from the views this peer installs, or
    learned from a member's notice when the view that formed one was lost
    with its coordinator.  It sees the engine only through the context it
    gets at creation (eng_gens_ctx_t): it never includes the engine's
    private header, and nothing else writes its state.  Engine thread
    only.
*/
#ifndef CL_ENGINE_GENS_H_INCLUDED
#define CL_ENGINE_GENS_H_INCLUDED

#include "engine/cl_member.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The world group of one generation (a view's group_epoch). */
typedef struct {
    uint64_t gen; /* 0 = unused slot */
    int n;
    int *world; /* world ranks, ascending */
    double *weight;
    int *client;
    uint32_t *bandwidth; /* agreed bandwidth figures (kbit/s, 0 unknown) */
} group_gen_t;

#define ENG_GENS 16 /* generations remembered */

typedef struct eng_gens eng_gens_t;

/* The collective streams, which own the generations, incomplete here:
   the type of the context's argument, so that an adapter handed
   something else does not compile (docs/architecture.md, "Typed
   contexts"). */
struct eng_cs;

/* What the generations may ask of the engine.  Every function gets
   `arg`. */
typedef struct {
    struct eng_cs *arg; /* the collective streams, opaque here */
    /* This peer's world rank (-1 before joining), and the world size. */
    int (*rank)(struct eng_cs *arg);
    int (*world_size)(struct eng_cs *arg);
    /* Is world rank w in this peer's current group (a member whose record
       says in_group)? */
    bool (*in_group)(struct eng_cs *arg, int w);
} eng_gens_ctx_t;

/* Creates an empty ring; copies ctx.  Returns NULL without memory; the
   caller owns the result. */
eng_gens_t *eng_gens_new(const eng_gens_ctx_t *ctx);
/* Frees every generation and nulls *g_p.  Accepts NULL. */
void eng_gens_destroy(eng_gens_t **g_p);
/* Generation gen, or NULL when it is not remembered (or gen is 0).  The
   pointer is valid until the next record or learn. */
const group_gen_t *eng_gens_find(const eng_gens_t *g, uint64_t gen);
/* Records generation gen: the peers of list[0..n) that are in the group,
   in the list's order (ascending world ranks).  Nothing when gen is 0 or
   already known; the oldest slot of the ring is reused. */
void eng_gens_record(eng_gens_t *g, uint64_t gen, const cl_peer_t *const *list, size_t n);
/* The members of generation gen as a notice's body (docs/wire.md §6;
   malloc'd into *out, the caller frees it): its length, 0 (and *out
   NULL) when gen is unknown or empty. */
size_t eng_gens_encode(const eng_gens_t *g, uint64_t gen, uint8_t **out);
/* A notice from world rank from_world names generation gen, older than
   cur, which this peer never saw (the view that formed it was lost with
   its coordinator): remembers it when from_world is in the group, body
   lists this peer and every member of cur in ascending order, and
   otherwise only peers out of the group here.  True when gen is known
   now. */
bool eng_gens_learn(eng_gens_t *g, uint64_t gen, uint64_t cur, int from_world, const uint8_t *body,
                    size_t len);
/* Does generation gen list this peer (false when unknown)? */
bool eng_gens_has_self(const eng_gens_t *g, uint64_t gen);
/* Does generation gen list world rank w? */
bool eng_gens_lists(const group_gen_t *gen, int w);
/* The newest generation older than cur that lists this peer and each of
   w[0..k), or 0 when none does. */
uint64_t eng_gens_newest_listing(const eng_gens_t *g, uint64_t cur, const int *w, int k);

#endif
