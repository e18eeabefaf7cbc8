/*  cl_engine_elastic_int.h - what cl_engine_elastic.c and its adapter
    file cl_engine_elastic_ctx.c share, and nobody else includes: the
    elastic layer's state (struct eng_elastic) and the helpers the two
    files call in each other.  The rest of the engine sees the layer only
    through the functions of cl_engine_elastic.h.
*/
#ifndef CL_ENGINE_ELASTIC_INT_H_INCLUDED
#define CL_ENGINE_ELASTIC_INT_H_INCLUDED

#include "elastic/cl_admission.h"
#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_engine_admittee.h"
#include "engine/cl_engine_admitter.h"
#include "engine/cl_engine_audit.h"
#include "engine/cl_engine_checkpoint.h"
#include "engine/cl_engine_donor.h"
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_pause.h"
#include "engine/cl_engine_sync.h"

#include <stdbool.h>
#include <stdint.h>

#define EL_BARRIERS 16 /* admissions whose generation rule is remembered */
#define EL_ODD_OUT_LIMIT 3 /* collectives where all others differed, then it leaves */
#define EL_ENTRANTS 64 /* admitted peers whose first sequence is remembered */
#define EL_DONE_RING 64  /* completed world collectives whose generation is remembered */

/* An admission: from sequence s of the world communicator on, only
   generations >= gen may run (docs/elastic.md §3). */
typedef struct {
    uint64_t gen; /* 0 = unused */
    uint64_t s;
    bool reported; /* this peer found it completed s under an older generation */
    uint8_t admitter[32]; /* who sent the ADMIT */
    uint64_t prev_gen;    /* the group generation here when the ADMIT came */
    /* Not 0: the admission did not take effect (its admitter left before
       the group got its view, see eng_el_view_changed); generations in
       [gen, void_until) may not run from s on, older ones may again. */
    uint64_t void_until;
    /* The ADMIT as it came (cl_elmsg encoding; NULL if it could not be
       kept), so that a coordinator that takes over from an admitter that
       died mid-admission can hand it on (eng_el_hand_on). */
    uint8_t *admit;
    size_t admit_len;
    bool handed_on;
} el_barrier_t;

/* A peer admitted into the world group by an ADMIT. */
typedef struct {
    uint8_t key[32];
    int rank;        /* world rank, -1 = unused slot */
    uint64_t from;   /* first world sequence it takes part in */
    uint64_t w0_end; /* a re-admitted straggler weighs 0 in [from, w0_end) */
    bool readmit;
    uint64_t gen; /* generation of the admission */
} el_entrant_t;

struct eng_elastic {
    /* Building blocks (src/elastic/). */
    cl_stream_t *stream;   /* the world communicator's stream */
    cl_statereg_t *reg;    /* start-up broadcast buffers */
    cl_startup_t *startup; /* results of other start-up collectives */
    el_admitter_t *admitter; /* admissions this peer decides (cl_engine_admitter.c) */
    el_admittee_t *admittee; /* this peer's own admission (cl_engine_admittee.c) */
    el_donor_t *donor;     /* queries of joiners this peer serves */
    uint8_t *kinds;        /* kind + 1 of stream entries < CL_STREAM_HISTORY */
    uint64_t trimmed;      /* prefix the registry was trimmed to (NONE: not yet) */
    bool full_warned;      /* the registry was full */
    /* This peer's standing and its stream numbering: local index ->
       sequence number of the group (shared with the admittee). */
    el_standing_t st;
    uint64_t done_seq;          /* sequences below this one have completed here */
    struct {
        uint64_t seq, gen; /* gen 0: unused, or completed alone */
    } done_ring[EL_DONE_RING]; /* the latest completed ones, by seq % EL_DONE_RING */
    /* Admissions known to this peer. */
    el_barrier_t barriers[EL_BARRIERS];
    int next_barrier;
    el_entrant_t entrants[EL_ENTRANTS];
    int next_entrant;
    el_sync_t *sync;
    eng_pause_t *pause;      /* a stop of this process and its doubt (cl_engine_pause.c) */
    int odd_out;             /* world collectives in a row where all others differed */
    el_audit_t *audit;      /* the periodic state check (cl_engine_audit.c) */
    el_ckpt_t *ckpt;        /* checkpoints (cl_engine_checkpoint.c) */
};

/* Did this peer complete the sequence of an admission under a generation
   older than the admission's?  Possible only while world all-reduces run
   in several groups, for a group that ran ahead of the admitter before
   the ADMIT reached it.  Such a peer holds results its new group never
   computed, so it reports it and asks the coordinator to take it out of
   the group (re-admitted and resynced as a straggler).  Called when an
   ADMIT arrives, when a view is installed and when a world collective
   completes. */
void eng_el_check_admissions(struct cl_engine *e);

/* Per-stream signature of a collective used for step learning and for
   matching a joiner's start-up collectives (kind, sizes, type, op, root,
   communicator; independent of the group). */
uint32_t eng_el_signature(const collab_request_t *req);

/* Where a completed collective's result lies in the caller's buffers, for
   the kinds whose result is the same on every member (barrier, allreduce,
   allgatherv): true with *ptr and *len set.  False for the others (reduce, gatherv:
   a result at the root only; scatterv, alltoall, reduce_scatter_block:
   one per rank). */
bool eng_el_result_span(const collab_request_t *req, int comm_size, void **ptr, size_t *len);

/* The world communicator's engine stream, or NULL. */
stream_t *eng_el_world(struct cl_engine *e);

/* Sends an ELASTIC message to key.  Returns 0 or a negative status. */
int eng_el_send(struct cl_engine *e, const uint8_t key[32], const cl_elmsg_t *msg);

/* What every member remembers of an admission (cl_engine_elastic.c):
   its generation rule and its entrants (m an ADMIT, admitter its sender
   or NULL). */
void eng_el_remember(struct cl_engine *e, const cl_elmsg_t *m, const uint8_t *admitter);
/* The coordinator that took over from an admitter that died during an
   admission hands that admission's ADMIT on to the members (once). */
void eng_el_hand_on(struct cl_engine *e);

/* The running pull of the state (cl_engine_sync.h: an admission's sync,
   a monitor's checkpoint fetch, a peer resuming from a checkpoint).
   cl_engine_elastic.c alone starts, replaces and frees it (el->sync) and
   builds its context; the others ask through these.  eng_el_sync: the
   running pull, or NULL (read only).  eng_el_sync_start replaces it with
   a pull of admission s (eng_sync_start; admit and admitter as there),
   eng_el_sync_start_one with a pull of collective s from key alone
   (eng_sync_start_one); both return false without memory (then none
   runs).  eng_el_sync_check_donors: the pull looks at the view now
   (eng_sync_view_changed; it finishes at once when nobody is left to
   ask).  eng_el_sync_stop frees it (never from inside its `finished`). */
const el_sync_t *eng_el_sync(struct cl_engine *e);
bool eng_el_sync_start(struct cl_engine *e, uint64_t s, const cl_elmsg_t *admit,
                       const uint8_t *admitter);
bool eng_el_sync_start_one(struct cl_engine *e, uint64_t s, const uint8_t key[32]);
void eng_el_sync_check_donors(struct cl_engine *e);
void eng_el_sync_stop(struct cl_engine *e);

#endif
