/*  cl_engine_coll_int.h - what the files of the collective streams share
    among themselves.

    The streams (cl_engine_coll.c) are one component in four files: the
    streams themselves, the start of a collective (cl_engine_coll_start.c),
    the environment of its algorithm (cl_engine_coll_env.c) and the
    generations of the world group (cl_engine_gens.c); incoming messages
    are routed in cl_engine_route.c and the same-host fast path is
    cl_engine_fast.c.  Their state is struct eng_cs (e->cs), defined here
    and written by these files only; the rest of the engine reads it
    through cl_engine_coll.h.  What the rest of the engine calls is
    declared in cl_engine_int.h; the functions below are for these files
    only.
*/
#ifndef CL_ENGINE_COLL_INT_H_INCLUDED
#define CL_ENGINE_COLL_INT_H_INCLUDED

#include "engine/cl_engine_int.h"

/* What one sending peer holds in a bounded queue (docs/security-bounds.md §5). */
typedef struct {
    size_t msgs, bytes;       /* held now (bytes with the fixed overheads) */
    uint64_t dropped;         /* refused by the limits so far */
    uint64_t streams_refused; /* messages that would have opened one stream too many */
} eng_quota_t;

/* A member an algorithm found late (see eng_coll_deferred). */
struct late_report {
    uint8_t key[32];
    int reason;
};

/* A message this peer sends to itself (delivered from the main loop). */
typedef struct local_msg {
    struct local_msg *next;
    uint64_t comm;
    uint64_t seq;
    uint32_t signature;
    cl_coll_msg_t msg; /* data points at payload */
    uint8_t payload[];
} local_msg_t;

/* The state of the collective streams (e->cs), written by these files
   only. */
struct eng_cs {
    stream_t **streams; /* one per communicator seen (array: safe to walk
                           while callbacks add streams) */
    size_t nstreams, capstreams;
    /* Streams of communicators this program has not created, retired
       after ENG_STREAM_RETIRE_AFTER: kept with their early messages,
       taken back when the program creates the communicator (or a message
       opens it again), outside COLLAB_MAX_STREAMS (docs/security-bounds.md §5). */
    stream_t **retired;
    size_t nretired, capretired;
    struct late_report *late; /* suspicions raised inside algorithm callbacks,
                                 handled from the main loop */
    size_t nlate, caplate;
    struct {
        uint8_t peer[32]; /* a peer's public key */
        uint8_t key[32];  /* the key this peer shares with it (relay tags; wiped at exit) */
        bool set;
    } pairkeys[64]; /* cache of eng_pair_key, replaced round-robin */
    int pairkey_next;
    struct {
        uint8_t peer[32]; /* an identity key */
        uint8_t sign[32]; /* its signing key, checked (cl_xsign_binds) */
        bool set;
    } signkeys[64]; /* relay proofs: checked bindings, replaced round-robin */
    int signkey_next;
    local_msg_t *local_head, *local_tail;
    eng_gens_t *gens;      /* recent world groups (cl_engine_gens.h) */
    size_t buffered_bytes; /* early messages of every stream, with their overheads */
    size_t buffered_msgs;
    eng_quota_t *early; /* early messages per sending world rank */
    int nearly;
    int coll_credit;          /* of the COLL message being routed: eng_p2p_coll_admit's answer */
    uint64_t streams_refused; /* messages that would have opened a stream past a limit */
    double next_tick;
    int coll_timer;         /* _coll's deadline in the loop's timers (-1: none) */
    bool waiting_for_group; /* some call waits for the world group */
    /* Counters and log pacing. */
    uint64_t progress; /* collectives completed */
    double last_step_log;
    double last_done; /* when the last collective completed */
    double step_gap;  /* recent time between completions (EWMA) */
    uint64_t log_tensors, log_bytes;
    double log_seconds;
    int log_peers;
};

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
