/*  cl_engine_coll_int.h - what the files of the collective streams share
    among themselves.

    The streams (cl_engine_coll.c) are one component in five files: the
    streams themselves, the start of a collective (cl_engine_coll_start.c),
    the environment of its algorithm (cl_engine_coll_env.c), the routing
    of incoming messages (cl_engine_route.c) and the same-host fast path
    (cl_engine_fast.c); they create the generations of the world group
    (cl_engine_gens.h), a component of its own.  Their state is struct
    eng_cs (eng_parts(e)->cs), defined here and written by these files
    only; the rest of the engine calls them and reads it through
    cl_engine_coll.h.  They see the engine only through their context
    (eng_cs_ctx_t, cs->ctx): neither this header nor any of their files
    includes cl_engine_loop_int.h.  The functions below are for these
    files only.
*/
#ifndef CL_ENGINE_COLL_INT_H_INCLUDED
#define CL_ENGINE_COLL_INT_H_INCLUDED

#include "engine/cl_comm.h"
#include "engine/cl_engine_coll.h"
#include "engine/cl_engine_timer.h"
#include "engine/cl_request.h"

/* The records of the collective streams: a stream (one per
   communicator), the collective running on it (coll_ctx_t) and its early
   messages (buffered_t).  Opaque to every other file (stream_t,
   cl_engine_coll.h: what others read of one, eng_stream_*). */
/* A collective message that arrived before its collective started. */
typedef struct buffered {
    struct buffered *next;
    uint64_t seq;
    uint64_t gen; /* group generation of the sender's collective */
    uint32_t signature;
    int from_world; /* sender's world rank */
    uint8_t type;   /* cl_coll_msg_t.type */
    uint32_t part, chunk, aux;
    size_t len;
    uint8_t *data;
    bool limited; /* counted against its sender's limits (another peer's) */
} buffered_t;

/* What a cl_coll_t gets as its env->eng: which collective it is. */
typedef struct {
    eng_cs_t *cs; /* the streams it runs in */
    stream_t *s;
    uint64_t seq;
    uint64_t gen; /* group generation it runs under (0: group of one) */
    uint32_t signature;
    cl_coll_kind_t kind;
    int *members; /* comm ranks of the group, ascending */
    int nmembers;
    uint8_t (*keys)[32]; /* per member: its identity key at the start (relay tags) */
    bool *haskey;        /* ... known (inside the keys block) */
    /* Copies of the other peers' messages it took, given back to the
       stream when it restarts under another generation (cl_engine_route.c,
       eng_coll_requeue_seen); up to SEEN_MAX bytes. */
    struct buffered *seen_head, *seen_tail;
    size_t seen_bytes;
    bool seen_full;
    int *failed;       /* members declared failed during the call */
    bool *failed_left; /* ... of which those that said goodbye */
    int nmismatch;     /* ... of which those that called another collective */
    int nfailed;
    int *notified; /* world ranks sent a generation notice */
    int nnotified;
    double t_start;
} coll_ctx_t;

/* The collective stream of one communicator. */
struct stream {
    uint64_t comm_id;
    collab_comm_t *comm; /* NULL until the program uses the communicator here */
    uint64_t next_seq;   /* sequence number of the next local call (written only by _coll) */
    uint64_t started;    /* collectives started so far (= seq of the next start) */
    zlist_t *queue;      /* collab_request_t* called but not started, in order */
    cl_coll_t *active;   /* running collective, or NULL */
    coll_ctx_t *active_ctx;
    collab_request_t *active_req;
    cl_coll_t *retained; /* last completed, kept for relays */
    coll_ctx_t *retained_ctx;
    buffered_t *buf_head, *buf_tail; /* messages for collectives not started yet */
    uint64_t nstarts;                /* starts (and restarts) of collectives on this stream */
    bool taking;                     /* eng_coll_take_buffered runs (it may start the next one) */
    bool stage_wait;                 /* the first queued call waits for its staged device
                                        input before it starts (cl_stage_in_whole) */
    bool take_again;                 /* a start inside it asked for another pass */
    int opened_by;                   /* 1 + world rank of the peer whose message opened it (comm
                                        still NULL: this program has not created it); 0: none */
    double opened_at;                /* when a message opened it (opened_by > 0) */
    double last_delivery;            /* last start of its collective or message delivered to it */
    /* The same-host fast path (cl_engine_fast.c). */
    uint64_t fast_done;      /* sequences completed on it */
    double fast_since;       /* when it was last granted */
    uint64_t fast_hold;      /* after a lapsed lease: collectives to post on the engine path */
    uint64_t fast_hold_from; /* ... from this sequence on */
    double fast_hold_at;     /* when the lease lapsed */
    double fast_lease;       /* seconds the next world grant lasts (0: FAST_LEASE) */
    uint64_t fast_glinks[8]; /* a group's comm rank 0: the links its area went over (cl_fast.h) */
};

/* suspect_reason of a peer that said goodbye (local only). */
#ifndef ENG_REASON_LEFT
#define ENG_REASON_LEFT ENG_SUSPECT_LEFT
#endif

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
    /* ENG_REASON_LEFT: the collective that waited for the departed peer
       in vain (eng_leave_cut). */
    uint64_t comm, seq;
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
#define ENG_FREED_KEEP 32 /* freed communicators a goodbye may still name */

struct eng_cs {
    eng_cs_ctx_t ctx;   /* the engine, as the loop gave it (cl_engine_coll_ctx.c) */
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
    /* The communicators the program freed last, with the collectives it
       had entered on each (a ring): a goodbye still names them, so that a
       member still in the last of them counts this peer there
       (eng_coll_entered). */
    struct {
        uint64_t comm, entered;
    } freed[ENG_FREED_KEEP];
    int nfreed, freed_next;
    /* Whether this peer may take part in all-reduces through host leaders
       (eng_fast_hier_update at every turn of the loop, read by application
       threads: cl_api_hier.c). */
    _Atomic int hier_ok;
    double step_gap;  /* recent time between completions (EWMA) */
    uint64_t log_tensors, log_bytes;
    double log_seconds;
    int log_peers;
};

/* The engine's clock, through the context. */
static inline double cs_now(const eng_cs_t *cs)
{
    return cs->ctx.now(cs->ctx.arg);
}

/* Shared by the streams' files (cl_engine_coll.c, _coll_env, _route,
   _coll_start). */
/* cl_engine_coll_env.c: the 32-byte key this peer shares with the peer of
   public key `peer`:
   BLAKE2b-256 of their X25519 shared secret and both public keys (lower
   first), cached.  Returns 0, or COLLAB_ERR_ARG for a key X25519 refuses. */
int eng_pair_key(eng_cs_t *cs, const uint8_t peer[32], uint8_t out[32]);
void eng_coll_record_group(eng_cs_t *cs);
/* Retires the streams that messages opened for communicators this
   program has not created, `after` seconds ago or more, and that hold
   no request: out of cs->streams (and COLLAB_MAX_STREAMS) into
   cs->retired with their early messages, or freed when they hold none.
   eng_cs_stream takes one back when the program creates its
   communicator. */
void eng_coll_retire_streams(eng_cs_t *cs, double now, double after);
/* The retired stream of communicator id, or NULL: a message for it waits
   there, and it stays retired. */
stream_t *eng_coll_retired(eng_cs_t *cs, uint64_t id);
void eng_coll_check_done(eng_cs_t *cs, stream_t *s);
void eng_coll_fail_member(stream_t *s, int r, bool left);
void eng_coll_defer_late(eng_cs_t *cs, const cl_peer_t *p, int reason);
/* Counts the departed peer with this key as failed in every running
   collective it is a member of (it said goodbye, yet one still waits for
   it). */
void eng_coll_fail_departed(eng_cs_t *cs, const uint8_t key[32]);
/* The members of generation gen as a notice's body (malloc'd into *out;
   0 when unknown). */
size_t eng_coll_gen_encode(eng_cs_t *cs, uint64_t gen, uint8_t **out);
/* A notice from world rank from_world names generation gen, older than
   cur, which this peer never saw (the view that formed it was lost with
   its coordinator): remembers it when body lists this peer and every
   member of cur, and otherwise only peers gone here.  True when gen is
   known now. */
bool eng_coll_learn_gen(eng_cs_t *cs, uint64_t gen, uint64_t cur, int from_world,
                        const uint8_t *body, size_t len);
/* World rank w is in this peer's current group (cl_engine_coll.c). */
bool eng_coll_in_group(eng_cs_t *cs, int w);
/* May a message of world rank w pull collective seq of s back to an older
   generation?  Members of the group, and peers that left after taking
   part in it (cl_engine_route.c). */
bool eng_coll_may_pull(eng_cs_t *cs, const stream_t *s, int w, uint64_t seq);
void eng_coll_route(eng_cs_t *cs, stream_t *s, int from_world, const cl_wire_hdr_t *h,
                    const void *data, size_t len);
void eng_coll_take_buffered(eng_cs_t *cs, stream_t *s);
void eng_coll_free_buffered(eng_cs_t *cs, stream_t *s);
/* Takes b (after prev, NULL when first) off s's list of early messages
   and forgets its accounting; the caller frees it. */
void eng_coll_unlink_buffered(eng_cs_t *cs, stream_t *s, buffered_t *prev, buffered_t *b);
/* Drops the early messages of world rank w from s; returns how many
   messages are left. */
size_t eng_coll_drop_buffered_from(eng_cs_t *cs, stream_t *s, int w);
/* Before the running collective of s restarts under another generation:
   the messages it took go back to the front of the stream's buffer, where
   the restarted collective (or a later restart under their generation)
   finds them. */
void eng_coll_requeue_seen(eng_cs_t *cs, stream_t *s);
/* Frees a collective's copies (ctx_free). */
void eng_coll_free_seen(coll_ctx_t *ctx);

/* cl_engine_coll.c */
/* Arms _coll's timer by `when` (an earlier deadline stays): a collective
   started (its tick), a call waiting for the group (its deadline), a
   start deferred until its device input is in host memory. */
void eng_coll_wake_by(eng_cs_t *cs, double when);

/* cl_engine_coll_start.c */
/* Starts the queued calls of s, in order, while nothing runs on s and a
   generation is known for the first; a call that must wait for the group
   gets its deadline (cl_engine_coll.c gives up on it). */
void eng_coll_try_start(eng_cs_t *cs, stream_t *s);
/* Frees *ctx_p (accepts NULL) and nulls it. */
void eng_coll_ctx_free(coll_ctx_t **ctx_p);

/* cl_engine_coll_env.c */
/* The environment of the algorithm of the collective ctx describes
   (ctx is its env->eng; the caller keeps it alive while the algorithm
   runs). */
cl_coll_env_t eng_coll_env(coll_ctx_t *ctx);
/* The member record of comm rank comm_rank in ctx's communicator, or
   NULL. */
const cl_peer_t *eng_coll_peer_of(coll_ctx_t *ctx, int comm_rank);

/* cl_engine_coll_start.c */
/* A peer that left after taking part in collective seq of s counts
   there, so seq runs under a generation that still lists it: the newest
   one (not after cur) that lists every such peer of the communicator and
   this peer.  Returns cur when it lists them all or none does. */
uint64_t eng_coll_gen_with_departed(eng_cs_t *cs, stream_t *s, uint64_t seq, uint64_t cur);

/* cl_engine_fast.c: the same-host fast path (cl_fast.h). */
/* Applies the fast sequences s's application thread reported. */
void eng_fast_drain(eng_cs_t *cs, stream_t *s);
/* Grants or revokes every stream's fast path (each turn of the loop),
   or s's (when its collective completed). */
void eng_fast_update(eng_cs_t *cs);
/* Publishes whether this peer may use host leaders (eng_coll_hier_ok). */
void eng_fast_hier_update(eng_cs_t *cs);
void eng_fast_update_stream(eng_cs_t *cs, stream_t *s);
/* s numbered seq for the engine path (a group's one grant: at or past
   the agreed sequence every member falls back, cl_fast_agree_post). */
void eng_fast_on_post(stream_t *s, uint64_t seq);
/* A collective message for sequence seq arrived on s: revokes a grant
   that it shows the other member does not use. */
void eng_fast_on_message(eng_cs_t *cs, stream_t *s, uint64_t seq);
/* Frees s's fast path (its communicator goes, or the engine stops). */
void eng_fast_release(eng_cs_t *cs, stream_t *s);

#endif
