/*  cl_engine_coll_int.h - what the files of the collective streams share
    among themselves.

    The streams (cl_engine_coll.c) are one component in four files: the
    streams themselves, the start of a collective (cl_engine_coll_start.c),
    the environment of its algorithm (cl_engine_coll_env.c) and the
    generations of the world group (cl_engine_gens.c).  What the rest of
    the engine calls is declared in cl_engine_int.h; the functions below
    are for these four files only.
*/
#ifndef CL_ENGINE_COLL_INT_H_INCLUDED
#define CL_ENGINE_COLL_INT_H_INCLUDED

#include "engine/cl_engine_int.h"

/* cl_engine_coll.c */
/* Arms _coll's timer by `when` (an earlier deadline stays): a collective
   started (its tick), a call waiting for the group (its deadline), a
   start deferred until its device input is in host memory. */
void eng_coll_wake_by(struct cl_engine *e, double when);

/* cl_engine_coll_start.c */
/* Starts the queued calls of s, in order, while nothing runs on s and a
   generation is known for the first; a call that must wait for the group
   gets its deadline (cl_engine_coll.c gives up on it). */
void eng_coll_try_start(struct cl_engine *e, stream_t *s);
/* Frees *ctx_p (accepts NULL) and nulls it. */
void eng_coll_ctx_free(coll_ctx_t **ctx_p);

/* cl_engine_coll_env.c */
/* The environment of the algorithm of the collective ctx describes
   (ctx is its env->eng; the caller keeps it alive while the algorithm
   runs). */
cl_coll_env_t eng_coll_env(coll_ctx_t *ctx);
/* The member record of comm rank comm_rank in ctx's communicator, or
   NULL. */
cl_peer_t *eng_coll_peer_of(coll_ctx_t *ctx, int comm_rank);

/* cl_engine_coll_start.c */
/* A peer that left after taking part in collective seq of s counts
   there, so seq runs under a generation that still lists it: the newest
   one (not after cur) that lists every such peer of the communicator and
   this peer.  Returns cur when it lists them all or none does. */
uint64_t eng_coll_gen_with_departed(struct cl_engine *e, stream_t *s, uint64_t seq, uint64_t cur);

/* cl_engine_fast.c: the same-host fast path (cl_fast.h). */
/* Applies the fast sequences s's application thread reported. */
void eng_fast_drain(struct cl_engine *e, stream_t *s);
/* Grants or revokes every stream's fast path (each turn of the loop),
   or s's (when its collective completed). */
void eng_fast_update(struct cl_engine *e);
void eng_fast_update_stream(struct cl_engine *e, stream_t *s);
/* s numbered seq for the engine path (a group's one grant: at or past
   the agreed sequence every member falls back, cl_fast_agree_post). */
void eng_fast_on_post(stream_t *s, uint64_t seq);
/* A collective message for sequence seq arrived on s: revokes a grant
   that it shows the other member does not use. */
void eng_fast_on_message(struct cl_engine *e, stream_t *s, uint64_t seq);
/* Frees s's fast path (its communicator goes, or the engine stops). */
void eng_fast_release(struct cl_engine *e, stream_t *s);

#endif
