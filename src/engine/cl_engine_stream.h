/*  cl_engine_stream.h - the records of the collective streams: a stream
    (one per communicator), the collective running on it (coll_ctx_t) and
    its early messages (buffered_t).

    Written by the streams' files only (cl_engine_coll.c and the files of
    cl_engine_coll_int.h).  The elastic layer (cl_engine_elastic.c) still
    reads a stream's numbering, queue and running collective through these
    definitions; nothing else includes this header but through
    cl_engine_int.h.  Engine thread only.
*/
#ifndef CL_ENGINE_STREAM_H_INCLUDED
#define CL_ENGINE_STREAM_H_INCLUDED

#include "coll/cl_coll.h"
#include "engine/cl_comm.h"
#include "engine/cl_engine_coll.h" /* eng_cs_t, stream_t */
#include "engine/cl_request.h"

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
